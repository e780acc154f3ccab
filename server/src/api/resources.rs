//! The kinds the embedded API serves, and the discovery documents that describe them.

use std::sync::OnceLock;

use app::domain::crd::{Lbaddress, Lbquota, Lbrule, Lbticket, Loadbalancer};
use kube::CustomResourceExt;
use serde_json::{Value, json};

/// A printer column: what `kubectl get` shows.
#[derive(Clone, Debug)]
pub struct Column {
    pub name: String,
    pub type_: String,
    /// A dotted path such as `.status.phase`.
    pub json_path: String,
}

/// One kind of object the API stores.
#[derive(Clone, Debug)]
pub struct Kind {
    /// `""` for the core group.
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    pub singular: &'static str,
    pub short_names: Vec<String>,
    pub namespaced: bool,
    /// Has a `status` subresource (the CRDs but Lbaddress): writes to the object ignore `status`.
    pub status: bool,
    /// Served by the management cluster only (the CRDs).
    pub mgmt_only: bool,
    pub columns: Vec<Column>,
}

impl Kind {
    /// `v1` or `group/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() { self.version.to_string() } else { format!("{}/{}", self.group, self.version) }
    }

    /// The storage key of the kind: `plural` or `plural.group`.
    pub fn resource(&self) -> String {
        if self.group.is_empty() { self.plural.to_string() } else { format!("{}.{}", self.plural, self.group) }
    }

    /// Whether this kind goes through lbdesk's admission endpoint.
    pub fn admitted(&self) -> bool {
        self.group == app::domain::crd::GROUP
    }

    fn served_by(&self, is_mgmt: bool) -> bool {
        is_mgmt || !self.mgmt_only
    }
}

fn builtin(group: &'static str, kind: &'static str, plural: &'static str, namespaced: bool, short: &[&str]) -> Kind {
    Kind {
        group,
        version: "v1",
        kind,
        plural,
        singular: "",
        short_names: short.iter().map(|s| s.to_string()).collect(),
        namespaced,
        status: false,
        mgmt_only: false,
        columns: vec![Column {
            name: "Age".into(),
            type_: "date".into(),
            json_path: ".metadata.creationTimestamp".into(),
        }],
    }
}

fn custom(crd: k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition) -> Kind {
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    let version = &crd.spec.versions[0];
    Kind {
        group: leak(crd.spec.group.clone()),
        version: leak(version.name.clone()),
        kind: leak(crd.spec.names.kind.clone()),
        plural: leak(crd.spec.names.plural.clone()),
        singular: leak(crd.spec.names.singular.clone().unwrap_or_default()),
        short_names: crd.spec.names.short_names.clone().unwrap_or_default(),
        namespaced: crd.spec.scope == "Namespaced",
        status: version.subresources.as_ref().and_then(|s| s.status.as_ref()).is_some(),
        mgmt_only: true,
        columns: version
            .additional_printer_columns
            .iter()
            .flatten()
            .map(|c| Column { name: c.name.clone(), type_: c.type_.clone(), json_path: c.json_path.clone() })
            .collect(),
    }
}

/// Every kind, built once (the CRDs' columns come from the Rust types).
pub fn kinds() -> &'static [Kind] {
    static KINDS: OnceLock<Vec<Kind>> = OnceLock::new();
    KINDS.get_or_init(|| {
        let mut kinds = vec![
            builtin("", "Namespace", "namespaces", false, &["ns"]),
            builtin("", "Service", "services", true, &["svc"]),
            builtin("", "ConfigMap", "configmaps", true, &["cm"]),
            builtin("", "Secret", "secrets", true, &[]),
            builtin("", "Event", "events", true, &["ev"]),
            // What CIS reads of a member cluster besides lbdesk's objects: the demo's backends.
            builtin("", "Endpoints", "endpoints", true, &["ep"]),
            builtin("", "Node", "nodes", false, &["no"]),
            builtin("networking.k8s.io", "Ingress", "ingresses", true, &["ing"]),
            builtin("events.k8s.io", "Event", "events", true, &["ev"]),
            builtin("coordination.k8s.io", "Lease", "leases", true, &[]),
            // Held only, as by an API server without controllers: lbdesk's own manifests
            // (`deploy/`) apply to the embedded API as to a real cluster.
            builtin("", "ServiceAccount", "serviceaccounts", true, &["sa"]),
            builtin("apps", "Deployment", "deployments", true, &["deploy"]),
            builtin("policy", "PodDisruptionBudget", "poddisruptionbudgets", true, &["pdb"]),
            builtin("networking.k8s.io", "NetworkPolicy", "networkpolicies", true, &["netpol"]),
            builtin("rbac.authorization.k8s.io", "ClusterRole", "clusterroles", false, &[]),
            builtin("rbac.authorization.k8s.io", "ClusterRoleBinding", "clusterrolebindings", false, &[]),
            builtin("rbac.authorization.k8s.io", "Role", "roles", true, &[]),
            builtin("rbac.authorization.k8s.io", "RoleBinding", "rolebindings", true, &[]),
            builtin(
                "admissionregistration.k8s.io",
                "ValidatingWebhookConfiguration",
                "validatingwebhookconfigurations",
                false,
                &[],
            ),
            builtin(
                "apiextensions.k8s.io",
                "CustomResourceDefinition",
                "customresourcedefinitions",
                false,
                &["crd", "crds"],
            ),
        ];
        for k in &mut kinds {
            k.singular = Box::leak(k.kind.to_lowercase().into_boxed_str());
        }
        kinds.extend([
            custom(Loadbalancer::crd()),
            custom(Lbticket::crd()),
            custom(Lbrule::crd()),
            custom(Lbaddress::crd()),
            custom(Lbquota::crd()),
        ]);
        kinds
    })
}

