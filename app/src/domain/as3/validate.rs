//! Validation of a declaration before anything is written (server side only: the schema is
//! 1.2 MB). CIS posts an empty tenant for an invalid ConfigMap, wiping the live configuration,
//! so nothing invalid may leave lbdesk. Each fault names the ticket, listener or rule at fault.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::OnceLock;

mod schema;

use schema::Schema;
use serde_json::{Map, Value};

use super::names::is_legal;
use super::{Fault, Origins, Rendered, origin_of};
use crate::domain::crd::{MAX_DECLARATION_BYTES, Protocol};

/// Longest `/tenant/app/item` path AS3 accepts.
pub const MAX_PATH: usize = 195;
/// The pool monitors BIG-IP has built in.
const BUILTIN_MONITORS: [&str; 7] = ["http", "https", "http2", "icmp", "tcp", "tcp-half-open", "udp"];

static SCHEMA: &str = include_str!("schema/as3-schema.json");
/// CIS v2.20.2's own copy of the AS3 3.52 schema: what it validates against before posting.
static CIS_SCHEMA: &str = include_str!("schema/cis-as3-schema-3.52.json");

/// `f5ip`: an IPv4 or IPv6 address, optional `%route-domain` and `/masklen`, or empty.
pub fn f5ip(s: &str) -> bool {
    if s.is_empty() {
        return true;
    }
    let (rest, mask) = match s.split_once('/') {
        Some((a, m)) => (a, Some(m)),
        None => (s, None),
    };
    let (addr, rd) = match rest.split_once('%') {
        Some((a, r)) => (a, Some(r)),
        None => (rest, None),
    };
    let Ok(ip) = addr.parse::<IpAddr>() else {
        return false;
    };
    let digits = |t: &str| !t.is_empty() && t.len() <= 5 && t.bytes().all(|b| b.is_ascii_digit());
    let max = if ip.is_ipv4() { 32 } else { 128 };
    rd.is_none_or(digits) && mask.is_none_or(|m| digits(m) && m.parse::<u32>().is_ok_and(|m| m <= max))
}

/// `f5bigip`: an absolute BIG-IP path such as `/Common/clientssl`.
pub fn f5bigip(s: &str) -> bool {
    let forbidden = |c: char| (c as u32) <= 0x19 || c == '\x7f' || "\"#'*<>?[\\]{|}".contains(c);
    s.len() > 1 && s.starts_with('/') && !s[1..].chars().any(forbidden)
}

fn validator() -> Result<&'static Schema, Fault> {
    static VALIDATOR: OnceLock<Result<Schema, String>> = OnceLock::new();
    let built = VALIDATOR.get_or_init(|| Schema::build(SCHEMA, "ADC"));
    built.as_ref().map_err(|e| Fault { origin: None, message: format!("the AS3 schema does not load: {e}") })
}

fn cis_validator() -> Result<&'static Schema, String> {
    static VALIDATOR: OnceLock<Result<Schema, String>> = OnceLock::new();
    VALIDATOR
        .get_or_init(|| Schema::build(CIS_SCHEMA, "AS3"))
        .as_ref()
        .map_err(|e| format!("CIS's AS3 schema does not load: {e}"))
}

/// Checks an AS3 request (`{"class": "AS3", "declaration": …}`) as CIS v2.20.2 does before
/// posting it: against its own AS3 3.52 schema. The first few errors, each with where.
pub fn validate_as_cis(request: &Value) -> Result<(), String> {
    let errors: Vec<String> = cis_validator()?
        .validator
        .iter_errors(request)
        .take(5)
        .map(|e| format!("{e} (at {})", e.instance_path()))
        .collect();
    if errors.is_empty() { Ok(()) } else { Err(errors.join("; ")) }
}

