//! What BIG-IP runs, as lbdesk reads it back over iControl REST (read-only), judged against
//! what lbdesk expects CIS to post: per virtual server *live*, *waiting for CIS* or *rejected*
//! (with what differs and BIG-IP's reason), and each pool member's state. Answers from BIG-IP
//! are outside input: every reader here returns an error naming what it could not read.
//!
//! The endpoints (iControl REST reference, AS3 3.x): the tenant's declaration
//! `GET /mgmt/shared/appsvcs/declare/<tenant>` (204 when BIG-IP holds none), the results of
//! recent declarations `GET /mgmt/shared/appsvcs/task`, and a pool's members
//! `GET /mgmt/tm/ltm/pool/~<tenant>~<app>~<pool>/members/stats`.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::domain::as3::names;
use crate::domain::cis::ingress::{formatted, virtual_server_name};
pub use crate::domain::crd::MemberState;
use crate::domain::crd::{ANNOTATION_READ_BIGIP, BigipStatus, Lbticket, LbticketSpec, ListenerOnBigip, OnBigip};

/// Where a virtual server stands on BIG-IP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    /// BIG-IP runs exactly what lbdesk expects CIS to post for it.
    Live,
    /// Not (or not yet exactly) on BIG-IP, and BIG-IP refused nothing of its tenant since.
    Waiting { differs: Vec<String> },
    /// BIG-IP's last declaration of its tenant failed: it keeps an older version.
    Rejected { reason: String, differs: Vec<String> },
}

/// The AS3 objects of a virtual server in `tenant` (an ADC tenant object): the virtual server
/// `app`/`vs`, its iRules, and the pools it or its iRules send to, by `<app>/<name>`.
pub fn objects_of(tenant: &Value, app: &str, vs: &str) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    let Some(application) = tenant.get(app).and_then(Value::as_object) else { return out };
    let Some(server) = application.get(vs) else { return out };
    out.insert(format!("{app}/{vs}"), server.clone());
    let mut texts = Vec::new();
    for rule in server.get("iRules").and_then(Value::as_array).into_iter().flatten() {
        if let Some(name) = rule.as_str()
            && let Some(irule) = application.get(name)
        {
            texts.extend(irule.get("iRule").and_then(Value::as_str).map(String::from));
            out.insert(format!("{app}/{name}"), irule.clone());
        }
    }
    let direct = server.get("pool").and_then(Value::as_str);
    for (name, item) in application.iter().filter(|(_, v)| v.get("class").and_then(Value::as_str) == Some("Pool")) {
        let path = format!("/{app}/{name}");
        // NB: an iRule names a pool by its full path, followed by a line's end or a space.
        let named = texts.iter().any(|t| {
            t.match_indices(&path).any(|(at, _)| t[at + path.len()..].starts_with(|c: char| c.is_whitespace()))
        });
        if direct == Some(name.as_str()) || named {
            out.insert(format!("{app}/{name}"), item.clone());
        }
    }
    out
}

/// What differs between the objects expected and those on BIG-IP, one line per object.
pub fn differences(expected: &BTreeMap<String, Value>, on_bigip: &BTreeMap<String, Value>) -> Vec<String> {
    let mut out = Vec::new();
    for (name, want) in expected {
        match on_bigip.get(name) {
            None => out.push(format!("{name}: not on BIG-IP")),
            Some(have) if have != want => out.push(format!("{name}: BIG-IP holds another version")),
            Some(_) => {}
        }
    }
    out.extend(on_bigip.keys().filter(|k| !expected.contains_key(*k)).map(|k| format!("{k}: on BIG-IP, not expected")));
    out
}

/// The state of a virtual server whose objects lbdesk expects as `expected`, BIG-IP holding
/// `on_bigip`; `rejected` is BIG-IP's reason when its last declaration of the tenant failed.
pub fn state(expected: &BTreeMap<String, Value>, on_bigip: &BTreeMap<String, Value>, rejected: Option<&str>) -> State {
    let differs = differences(expected, on_bigip);
    match (differs.is_empty(), rejected) {
        (true, _) => State::Live,
        (false, Some(reason)) => State::Rejected { reason: reason.to_string(), differs },
        (false, None) => State::Waiting { differs },
    }
}

/// One listener of a ticket as judged on BIG-IP: its name, state, and the pools (by app and
/// name) whose members to read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Judged {
    pub listener: String,
    pub state: State,
    pub pools: Vec<(String, String)>,
}