/// The kind served at `group`/`version`/`plural` by a cluster.
pub fn find(group: &str, version: &str, plural: &str, is_mgmt: bool) -> Option<&'static Kind> {
    kinds().iter().find(|k| k.group == group && k.version == version && k.plural == plural && k.served_by(is_mgmt))
}

const VERBS: [&str; 7] = ["create", "delete", "get", "list", "patch", "update", "watch"];

/// `APIResourceList` of one group/version, or `None` when the cluster serves nothing there.
pub fn resource_list(group: &str, version: &str, is_mgmt: bool) -> Option<Value> {
    let group_version = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
    let mut resources = Vec::new();
    for k in kinds().iter().filter(|k| k.group == group && k.version == version && k.served_by(is_mgmt)) {
        resources.push(json!({
            "name": k.plural,
            "singularName": k.singular,
            "namespaced": k.namespaced,
            "kind": k.kind,
            "verbs": VERBS,
            "shortNames": k.short_names,
        }));
        if k.status {
            resources.push(json!({
                "name": format!("{}/status", k.plural),
                "singularName": "",
                "namespaced": k.namespaced,
                "kind": k.kind,
                "verbs": ["get", "patch", "update"],
            }));
        }
    }
    (!resources.is_empty()).then(|| {
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources})
    })
}

/// `APIGroupList` of the named groups a cluster serves.
pub fn group_list(is_mgmt: bool) -> Value {
    let mut groups: Vec<(&str, &str)> = Vec::new();
    for k in kinds().iter().filter(|k| !k.group.is_empty() && k.served_by(is_mgmt)) {
        if !groups.contains(&(k.group, k.version)) {
            groups.push((k.group, k.version));
        }
    }
    let groups: Vec<Value> = groups
        .into_iter()
        .map(|(g, v)| {
            let gv = json!({"groupVersion": format!("{g}/{v}"), "version": v});
            json!({"name": g, "versions": [gv.clone()], "preferredVersion": gv})
        })
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `APIGroup` of one named group.
pub fn group(name: &str, is_mgmt: bool) -> Option<Value> {
    group_list(is_mgmt)["groups"].as_array().and_then(|gs| gs.iter().find(|g| g["name"] == name).cloned()).map(
        |mut g| {
            g["kind"] = json!("APIGroup");
            g["apiVersion"] = json!("v1");
            g
        },
    )
}

/// `APIVersions` of the core group.
pub fn core_versions() -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}]
    })
}

/// The OpenAPI v3 root: one document per group/version the cluster serves.
pub fn openapi_root(is_mgmt: bool) -> Value {
    let mut paths = serde_json::Map::new();
    for k in kinds().iter().filter(|k| k.served_by(is_mgmt)) {
        let gv =
            if k.group.is_empty() { format!("api/{}", k.version) } else { format!("apis/{}/{}", k.group, k.version) };
        paths.insert(gv.clone(), json!({"serverRelativeURL": format!("/openapi/v3/{gv}")}));
    }
    json!({"paths": paths})
}

/// The OpenAPI v3 document of a group/version: enough for kubectl to see that PATCH takes
/// `fieldValidation`, so it validates on the server instead of downloading schemas.
pub fn openapi_group_version(group: &str, version: &str, is_mgmt: bool) -> Option<Value> {
    let mut paths = serde_json::Map::new();
    for k in kinds().iter().filter(|k| k.group == group && k.version == version && k.served_by(is_mgmt)) {
        let prefix = if group.is_empty() { format!("/api/{version}") } else { format!("/apis/{group}/{version}") };
        let collection = if k.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}", k.plural)
        } else {
            format!("{prefix}/{}", k.plural)
        };
        let gvk = json!({"group": k.group, "version": k.version, "kind": k.kind});
        let param = json!([{"name": "fieldValidation", "in": "query", "schema": {"type": "string"}}]);
        let op = json!({"x-kubernetes-group-version-kind": gvk, "parameters": param, "responses": {"200": {"description": "OK"}}});
        paths.insert(format!("{collection}/{{name}}"), json!({"get": op, "put": op, "patch": op, "delete": op}));
        paths.insert(collection, json!({"get": op, "post": op}));
    }
    (!paths.is_empty()).then(
        || json!({"openapi": "3.0.0", "info": {"title": "lbdesk embedded API", "version": version}, "paths": paths}),
    )
}

/// `/version`.
pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": "37",
        "gitVersion": "v1.37.0-lbdesk",
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "",
        "goVersion": "",
        "compiler": "rustc",
        "platform": "linux/amd64"
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crds_are_served_by_the_management_cluster_only() {
        assert!(find("ebcpaas.io", "v1", "lbtickets", true).is_some());
        assert!(find("ebcpaas.io", "v1", "lbtickets", false).is_none());
        assert!(find("", "v1", "configmaps", false).is_some());
        let tickets = find("ebcpaas.io", "v1", "lbtickets", true).expect("served");
        let names: Vec<&str> = tickets.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["Phase", "VEIP", "LTMIP", "Loadbalancer", "Age"]);
        assert!(tickets.status && !tickets.namespaced);
        let list = resource_list("ebcpaas.io", "v1", true).expect("list");
        assert!(list["resources"].as_array().expect("array").iter().any(|r| r["name"] == "lbtickets/status"));
        assert!(resource_list("ebcpaas.io", "v1", false).is_none());
    }
}
