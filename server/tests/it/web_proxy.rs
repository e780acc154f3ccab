//! lbdesk behind a proxy: users type its public URL, the proxy reaches lbdesk on its own
//! address. Only the public URL's origin may write, and the session cookie is `Secure`.

use crate::helpers::{Backend, Options, browser};
use crate::shared::Shared;
use crate::web_csrf::{assert_refused, bare, sign_in};

/// The module's lbdesk has the public URL `https://lbdesk.bank.example`.
static LBDESK: Shared =
    Shared::with(|| Options { public_url: Some("https://lbdesk.bank.example".into()), ..Default::default() }, false);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_public_url_only_its_origin_may_write() {
    // Behind a proxy: users type the public URL, the proxy reaches lbdesk on its own address.
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let res = sign_in(&bare(), &lbdesk, "https://lbdesk.bank.example").await;
    let cookie = res.headers().get("set-cookie").and_then(|c| c.to_str().ok()).unwrap_or_default();
    assert!(!cookie.is_empty(), "the public origin signs in: {}", res.status());
    // Behind an HTTPS address the session cookie is sent over HTTPS only.
    assert!(cookie.contains("Secure"), "{cookie}");
    // The address the request reached (its Host) is not what users type.
    assert_refused(sign_in(&bare(), &lbdesk, &lbdesk.url).await, "the listen address behind a proxy").await;
    assert_refused(sign_in(&bare(), &lbdesk, "http://lbdesk.bank.example").await, "plain HTTP").await;
    assert_refused(sign_in(&browser(), &lbdesk, "https://lbdesk.bank.example.evil.example").await, "a longer name")
        .await;
}
