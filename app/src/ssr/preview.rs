//! The AS3 preview of a change: the tenant rendered and validated with the changed request
//! (and rules) by the reconciler's own functions, and diffed against the declaration the member
//! cluster's ConfigMap holds now. Nothing is written.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use serde_json::Value;
use similar::{ChangeTag, TextDiff};

use super::address::{World, project_of};
use super::kube_error;
use crate::domain::as3::placement::{Placement, TEMPLATE_KEY};
use crate::domain::as3::validate::{fits, sent_bytes, validate_tenant};
use crate::domain::as3::{self, Rendered, names};
use crate::domain::crd::MAX_DECLARATION_BYTES;
use crate::domain::crd::{Lbrule, Lbticket, Loadbalancer, Protocol};
use crate::domain::policy::{Held, share, tenant, within_quota};
use crate::error::AppError;
use crate::wire::{DiffLine, Preview};

/// Unchanged lines shown around each change.
const CONTEXT: usize = 3;

/// The tenant of `changed`'s load balancer, rendered with `changed` in place of the request of
/// its name and `rules` in place of the rules on it; the load balancer, and the fault that
/// makes the tenant impossible to render or invalid.
pub fn render(
    world: &World,
    changed: &Lbticket,
    rules: &[Lbrule],
) -> Result<(Loadbalancer, Result<Rendered, String>), AppError> {
    let name = changed.metadata.name.as_deref().unwrap_or_default();
    let lb = world
        .loadbalancer_of(changed)
        .cloned()
        .ok_or_else(|| AppError::Refused(crate::i18n::t("errors.loadbalancer_gone").into()))?;
    let rendered = match tenant(&world.view(), &lb, Some((changed, rules))) {
        Err(fault) => Err(said_to(name, &[fault])),
        Ok(rendered) => match fits(&rendered.adc) {
            // NB: the size names no one: the caller whose change makes the tenant larger than
            // it fits is told so. A change that does not grow it is taken (until the tenant is
            // made to fit, every request of it says it is held back).
            Err(_) if grows(world, &lb, &rendered) => Err(too_large(&rendered.adc)),
            _ => match within_share(world, &lb, changed, &rendered) {
                Err(why) => Err(why),
                Ok(()) => match validate_tenant(&rendered) {
                    Ok(()) => Ok(rendered),
                    Err(faults) => Err(said_to(name, &faults)),
                },
            },
        },
    };
    Ok((lb, rendered))
}

/// Whether `changed`'s project stays within its share of the tenant (its quota's declaration
/// bytes) with the tenant rendered as `after`: only a change that grows the share past it is
/// refused.
fn within_share(world: &World, lb: &Loadbalancer, changed: &Lbticket, after: &Rendered) -> Result<(), String> {
    let Some(project) = project_of(changed) else { return Ok(()) };
    let limits = world.limits(project, lb);
    // NB: a tenant that fits the project's share whole needs no counting.
    if sent_bytes(&after.adc) as u64 <= limits.declaration_bytes {
        return Ok(());
    }
    let view = world.view();
    let now = Held { declaration_bytes: share(&view, lb, changed, after).unwrap_or(0), ..Held::default() };
    if now.declaration_bytes <= limits.declaration_bytes {
        return Ok(());
    }
    let before = tenant(&view, lb, None).ok().and_then(|r| share(&view, lb, changed, &r));
    let was = Held { declaration_bytes: before.unwrap_or(0), ..Held::default() };
    let lb_name = lb.metadata.name.as_deref().unwrap_or_default();
    within_quota(&limits, &was, &now, lb_name).map_err(|r| r.reason.text())
}

/// What the caller whose change makes the declaration `adc` too large for its ConfigMap is told
/// (the words of [`fits`], which the reconciler writes in English, in the reader's).
fn too_large(adc: &str) -> String {
    crate::tf!(
        "errors.declaration_too_large",
        kib = sent_bytes(adc).div_ceil(1024),
        limit = MAX_DECLARATION_BYTES / 1024
    )
}

/// Whether `after` takes more bytes in its ConfigMap than the tenant as stored now.
fn grows(world: &World, lb: &Loadbalancer, after: &Rendered) -> bool {
    match tenant(&world.view(), lb, None) {
        Ok(before) => sent_bytes(&after.adc) > sent_bytes(&before.adc),
        // NB: with nothing to compare with, the change is taken to grow it.
        Err(_) => true,
    }
}

/// What the owner of request `name` is told of faults of its tenant: those of its own request,
/// or, when only others' requests are at fault, that the tenant cannot take a change now.
/// NB: the tenant is shared by projects: a fault of another's request names its ticket,
/// listener and Services, which are not this caller's to read.
fn said_to(name: &str, faults: &[as3::Fault]) -> String {
    let own: Vec<String> = faults
        .iter()
        .filter(|f| f.origin.as_ref().is_some_and(|o| o.ticket == name))
        .map(ToString::to_string)
        .collect();
    if own.is_empty() { crate::i18n::t("errors.tenant_invalid_elsewhere").into() } else { own.join("; ") }
}

