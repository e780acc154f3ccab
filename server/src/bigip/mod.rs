//! lbdesk's read-only BIG-IP client (iControl REST over HTTPS, basic auth) and the BIG-IP
//! simulator (`sim`). The client only ever sends GETs: what BIG-IP runs is CIS's to write.
//! Every answer is outside input: a timeout, an HTML page, a 401, a body over the size limit
//! or a JSON of another shape is a [`ReadError`] saying which, never a panic; no answer or
//! credential is logged.

pub mod cis_sim;
pub mod sim;

use std::time::Duration;

use app::domain::bigip::{self, Member, Rejection};
use serde_json::Value;

/// The largest answer read (a tenant of 500 listeners' declaration is about 1 MiB).
const MOST_BYTES: usize = 16 << 20;

/// Why BIG-IP could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// No answer: refused, reset, TLS failed, or the timeout passed.
    #[error("BIG-IP unreachable: {0}")]
    Unreachable(String),
    /// BIG-IP refused the credentials (401/403).
    #[error("BIG-IP refused lbdesk's credentials ({0})")]
    Unauthorized(u16),
    /// An answer lbdesk cannot use: an error status, not JSON, too large, another shape.
    #[error("BIG-IP answered {0}")]
    Bad(String),
}

/// How lbdesk reaches one BIG-IP's management address.
#[derive(Clone, Debug, Default)]
pub struct Access {
    /// `https://<address>` (a port if not 443).
    pub url: String,
    pub username: String,
    pub password: String,
    /// The CA bundle (PEM) its management certificate is checked against; none: the system's.
    pub ca_pem: Option<Vec<u8>>,
    /// Accept any certificate (management certificates are often self-signed): shown on the
    /// load balancer's page whenever set.
    pub skip_verify: bool,
    pub timeout: Duration,
}

/// A read-only client of one BIG-IP.
pub struct BigIp {
    http: reqwest::Client,
    url: String,
    username: String,
    password: String,
}

impl std::fmt::Debug for BigIp {
    // NB: never the password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BigIp").field("url", &self.url).field("username", &self.username).finish_non_exhaustive()
    }
}

impl BigIp {
    /// A client of the BIG-IP `access` describes; a CA bundle that is not PEM is an error.
    pub fn new(access: &Access) -> Result<BigIp, String> {
        let mut builder = reqwest::Client::builder()
            .timeout(access.timeout)
            .connect_timeout(access.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .danger_accept_invalid_certs(access.skip_verify);
        if let Some(pem) = &access.ca_pem {
            let certificates =
                reqwest::Certificate::from_pem_bundle(pem).map_err(|e| format!("the CA bundle is not PEM: {e}"))?;
            for certificate in certificates {
                builder = builder.add_root_certificate(certificate);
            }
        }
        let http = builder.build().map_err(|e| format!("could not build an HTTPS client: {e}"))?;
        let url = access.url.trim_end_matches('/').to_string();
        Ok(BigIp { http, url, username: access.username.clone(), password: access.password.clone() })
    }

    /// GETs `path`: its JSON (`Null` for 204), or why not.
    async fn get(&self, path: &str) -> Result<Value, ReadError> {
        let request = self.http.get(format!("{}{path}", self.url)).basic_auth(&self.username, Some(&self.password));
        let response = request.send().await.map_err(|e| ReadError::Unreachable(without_url(&e)))?;
        let status = response.status();
        if matches!(status.as_u16(), 401 | 403) {
            return Err(ReadError::Unauthorized(status.as_u16()));
        }
        // NB: what a proxy or a restarting BIG-IP answers: nothing of BIG-IP's own.
        if matches!(status.as_u16(), 502..=504) {
            return Err(ReadError::Unreachable(format!("{status} for {path}")));
        }
        if status == reqwest::StatusCode::NO_CONTENT {
            return Ok(Value::Null);
        }
        let body = crate::net::read_at_most(response, MOST_BYTES)
            .await
            .map_err(|e| ReadError::Unreachable(without_url(&e)))?
            .ok_or_else(|| ReadError::Bad(format!("more than {} MiB for {path}", MOST_BYTES >> 20)))?;
        let json = serde_json::from_slice::<Value>(&body);
        match (status.is_success(), json) {
            (true, Ok(value)) => Ok(value),
            (true, Err(_)) => Err(ReadError::Bad(format!("something other than JSON for {path} ({})", preview(&body)))),
            (false, Ok(value)) => {
                let message = value.get("message").and_then(Value::as_str).unwrap_or_default();
                Err(ReadError::Bad(format!("{} for {path}: {message}", status.as_u16())))
            }
            (false, Err(_)) => Err(ReadError::Bad(format!("{} for {path} ({})", status.as_u16(), preview(&body)))),
        }
    }

    /// The tenant BIG-IP runs (`None`: it holds none by that name).
    pub async fn tenant(&self, tenant: &str) -> Result<Option<Value>, ReadError> {
        let answer = self.get(&format!("/mgmt/shared/appsvcs/declare/{tenant}")).await?;
        bigip::tenant_of(&answer, tenant).map_err(ReadError::Bad)
    }

    /// BIG-IP's refusal of the last declaration of `tenant`, if it refused it.
    pub async fn rejection(&self, tenant: &str) -> Result<Option<Rejection>, ReadError> {
        let tasks = self.get("/mgmt/shared/appsvcs/task").await?;
        bigip::rejection(&tasks, tenant).map_err(ReadError::Bad)
    }

    /// The members of pool `tenant`/`app`/`pool` and their states.
    pub async fn members(&self, tenant: &str, app: &str, pool: &str) -> Result<Vec<Member>, ReadError> {
        let stats = self.get(&bigip::members_path(tenant, app, pool)).await?;
        bigip::members_of(&stats).map_err(ReadError::Bad)
    }
}

/// A transport error without its URL (which holds nothing secret, but says nothing new).
fn without_url(error: &reqwest::Error) -> String {
    let kind = if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "could not connect"
    } else {
        "the connection failed"
    };
    match std::error::Error::source(error) {
        Some(source) => format!("{kind}: {source}"),
        None => kind.to_string(),
    }
}

/// The start of a body, as text, for a message.
fn preview(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(60)]);
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
