//! Socket and connection settings every listener of lbdesk shares: the web UI and the embedded
//! API are served by `serve` (idle and header-read timeouts, optional TLS), the driver
//! simulator by `axum::serve` with `no_delay`.

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum_server::Handle;
use axum_server::accept::NoDelayAcceptor;
use axum_server::tls_rustls::{RustlsAcceptor, RustlsConfig};
use hyper_util::rt::TokioTimer;
use tokio::task::JoinHandle;

use crate::config::HttpArgs;

/// Sends small responses at once: without `TCP_NODELAY` they can wait for a delayed ACK (40 ms).
/// For `axum::serve(listener.tap_io(no_delay), …)`.
pub fn no_delay(tcp: &mut tokio::net::TcpStream) {
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::debug!(error = %e, "could not set TCP_NODELAY");
    }
}

/// The body of `response`, read as it arrives, or `None` once it is over `most` bytes: an
/// answer from outside is never read whole into memory when it is not what was asked for.
pub async fn read_at_most(mut response: reqwest::Response, most: usize) -> Result<Option<Vec<u8>>, reqwest::Error> {
    if response.content_length().is_some_and(|l| l > most as u64) {
        return Ok(None);
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > most {
            return Ok(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Some(body))
}

/// Serves `app` on `listener` (over TLS when `tls` is given) until `handle` shuts it down.
/// Handlers can extract the client's address (`ConnectInfo<SocketAddr>`).
///
/// A connection that sends no complete request head for `idle` is closed: hyper's header-read
/// timer runs from the moment a connection waits for a request, so it covers a slow client
/// (half a request line) and an idle keep-alive alike; the TLS handshake gets as long. NB: HTTP/1
/// only: hyper has no idle timeout for HTTP/2, and every client here speaks HTTP/1.1 (the TLS
/// configurations offer no `h2`).
pub fn serve(
    listener: std::net::TcpListener,
    app: Router,
    tls: Option<RustlsConfig>,
    idle: Duration,
    handle: Handle<SocketAddr>,
) -> std::io::Result<JoinHandle<std::io::Result<()>>> {
    listener.set_nonblocking(true)?;
    let mut server = axum_server::from_tcp(listener)?.http1_only().handle(handle);
    server.http_builder().http1().timer(TokioTimer::new()).header_read_timeout(idle);
    let app = app.into_make_service_with_connect_info::<SocketAddr>();
    // NB: without TCP_NODELAY, small responses wait for delayed ACKs (40 ms stalls).
    Ok(match tls {
        Some(tls) => {
            let acceptor = RustlsAcceptor::new(tls).handshake_timeout(idle).acceptor(NoDelayAcceptor::new());
            tokio::spawn(server.acceptor(acceptor).serve(app))
        }
        None => tokio::spawn(server.acceptor(NoDelayAcceptor::new()).serve(app)),
    })
}

/// Reads and drops what a refused request still sends (a bounded amount, briefly). hyper closes
/// a connection whose request body was left unread, and a client that has already put it back
/// in its pool then loses the next request it sends on it.
pub async fn drain(body: axum::body::Body) {
    const DRAINED: usize = 64 * 1024;
    let _ = tokio::time::timeout(Duration::from_secs(2), axum::body::to_bytes(body, DRAINED)).await;
}

/// The web UI's TLS configuration from `--tls-cert` and `--tls-key` (both or neither); an error
/// names the flag at fault.
pub fn web_tls(args: &HttpArgs) -> anyhow::Result<Option<RustlsConfig>> {
    let (cert, key) = match (&args.tls_cert, &args.tls_key) {
        (None, None) => return Ok(None),
        (Some(_), None) => anyhow::bail!("--tls-cert needs --tls-key (the certificate's private key)"),
        (None, Some(_)) => anyhow::bail!("--tls-key needs --tls-cert (the certificate chain)"),
        (Some(cert), Some(key)) => (cert, key),
    };
    let config = crate::tls::from_files(("--tls-cert", cert), ("--tls-key", key))?;
    Ok(Some(RustlsConfig::from_config(config)))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn args(cert: Option<&Path>, key: Option<&Path>) -> HttpArgs {
        HttpArgs { tls_cert: cert.map(Path::to_path_buf), tls_key: key.map(Path::to_path_buf), ..Default::default() }
    }

    fn error(args: &HttpArgs) -> String {
        format!("{:#}", web_tls(args).expect_err("refused"))
    }

    #[test]
    fn tls_needs_both_files_readable_and_matching_and_each_error_names_its_flag() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let key = rcgen::KeyPair::generate().expect("key");
        let cert =
            rcgen::CertificateParams::new(vec!["localhost".into()]).expect("params").self_signed(&key).expect("cert");
        let other = rcgen::KeyPair::generate().expect("key");
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).expect("write");
            path
        };
        let (cert_pem, key_pem) = (write("cert.pem", &cert.pem()), write("key.pem", &key.serialize_pem()));
        let other_key = write("other.pem", &other.serialize_pem());
        let missing = dir.path().join("missing.pem");

        assert!(web_tls(&args(None, None)).expect("plain HTTP").is_none());
        assert!(web_tls(&args(Some(&cert_pem), Some(&key_pem))).expect("TLS").is_some());
        assert!(error(&args(Some(&cert_pem), None)).starts_with("--tls-cert needs --tls-key"));
        assert!(error(&args(None, Some(&key_pem))).starts_with("--tls-key needs --tls-cert"));
        let e = error(&args(Some(&missing), Some(&key_pem)));
        assert!(e.starts_with("--tls-cert ") && e.contains("could not read"), "{e}");
        let e = error(&args(Some(&cert_pem), Some(&missing)));
        assert!(e.starts_with("--tls-key ") && e.contains("could not read"), "{e}");
        let e = error(&args(Some(&key_pem), Some(&key_pem)));
        assert!(e.starts_with("--tls-cert ") && e.contains("no certificate"), "{e}");
        let e = error(&args(Some(&cert_pem), Some(&cert_pem)));
        assert!(e.starts_with("--tls-key ") && e.contains("no private key"), "{e}");
        let e = error(&args(Some(&cert_pem), Some(&other_key)));
        assert!(e.starts_with("--tls-cert ") && e.contains("--tls-key") && e.contains("does not match"), "{e}");
    }
}
