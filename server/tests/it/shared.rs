//! One lbdesk per test module and database, shared by the module's tests.
//!
//! A test that needs nothing of its own does not start lbdesk again (migrations, demo seed, TLS
//! API, reconciler): a module's tests share one, each with names of its own (requests,
//! listeners, namespaces, load balancers and their AS3 tenants, CIS namespaces, projects and
//! tenants (`user::own_tenant`), client addresses for the sign-in throttle), so none sees
//! another's objects. A test that changes what the simulators do changes its own part only: a
//! member, a tenant (`faultTenants`) or a request (`faultTickets`) of its own. A module's lbdesk
//! is started as the module needs (`Shared::with`: TLS, short sessions, a webhook, an ensure
//! pass every second, no reconciler); tests that need another one are in a module of their own.
//!
//! Tests that start a fresh lbdesk of their own (`helpers::spawn_lbdesk`) are those of restarts,
//! crashes, HA and upgrades: of lbdesk, of its reconciler (a crash after a write step, half a
//! pair left, a stop and a second run, the driver down and then up), of a member cluster
//! (unreachable), of the directory (down or frozen: a directory server of the test's own, which
//! the test stops or freezes). The directory every other test signs in with is one for the whole
//! test binary (`directory::shared`), where a test that changes it adds users and groups of its
//! own.
//!
//! A shared lbdesk runs on a runtime of its own that outlives every test (a test's runtime ends
//! with the test), until the test binary exits. A panic on that runtime fails each test holding
//! a [`Lease`] meanwhile, at once in [`crate::helpers::until`] and at the latest when the lease
//! is dropped.

use std::ops::Deref;
use std::path::PathBuf;
use std::sync::Mutex;

use tokio::runtime::{Handle, Id};
use tokio::sync::OnceCell;

use app::ssr::db::{Db, Engine};

use crate::helpers::{Backend, Lbdesk, Options, TestDb, start_on};
use crate::panics::Watch;

/// A module's shared lbdesk, one per database: `static LBDESK: Shared = Shared::new();`.
pub struct Shared {
    /// How lbdesk is started.
    options: fn() -> Options,
    /// Whether the admin registers the load balancer `demo` first, as `with_demo_lb` does.
    demo_lb: bool,
    started: [OnceCell<&'static Hosted>; 2],
}

/// A shared lbdesk and the runtime it runs on.
struct Hosted {
    lbdesk: Lbdesk,
    runtime: tokio::runtime::Runtime,
}

impl Shared {
    /// lbdesk as `spawn_lbdesk` starts it.
    pub const fn new() -> Shared {
        Shared::with(Options::default, false)
    }

    /// The same, with the load balancer `demo` registered by the admin.
    pub const fn with_demo_lb() -> Shared {
        Shared::with(Options::default, true)
    }

    /// lbdesk started with `options`, with the load balancer `demo` if `demo_lb`.
    pub const fn with(options: fn() -> Options, demo_lb: bool) -> Shared {
        Shared { options, demo_lb, started: [OnceCell::const_new(), OnceCell::const_new()] }
    }

    /// The module's lbdesk on `backend`, started by the first test that asks.
    pub async fn get(&'static self, backend: Backend) -> Lease {
        let cell = match backend {
            Backend::Sqlite => &self.started[0],
            Backend::Postgres => &self.started[1],
        };
        Lease::new(cell.get_or_init(|| start(backend, (self.options)(), self.demo_lb)).await)
    }
}

/// Starts lbdesk on a runtime of its own; both are kept until the binary exits.
async fn start(backend: Backend, options: Options, demo_lb: bool) -> &'static Hosted {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("shared-lbdesk")
        .enable_all()
        .build()
        .expect("a runtime for the shared lbdesk");
    let starting = runtime.spawn(async move {
        let test_db = TestDb::new_in(backend, &shared_dir()).await;
        let url = test_db.url.clone();
        let mut lbdesk = start_on(test_db, options).await;
        lbdesk.db = tests_pool(&url);
        if demo_lb {
            crate::user::register_demo_lb(&lbdesk).await;
        }
        lbdesk
    });
    match starting.await {
        // NB: a runtime may not be dropped inside another one; this one never is.
        Ok(lbdesk) => Box::leak(Box::new(Hosted { lbdesk, runtime })),
        Err(e) => {
            runtime.shutdown_background();
            panic!("the shared lbdesk did not start: {e}");
        }
    }
}

/// A folder of this process's, `name`, for the files a module's lbdesk is started with (a
/// certificate, a site): kept as long as the lbdesk, removed with its data.
pub fn files(name: &str) -> PathBuf {
    let dir = shared_dir().join(name);
    std::fs::create_dir_all(&dir).expect("a folder for a shared lbdesk's files");
    dir
}

