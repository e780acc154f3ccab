//! Socket settings every listener of lbdesk shares (the web UI, the driver simulator).

/// Sends small responses at once: without `TCP_NODELAY` they can wait for a delayed ACK (40 ms).
/// For `axum::serve(listener.tap_io(no_delay), …)`.
pub fn no_delay(tcp: &mut tokio::net::TcpStream) {
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::debug!(error = %e, "could not set TCP_NODELAY");
    }
}