impl State {
    /// The state as a ticket's status records it, with BIG-IP's reason and what differs.
    pub fn recorded(&self) -> (OnBigip, String, Vec<String>) {
        match self {
            State::Live => (OnBigip::Live, String::new(), Vec::new()),
            State::Waiting { differs } => (OnBigip::Waiting, String::new(), differs.clone()),
            State::Rejected { reason, differs } => (OnBigip::Rejected, reason.clone(), differs.clone()),
        }
    }
}

/// Judges each listener of the ticket `ticket` (`spec`) in `tenant`: `expected` is the tenant
/// as lbdesk expects CIS to post it (none: nothing expected yet), `on_bigip` as BIG-IP runs it,
/// `rejected` BIG-IP's refusal when its last declaration of the tenant failed (each listener is
/// told only what concerns it).
pub fn judge(
    ticket: &str,
    spec: &LbticketSpec,
    tenant: &str,
    expected: Option<&Value>,
    on_bigip: Option<&Value>,
    rejected: Option<&Rejection>,
) -> Vec<Judged> {
    let none = Value::Null;
    spec.listeners
        .iter()
        .map(|listener| {
            let app = names::application(&spec.namespace, listener.protocol);
            let vs = names::virtual_server(ticket, listener.port);
            let want = objects_of(expected.unwrap_or(&none), &app, &vs);
            let have = objects_of(on_bigip.unwrap_or(&none), &app, &vs);
            let unposted = || format!("{app}/{vs}: not posted by CIS yet");
            judged(&listener.name, &want, &have, tenant, rejected, unposted)
        })
        .collect()
}

/// Whether BIG-IP is read back for a ticket now: it places listeners or F5 Ingresses.
pub fn placed(t: &Lbticket) -> bool {
    let status = t.status.as_ref();
    (crate::domain::as3::is_live(&t.spec, status) && !t.spec.listeners.is_empty())
        || (crate::domain::cis_ingress::is_live(&t.spec, status) && !t.spec.ingresses.is_empty())
}

/// The read of BIG-IP asked for a ticket (its `ebcpaas.io/read-bigip` annotation) that no read
/// has answered yet.
pub fn read_asked(t: &Lbticket) -> Option<&str> {
    let asked = t.metadata.annotations.as_ref()?.get(ANNOTATION_READ_BIGIP)?;
    let answered = t.status.as_ref().and_then(|s| s.bigip.as_ref()).map(|b| b.answered.as_str());
    (answered != Some(asked.as_str())).then_some(asked.as_str())
}

/// A ticket's listeners and F5 Ingresses on BIG-IP in short, for a list (its words:
/// `components::bigip::rollup_words`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rollup {
    pub live: usize,
    pub waiting: usize,
    pub rejected: usize,
    /// BIG-IP could not be read at the last attempt.
    pub unreachable: bool,
}

/// How many of a ticket's things are live on BIG-IP, waiting for CIS and rejected, and whether
/// BIG-IP is unreachable now.
pub fn rollup(status: &BigipStatus) -> Rollup {
    let count = |state: OnBigip| things(status).filter(|(_, l)| l.state == state).count();
    Rollup {
        live: count(OnBigip::Live),
        waiting: count(OnBigip::Waiting),
        rejected: count(OnBigip::Rejected),
        unreachable: !status.unreachable.is_empty(),
    }
}

/// The `LiveOnBigip` condition a ticket's status carries for kubectl: whether every listener is
/// live on BIG-IP, else the first reason it is not (unreachable, rejected, waiting for CIS).
pub fn condition(status: &BigipStatus) -> (bool, &'static str, String) {
    if !status.unreachable.is_empty() {
        return (false, "Unreachable", format!("BIG-IP could not be read: {}", status.unreachable));
    }
    let first = |state: OnBigip| things(status).find(|(_, l)| l.state == state);
    if let Some((what, l)) = first(OnBigip::Rejected) {
        return (
            false,
            "Rejected",
            format!("{what} {}: BIG-IP refused its tenant's declaration: {}", l.name, l.reason),
        );
    }
    if let Some((what, l)) = first(OnBigip::Waiting) {
        return (false, "WaitingForCis", format!("{what} {}: not on BIG-IP as expected yet", l.name));
    }
    if things(status).next().is_none() {
        return (false, "WaitingForCis", "nothing read back yet".into());
    }
    (true, "Live", String::new())
}

/// The listeners and F5 Ingresses of a status, each with what it is.
fn things(status: &BigipStatus) -> impl Iterator<Item = (&'static str, &ListenerOnBigip)> {
    let listeners = status.listeners.iter().map(|l| ("listener", l));
    listeners.chain(status.ingresses.iter().map(|l| ("F5 Ingress", l)))
}

