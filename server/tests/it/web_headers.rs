//! The security headers: every kind of response of the web port carries them, and a page's
//! policy names the nonce its own inline scripts carry (and no other inline script runs).

use reqwest::StatusCode;
use reqwest::header::HeaderMap;

use crate::helpers::{Backend, Lbdesk, Options, browser};
use crate::shared::Shared;

/// The module's lbdesk serves a site of its own (`with_site`).
static LBDESK: Shared = Shared::with(with_site, false);

/// The policy's directives by name.
fn directives(headers: &HeaderMap) -> Vec<(String, String)> {
    let policy = headers.get("content-security-policy").expect("a Content-Security-Policy").to_str().expect("ascii");
    policy
        .split(';')
        .map(|d| d.trim())
        .filter(|d| !d.is_empty())
        .map(|d| {
            d.split_once(' ').map(|(n, v)| (n.to_string(), v.to_string())).unwrap_or((d.to_string(), String::new()))
        })
        .collect()
}

fn directive(headers: &HeaderMap, name: &str) -> String {
    directives(headers).into_iter().find(|(n, _)| n == name).map(|(_, v)| v).unwrap_or_else(|| panic!("no {name}"))
}

/// The headers every response has, whatever it is; `what` names it in a failure.
fn assert_protected(headers: &HeaderMap, what: &str) {
    assert_eq!(headers.get("x-content-type-options").map(|v| v.as_bytes()), Some(&b"nosniff"[..]), "{what}");
    assert_eq!(headers.get("x-frame-options").map(|v| v.as_bytes()), Some(&b"DENY"[..]), "{what}");
    assert_eq!(headers.get("referrer-policy").map(|v| v.as_bytes()), Some(&b"same-origin"[..]), "{what}");
    assert_eq!(directive(headers, "default-src"), "'self'", "{what}");
    assert_eq!(directive(headers, "frame-ancestors"), "'none'", "{what}");
    assert_eq!(directive(headers, "object-src"), "'none'", "{what}");
    assert_eq!(directive(headers, "base-uri"), "'none'", "{what}");
    assert_eq!(directive(headers, "form-action"), "'self'", "{what}");
    assert_eq!(directive(headers, "connect-src"), "'self'", "{what}");
    assert_eq!(directive(headers, "style-src"), "'self'", "{what}");
    let script = directive(headers, "script-src");
    assert!(script.starts_with("'self' ") && script.ends_with(" 'wasm-unsafe-eval'"), "{what}: {script}");
    for (name, value) in directives(headers) {
        assert!(!value.contains("'unsafe-eval'") && !value.contains('*'), "{what}: {name} {value}");
        assert!(!value.contains("'unsafe-inline'") || name == "style-src-attr", "{what}: {name} {value}");
    }
}

/// The nonce a page's policy allows, if any.
fn nonce(headers: &HeaderMap) -> Option<String> {
    directive(headers, "script-src")
        .split(' ')
        .find_map(|s| s.strip_prefix("'nonce-").and_then(|n| n.strip_suffix('\'')).map(str::to_string))
}

/// lbdesk serving a site root with a stylesheet, a script and the favicon, as the build makes
/// them.
fn with_site() -> Options {
    let dir = crate::shared::files("web_headers");
    std::fs::create_dir_all(dir.join("pkg")).expect("pkg");
    std::fs::write(dir.join("pkg/lbdesk.css"), "body { margin: 0 }").expect("css");
    std::fs::write(dir.join("pkg/lbdesk.js"), "export default function () {}").expect("js");
    std::fs::write(dir.join("favicon.svg"), "<svg xmlns=\"http://www.w3.org/2000/svg\"/>").expect("svg");
    Options { site_root: dir, ..Default::default() }
}

async fn get(client: &reqwest::Client, lbdesk: &Lbdesk, path: &str) -> reqwest::Response {
    client.get(format!("{}{path}", lbdesk.url)).send().await.expect("request")
}

/// Every `<script …>` tag of a page.
fn script_tags(html: &str) -> Vec<&str> {
    html.match_indices("<script").map(|(i, _)| &html[i..i + html[i..].find('>').expect("tag ends")]).collect()
}

