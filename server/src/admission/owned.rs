//! What lbdesk writes in the member clusters (its AS3 ConfigMaps, its F5 Ingresses) written by
//! someone else: let through, as the member cluster's own access rules decide who may write
//! there, and audited, since lbdesk puts the object back as it wants it at its next ensure and
//! whoever looks at what BIG-IP did meanwhile needs to know who changed it.

use app::domain::crd::{LABEL_LBTICKET, project_of};
use app::ssr::audit::Entry;
use kube::core::admission::Operation;
use serde_json::Value;

use super::Admission;

/// The label lbdesk's AS3 ConfigMaps carry (`placement::configmap_labels`).
const MANAGED_BY: &str = "app.kubernetes.io/managed-by";

/// Whether `object` of `kind` is one lbdesk writes in a member cluster.
pub fn owned(kind: &str, object: &Value) -> bool {
    let labels = &object["metadata"]["labels"];
    match kind {
        "ConfigMap" => labels[MANAGED_BY].as_str() == Some("lbdesk"),
        "Ingress" => labels[LABEL_LBTICKET].is_string(),
        _ => false,
    }
}

impl Admission {
    /// The audit entry of a write by anyone but lbdesk to an object lbdesk owns in member
    /// cluster `cluster`, named there `cluster/namespace/name`, for the write to record once
    /// stored; an F5 Ingress's entry is its ticket's project's (its owner sees it), a shared
    /// ConfigMap's no project's (admins see it).
    pub async fn witness(
        &self,
        cluster: &str,
        user: &str,
        operation: &Operation,
        kind: &str,
        new: Option<&Value>,
        old: Option<&Value>,
    ) -> Option<Entry> {
        let action = super::action(operation)?;
        if user == self.own_user || !new.into_iter().chain(old).any(|o| owned(kind, o)) {
            return None;
        }
        let object = new.or(old)?;
        let meta = &object["metadata"];
        let name = format!(
            "{cluster}/{}/{}",
            meta["namespace"].as_str().unwrap_or_default(),
            meta["name"].as_str().unwrap_or_default()
        );
        let ticket = new.into_iter().chain(old).find_map(|o| o["metadata"]["labels"][LABEL_LBTICKET].as_str());
        let project = match ticket {
            Some(ticket) => match self.tickets(|t| t.metadata.name.as_deref() == Some(ticket)).await {
                Ok(found) => found.first().and_then(|t| project_of(t).map(String::from)),
                Err(_) => None,
            },
            None => None,
        };
        Some(Entry {
            user: user.to_string(),
            via: self.via,
            action: action.into(),
            kind: kind.to_string(),
            name,
            project,
            before: None,
            after: None,
            version: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::owned;

    #[test]
    fn lbdesks_objects_are_known_by_their_labels() {
        let with = |labels: Value| json!({"metadata": {"name": "x", "labels": labels}});
        let cases = [
            (
                "an AS3 ConfigMap",
                "ConfigMap",
                with(json!({"app.kubernetes.io/managed-by": "lbdesk", "as3": "true"})),
                true,
            ),
            ("another tool's ConfigMap", "ConfigMap", with(json!({"app.kubernetes.io/managed-by": "helm"})), false),
            ("an unlabelled ConfigMap", "ConfigMap", json!({"metadata": {"name": "x"}}), false),
            ("an F5 Ingress", "Ingress", with(json!({"ebcpaas.io/lbticket": "shop"})), true),
            ("someone's Ingress", "Ingress", with(json!({"team": "a"})), false),
            ("a labelled Service", "Service", with(json!({"ebcpaas.io/lbticket": "shop"})), false),
        ];
        for (what, kind, object, want) in cases {
            assert_eq!(owned(kind, &object), want, "{what}");
        }
    }
}