/// The tests' way into a shared lbdesk's database: a pool whose connections each serve one use
/// and are closed after it, so that each lives on the runtime of the test that opened it.
///
/// NB: a PostgreSQL connection is bound to the runtime it was opened on. Not lbdesk's own pool:
/// one a test opened there stopped working when the test's runtime ended, and lbdesk's next use
/// of it failed ("A Tokio 1.x context was found, but it is being shutdown": a session not saved,
/// a 500). Nor a pool of connections kept open on the shared runtime: sqlx hands a connection
/// back to its pool on the runtime that drops it, and a test that ended meanwhile lost it; the
/// pool then opened one on another test's runtime, and a third test's write failed the same way
/// when that test ended (seen once in `audit`, on PostgreSQL).
fn tests_pool(url: &str) -> Db {
    use sqlx::Executor;
    let sqlite = !url.starts_with("postgres");
    let pool = sqlx::any::AnyPoolOptions::new()
        .min_connections(0)
        .max_connections(8)
        .after_connect(move |conn, _| {
            Box::pin(async move {
                // NB: as lbdesk's own (`Db::connect`): writers wait their turn.
                if sqlite {
                    conn.execute("PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 10000").await?;
                }
                Ok(())
            })
        })
        .after_release(|_, _| Box::pin(async { Ok(false) }))
        .connect_lazy(url)
        .expect("the tests' pool");
    let engine = if sqlite { Engine::Sqlite } else { Engine::Postgres };
    Db { pool, engine, health: Default::default() }
}

/// Where this process keeps its shared lbdesks' data: `target/tmp`, by process, the folders of
/// processes that have ended removed first. NB: a shared lbdesk is never dropped, so a temporary
/// directory would not remove itself.
fn shared_dir() -> PathBuf {
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("it-shared");
    let ended = |name: &str| name.parse::<u32>().is_ok_and(|pid| !PathBuf::from(format!("/proc/{pid}")).exists());
    for entry in std::fs::read_dir(&base).into_iter().flatten().flatten() {
        if entry.file_name().to_str().is_some_and(ended) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
    let dir = base.join(std::process::id().to_string());
    std::fs::create_dir_all(&dir).expect("a folder for the shared lbdesks");
    dir
}

/// The shared runtimes each test's runtime holds leases on, so that a wait fails at once.
static LEASED: Mutex<Vec<(Id, Watch)>> = Mutex::new(Vec::new());

/// A test's use of a shared lbdesk: dropped, it fails the test if lbdesk panicked meanwhile.
pub struct Lease {
    hosted: &'static Hosted,
    test: Id,
    panics: Watch,
}

impl Lease {
    fn new(hosted: &'static Hosted) -> Lease {
        let (test, panics) = (Handle::current().id(), Watch::on(hosted.lbdesk.runtime()));
        LEASED.lock().unwrap_or_else(|p| p.into_inner()).push((test, panics));
        Lease { hosted, test, panics }
    }

    /// Ends the lease, without its check.
    fn release(&self) {
        let mut leased = LEASED.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(at) = leased.iter().position(|(test, watch)| *test == self.test && *watch == self.panics) {
            leased.swap_remove(at);
        }
    }
}

impl Deref for Lease {
    type Target = Lbdesk;

    fn deref(&self) -> &Lbdesk {
        &self.hosted.lbdesk
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.release();
        // NB: as `Lbdesk`'s drop: a failing test has said what went wrong.
        if !std::thread::panicking() {
            self.panics.check();
        }
    }
}

/// The watches over the shared lbdesks the test on `runtime` holds.
pub fn leased_by(runtime: Id) -> Vec<Watch> {
    let leased = LEASED.lock().unwrap_or_else(|p| p.into_inner());
    leased.iter().filter(|(test, _)| *test == runtime).map(|(_, watch)| *watch).collect()
}

/// Used by this probe alone, as its panic fails every test using the lbdesk meanwhile.
static PROBED: Shared = Shared::new();

/// A panic on a shared lbdesk's runtime fails the test using it, and only from when it began
/// to: at once in a wait, and when its lease ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_in_a_shared_lbdesk_fails_the_tests_using_it() {
    let this_test = Handle::current().id();
    let earlier = PROBED.get(Backend::Sqlite).await;
    assert_eq!(crate::panics::on_test_runtime(this_test), Vec::<String>::new());
    let task = earlier.hosted.runtime.spawn(async { panic!("a probe of the shared lbdesk's runtime") });
    assert!(task.await.is_err_and(|e| e.is_panic()));
    let seen = crate::panics::on_test_runtime(this_test);
    assert!(seen.len() == 1 && seen[0].contains("a probe of"), "a wait fails at once: {seen:?}");
    assert_eq!(earlier.panics.seen(), seen, "the lease fails the test");
    // NB: its check is proven; dropped, the lease would fail this test.
    earlier.release();
    std::mem::forget(earlier);
    let later = PROBED.get(Backend::Sqlite).await;
    assert_eq!(crate::panics::on_test_runtime(this_test), Vec::<String>::new(), "a panic before is not the test's");
    assert_eq!(later.panics.seen(), Vec::<String>::new());
}
