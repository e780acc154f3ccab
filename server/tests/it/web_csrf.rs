//! The cross-site check: a write that does not come from this site's pages is refused before
//! it reaches a server function, whatever its encoding; this site's own writes go through.

use app::error::AppError;
use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{Backend, Lbdesk};
use crate::shared::Shared;

/// Shared by the tests here; lbdesk behind a proxy, with a public URL, is in `web_proxy`.
static LBDESK: Shared = Shared::new();

/// A client without the same-origin marker `browser()` sends: each request says what it says.
pub(crate) fn bare() -> reqwest::Client {
    reqwest::Client::builder().cookie_store(true).redirect(reqwest::redirect::Policy::none()).build().expect("client")
}

pub(crate) async fn sign_in(client: &reqwest::Client, lbdesk: &Lbdesk, origin: &str) -> reqwest::Response {
    client
        .post(format!("{}/api/login", lbdesk.url))
        .header("origin", origin)
        .form(&[("username", "alice"), ("password", "alice-demo")])
        .send()
        .await
        .expect("request")
}

/// Refused by the check (403 and its message), not by the server function.
pub(crate) async fn assert_refused(res: reqwest::Response, what: &str) {
    assert_eq!(res.status(), StatusCode::FORBIDDEN, "{what}");
    assert!(res.headers().get("set-cookie").is_none(), "{what}");
    let error: AppError = res.json().await.unwrap_or_else(|e| panic!("{what}: a typed error: {e}"));
    let AppError::Forbidden(message) = error else { panic!("{what}: {error:?}") };
    assert!(message.starts_with("Cross-site request refused") || message.contains("no Origin"), "{what}: {message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_from_another_site_are_refused_in_every_encoding() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    // alice is signed in: her cookie goes with every request below, as a browser would send it.
    let client = bare();
    let res = sign_in(&client, &lbdesk, &lbdesk.url).await;
    assert!(res.headers().get("set-cookie").is_some(), "a same-origin sign-in works");
    let act = format!("{}/api/ticket/act", lbdesk.url);
    let save = format!("{}/api/ticket/save", lbdesk.url);
    let evil = "https://evil.example";

    let form = client.post(&act).header("origin", evil).form(&[("name", "web-a"), ("action", "Delete")]);
    assert_refused(form.send().await.expect("request"), "a form-encoded write from another origin").await;
    let body = json!({"name": "web-a", "action": "Delete"});
    let json_act = client.post(&act).header("origin", evil).json(&body);
    assert_refused(json_act.send().await.expect("request"), "a JSON write from another origin").await;
    let json_save = client.post(&save).header("origin", evil).json(&json!({"form": {"name": "web-a"}}));
    assert_refused(json_save.send().await.expect("request"), "a JSON save from another origin").await;
    // A form's `text/plain` encoding, which needs no CORS preflight either.
    let plain = client.post(&act).header("origin", evil).header("content-type", "text/plain").body("name=web-a");
    assert_refused(plain.send().await.expect("request"), "a text/plain write from another origin").await;
    let opaque = client.post(&act).header("origin", "null").form(&[("name", "web-a"), ("action", "Delete")]);
    assert_refused(opaque.send().await.expect("request"), "a write from a sandboxed page (Origin: null)").await;

    // Neither Origin nor Sec-Fetch-Site: nothing says it comes from this site.
    let missing = client.post(&act).form(&[("name", "web-a"), ("action", "Delete")]);
    assert_refused(missing.send().await.expect("request"), "a write without Origin").await;
    // Sec-Fetch-Site other than same-origin, even with a matching Origin.
    for site in ["cross-site", "same-site", "none"] {
        let res = client
            .post(&act)
            .header("origin", &lbdesk.url)
            .header("sec-fetch-site", site)
            .form(&[("name", "web-a"), ("action", "Delete")])
            .send()
            .await
            .expect("request");
        assert_refused(res, &format!("Sec-Fetch-Site: {site}")).await;
    }
    // A cross-site sign-in (login CSRF) is refused too.
    assert_refused(sign_in(&bare(), &lbdesk, evil).await, "a cross-site sign-in").await;

    // This site's own writes reach the server function: Origin, Sec-Fetch-Site, or both.
    let url = lbdesk.url.as_str();
    for (origin, fetch_site) in [(Some(url), None), (None, Some("same-origin")), (Some(url), Some("same-origin"))] {
        let mut req =
            bare().post(format!("{url}/api/login")).form(&[("username", "alice"), ("password", "alice-demo")]);
        if let Some(origin) = origin {
            req = req.header("origin", origin);
        }
        if let Some(site) = fetch_site {
            req = req.header("sec-fetch-site", site);
        }
        let res = req.send().await.expect("request");
        assert!(res.headers().get("set-cookie").is_some(), "{origin:?} {fetch_site:?}: {}", res.status());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebound_dns_name_is_not_this_site() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let port = lbdesk.url.rsplit(':').next().expect("port").to_string();
    // After a DNS rebinding the browser sends Host and Origin both naming the attacker's name.
    let rebound = format!("evil.example:{port}");
    let res = bare()
        .post(format!("{}/api/login", lbdesk.url))
        .header("host", &rebound)
        .header("origin", format!("http://{rebound}"))
        .header("sec-fetch-site", "same-origin")
        .form(&[("username", "alice"), ("password", "alice-demo")])
        .send()
        .await
        .expect("request");
    assert_refused(res, "a rebound name").await;
    // `localhost` cannot be rebound: it is accepted on the loopback listener.
    let local = format!("localhost:{port}");
    let res = bare()
        .post(format!("{}/api/login", lbdesk.url))
        .header("host", &local)
        .header("origin", format!("http://{local}"))
        .form(&[("username", "alice"), ("password", "alice-demo")])
        .send()
        .await
        .expect("request");
    assert!(res.headers().get("set-cookie").is_some(), "{}", res.status());
}

/// A refused write leaves its connection usable: a client that keeps connections alive (every
/// HTTP client does) must not lose the request it sends next on the same one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_request_keeps_its_connection_for_the_next() {
    use std::io::{Read, Write};
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let host = lbdesk.url.trim_start_matches("http://").to_string();
    let body = "name=web-a&action=Delete";
    // Anonymous (401) and cross-site (403): both answered before any server function runs.
    for (origin, refused) in [(lbdesk.url.as_str(), "401"), ("https://evil.example", "403")] {
        let answers = tokio::task::spawn_blocking({
            let (host, origin) = (host.clone(), origin.to_string());
            move || {
                let mut tcp = std::net::TcpStream::connect(&host).expect("connect");
                tcp.set_read_timeout(Some(std::time::Duration::from_secs(5))).expect("timeout");
                let head = format!(
                    "POST /api/me HTTP/1.1\r\nhost: {host}\r\norigin: {origin}\r\n\
                     content-type: application/x-www-form-urlencoded\r\ncontent-length: {}\r\n\r\n",
                    body.len()
                );
                tcp.write_all(head.as_bytes()).expect("head");
                // The body arrives after the head, as it does over a slow or busy network.
                std::thread::sleep(std::time::Duration::from_millis(300));
                tcp.write_all(body.as_bytes()).expect("body");
                tcp.write_all(format!("GET /healthz HTTP/1.1\r\nhost: {host}\r\n\r\n").as_bytes()).expect("next");
                let mut answers = Vec::new();
                let mut buf = [0u8; 4096];
                while let Ok(n @ 1..) = tcp.read(&mut buf) {
                    answers.extend_from_slice(&buf[..n]);
                    if answers.ends_with(b"ok") {
                        break;
                    }
                }
                String::from_utf8_lossy(&answers).into_owned()
            }
        })
        .await
        .expect("the exchange");
        assert!(answers.starts_with(&format!("HTTP/1.1 {refused}")), "{answers}");
        assert_eq!(answers.matches("HTTP/1.1 ").count(), 2, "both requests are answered: {answers}");
        assert!(answers.ends_with("ok"), "{answers}");
    }
}