/// Checks what CIS will post for a rendered tenant: every discovered pool filled with one
/// member as CIS fills it (fields copied from the template member), the header replaced, all
/// validated against CIS's own schema. NB: the template alone passes while the filled pool
/// does not (`shareNodes: null`), so both are checked before anything is written.
pub fn validate_posted(rendered: &Rendered) -> Result<(), Vec<Fault>> {
    use crate::domain::cis::members::{Endpoint, fill, is_discovered};
    let fail = |message: String| vec![Fault { origin: None, message }];
    let mut tenant: Value = serde_json::from_str::<Value>(&rendered.adc)
        .map_err(|e| fail(format!("not JSON: {e}")))?
        .get(&rendered.tenant)
        .cloned()
        .unwrap_or(Value::Null);
    for items in tenant.as_object_mut().into_iter().flatten().map(|(_, items)| items) {
        for item in items.as_object_mut().into_iter().flatten().map(|(_, item)| item) {
            let Some(pool) = item.as_object_mut() else { continue };
            if pool.get("class") != Some(&Value::from("Pool")) {
                continue;
            }
            if !is_discovered(pool) {
                continue;
            }
            let port = pool
                .get("members")
                .and_then(|m| m.get(0))
                .and_then(|m| m.get("servicePort"))
                .and_then(Value::as_i64)
                .unwrap_or(0) as i32;
            // NB: a documentation address (RFC 5737): only its shape matters here.
            let one = Endpoint {
                address: "192.0.2.1".into(),
                port,
                service_port: port,
                priority_group: 0,
                admin_state: Some("enable"),
            };
            fill(pool, &[one]);
        }
    }
    let mut request = serde_json::json!({
        "class": "AS3",
        "declaration": {"class": "ADC", "schemaVersion": "3.52.0", "id": "urn:uuid:85626792-9ee7-46bb-8fc8-4ba708cfdc1d",
                        "label": "CIS Declaration", "remark": "Auto-generated by CIS",
                        "controls": {"class": "Controls", "userAgent": "CIS Configured AS3"}},
    });
    request["declaration"][&rendered.tenant] = tenant;
    let validator = cis_validator().map_err(fail)?;
    let faults = schema_faults(
        validator.errors(&request, Some("declaration")),
        1,
        &rendered.origins,
        "what CIS would post is invalid under its AS3 3.52 schema",
    );
    if faults.is_empty() { Ok(()) } else { Err(faults) }
}

/// The checks of a rendered tenant but its size: its content ([`validate_content`]) and what CIS
/// will post ([`validate_posted`]).
///
/// NB: a save checks the tenant it is about to write; the reconciler then renders the same
/// bytes from the stored objects and would check them again (two schemas over a 500-listener
/// tenant: tens of milliseconds each time). The last tenants that passed are remembered by a
/// hash keyed per process, so that no one's text can be made to collide with a tenant that
/// passed; a tenant that fails is checked again each time. A tenant not remembered is checked
/// one application at a time, the applications that passed being remembered too (`schema`).
pub fn validate_tenant(rendered: &Rendered) -> Result<(), Vec<Fault>> {
    let whole = schema::hash(("tenant", &rendered.tenant, &rendered.adc));
    if schema::passed(whole) {
        return Ok(());
    }
    validate_content(&rendered.adc, &rendered.origins)?;
    validate_posted(rendered)?;
    schema::remember(whole);
    Ok(())
}

/// Schema `errors`, each a fault naming where it is and, when the path
/// reaches an item (`depth` levels above `/<tenant>/<app>/<item>`), where that comes from.
fn schema_faults(
    errors: Vec<jsonschema::ValidationError<'static>>,
    depth: usize,
    origins: &Origins,
    what: &str,
) -> Vec<Fault> {
    errors
        .into_iter()
        .map(|e| {
            let path = e.instance_path().to_string();
            let parts: Vec<&str> = path.split('/').skip(1 + depth).collect();
            let origin = match parts.as_slice() {
                [_, app, item, ..] => origin_of(origins, app, item).cloned(),
                _ => None,
            };
            Fault { origin, message: format!("{what}: {e} (at {path})") }
        })
        .collect()
}

fn fault(origins: &Origins, app: &str, item: &str, message: String) -> Fault {
    Fault { origin: origin_of(origins, app, item).cloned(), message }
}

/// Checks a rendered tenant: size, schema, names, pointers, address/port clashes.
pub fn validate(rendered: &Rendered) -> Result<(), Vec<Fault>> {
    validate_adc(&rendered.adc, &rendered.origins)
}

/// The bytes an ADC declaration takes in its ConfigMap's write: inside the AS3 request
/// (`Rendered::template`), as a JSON string, where every quote and backslash is escaped. NB: a
/// declaration of many backslashes weighs about twice its length there.
pub fn sent_bytes(adc: &str) -> usize {
    escaped_len(&super::template_of(adc)) + 2
}