/// Whether a page's `<script>` may be there under its policy: one of this site's files, or
/// inline with the page's nonce.
fn allowed(tag: &str, nonce: &str) -> bool {
    tag.contains(&format!("nonce=\"{nonce}\"")) || tag.contains(" src=")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_response_of_the_web_port_carries_the_security_headers() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let client = browser();

    // A page: its inline scripts carry the nonce its policy names, a fresh one per response.
    let page = get(&client, &lbdesk, "/login").await;
    assert_eq!(page.status(), StatusCode::OK);
    assert_protected(page.headers(), "the sign-in page");
    let first = nonce(page.headers()).expect("a page's policy names a nonce");
    assert!(first.len() >= 22, "128 bits at least: {first}");
    let html = page.text().await.expect("html");
    let scripts = script_tags(&html);
    assert!(!scripts.is_empty(), "the page has its hydration script");
    for tag in &scripts {
        assert!(allowed(tag, &first), "not allowed: {tag}");
    }
    assert!(!html.contains("<style"), "no inline style element");
    let again = get(&client, &lbdesk, "/login").await;
    assert_ne!(nonce(again.headers()), Some(first), "each page its own nonce");

    // A redirect, a server function's refusal and answer, static files, a 404, health.
    let redirect = get(&client, &lbdesk, "/tickets").await;
    assert_eq!(redirect.status(), StatusCode::SEE_OTHER);
    assert_protected(redirect.headers(), "the redirect to sign-in");
    let refused = client.post(format!("{}/api/me", lbdesk.url)).json(&serde_json::json!({})).send().await.expect("req");
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    assert_protected(refused.headers(), "a server function's 401");
    assert_eq!(nonce(refused.headers()), None, "no nonce where no page is");
    let cross = reqwest::Client::new()
        .post(format!("{}/api/login", lbdesk.url))
        .header("origin", "https://evil.example")
        .form(&[("username", "admin"), ("password", "admin-demo")])
        .send()
        .await
        .expect("request");
    assert_eq!(cross.status(), StatusCode::FORBIDDEN);
    assert_protected(cross.headers(), "the cross-site refusal");
    for (path, content_type) in
        [("/pkg/lbdesk.css", "text/css"), ("/pkg/lbdesk.js", "javascript"), ("/favicon.svg", "image/svg+xml")]
    {
        let res = get(&client, &lbdesk, path).await;
        assert_eq!(res.status(), StatusCode::OK, "{path}");
        assert!(res.headers()["content-type"].to_str().expect("ascii").contains(content_type), "{path}");
        assert_protected(res.headers(), path);
    }
    // The page names the bundle by its version: kept for good. Unversioned: revalidated.
    let version = html
        .split("/bundle/")
        .nth(1)
        .and_then(|v| v.split('/').next())
        .unwrap_or_else(|| panic!("a versioned bundle: {html}"));
    assert!(version.len() == 16 && version.bytes().all(|b| b.is_ascii_hexdigit()), "{version}");
    assert!(html.contains(&format!("/bundle/{version}/pkg/lbdesk.js")), "{html}");
    assert!(html.contains(&format!(r#"<link rel="stylesheet" href="/bundle/{version}/pkg/lbdesk.css""#)), "{html}");
    for (path, cache) in [
        (format!("/bundle/{version}/pkg/lbdesk.js"), "public, max-age=31536000, immutable"),
        ("/pkg/lbdesk.js".to_string(), "no-cache"),
    ] {
        let res = get(&client, &lbdesk, &path).await;
        assert_eq!(res.status(), StatusCode::OK, "{path}");
        assert_eq!(res.headers()["cache-control"], cache, "{path}");
        assert_eq!(res.headers()["vary"], "accept-encoding", "{path}");
        assert_protected(res.headers(), &path);
        assert_eq!(res.text().await.expect("text"), "export default function () {}", "{path}");
    }
    let stale = get(&client, &lbdesk, "/bundle/0123456789abcdef/pkg/lbdesk.js").await;
    assert_eq!(stale.status(), StatusCode::NOT_FOUND, "another version is not served as this one");
    let missing = get(&client, &lbdesk, "/pkg/no-such-file.js").await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    assert_protected(missing.headers(), "a missing file");
    assert_protected(get(&client, &lbdesk, "/healthz").await.headers(), "/healthz");

    // Signed in: a screen, and a server function's answer.
    let res = client
        .post(format!("{}/api/login", lbdesk.url))
        .form(&[("username", "admin"), ("password", "admin-demo")])
        .send()
        .await
        .expect("request");
    assert!(res.status().is_success() || res.status().is_redirection(), "{}", res.status());
    assert_protected(res.headers(), "the sign-in's answer");
    let screen = get(&client, &lbdesk, "/loadbalancers").await;
    assert_eq!(screen.status(), StatusCode::OK);
    assert_protected(screen.headers(), "a screen");
    let screen_nonce = nonce(screen.headers()).expect("a nonce");
    let html = screen.text().await.expect("html");
    for tag in script_tags(&html) {
        assert!(allowed(tag, &screen_nonce), "not allowed: {tag}");
    }
    let unknown = get(&client, &lbdesk, "/no-such-page").await;
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
    assert_protected(unknown.headers(), "the not-found page");
    assert!(nonce(unknown.headers()).is_some(), "the not-found page is a page too");
}
