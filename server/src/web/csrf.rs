//! CSRF guard: a state-changing request must come from a page of this site.
//!
//! Browsers send `Origin` with every POST and, on secure contexts, `Sec-Fetch-Site`; neither can
//! be set by a page's script. So a write is accepted only when `Sec-Fetch-Site` (if sent) says
//! `same-origin` and `Origin` (if sent) is this site's, and at least one of them was sent.
//!
//! "This site" is the configured public URL's origin. Comparing with the `Host` header instead
//! is not enough: after a DNS rebinding, `evil.example` resolves to lbdesk, and the browser sends
//! `Host` and `Origin` both naming `evil.example`. Without a public URL only origins that cannot
//! be rebound are accepted: an IP address (the listen address's, or any when it listens on all)
//! or `localhost` (browsers resolve it to loopback themselves) on the listen port, and only when
//! the `Host` header names the same place.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::{Method, StatusCode};

/// A web origin: scheme, host (lowercase; an IPv6 address in brackets) and port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    scheme: String,
    host: String,
    port: u16,
}

impl Origin {
    /// The origin of an absolute `http://` or `https://` URL (its path, if any, is ignored).
    fn of_url(url: &str) -> Option<Origin> {
        let uri: http::Uri = url.parse().ok()?;
        let scheme = uri.scheme_str()?.to_ascii_lowercase();
        let authority = uri.authority()?;
        if authority.as_str().contains('@') || authority.host().is_empty() {
            return None;
        }
        let default_port = match scheme.as_str() {
            "http" => 80,
            "https" => 443,
            _ => return None,
        };
        let port = authority.port_u16().unwrap_or(default_port);
        Some(Origin { host: authority.host().to_ascii_lowercase(), port, scheme })
    }

    /// An `Origin` header: a bare origin, no path (`null` and anything else is no origin).
    fn of_header(value: &str) -> Option<Origin> {
        let (_, rest) = value.split_once("://")?;
        if rest.contains(['/', '?', '#']) {
            return None;
        }
        Origin::of_url(value)
    }

    fn ip(&self) -> Option<IpAddr> {
        self.host.trim_start_matches('[').trim_end_matches(']').parse().ok()
    }
}

/// Where this site's pages come from, for the cross-site check.
#[derive(Clone, Debug)]
pub enum SiteOrigin {
    /// The public URL's origin: the only one accepted.
    Public(Origin),
    /// No public URL: the address lbdesk listens on, and the scheme it serves.
    Listen { scheme: &'static str, addr: SocketAddr },
}

impl SiteOrigin {
    /// The origin of `--public-url`, else of the listen address.
    pub fn new(public_url: Option<&str>, listen: SocketAddr, tls: bool) -> anyhow::Result<SiteOrigin> {
        match public_url {
            Some(url) => Origin::of_url(url).map(SiteOrigin::Public).ok_or_else(|| {
                anyhow::anyhow!(
                    "--public-url {url:?}: expected an http:// or https:// URL, such as https://lbdesk.example.com"
                )
            }),
            None => Ok(SiteOrigin::Listen { scheme: if tls { "https" } else { "http" }, addr: listen }),
        }
    }

