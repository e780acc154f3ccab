//! The manifests in `deploy/`: every object is read into its k8s-openapi type with nothing left
//! over (a misspelt field would be dropped), says what production needs (replicas, probes,
//! resources, a non-root read-only container, a webhook that fails closed within Kubernetes'
//! timeout), grants what the README lists and nothing more; kubectl applies them all to the
//! embedded API (but cert-manager's, which only cert-manager serves). And kubectl applies,
//! lists (the printer columns), labels and deletes the seed's objects.
//!
//! The module's lbdesk runs no reconciler: what kubectl applies here stays as applied, and the
//! seed's test writes its request's status itself.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use app::domain::crd::Lbticket;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{Patch, PatchParams};
use kube::core::DynamicObject;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::helpers::{Backend, Options};
use crate::kubectl::Kubectl;
use crate::shared::Shared;

static LBDESK: Shared = Shared::with(|| Options { reconciler: false, ..Default::default() }, false);

fn deploy() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

/// Every YAML file under `deploy/`, with each of its documents.
fn documents() -> Vec<(String, Value)> {
    let mut files = Vec::new();
    let mut dirs = vec![deploy()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("deploy/").flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml") {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).expect("readable");
        let name = path.strip_prefix(deploy()).expect("under deploy/").display().to_string();
        for doc in serde_yaml::Deserializer::from_str(&text) {
            let value: Value = Value::deserialize(doc).unwrap_or_else(|e| panic!("{name}: {e}"));
            if !value.is_null() {
                out.push((name.clone(), value));
            }
        }
    }
    out
}

/// `value` read as `K`, and written back the same: nothing was dropped on the way.
fn typed<K: DeserializeOwned + serde::Serialize>(file: &str, value: &Value) -> K {
    let object: K = serde_path_to_error::deserialize(value).unwrap_or_else(|e| panic!("{file}: {e}"));
    let back = serde_json::to_value(&object).expect("serialises");
    assert_eq!(&back, value, "{file}: a field k8s-openapi does not know, or a wrong type");
    object
}

/// Every object of the manifests, by kind, typed.
#[derive(Default)]
struct Manifests {
    deployments: Vec<Deployment>,
    cluster_roles: Vec<ClusterRole>,
    roles: Vec<Role>,
    webhooks: Vec<ValidatingWebhookConfiguration>,
    pdbs: Vec<PodDisruptionBudget>,
    network_policies: Vec<NetworkPolicy>,
    crds: Vec<CustomResourceDefinition>,
    config_maps: Vec<ConfigMap>,
    secrets: Vec<Secret>,
    kinds: BTreeMap<String, usize>,
}

fn manifests() -> Manifests {
    let mut m = Manifests::default();
    for (file, value) in documents() {
        let kind = value["kind"].as_str().unwrap_or_default().to_string();
        let api_version = value["apiVersion"].as_str().unwrap_or_default();
        *m.kinds.entry(kind.clone()).or_default() += 1;
        match kind.as_str() {
            "Namespace" => drop(typed::<Namespace>(&file, &value)),
            "ServiceAccount" => drop(typed::<ServiceAccount>(&file, &value)),
            "Secret" => m.secrets.push(typed(&file, &value)),
            "ConfigMap" => m.config_maps.push(typed(&file, &value)),
            "Service" => drop(typed::<Service>(&file, &value)),
            "ClusterRoleBinding" => drop(typed::<ClusterRoleBinding>(&file, &value)),
            "RoleBinding" => drop(typed::<RoleBinding>(&file, &value)),
            "ClusterRole" => m.cluster_roles.push(typed(&file, &value)),
            "Role" => m.roles.push(typed(&file, &value)),
            "Deployment" => m.deployments.push(typed(&file, &value)),
            "PodDisruptionBudget" => m.pdbs.push(typed(&file, &value)),
            "NetworkPolicy" => m.network_policies.push(typed(&file, &value)),
            "ValidatingWebhookConfiguration" => m.webhooks.push(typed(&file, &value)),
            "CustomResourceDefinition" => m.crds.push(typed(&file, &value)),
            // cert-manager's kinds: no k8s-openapi type; read as any object.
            "Issuer" | "Certificate" if api_version == "cert-manager.io/v1" => {
                drop(typed::<DynamicObject>(&file, &value))
            }
            other => panic!("{file}: {other} is not a kind the manifests should hold"),
        }
    }
    m
}

