//! Security headers on every response of the web port, and the nonce that lets a page's own
//! inline scripts (Leptos's hydration and streaming scripts) run under the Content-Security-Policy.

use std::sync::Arc;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use base64::Engine;
use http::{HeaderValue, header};
use leptos::nonce::Nonce;
use leptos::prelude::{provide_context, use_context};

/// The policy before and after the nonce. Only this site's scripts and WebAssembly run
/// (`'wasm-unsafe-eval'` compiles the bundle, no `eval` of JavaScript), inline scripts only with
/// the response's nonce; nothing is framed, embedded, or sent elsewhere. NB:
/// `style-src-attr 'unsafe-inline'`: the usage bars size themselves with a `style` attribute;
/// it allows attributes only, never a `<style>` element or a stylesheet from elsewhere.
const SCRIPT_SRC: &str = "default-src 'self'; script-src 'self'";
const REST: &str = " 'wasm-unsafe-eval'; style-src 'self'; style-src-attr 'unsafe-inline'; img-src 'self' data:; \
                    connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The Content-Security-Policy, with the nonce of the page's inline scripts when there is one.
pub fn content_security_policy(nonce: Option<&str>) -> String {
    match nonce {
        Some(nonce) => format!("{SCRIPT_SRC} 'nonce-{nonce}'{REST}"),
        None => format!("{SCRIPT_SRC}{REST}"),
    }
}

/// This response's nonce, handed from the middleware to the page's render in the request.
#[derive(Clone)]
struct CspNonce(Arc<str>);

impl CspNonce {
    /// 128 random bits, as Leptos makes its own.
    fn new() -> CspNonce {
        let bytes: [u8; 16] = rand::random();
        CspNonce(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes).into())
    }
}

/// Sets the security headers on whatever the inner service answers (pages, server functions,
/// static files, redirects, errors); an HTML page's policy names the nonce it was rendered with.
pub async fn security_headers(mut req: Request, next: Next) -> Response {
    let nonce = CspNonce::new();
    req.extensions_mut().insert(nonce.clone());
    let mut res = next.run(req).await;
    let html = super::is_page(&res);
    let headers = res.headers_mut();
    let policy = content_security_policy(html.then_some(&*nonce.0));
    let policy = HeaderValue::try_from(policy).unwrap_or_else(|_| HeaderValue::from_static("default-src 'none'"));
    headers.insert(header::CONTENT_SECURITY_POLICY, policy);
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    res
}

/// Leptos context for a page's render and a server function's call: a page's inline scripts
/// carry the nonce the middleware puts in the response's policy (replacing the one Leptos made,
/// which no header would name); both speak the locale the session guard chose for the request.
pub fn page_context() {
    let Some(parts) = use_context::<http::request::Parts>() else { return };
    if let Some(nonce) = parts.extensions.get::<CspNonce>() {
        provide_context(Nonce::from_value(nonce.0.clone()));
    }
    if let Some(locale) = parts.extensions.get::<app::i18n::Locale>() {
        provide_context(*locale);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_allows_only_this_sites_scripts_and_the_nonce() {
        let page = content_security_policy(Some("abc"));
        assert!(page.contains("script-src 'self' 'nonce-abc' 'wasm-unsafe-eval';"), "{page}");
        assert!(page.contains("frame-ancestors 'none'") && page.contains("object-src 'none'"), "{page}");
        assert!(!page.contains(" 'unsafe-eval'"), "{page}");
        assert!(!page.replace("style-src-attr 'unsafe-inline'", "").contains("unsafe-inline"), "{page}");
        let other = content_security_policy(None);
        assert!(other.contains("script-src 'self' 'wasm-unsafe-eval';") && !other.contains("nonce"), "{other}");
        assert_ne!(CspNonce::new().0, CspNonce::new().0);
    }
}