/// The length of `s` inside a JSON string, as serde writes it (`s` being JSON serde wrote, it
/// holds no control characters).
fn escaped_len(s: &str) -> usize {
    s.len() + s.bytes().filter(|b| matches!(b, b'"' | b'\\')).count()
}

/// The bytes, as sent ([`sent_bytes`]), the applications of `namespaces` take of `tenant` in an
/// ADC declaration: a project's share of a tenant it shares with others.
pub fn share_bytes(adc: &Value, tenant: &str, namespaces: &BTreeSet<&str>) -> usize {
    let Some(apps) = adc.get(tenant).and_then(Value::as_object) else { return 0 };
    let theirs: BTreeSet<String> =
        namespaces.iter().flat_map(|ns| Protocol::ALL.into_iter().map(|p| super::names::application(ns, p))).collect();
    apps.iter()
        .filter(|(name, _)| theirs.contains(*name))
        // NB: `"name":value,` as compact JSON, escaped once more inside the ConfigMap.
        .map(|(name, app)| escaped_len(name) + escaped_len(&app.to_string()) + 6)
        .sum()
}

/// Whether an ADC declaration fits its ConfigMap ([`MAX_DECLARATION_BYTES`], as sent).
pub fn fits(adc: &str) -> Result<(), Fault> {
    let sent = sent_bytes(adc);
    if sent <= MAX_DECLARATION_BYTES {
        return Ok(());
    }
    Err(Fault {
        origin: None,
        message: format!(
            "the declaration would take {} KiB in its ConfigMap, over the {} KiB limit of one ConfigMap; \
             remove rules or listeners, or ask the platform admins for another partition",
            sent.div_ceil(1024),
            MAX_DECLARATION_BYTES / 1024
        ),
    })
}

/// Checks an ADC declaration (compact or pretty JSON); `origins` maps `app/item` to its source.
pub fn validate_adc(adc: &str, origins: &Origins) -> Result<(), Vec<Fault>> {
    fits(adc).map_err(|f| vec![f])?;
    validate_content(adc, origins)
}

/// [`validate_adc`] but for the size.
pub fn validate_content(adc: &str, origins: &Origins) -> Result<(), Vec<Fault>> {
    let doc: Value =
        serde_json::from_str(adc).map_err(|e| vec![Fault { origin: None, message: format!("not JSON: {e}") }])?;
    let mut faults = schema_faults(validator().map_err(|f| vec![f])?.errors(&doc, None), 0, origins, "AS3 schema");
    if let Some(adc) = doc.as_object() {
        for (tenant, body) in adc {
            if let Some(apps) = body.as_object().filter(|b| b.get("class") == Some(&Value::from("Tenant"))) {
                check_tenant(tenant, apps, origins, &mut faults);
            }
        }
    }
    if faults.is_empty() { Ok(()) } else { Err(faults) }
}

fn class_of(item: &Value) -> &str {
    item.get("class").and_then(Value::as_str).unwrap_or("")
}

