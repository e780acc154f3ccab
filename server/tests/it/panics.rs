//! Every panic in this test binary, recorded with the Tokio runtime it happened on.
//!
//! Tokio keeps a panic inside a spawned task (a request handler, the reconciler, a syncer)
//! from reaching the test: the server answers 500 or stops reconciling and the test may still
//! pass, or time out far from the cause. Each test runs on its own runtime, and so does the
//! lbdesk it spawns, so a panic on that runtime is that test's: [`Watch::check`] fails it
//! with the panic's message, and [`check_this_runtime`] lets a wait fail at once. A shared
//! lbdesk runs on a runtime of its own, watched by each test using it (`shared`).

use std::sync::{Mutex, Once};

use tokio::runtime::{Handle, Id};

/// A panic the hook saw.
struct Panic {
    /// The runtime it happened on; `None` on a thread of no runtime.
    runtime: Option<Id>,
    /// The thread, the place and the message.
    report: String,
}

static PANICS: Mutex<Vec<Panic>> = Mutex::new(Vec::new());

/// Records every panic from now on (the hook is installed once per binary), still printing
/// each as the previous hook did.
fn install() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(not a string)".into());
            let thread = std::thread::current().name().unwrap_or("unnamed").to_string();
            let at = info.location().map(|l| l.to_string()).unwrap_or_default();
            let panic = Panic {
                runtime: Handle::try_current().ok().map(|h| h.id()),
                report: format!("thread '{thread}' panicked at {at}: {message}"),
            };
            PANICS.lock().unwrap_or_else(|p| p.into_inner()).push(panic);
            previous(info);
        }));
    });
}

/// The reports of the panics recorded from index `from` on `runtime` (and, with
/// `off_runtime`, on threads of no runtime).
fn reports(runtime: Id, from: usize, off_runtime: bool) -> Vec<String> {
    let panics = PANICS.lock().unwrap_or_else(|p| p.into_inner());
    panics
        .iter()
        .skip(from)
        .filter(|p| p.runtime.map_or(off_runtime, |r| r == runtime))
        .map(|p| p.report.clone())
        .collect()
}

/// Fails with the reports, if any.
fn fail_on(reports: Vec<String>) {
    assert!(
        reports.is_empty(),
        "lbdesk panicked during this test (Tokio caught it, so the test could have passed):\n{}",
        reports.join("\n")
    );
}

/// A test's watch over the record, from the moment it starts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Watch {
    runtime: Id,
    from: usize,
}

impl Watch {
    /// Watches the calling test's runtime from now on.
    ///
    /// NB: call it inside the test's runtime (a `#[tokio::test]`), where lbdesk is spawned.
    pub fn start() -> Watch {
        Watch::on(Handle::current().id())
    }

    /// Watches `runtime` from now on (a shared lbdesk's, for one test).
    pub fn on(runtime: Id) -> Watch {
        install();
        let from = PANICS.lock().unwrap_or_else(|p| p.into_inner()).len();
        Watch { runtime, from }
    }

    /// Fails the test if anything panicked on its runtime since the watch started, or on a
    /// thread of no runtime meanwhile (whose test cannot be told, so each test watching then
    /// fails).
    pub fn check(&self) {
        fail_on(self.seen());
    }

    /// The runtime watched.
    pub fn runtime(&self) -> Id {
        self.runtime
    }

    /// What `check` fails on.
    pub fn seen(&self) -> Vec<String> {
        reports(self.runtime, self.from, true)
    }
}

/// Fails the calling test at once if anything panicked on its runtime, or on the runtime of a
/// shared lbdesk it uses since it began to (a wait for what the panicking task would have done
/// would only time out).
pub fn check_this_runtime() {
    if let Ok(handle) = Handle::try_current() {
        fail_on(on_test_runtime(handle.id()));
    }
}

/// What `check_this_runtime` fails on, for the test on `runtime`.
pub fn on_test_runtime(runtime: Id) -> Vec<String> {
    let mut seen = reports(runtime, 0, false);
    for watch in crate::shared::leased_by(runtime) {
        seen.extend(reports(watch.runtime, watch.from, false));
    }
    seen
}