    /// Whether a request with this `Origin` header (and `Host` header) comes from this site.
    fn allows(&self, origin: &str, host: Option<&str>) -> bool {
        let Some(origin) = Origin::of_header(origin) else {
            return false;
        };
        match self {
            SiteOrigin::Public(site) => origin == *site,
            SiteOrigin::Listen { scheme, addr } => {
                let host = host.and_then(|h| Origin::of_url(&format!("{scheme}://{h}")));
                if origin.scheme != *scheme || origin.port != addr.port() || host.as_ref() != Some(&origin) {
                    return false;
                }
                let listen = addr.ip();
                match origin.ip() {
                    Some(ip) => listen.is_unspecified() || ip == listen,
                    None => origin.host == "localhost" && (listen.is_loopback() || listen.is_unspecified()),
                }
            }
        }
    }
}

/// Refuses a state-changing request that does not come from a page of this site.
pub async fn same_origin_writes(State(site): State<SiteOrigin>, req: Request, next: Next) -> Response {
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        return next.run(req).await;
    }
    let headers = req.headers();
    let text = |name: &str| headers.get(name).map(|v| v.to_str().unwrap_or("?"));
    let fetch_site = text("sec-fetch-site");
    let origin = text("origin");
    let refusal = match (origin, fetch_site) {
        (_, Some(fetch)) if fetch != "same-origin" => Some("Cross-site request refused."),
        (Some(origin), _) if !site.allows(origin, text("host")) => Some("Cross-site request refused."),
        (None, None) => Some("Request refused: it does not say which site it comes from (no Origin header)."),
        _ => None,
    };
    let Some(message) = refusal else {
        return next.run(req).await;
    };
    tracing::warn!(
        path = %app::domain::policy::loggable(req.uri().path()),
        origin = %app::domain::policy::loggable(origin.unwrap_or("-")),
        fetch_site = %app::domain::policy::loggable(fetch_site.unwrap_or("-")),
        "refused a write that did not come from this site (behind a proxy, set --public-url to the address users type)"
    );
    super::refusal::refuse(req, StatusCode::FORBIDDEN, &app::error::AppError::Forbidden(message.into())).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listen(addr: &str, tls: bool) -> SiteOrigin {
        SiteOrigin::new(None, addr.parse().expect("address"), tls).expect("site")
    }

    #[test]
    fn with_a_public_url_only_its_origin_is_accepted() {
        let site =
            SiteOrigin::new(Some("https://LBdesk.bank.example/desk/"), "0.0.0.0:3000".parse().expect("a"), false)
                .expect("site");
        for ok in ["https://lbdesk.bank.example", "https://lbdesk.bank.example:443"] {
            assert!(site.allows(ok, Some("10.0.0.5:3000")), "{ok}");
        }
        for refused in [
            "http://lbdesk.bank.example",
            "https://lbdesk.bank.example:8443",
            "https://evil.example",
            "https://lbdesk.bank.example.evil.example",
            "https://user@lbdesk.bank.example",
            "https://lbdesk.bank.example/path",
            "null",
            "",
        ] {
            assert!(!site.allows(refused, Some("lbdesk.bank.example")), "{refused}");
        }
    }

    #[test]
    fn without_a_public_url_only_addresses_that_cannot_be_rebound_are_accepted() {
        let loopback = listen("127.0.0.1:3000", false);
        assert!(loopback.allows("http://127.0.0.1:3000", Some("127.0.0.1:3000")));
        assert!(loopback.allows("http://localhost:3000", Some("localhost:3000")));
        // A rebound name: Host and Origin agree, and both are the attacker's.
        assert!(!loopback.allows("http://evil.example:3000", Some("evil.example:3000")));
        // Host and Origin must agree; the scheme and port must be the listener's.
        assert!(!loopback.allows("http://127.0.0.1:3000", Some("evil.example:3000")));
        assert!(!loopback.allows("http://127.0.0.1:3000", None));
        assert!(!loopback.allows("https://127.0.0.1:3000", Some("127.0.0.1:3000")));
        assert!(!loopback.allows("http://127.0.0.1:4000", Some("127.0.0.1:4000")));
        assert!(!loopback.allows("http://10.0.0.5:3000", Some("10.0.0.5:3000")));

        let all = listen("0.0.0.0:3000", true);
        assert!(all.allows("https://10.0.0.5:3000", Some("10.0.0.5:3000")));
        assert!(all.allows("https://[fd00::5]:3000", Some("[fd00::5]:3000")));
        assert!(all.allows("https://localhost:3000", Some("localhost:3000")));
        assert!(!all.allows("https://lbdesk.bank.example:3000", Some("lbdesk.bank.example:3000")));
        assert!(!all.allows("http://10.0.0.5:3000", Some("10.0.0.5:3000")));

        let lan = listen("10.0.0.5:3000", false);
        assert!(!lan.allows("http://localhost:3000", Some("localhost:3000")));
    }

    #[test]
    fn a_public_url_must_be_an_http_url() {
        let addr = "127.0.0.1:3000".parse().expect("address");
        for bad in ["lbdesk.bank.example", "ftp://lbdesk.bank.example", "https://", "not a url"] {
            let e = SiteOrigin::new(Some(bad), addr, false).expect_err("refused").to_string();
            assert!(e.starts_with("--public-url"), "{bad}: {e}");
        }
    }
}