fn check_tenant(tenant: &str, apps: &Map<String, Value>, origins: &Origins, faults: &mut Vec<Fault>) {
    if !is_legal(tenant) || tenant == "Common" {
        faults.push(Fault { origin: None, message: format!("{tenant:?} is not a legal AS3 tenant name") });
    }
    let mut listening: BTreeMap<(String, i64), String> = BTreeMap::new();
    for (app, body) in apps {
        let Some(items) = body.as_object().filter(|b| class_of(body) == "Application" && !b.is_empty()) else {
            continue;
        };
        if !is_legal(app) || app == "Shared" {
            faults.push(Fault { origin: None, message: format!("{app:?} is not a legal AS3 application name") });
        }
        let is = |name: &str, class: &str| items.get(name).is_some_and(|i| class_of(i) == class);
        for (name, item) in items.iter().filter(|(_, i)| i.is_object()) {
            let here = format!("/{tenant}/{app}/{name}");
            if !is_legal(name) {
                faults.push(fault(origins, app, name, format!("{name:?} is not a legal AS3 name")));
            }
            if here.len() > MAX_PATH {
                faults.push(fault(
                    origins,
                    app,
                    name,
                    format!("{here} is longer than {MAX_PATH} characters; use shorter names"),
                ));
            }
            let class = class_of(item);
            if class.starts_with("Service_") {
                if let Some(pool) = item.get("pool").and_then(Value::as_str)
                    && !is(pool, "Pool")
                {
                    faults.push(fault(
                        origins,
                        app,
                        name,
                        format!("virtual server {name} points at pool {pool}, which does not exist"),
                    ));
                }
                for rule in item.get("iRules").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str)
                {
                    if !is(rule, "iRule") {
                        faults.push(fault(
                            origins,
                            app,
                            name,
                            format!("virtual server {name} points at iRule {rule}, which does not exist"),
                        ));
                    }
                }
                let port = item.get("virtualPort").and_then(Value::as_i64).unwrap_or(0);
                for addr in item
                    .get("virtualAddresses")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                {
                    if let Some(first) = listening.insert((addr.to_string(), port), here.clone()) {
                        faults.push(fault(
                            origins,
                            app,
                            name,
                            format!("{first} already listens on {addr} port {port}"),
                        ));
                    }
                }
            }
            if class == "Pool" {
                for m in item.get("monitors").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str)
                {
                    if !BUILTIN_MONITORS.contains(&m) && !is(m, "Monitor") {
                        let user = user_of_pool(items, &here, name).unwrap_or(name);
                        faults.push(fault(
                            origins,
                            app,
                            user,
                            format!("pool {name} uses monitor {m}, which does not exist"),
                        ));
                    }
                }
            }
            if class == "iRule"
                && let Some(text) = item.get("iRule").and_then(Value::as_str)
            {
                for target in pool_targets(text) {
                    let resolves = match target.strip_prefix('/').map(|t| t.splitn(3, '/').collect::<Vec<_>>()) {
                        Some(p) if p.len() == 3 => {
                            p[0] == tenant
                                && apps
                                    .get(p[1])
                                    .and_then(Value::as_object)
                                    .and_then(|i| i.get(p[2]))
                                    .is_some_and(|i| class_of(i) == "Pool")
                        }
                        Some(_) => false,
                        None => is(target, "Pool"),
                    };
                    if !resolves {
                        faults.push(fault(
                            origins,
                            app,
                            name,
                            format!("iRule {name} selects pool {target}, which does not exist"),
                        ));
                    }
                }
            }
        }
    }
}

/// A virtual server using pool `name` (full `path`) by default or in its iRule, for messages.
fn user_of_pool<'a>(items: &'a Map<String, Value>, path: &str, name: &str) -> Option<&'a str> {
    items.iter().find_map(|(item, body)| {
        let default = body.get("pool").and_then(Value::as_str) == Some(name);
        let in_irule = body.get("iRule").and_then(Value::as_str).is_some_and(|t| pool_targets(t).contains(&path));
        (default || in_irule).then_some(item.as_str())
    })
}

/// The pool names an iRule selects (`pool <name>` commands).
fn pool_targets(text: &str) -> Vec<&str> {
    text.lines()
        .filter_map(|line| line.trim().strip_prefix("pool "))
        .map(|rest| rest.split_whitespace().next().unwrap_or(""))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_formats_follow_as3() {
        for (s, ok) in [
            ("", true),
            ("10.0.0.1", true),
            ("10.0.0.1%2", true),
            ("10.0.0.0/8", true),
            ("fd00::1%3/64", true),
            ("10.0.0.300", false),
            ("10.0.0.1/33", false),
            ("host", false),
        ] {
            assert_eq!(f5ip(s), ok, "{s}");
        }
        for (s, ok) in [
            ("/Common/clientssl", true),
            ("Common/x", false),
            ("/", false),
            ("/Common/a b", true),
            ("/Common/a*b", false),
        ] {
            assert_eq!(f5bigip(s), ok, "{s}");
        }
    }

    #[test]
    fn the_official_examples_pass() {
        for (name, text) in [
            ("referencing-irules-pool", include_str!("schema/examples/example-referencing-irules-pool.json")),
            (
                "http-no-compression",
                include_str!("schema/examples/example-http-no-compression-tcp-profile-irule-for-pool.json"),
            ),
            ("mcp-irule", include_str!("schema/examples/example-mcp-irule.json")),
            ("cis-template", include_str!("schema/examples/cis-as3-configmap-template-serverAddresses-empty.json")),
        ] {
            let doc: Value = serde_json::from_str(text).expect("example JSON");
            let adc = if doc["class"] == "AS3" { doc["declaration"].clone() } else { doc };
            let errors: Vec<String> =
                validator().expect("schema").validator.iter_errors(&adc).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{name}: {errors:?}");
        }
    }
}
