//! The AS3 preview of a change: the tenant rendered and validated with the changed request
//! (and rules) by the reconciler's own functions, and diffed against the declaration the member
//! cluster's ConfigMap holds now. Nothing is written.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use serde_json::Value;
use similar::{ChangeTag, TextDiff};

use super::address::World;
use super::kube_error;
use crate::components::preview::{DiffLine, Preview};
use crate::domain::as3::placement::{Placement, TEMPLATE_KEY};
use crate::domain::as3::{self, Rendered, names, validate::validate};
use crate::domain::crd::{Lbrule, Lbticket, Loadbalancer, Protocol};
use crate::error::AppError;

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
        .ok_or_else(|| AppError::Refused("The load balancer of this address request is gone.".into()))?;
    let lbs: Vec<_> = world
        .loadbalancers
        .iter()
        .filter(|l| l.spec.cluster == lb.spec.cluster)
        .map(|l| (l.metadata.name.as_deref().unwrap_or_default(), &l.spec))
        .collect();
    let tickets: Vec<_> = world
        .tickets
        .iter()
        .filter(|t| t.metadata.name.as_deref() != Some(name))
        .chain(std::iter::once(changed))
        .map(|t| (t.metadata.name.as_deref().unwrap_or_default(), &t.spec, t.status.as_ref()))
        .collect();
    let rules: Vec<_> = world
        .rules
        .iter()
        .filter(|r| r.spec.lbticket != name)
        .chain(rules)
        .map(|r| (r.metadata.name.as_deref().unwrap_or_default(), &r.spec))
        .collect();
    let place = Placement::of(&lb.spec);
    let grouped = as3::tenants(&lbs, &tickets, &rules);
    let (t, r) = grouped.get(&(lb.spec.cluster.clone(), place.tenant.clone())).cloned().unwrap_or_default();
    let rendered =
        as3::render(&lb.spec.cluster, &place.tenant, &t, &r).map_err(|f| f.to_string()).and_then(|rendered| {
            validate(&rendered)
                .map_err(|faults| faults.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))?;
            Ok(rendered)
        });
    Ok((lb, rendered))
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
    let apps: serde_json::Map<String, Value> = Protocol::ALL
        .into_iter()
        .map(|p| names::application(namespace, p))
        .filter_map(|app| adc[&place.tenant].get(&app).map(|v| (app, v.clone())))
        .collect();
    Ok(Preview {
        declaration: pretty(&Value::Object(apps)),
        diff: diff(&deployed.map(|d| pretty(&d)).unwrap_or_default(), &pretty(&adc)),
        refused: None,
    })
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