/// A directory configuration as lbdesk reads it, and its mapping, checked.
fn directory_config(file: &str, text: &str) -> app::ssr::directory::DirectoryConfig {
    serde_yaml::from_str(text).unwrap_or_else(|e| panic!("{file}: {e}"))
}

fn mapping(file: &str, text: &str) -> app::domain::directory::Mapping {
    let mapping: app::domain::directory::Mapping = serde_yaml::from_str(text).unwrap_or_else(|e| panic!("{file}: {e}"));
    assert_eq!(mapping.check(), Ok(()), "{file}");
    mapping
}

#[test]
fn the_directory_examples_are_configurations_lbdesk_reads() {
    let m = manifests();
    let data = |name: &str, key: &str| -> String {
        let map = m.config_maps.iter().find(|c| c.metadata.name.as_deref() == Some(name)).expect(name);
        map.data.as_ref().and_then(|d| d.get(key)).cloned().unwrap_or_else(|| panic!("{name}: {key}"))
    };
    let config = directory_config("lbdesk-directory", &data("lbdesk-directory", "directory.yaml"));
    mapping("lbdesk-directory-groups", &data("lbdesk-directory-groups", "mapping.yaml"));
    // Each file the configuration names is where the Deployment mounts it.
    let lbdesk = m.deployments.iter().find(|d| d.metadata.name.as_deref() == Some("lbdesk")).expect("lbdesk");
    let pod = lbdesk.spec.template.spec.as_ref().expect("a pod");
    let container = pod.containers.first().expect("a container");
    let mounted = |volume: &str| {
        let mount = container.volume_mounts.iter().flatten().find(|v| v.name == volume).expect(volume);
        mount.mount_path.clone()
    };
    let env = container.env.iter().flatten().find(|e| e.name == "LBDESK_DIRECTORY").and_then(|e| e.value.clone());
    assert_eq!(env, Some(format!("{}/directory.yaml", mounted("directory"))));
    assert_eq!(config.mapping_file, Path::new(&mounted("directory-groups")).join("mapping.yaml"));
    assert_eq!(config.bind_password_file, Path::new(&mounted("directory-bind")).join("password"));
    assert_eq!(config.ca_file, Some(Path::new(&mounted("directory")).join("ca.pem")));
    // The metrics' token: a file of the Secret the example defines, where the Deployment mounts it.
    let args = container.args.clone().unwrap_or_default();
    let token = format!("--metrics-token-file={}/token", mounted("metrics-token"));
    assert!(args.contains(&token), "{token} in {args:?}");
    let volume = pod.volumes.iter().flatten().find(|v| v.name == "metrics-token").expect("the volume");
    let secret = volume.secret.as_ref().and_then(|s| s.secret_name.clone()).expect("a Secret");
    let example = m.secrets.iter().find(|s| s.metadata.name.as_deref() == Some(secret.as_str())).expect("its example");
    assert!(example.string_data.as_ref().is_some_and(|d| d.contains_key("token")), "{secret}: token");

    // The README's copy-paste configurations, for Active Directory and OpenLDAP, and the mapping.
    let readme = std::fs::read_to_string(deploy().join("../README.md")).expect("README.md");
    let section = readme.split("### Signing in with a directory").nth(1).expect("the section");
    let section = section.split("\n### ").next().unwrap_or_default();
    let blocks: Vec<&str> =
        section.split("```yaml\n").skip(1).map(|b| b.split("```").next().unwrap_or_default()).collect();
    assert_eq!(blocks.len(), 3, "two configurations and a mapping");
    let ad = directory_config("README (Active Directory)", blocks[0]);
    assert_eq!(ad.users.member_of_attribute.as_deref(), Some("memberOf"));
    let openldap = directory_config("README (OpenLDAP)", blocks[1]);
    assert!(openldap.start_tls && openldap.groups.is_some());
    mapping("README (mapping)", blocks[2]);
}

