//! Structured logs: human-readable by default, JSON when `LOG_FORMAT=json`.

use tracing_subscriber::EnvFilter;

/// Installs the global subscriber; `RUST_LOG` filters, `LOG_FORMAT=json` switches format.
pub fn init() {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,tower_sessions=warn"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    if std::env::var("LOG_FORMAT").is_ok_and(|f| f.eq_ignore_ascii_case("json")) {
        builder.json().flatten_event(true).init();
    } else {
        builder.init();
    }
}
