//! The log lines lbdesk writes (through `tracing`) while a test captures them, kept in memory so
//! the test can search them (e.g. for a secret).
//!
//! A global subscriber can be installed once per process, so this one is shared by every test of
//! the binary; it formats events only while some [`Capture`] is alive (the others pay nothing),
//! and a capture sees what was written since it started, other tests' lines included.
//!
//! It also writes every error any lbdesk of the binary logs to the standard error, at once, so
//! that a test failing on a 500 ("the server log has details") has them in the run's output.
//! The tests that make errors on purpose (a group mapping refused, a member cluster that cannot
//! be reached) show theirs there too.

use std::io::Write;
use std::sync::{Mutex, MutexGuard, OnceLock};

use tracing_subscriber::filter::{EnvFilter, LevelFilter, dynamic_filter_fn};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, fmt};

/// What lbdesk's own crates log at every level, and the libraries around them (HTTP, the
/// Kubernetes client, sessions) at debug: a secret must not show at any level a user may enable.
const LEVELS: &str = "debug,server=trace,app=trace,h2=info,hyper=info,hyper_util=info,rustls=info,sqlx=info";

struct Buffer {
    text: Vec<u8>,
    /// Captures alive; the text is dropped when the last one ends.
    active: usize,
}

static BUFFER: Mutex<Buffer> = Mutex::new(Buffer { text: Vec::new(), active: 0 });

fn buffer() -> MutexGuard<'static, Buffer> {
    BUFFER.lock().unwrap_or_else(|p| p.into_inner())
}

/// Appends each formatted line to [`BUFFER`].
#[derive(Clone, Copy)]
struct ToBuffer;

impl Write for ToBuffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let mut buffer = buffer();
        if buffer.active > 0 {
            buffer.text.extend_from_slice(bytes);
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for ToBuffer {
    type Writer = ToBuffer;

    fn make_writer(&'a self) -> ToBuffer {
        ToBuffer
    }
}

/// Installs the subscriber, once per binary (each lbdesk a test starts asks). Fails if something
/// else installed one first (then nothing would be captured and a search would prove nothing).
pub fn install() {
    static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
    let installed = INSTALLED.get_or_init(|| {
        let layer = fmt::layer()
            .with_ansi(false)
            .with_writer(ToBuffer)
            .with_filter(EnvFilter::new(LEVELS))
            // NB: asked at every event, not once per call site: a `filter_fn` is asked once,
            // when a call site is first reached, and a call site first reached while no capture
            // was alive stayed silent for the whole run (the Kubernetes client's lines went
            // missing from captures depending on which test reached them first).
            .with_filter(dynamic_filter_fn(|_, _| buffer().active > 0));
        let errors = fmt::layer().with_ansi(false).with_writer(std::io::stderr).with_filter(LevelFilter::ERROR);
        tracing_subscriber::registry().with(layer).with(errors).try_init().map_err(|e| e.to_string())
    });
    if let Err(e) = installed {
        panic!("the log capture needs the global tracing subscriber, which was already set: {e}");
    }
}

/// The log lines written while this lives.
pub struct Capture {
    from: usize,
}

impl Capture {
    pub fn start() -> Capture {
        install();
        let mut buffer = buffer();
        buffer.active += 1;
        Capture { from: buffer.text.len() }
    }

    /// Everything logged since the capture started (by any test).
    pub fn text(&self) -> String {
        let buffer = buffer();
        String::from_utf8_lossy(buffer.text.get(self.from..).unwrap_or_default()).into_owned()
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        let mut buffer = buffer();
        buffer.active -= 1;
        if buffer.active == 0 {
            buffer.text = Vec::new();
        }
    }
}