/// Judges each F5 Ingress of the address request `spec` (its VE address `veip`) in its Ingress
/// partition `tenant` (CIS's application `Shared`): the virtual servers CIS builds on the
/// address (HTTP, and HTTPS with a TLS Secret), the policy routing them, and its own pools.
pub fn judge_ingresses(
    spec: &LbticketSpec,
    veip: &str,
    tenant: &str,
    expected: Option<&Value>,
    on_bigip: Option<&Value>,
    rejected: Option<&Rejection>,
) -> Vec<Judged> {
    spec.ingresses
        .iter()
        .map(|f5| {
            let ports: &[u16] = if f5.tls_secret.is_some() { &[80, 443] } else { &[80] };
            let servers: Vec<String> = ports.iter().map(|p| formatted(&virtual_server_name(veip, *p))).collect();
            // NB: named as CIS names them (`FormatIngressPoolName`, then `as3FormattedString`).
            let pools: Vec<String> = f5
                .rules
                .iter()
                .map(|r| formatted(&format!("ingress_{}_{}_{}_{}", spec.namespace, f5.name, r.service, r.port)))
                .collect();
            let want = ingress_objects(expected, &servers, &pools);
            let have = ingress_objects(on_bigip, &servers, &pools);
            judged(&f5.name, &want, &have, tenant, rejected, || {
                format!("F5 Ingress {}: not posted by CIS yet", f5.name)
            })
        })
        .collect()
}

/// One thing (`name`) judged by its objects as expected (`want`) and on BIG-IP (`have`) in
/// `tenant`; `unposted` says what waits when CIS posts nothing of it yet (its ConfigMap or
/// Ingress unread, or unwritten).
fn judged(
    name: &str,
    want: &BTreeMap<String, Value>,
    have: &BTreeMap<String, Value>,
    tenant: &str,
    rejected: Option<&Rejection>,
    unposted: impl FnOnce() -> String,
) -> Judged {
    let state = if want.is_empty() {
        State::Waiting { differs: vec![unposted()] }
    } else {
        let told = rejected.map(|r| r.told(tenant, want.keys()));
        state(want, have, told.as_deref())
    };
    Judged { listener: name.to_string(), state, pools: pools_of(have) }
}

/// The objects of an F5 Ingress in an Ingress partition's `tenant`: the virtual `servers`, the
/// policies they name, and its `pools`, by `Shared/<name>`.
fn ingress_objects(tenant: Option<&Value>, servers: &[String], pools: &[String]) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    let Some(shared) = tenant.and_then(|t| t.get("Shared")).and_then(Value::as_object) else { return out };
    for name in servers {
        let Some(server) = shared.get(name) else { continue };
        out.insert(format!("Shared/{name}"), server.clone());
        let policy = server.get("policyEndpoint").and_then(Value::as_str).and_then(|p| p.rsplit('/').next());
        if let Some((policy, item)) = policy.and_then(|p| shared.get_key_value(p)) {
            out.insert(format!("Shared/{policy}"), item.clone());
        }
    }
    for name in pools {
        if let Some(item) = shared.get(name).filter(|v| is_pool(v)) {
            out.insert(format!("Shared/{name}"), item.clone());
        }
    }
    out
}

fn is_pool(item: &Value) -> bool {
    item.get("class").and_then(Value::as_str) == Some("Pool")
}

/// The pools among `objects`, by (application, name).
fn pools_of(objects: &BTreeMap<String, Value>) -> Vec<(String, String)> {
    objects
        .iter()
        .filter(|(_, v)| is_pool(v))
        .filter_map(|(path, _)| path.split_once('/').map(|(a, p)| (a.to_string(), p.to_string())))
        .collect()
}

/// The tenant object of a `GET /declare/<tenant>` answer (`None`: BIG-IP holds none of it).
pub fn tenant_of(declaration: &Value, tenant: &str) -> Result<Option<Value>, String> {
    if declaration.is_null() {
        return Ok(None);
    }
    let adc = declaration.get("declaration").unwrap_or(declaration);
    if adc.get("class").and_then(Value::as_str) != Some("ADC") {
        return Err("the declaration BIG-IP answered is not an AS3 ADC declaration".into());
    }
    match adc.get(tenant) {
        None => Ok(None),
        Some(t) if t.get("class").and_then(Value::as_str) == Some("Tenant") => Ok(Some(t.clone())),
        Some(_) => Err(format!("the declaration BIG-IP answered holds {tenant} as something other than a tenant")),
    }
}