#[test]
fn every_manifest_is_a_well_formed_object_of_its_kind() {
    let m = manifests();
    for kind in ["Namespace", "ServiceAccount", "ClusterRole", "Role", "Deployment", "Service"] {
        assert!(m.kinds.contains_key(kind), "{kind} in deploy/: {:?}", m.kinds);
    }
    assert_eq!(m.crds.len(), 5, "the five CRDs");
    assert_eq!(m.pdbs.len(), 1);
    // The webhook only from the API server, the metrics only from Prometheus (issue #27).
    let policy = m.network_policies.first().and_then(|p| p.spec.as_ref()).expect("a NetworkPolicy");
    let rules = policy.ingress.clone().unwrap_or_default();
    let from = |port: i32| -> usize {
        let rule = rules.iter().find(|r| {
            r.ports
                .iter()
                .flatten()
                .any(|p| p.port == Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(port)))
        });
        rule.and_then(|r| r.from.as_ref()).map_or(0, Vec::len)
    };
    assert!(from(8443) > 0 && from(9464) > 0, "the webhook and the metrics are not open to every pod");
}

#[test]
fn the_deployments_are_made_for_production() {
    let m = manifests();
    let replicas = |name: &str| {
        let d = m.deployments.iter().find(|d| d.metadata.name.as_deref() == Some(name)).expect(name);
        d.spec.replicas
    };
    assert_eq!(replicas("lbdesk"), Some(2), "two replicas");
    for d in &m.deployments {
        let name = d.metadata.name.clone().unwrap_or_default();
        let spec = &d.spec;
        let pod = spec.template.spec.as_ref().expect("pod spec");
        assert_eq!(pod.service_account_name.as_deref(), Some("lbdesk"));
        let pod_security = pod.security_context.as_ref().expect("pod security");
        assert_eq!(pod_security.run_as_non_root, Some(true), "{name}");
        for c in &pod.containers {
            let probe_path = |p: &Option<k8s_openapi::api::core::v1::Probe>| {
                p.as_ref().and_then(|p| p.http_get.as_ref()).and_then(|h| h.path.clone())
            };
            assert_eq!(probe_path(&c.readiness_probe).as_deref(), Some("/readyz"), "{name}");
            assert_eq!(probe_path(&c.liveness_probe).as_deref(), Some("/healthz"), "{name}");
            let resources = c.resources.as_ref().expect("resources");
            assert!(resources.requests.is_some() && resources.limits.is_some(), "{name}: requests and limits");
            let security = c.security_context.as_ref().expect("container security");
            assert_eq!(security.read_only_root_filesystem, Some(true), "{name}");
            assert_eq!(security.allow_privilege_escalation, Some(false), "{name}");
            let args = c.args.clone().unwrap_or_default();
            for flag in ["--mode=cluster", "--leader-elect"] {
                assert!(args.contains(&flag.to_string()), "{name}: {flag} in {args:?}");
            }
            let env: Vec<&str> = c.env.iter().flatten().map(|e| e.name.as_str()).collect();
            assert!(env.contains(&"DATABASE_URL"), "{name}: shares PostgreSQL");
            // The management cluster through the service account, the members through Secrets.
            assert!(!env.contains(&"KUBECONFIG"), "{name}: no kubeconfig in production");
            let namespace = c.env.iter().flatten().find(|e| e.name == "LBDESK_NAMESPACE").expect("LBDESK_NAMESPACE");
            let from = namespace.value_from.as_ref().and_then(|v| v.field_ref.as_ref()).map(|f| f.field_path.as_str());
            assert_eq!(from, Some("metadata.namespace"), "{name}: its own namespace");
        }
    }
}

#[test]
fn the_webhook_fails_closed_within_kubernetes_timeout_for_every_lbdesk_kind_and_status() {
    let m = manifests();
    let [vwc] = m.webhooks.as_slice() else { panic!("one ValidatingWebhookConfiguration") };
    for hook in vwc.webhooks.iter().flatten() {
        assert_eq!(hook.failure_policy.as_deref(), Some("Fail"));
        assert_eq!(hook.side_effects, "NoneOnDryRun", "a write is charged to its quota, a dry run not");
        assert!(hook.timeout_seconds.is_some_and(|t| (1..=30).contains(&t)));
        assert_eq!(hook.admission_review_versions, ["v1"]);
        let service = hook.client_config.service.as_ref().expect("a Service");
        assert_eq!(service.path.as_deref(), Some("/validate"));
        let resources: Vec<&String> = hook.rules.iter().flatten().flat_map(|r| r.resources.iter().flatten()).collect();
        for crd in &m.crds {
            assert!(resources.contains(&&crd.spec.names.plural), "{} is reviewed", crd.spec.names.plural);
            // A status is lbdesk's alone: a write of it by anyone else is refused (issue #27).
            let status = format!("{}/status", crd.spec.names.plural);
            let has_status =
                crd.spec.versions.iter().any(|v| v.subresources.as_ref().is_some_and(|s| s.status.is_some()));
            assert_eq!(resources.contains(&&status), has_status, "{status} is reviewed");
        }
    }
}