/// The applications of `namespace` in `tenant` of an ADC declaration: all a caller who may
/// change a request of that namespace may read of the tenant.
fn visible(adc: &Value, tenant: &str, namespace: &str) -> Value {
    let apps = Protocol::ALL
        .into_iter()
        .map(|p| names::application(namespace, p))
        .filter_map(|app| adc.get(tenant).and_then(|t| t.get(&app)).map(|v| (app, v.clone())));
    Value::Object(apps.collect())
}

/// The preview of `changed` (with `rules` on it) against what its member cluster holds.
pub async fn preview(world: &World, changed: &Lbticket, rules: &[Lbrule]) -> Result<Preview, AppError> {
    let (lb, rendered) = render(world, changed, rules)?;
    let place = Placement::of(&lb.spec);
    let deployed = deployed(&lb, &place).await?;
    let rendered = match rendered {
        Ok(rendered) => rendered,
        Err(why) => return Ok(Preview { declaration: String::new(), diff: Vec::new(), refused: Some(why) }),
    };
    let adc: Value = serde_json::from_str(&rendered.adc).map_err(|e| super::internal("the declaration", e))?;
    let namespace = &changed.spec.namespace;
    // NB: both sides of the diff hold only the caller's namespace's applications: lines of
    // other projects' applications are neither shown nor counted (issue #27).
    let apps = visible(&adc, &place.tenant, namespace);
    let before = deployed.map(|d| pretty(&visible(&d, &place.tenant, namespace))).unwrap_or_default();
    Ok(Preview { diff: diff(&before, &pretty(&apps)), declaration: pretty(&apps), refused: None })
}

/// The ADC declaration the tenant's ConfigMap holds now, if any.
pub async fn deployed(lb: &Loadbalancer, place: &Placement) -> Result<Option<Value>, AppError> {
    let state = super::state()?;
    let Some(client) = state.clusters.member(&lb.spec.cluster) else { return Ok(None) };
    let cm = Api::<ConfigMap>::namespaced(client, &place.namespace)
        .get_opt(&place.configmap)
        .await
        .map_err(|e| kube_error("the deployed declaration", e))?;
    let template = cm.and_then(|cm| cm.data).and_then(|mut d| d.remove(TEMPLATE_KEY));
    Ok(template.and_then(|t| serde_json::from_str::<Value>(&t).ok()).map(|mut t| t["declaration"].take()))
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// The lines that differ from `old` to `new`, each run of changes with [`CONTEXT`] lines around
/// it, runs apart marked by a gap.
pub fn diff(old: &str, new: &str) -> Vec<DiffLine> {
    let diff = TextDiff::from_lines(old, new);
    let mut out = Vec::new();
    for (i, group) in diff.grouped_ops(CONTEXT).iter().enumerate() {
        let starts_late = group.first().is_some_and(|op| op.old_range().start > 0);
        if i > 0 || starts_late {
            out.push(DiffLine::Gap);
        }
        for op in group {
            for change in diff.iter_changes(op) {
                let text = change.value().trim_end_matches('\n').to_string();
                out.push(match change.tag() {
                    ChangeTag::Insert => DiffLine::Added(text),
                    ChangeTag::Delete => DiffLine::Removed(text),
                    ChangeTag::Equal => DiffLine::Same(text),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_only_the_callers_own_request() {
        let fault = |ticket: &str, message: &str| as3::Fault {
            origin: Some(as3::Origin { ticket: ticket.into(), listener: "web".into(), rule: None }),
            message: message.into(),
        };
        let theirs = fault("bobsecret", "pool bobsecret-svc1_8080_pool is broken");
        let said = said_to("shop", std::slice::from_ref(&theirs));
        assert!(!said.contains("bobsecret"), "{said}");
        assert!(said.contains("other address requests share"), "{said}");
        let tenant_wide = as3::Fault { origin: None, message: "over the size of one ConfigMap".into() };
        assert!(!said_to("shop", &[tenant_wide]).contains("ConfigMap"));
        let said = said_to("shop", &[theirs, fault("shop", "port 80 twice")]);
        assert!(said.contains("port 80 twice") && !said.contains("bobsecret"), "{said}");
    }

    #[test]
    fn a_declaration_too_large_is_said_as_the_reconciler_says_it() {
        let adc = format!("{{\"remark\":\"{}\"}}", "x".repeat(MAX_DECLARATION_BYTES));
        let fault = fits(&adc).expect_err("too large");
        assert_eq!(too_large(&adc), fault.message);
    }

    #[test]
    fn a_diff_shows_the_changes_with_context_and_gaps() {
        let old: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        let new = old.replace("line 10\n", "line ten\n");
        let lines = diff(&old, &new);
        assert_eq!(lines.first(), Some(&DiffLine::Gap), "lines 1–6 left out");
        assert!(lines.contains(&DiffLine::Removed("line 10".into())));
        assert!(lines.contains(&DiffLine::Added("line ten".into())));
        assert_eq!(lines.iter().filter(|l| matches!(l, DiffLine::Same(_))).count(), 2 * CONTEXT);
        assert!(diff(&old, &old).is_empty(), "no change, no lines");
        let from_nothing = diff("", "a\nb\n");
        assert_eq!(from_nothing, vec![DiffLine::Added("a".into()), DiffLine::Added("b".into())]);
    }
}
