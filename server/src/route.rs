//! `lbdesk route -f FILE… --vs IP:PORT`: where requests go, offline. The same YAML documents as
//! `lbdesk render`, the same function as the Rules screen's tester (`domain::routing`, the
//! semantics of the generated iRule); one JSON request per line in, one JSON answer per line out.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use anyhow::{Context, anyhow};
use app::domain::as3::names;
use app::domain::crd::LbruleSpec;
use app::domain::routing::{Request, Router};
use kube::ResourceExt;
use serde::{Deserialize, Serialize};

/// A request as a line of standard input gives it; every field optional.
#[derive(Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Line {
    host: String,
    /// Path and query string (`/shop?item=1`).
    uri: String,
    /// The client address.
    client: String,
    headers: BTreeMap<String, String>,
    cookies: BTreeMap<String, String>,
}

/// Where it goes.
#[derive(Serialize)]
struct Answer {
    rule: Option<String>,
    bucket: u32,
    service: String,
    port: u16,
    pool: String,
}

/// Answers every request of `input` on `out`. A bad file, virtual server or line is an error
/// naming it (the command exits 1).
pub fn run(files: &[PathBuf], vs: &str, input: impl BufRead, mut out: impl Write) -> anyhow::Result<()> {
    let objects = crate::render::read(files)?;
    let vs: SocketAddr = vs.parse().map_err(|_| anyhow!("--vs: expected IP:PORT, not {vs:?}"))?;
    let ip = vs.ip().to_string();
    let ticket = objects
        .tickets
        .iter()
        .find(|t| t.status.as_ref().and_then(|s| s.veip.as_deref()) == Some(ip.as_str()))
        .ok_or_else(|| anyhow!("--vs: no address request in the files has VE IP {ip} (status.veip)"))?;
    let listener =
        ticket.spec.listeners.iter().find(|l| l.port == vs.port()).ok_or_else(|| {
            anyhow!("--vs: address request {} has no listener on port {}", ticket.name_any(), vs.port())
        })?;
    let rules: Vec<(String, &LbruleSpec)> = objects
        .rules
        .iter()
        .filter(|r| r.spec.lbticket == ticket.name_any() && r.spec.listener == listener.name)
        .map(|r| (r.name_any(), &r.spec))
        .collect();
    let rules: Vec<(&str, &LbruleSpec)> = rules.iter().map(|(n, s)| (n.as_str(), *s)).collect();
    let router = Router::new(listener, &rules);
    for (n, line) in input.lines().enumerate() {
        let at = format!("line {}", n + 1);
        let line = line.with_context(|| format!("{at}: could not read standard input"))?;
        if line.trim().is_empty() {
            continue;
        }
        let request = request(&line).map_err(|e| anyhow!("{at}: {e}"))?;
        let decision = router
            .route(&request)
            .ok_or_else(|| anyhow!("{at}: listener {} has no service with weight", listener.name))?;
        let answer = Answer {
            rule: decision.rule,
            bucket: decision.bucket,
            pool: names::pool(&decision.service.service, decision.service.port),
            service: decision.service.service,
            port: decision.service.port,
        };
        let text = serde_json::to_string(&answer).context("could not write an answer")?;
        writeln!(out, "{text}").context("could not write to standard output")?;
    }
    Ok(())
}

/// The request a line describes; the error names the field.
fn request(line: &str) -> anyhow::Result<Request> {
    let line: Line = serde_json::from_str(line).map_err(|e| anyhow!("not a request: {e}"))?;
    if !line.client.is_empty() && line.client.parse::<IpAddr>().is_err() {
        return Err(anyhow!("client: {} is not an IP address", app::domain::policy::shown(&line.client)));
    }
    let (path, query) = line.uri.split_once('?').unwrap_or((&line.uri, ""));
    Ok(Request {
        host: line.host,
        path: path.to_string(),
        query: query.to_string(),
        client: line.client,
        headers: line.headers.into_iter().collect(),
        cookies: line.cookies.into_iter().collect(),
    })
}