#[test]
fn the_role_grants_what_lbdesk_uses_and_nothing_more() {
    let m = manifests();
    let lbdesk = m.cluster_roles.iter().find(|r| r.metadata.name.as_deref() == Some("lbdesk")).expect("lbdesk");
    let mut granted: Vec<String> = Vec::new();
    for rule in lbdesk.rules.iter().flatten() {
        for group in rule.api_groups.iter().flatten() {
            for resource in rule.resources.iter().flatten() {
                granted.push(format!("{group}/{resource}: {}", rule.verbs.join(",")));
            }
        }
    }
    granted.sort();
    let all = "get,list,watch,create,update,patch,delete";
    let mut wanted = vec![
        "/events: create,patch".to_string(),
        format!("ebcpaas.io/lbaddresses: {all}"),
        format!("ebcpaas.io/lbquotas: {all}"),
        "ebcpaas.io/lbquotas/status: get,update,patch".into(),
        format!("ebcpaas.io/lbrules: {all}"),
        "ebcpaas.io/lbrules/status: get,update,patch".into(),
        format!("ebcpaas.io/lbtickets: {all}"),
        "ebcpaas.io/lbtickets/status: get,update,patch".into(),
        format!("ebcpaas.io/loadbalancers: {all}"),
        "ebcpaas.io/loadbalancers/status: get,update,patch".into(),
        "events.k8s.io/events: create,patch".into(),
    ];
    wanted.sort();
    assert_eq!(granted, wanted);
    let own = m.roles.iter().find(|r| r.metadata.namespace.as_deref() == Some("lbdesk-system")).expect("role");
    let resources: Vec<&String> = own.rules.iter().flatten().flat_map(|r| r.resources.iter().flatten()).collect();
    assert_eq!(resources, ["secrets", "leases"], "Secrets and the Lease, in lbdesk-system only");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_applies_every_manifest_to_the_embedded_api() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let k = Kubectl::new(&lbdesk, &dir);
    // NB: cert-manager's kinds are served by cert-manager only; the namespace goes first; the
    // member clusters' rights go to a member cluster.
    let mut files: Vec<String> = documents().into_iter().map(|(file, _)| file).collect();
    files.dedup();
    files.retain(|f| f != "cert-manager.yaml");
    files.sort_by_key(|f| f != "namespace.yaml");
    let member = "member-cluster/rbac.yaml";
    let (member, mgmt): (Vec<String>, Vec<String>) = files.into_iter().partition(|f| f == member);
    for (context, files) in [("mgmt", mgmt), ("acp-region01", member)] {
        let files: Vec<String> = files.iter().map(|f| deploy().join(f).display().to_string()).collect();
        let mut args = vec!["--context", context, "apply", "--dry-run=client"];
        for f in &files {
            args.extend(["-f", f.as_str()]);
        }
        let (ok, out, err) = k.run(&args, None);
        assert!(ok, "{out}{err}");
        assert!(out.contains("created (dry run)"), "{out}");
        args.retain(|a| *a != "--dry-run=client");
        let (ok, out, err) = k.run(&args, None);
        assert!(ok, "{out}{err}");
    }
    let get = |what: &[&str], path: &str| {
        let mut args = vec!["get"];
        args.extend(what);
        let jsonpath = format!("jsonpath={path}");
        args.extend(["-o", jsonpath.as_str()]);
        let (ok, out, err) = k.run(&args, None);
        assert!(ok, "{what:?}: {err}");
        out
    };
    assert_eq!(get(&["service", "lbdesk", "-n", "lbdesk-system"], "{.spec.ports[*].name}"), "http webhook");
    assert_eq!(get(&["deployment", "lbdesk", "-n", "lbdesk-system"], "{.spec.replicas}"), "2");
    assert_eq!(get(&["crd"], "{.items[*].spec.names.plural}"), "lbaddresses lbquotas lbrules lbtickets loadbalancers");
    assert_eq!(get(&["validatingwebhookconfiguration", "lbdesk"], "{.webhooks[*].failurePolicy}"), "Fail");
    assert_eq!(
        get(&["--context", "acp-region01", "clusterrole", "lbdesk-member"], "{.metadata.name}"),
        "lbdesk-member"
    );
    // The example registration, as the API holds it, names its cluster and holds a kubeconfig.
    let secret: Secret =
        Api::namespaced(lbdesk.client("mgmt").await, "lbdesk-system").get("acp-region01").await.expect("held");
    let (cluster, kubeconfig) = server::members::registration(&secret, "mgmt").expect("a registration");
    assert_eq!(cluster, "acp-region01");
    let kubeconfig = kubeconfig.expect("a kubeconfig");
    assert_eq!(kubeconfig.current_context.as_deref(), Some("acp-region01"));
}

