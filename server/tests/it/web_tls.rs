//! Serving the web UI over TLS, with the certificate it is given.

use std::path::PathBuf;

use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, SanType};
use reqwest::StatusCode;
use server::config::HttpArgs;

use crate::helpers::{Backend, Options};
use crate::shared::Shared;

/// The module's lbdesk serves its web UI over TLS.
static LBDESK: Shared = Shared::with(tls, false);

/// The folder of a module's certificates, beside its shared lbdesk's data (made once): the
/// server's (`cert.pem`, `key.pem`, for 127.0.0.1 and localhost) and its CA's (`ca.pem`).
pub(crate) fn certificates(module: &str) -> PathBuf {
    let dir = crate::shared::files(module);
    if !dir.join("ca.pem").exists() {
        let ca = certificate(&dir);
        std::fs::write(dir.join("ca.pem"), ca).expect("write");
    }
    dir
}

fn tls() -> Options {
    let dir = certificates("web_tls");
    let http =
        HttpArgs { tls_cert: Some(dir.join("cert.pem")), tls_key: Some(dir.join("key.pem")), ..Default::default() };
    Options { http, ..Default::default() }
}

/// A new certificate authority: its certificate, and the issuer that signs with it.
pub(crate) fn authority() -> (rcgen::Certificate, Issuer<'static, KeyPair>) {
    let ca_key = KeyPair::generate().expect("key");
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("params");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca.self_signed(&ca_key).expect("CA");
    (ca_cert, Issuer::new(ca, ca_key))
}

/// A CA, and a certificate it signed for 127.0.0.1 and localhost, written as PEM files (the
/// certificate file holds the chain); returns the CA's PEM.
pub(crate) fn certificate(dir: &std::path::Path) -> String {
    let (ca_cert, issuer) = authority();
    let key = KeyPair::generate().expect("key");
    let mut params = CertificateParams::new(vec!["localhost".to_string()]).expect("params");
    params.subject_alt_names.push(SanType::IpAddress("127.0.0.1".parse().expect("ip")));
    let cert = params.signed_by(&key, &issuer).expect("certificate");
    std::fs::write(dir.join("cert.pem"), format!("{}{}", cert.pem(), ca_cert.pem())).expect("write");
    std::fs::write(dir.join("key.pem"), key.serialize_pem()).expect("write");
    ca_cert.pem()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_ui_serves_https_with_the_given_certificate_and_secure_cookies() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let ca = std::fs::read_to_string(certificates("web_tls").join("ca.pem")).expect("the CA");
    let https = lbdesk.url.replacen("http://", "https://", 1);
    let client = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(ca.as_bytes()).expect("pem"))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let res = client.get(format!("{https}/healthz")).send().await.expect("https answers");
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.text().await.expect("body"), "ok");
    // The session cookie is Secure, and this site's origin is the https one.
    let res = client
        .post(format!("{https}/api/login"))
        .header("origin", &https)
        .form(&[("username", "admin"), ("password", "admin-demo")])
        .send()
        .await
        .expect("request");
    let cookie = res.headers().get("set-cookie").expect("signed in").to_str().expect("ascii");
    assert!(cookie.contains("Secure"), "{cookie}");
    // Plain HTTP on the same port gets no page.
    let plain = reqwest::Client::new().get(format!("{}/healthz", lbdesk.url)).send().await;
    assert!(plain.is_err() || !plain.as_ref().is_ok_and(|r| r.status().is_success()), "{plain:?}");
}