/// BIG-IP's refusal of a tenant's last declaration: its message and code, and its errors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejection {
    pub summary: String,
    pub errors: Vec<String>,
}

impl Rejection {
    /// What may be said of it beside a virtual server whose objects (`<app>/<name>`) in
    /// `tenant` are `own`: the errors naming only its objects, or none at all (the tenant's);
    /// an error naming another's object (a shared tenant holds other projects' requests) is
    /// only counted.
    pub fn told<'a>(&self, tenant: &str, own: impl IntoIterator<Item = &'a String>) -> String {
        let own: Vec<&String> = own.into_iter().collect();
        let prefix = format!("/{tenant}/");
        let mine = |error: &&String| {
            error.match_indices(&prefix).all(|(at, _)| {
                let path: String = error[at + prefix.len()..]
                    .chars()
                    .take_while(|c| !c.is_whitespace() && !matches!(c, ':' | '"' | '\'' | ',' | ')'))
                    .collect();
                own.iter()
                    .any(|o| path == **o || path.starts_with(&format!("{o}/")) || o.starts_with(&format!("{path}/")))
            })
        };
        let (kept, others): (Vec<&String>, Vec<&String>) = self.errors.iter().partition(mine);
        let mut told = self.summary.clone();
        if !kept.is_empty() {
            told.push_str(": ");
            told.push_str(&kept.iter().map(|e| e.as_str()).collect::<Vec<_>>().join("; "));
        }
        if !others.is_empty() {
            told.push_str(&format!(" ({} more in other requests sharing the AS3 tenant)", others.len()));
        }
        told
    }
}

/// BIG-IP's refusal of the last declaration of `tenant`, from `GET /mgmt/shared/appsvcs/task`
/// (tasks oldest first); `None` when it succeeded or BIG-IP has no task of it.
pub fn rejection(tasks: &Value, tenant: &str) -> Result<Option<Rejection>, String> {
    let items = tasks.get("items").and_then(Value::as_array).ok_or("the task list BIG-IP answered has no items")?;
    let mut results = items.iter().rev().flat_map(|task| {
        task.get("results")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|r| r.get("tenant").and_then(Value::as_str) == Some(tenant))
    });
    let Some(result) = results.next() else { return Ok(None) };
    let code = result.get("code").and_then(Value::as_u64).ok_or("a task result BIG-IP answered has no code")?;
    if code < 400 {
        return Ok(None);
    }
    let message = result.get("message").and_then(Value::as_str).unwrap_or("declaration failed");
    let errors = result.get("errors").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str);
    Ok(Some(Rejection { summary: format!("{message} ({code})"), errors: errors.map(String::from).collect() }))
}

/// One pool member as BIG-IP reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub address: String,
    pub port: u16,
    pub state: MemberState,
}

/// The members of a `GET /mgmt/tm/ltm/pool/~T~A~P/members/stats` answer, in address order.
pub fn members_of(stats: &Value) -> Result<Vec<Member>, String> {
    let entries = stats.get("entries").and_then(Value::as_object).ok_or("the pool statistics have no entries")?;
    let mut out = Vec::new();
    for entry in entries.values() {
        let fields = entry
            .pointer("/nestedStats/entries")
            .and_then(Value::as_object)
            .ok_or("a pool member's statistics have no entries")?;
        let text = |key: &str| fields.get(key).and_then(|f| f.get("description")).and_then(Value::as_str);
        let address = text("addr").ok_or("a pool member has no address")?;
        let port = fields.get("port").and_then(|p| p.get("value")).and_then(Value::as_u64);
        let port = port.and_then(|p| u16::try_from(p).ok()).ok_or("a pool member has no port")?;
        let state = match (text("status.enabledState"), text("status.availabilityState")) {
            (Some(enabled), _) if enabled != "enabled" => MemberState::Disabled,
            (_, Some("available")) => MemberState::Up,
            (_, Some("offline")) => MemberState::Down,
            _ => MemberState::Unknown,
        };
        // NB: BIG-IP writes a route domain as `10.0.0.1%2`; the address is what precedes it.
        let address = address.split('%').next().unwrap_or(address).to_string();
        out.push(Member { address, port, state });
    }
    out.sort_by(|a, b| (&a.address, a.port).cmp(&(&b.address, b.port)));
    Ok(out)
}

/// The iControl REST path of a pool's member statistics.
pub fn members_path(tenant: &str, app: &str, pool: &str) -> String {
    format!("/mgmt/tm/ltm/pool/~{tenant}~{app}~{pool}/members/stats")
}

#[cfg(test)]
#[path = "bigip_tests.rs"]
mod tests;