fn seed_objects() -> String {
    std::fs::read_to_string(format!("{}/tests/it/testdata/render-seed.yaml", env!("CARGO_MANIFEST_DIR")))
        .expect("fixture")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_applies_lists_labels_and_deletes_the_seed_objects() {
    // The test writes the status itself.
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let k = Kubectl::new(&lbdesk, &dir);
    let (ok, out, err) = k.run(&["apply", "-f", "-"], Some(&seed_objects()));
    assert!(!ok, "{out}");
    for created in ["loadbalancer.ebcpaas.io/demo created", "lbticket.ebcpaas.io/test created"] {
        assert!(out.contains(created), "{out}");
    }
    // A rule goes on a listener of an Enabled address only: applied too soon, it is refused.
    assert!(err.contains("lbticket: Rules go on listeners of an Enabled address."), "{err}");
    // The reconciler's part, done by hand as lbdesk: the status shows in the printer columns.
    let tickets: Api<Lbticket> = Api::all(lbdesk.clusters.mgmt().clone());
    let status = json!({"status": {"phase": "Enabled", "veip": "20.1.0.10", "ltmip": "10.0.0.10"}});
    tickets.patch_status("test", &PatchParams::default(), &Patch::Merge(&status)).await.expect("status");
    let (ok, out, err) = k.run(&["apply", "-f", "-"], Some(&seed_objects()));
    assert!(ok && out.contains("lbrule.ebcpaas.io/smpl created"), "{out} {err}");
    let (ok, out, err) = k.run(&["get", "lbtickets"], None);
    assert!(ok, "{err}");
    let mut lines = out.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split_whitespace().collect();
    assert_eq!(header, ["NAME", "PHASE", "VEIP", "LTMIP", "LOADBALANCER", "AGE"]);
    let row: Vec<&str> = lines.next().unwrap_or_default().split_whitespace().collect();
    assert_eq!(&row[..5], ["test", "Enabled", "20.1.0.10", "10.0.0.10", "demo"]);

    let (ok, _, err) = k.run(&["label", "lbticket", "test", "team=a"], None);
    assert!(ok, "{err}");
    let (ok, out, _) = k.run(&["get", "lbt", "-l", "team=a", "-o", "name"], None);
    assert!(ok && out.trim() == "lbticket.ebcpaas.io/test", "{out}");
    let (ok, out, _) = k.run(&["get", "lbt", "-l", "team=b", "-o", "name"], None);
    assert!(ok && out.trim().is_empty(), "{out}");

    let (ok, out, err) = k.run(&["delete", "lbrule", "smpl"], None);
    assert!(ok && out.contains("deleted"), "{err}");
    let (ok, _, err) = k.run(&["get", "lbrule", "smpl"], None);
    assert!(!ok && err.contains("NotFound"), "{err}");
    let (ok, out, _) = k.run(&["--context", "acp-region01", "get", "services", "-n", "team-a", "-o", "name"], None);
    assert!(ok && out.contains("service/web-v1"), "member clusters are contexts too: {out}");
}
