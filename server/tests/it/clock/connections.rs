//! Closing connections that idle or send their request too slowly, on the web UI's port and
//! on the embedded API's.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use server::config::HttpArgs;

use crate::helpers::{Backend, Lbdesk, Options};
use crate::shared::Shared;

/// The module's lbdesk closes a connection idle for a second.
static LBDESK: Shared =
    Shared::with(|| Options { http: HttpArgs { idle_timeout: 1, ..Default::default() }, ..Default::default() }, false);

/// Connects, sends `bytes`, and returns how long the server took to close the connection
/// (`None`: still open after 5 s).
fn closed_after(addr: &str, bytes: &[u8]) -> Option<Duration> {
    let mut tcp = TcpStream::connect(addr).expect("connect");
    tcp.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
    let started = Instant::now();
    tcp.write_all(bytes).expect("write");
    read_until_closed(&mut tcp, started)
}

fn read_until_closed(stream: &mut impl Read, started: Instant) -> Option<Duration> {
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return Some(started.elapsed()),
            Ok(_) => continue,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => return None,
            Err(_) => return Some(started.elapsed()),
        }
    }
}

fn host_port(url: &str) -> String {
    url.split("://").nth(1).expect("scheme").trim_end_matches('/').split('/').next().expect("host").to_string()
}

/// Opens a TLS connection to the embedded API, sends `bytes` and returns how long the server
/// took to close it (`None`: still open after 5 s).
fn tls_closed_after(lbdesk: &Lbdesk, bytes: &[u8]) -> Option<Duration> {
    use base64::Engine;
    use rustls::pki_types::pem::PemObject;
    let cluster = &lbdesk.kubeconfig["clusters"][0]["cluster"];
    let ca = cluster["certificate-authority-data"].as_str().expect("ca");
    let ca = base64::engine::general_purpose::STANDARD.decode(ca).expect("base64");
    let mut roots = rustls::RootCertStore::empty();
    roots.add(rustls::pki_types::CertificateDer::from_pem_slice(&ca).expect("pem")).expect("root");
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    let addr = host_port(cluster["server"].as_str().expect("server"));
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").expect("name");
    let connection = rustls::ClientConnection::new(Arc::new(config), name).expect("connection");
    let tcp = TcpStream::connect(&addr).expect("connect");
    tcp.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
    let mut tls = rustls::StreamOwned::new(connection, tcp);
    let started = Instant::now();
    tls.write_all(bytes).expect("handshake and write");
    tls.flush().expect("flush");
    read_until_closed(&mut tls, started)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_and_slow_connections_are_closed_on_both_ports() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let web = host_port(&lbdesk.url);
    let api = host_port(lbdesk.kubeconfig["clusters"][0]["cluster"]["server"].as_str().expect("server"));
    let lbdesk = Arc::new(lbdesk);
    let shared = lbdesk.clone();
    let (web_half, web_idle, api_silent, api_half) = tokio::task::spawn_blocking(move || {
        (
            // Half a request line, then nothing.
            closed_after(&web, b"GET /healthz HT"),
            // A whole request answered, then the connection idles.
            closed_after(&web, b"GET /healthz HTTP/1.1\r\nHost: lbdesk\r\n\r\n"),
            // A TCP connection that never starts its TLS handshake.
            closed_after(&api, b""),
            // A TLS connection with half a request line.
            tls_closed_after(&shared, b"GET /k8s/clusters/mgmt/api HT"),
        )
    })
    .await
    .expect("the clients ran");
    for (what, closed) in [
        ("web UI, half a request line", web_half),
        ("web UI, idle after a request", web_idle),
        ("embedded API, no TLS handshake", api_silent),
        ("embedded API, half a request line", api_half),
    ] {
        let after = closed.unwrap_or_else(|| panic!("{what}: still open after 5 s"));
        assert!(
            after >= Duration::from_millis(500) && after < Duration::from_secs(3),
            "{what}: closed after {after:?}"
        );
    }
    drop(lbdesk);
}
