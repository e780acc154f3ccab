//! The network-policy driver contract (DESIGN §6, after the LBCF webhooks): `POST <url>/<hook>`
//! with `recordID` (stable across retries of one operation) and `retryID` (new per attempt);
//! answers `Succ`, `Fail` or `Running` with `minRetryDelayInSeconds`. The driver never retries:
//! lbdesk does, and anything that is not the contract is a retry, never a crash.

pub mod sim;

use std::time::Duration;

use app::domain::crd::DriverState;
use serde::{Deserialize, Deserializer, Serialize};

/// The hooks lbdesk calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Hook {
    #[serde(rename = "requestNetworkPolicy")]
    RequestNetworkPolicy,
    #[serde(rename = "revokeNetworkPolicy")]
    RevokeNetworkPolicy,
}

impl Hook {
    /// The hook's name in metrics.
    pub fn label(self) -> &'static str {
        match self {
            Hook::RequestNetworkPolicy => "request",
            Hook::RevokeNetworkPolicy => "revoke",
        }
    }

    pub fn path(self) -> &'static str {
        match self {
            Hook::RequestNetworkPolicy => "requestNetworkPolicy",
            Hook::RevokeNetworkPolicy => "revokeNetworkPolicy",
        }
    }
}

/// What a hook is asked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DriverRequest {
    #[serde(rename = "recordID")]
    pub record_id: String,
    #[serde(rename = "retryID")]
    pub retry_id: String,
    /// The ticket the policy is for.
    pub ticket: String,
    pub loadbalancer: String,
    pub cluster: String,
    pub namespace: String,
    /// Tier-2 VE address.
    pub veip: String,
    /// Tier-1 LTM address.
    pub ltmip: String,
}

/// A hook's answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DriverAnswer {
    pub status: DriverState,
    #[serde(default)]
    pub msg: String,
    /// LBCF sends this as a string; numbers are accepted too.
    #[serde(
        default,
        rename = "minRetryDelayInSeconds",
        alias = "minRetryDelayinSeconds",
        deserialize_with = "seconds"
    )]
    pub min_retry_delay: u64,
}

fn seconds<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        Number(u64),
        Text(String),
    }
    match Either::deserialize(d)? {
        Either::Number(n) => Ok(n),
        Either::Text(t) if t.trim().is_empty() => Ok(0),
        Either::Text(t) => t.trim().parse().map_err(serde::de::Error::custom),
    }
}

/// Why a call did not produce an answer (each one is retried with backoff).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DriverError {
    #[error("the network-policy driver did not answer {hook} within {seconds} s")]
    Timeout { hook: &'static str, seconds: u64 },
    #[error("the network-policy driver could not be reached for {hook}: {reason}")]
    Unreachable { hook: &'static str, reason: String },
    #[error("the network-policy driver answered {hook} with HTTP {code}")]
    Status { hook: &'static str, code: u16 },
    #[error("the network-policy driver's answer to {hook} is not the contract: {reason}")]
    Invalid { hook: &'static str, reason: String },
}

/// Per-hook timeouts, each 1–60 s (LBCF's driver spec lets each hook have its own).
#[derive(Clone, Debug)]
pub struct Timeouts {
    pub request: Duration,
    pub revoke: Duration,
}

impl Timeouts {
    /// The same timeout for every hook, clamped to 1–60 s.
    pub fn uniform(seconds: u64) -> Timeouts {
        Timeouts::new(seconds, None, None)
    }

    /// `seconds` for every hook but those given their own, each clamped to 1–60 s.
    pub fn new(seconds: u64, request: Option<u64>, revoke: Option<u64>) -> Timeouts {
        let of = |own: Option<u64>| Duration::from_secs(own.unwrap_or(seconds).clamp(1, 60));
        Timeouts { request: of(request), revoke: of(revoke) }
    }

    fn of(&self, hook: Hook) -> Duration {
        match hook {
            Hook::RequestNetworkPolicy => self.request,
            Hook::RevokeNetworkPolicy => self.revoke,
        }
    }
}

/// The largest answer read: the contract's answers are a few hundred bytes; a larger one is
/// not the contract, and is not read whole.
const MOST_BYTES: usize = 64 << 10;

/// The HTTP client of the driver.
#[derive(Clone, Debug)]
pub struct DriverClient {
    http: reqwest::Client,
    url: String,
    timeouts: Timeouts,
}

impl DriverClient {
    pub fn new(url: &str, timeouts: Timeouts) -> anyhow::Result<DriverClient> {
        let http = reqwest::Client::builder().pool_idle_timeout(std::time::Duration::from_secs(15)).build()?;
        Ok(DriverClient { http, url: url.trim_end_matches('/').to_string(), timeouts })
    }

    /// Calls `hook` once (a new retryID); the caller retries.
    pub async fn call(&self, hook: Hook, mut request: DriverRequest) -> Result<DriverAnswer, DriverError> {
        request.retry_id = uuid::Uuid::new_v4().to_string();
        let timeout = self.timeouts.of(hook);
        let name = hook.path();
        let sent = self.http.post(format!("{}/{name}", self.url)).json(&request).timeout(timeout).send().await;
        let failed = |e: reqwest::Error| {
            if e.is_timeout() {
                DriverError::Timeout { hook: name, seconds: timeout.as_secs() }
            } else {
                DriverError::Unreachable { hook: name, reason: causes(&e) }
            }
        };
        let response = sent.map_err(failed)?;
        let code = response.status();
        if !code.is_success() {
            return Err(DriverError::Status { hook: name, code: code.as_u16() });
        }
        let body = crate::net::read_at_most(response, MOST_BYTES).await.map_err(failed)?.ok_or_else(|| {
            DriverError::Invalid { hook: name, reason: format!("an answer of more than {} KiB", MOST_BYTES >> 10) }
        })?;
        serde_json::from_slice(&body).map_err(|e| DriverError::Invalid { hook: name, reason: e.to_string() })
    }
}

/// An error with its causes ("error sending request: connection refused"), for the ticket.
fn causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_read_the_lbcf_shapes() {
        let a: DriverAnswer =
            serde_json::from_str(r#"{"status":"Running","msg":"","minRetryDelayinSeconds":"3"}"#).expect("LBCF");
        assert_eq!((a.status, a.min_retry_delay), (DriverState::Running, 3));
        let b: DriverAnswer = serde_json::from_str(r#"{"status":"Succ","minRetryDelayInSeconds":0}"#).expect("number");
        assert_eq!(b.status, DriverState::Succ);
        assert!(serde_json::from_str::<DriverAnswer>(r#"{"status":"Maybe"}"#).is_err());
        assert!(serde_json::from_str::<DriverAnswer>(r#"{"status":"Fail","minRetryDelayInSeconds":"soon"}"#).is_err());
    }

    #[test]
    fn timeouts_stay_within_one_and_sixty_seconds_and_a_hook_may_have_its_own() {
        assert_eq!(Timeouts::uniform(0).request, Duration::from_secs(1));
        assert_eq!(Timeouts::uniform(600).revoke, Duration::from_secs(60));
        let own = Timeouts::new(10, None, Some(30));
        assert_eq!(
            (own.of(Hook::RequestNetworkPolicy), own.of(Hook::RevokeNetworkPolicy)),
            (Duration::from_secs(10), Duration::from_secs(30))
        );
    }
}
