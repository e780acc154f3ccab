//! The Kubernetes Ingress that F5 CIS turns into a BIG-IP virtual server, from an F5 Ingress
//! kept with its ticket (`spec.ingresses`): routes, TLS, the ingress class CIS watches, the
//! label naming the ticket, and the CIS annotations taken from the ticket and its load
//! balancer. The page shows the same annotations the reconciler writes.

use std::collections::BTreeMap;

use k8s_openapi::api::networking::v1::{
    HTTPIngressPath, HTTPIngressRuleValue, Ingress, IngressBackend, IngressRule as KubeRule, IngressServiceBackend,
    IngressSpec, IngressTLS, ServiceBackendPort,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::crd::{DesiredState, F5Ingress, LABEL_LBTICKET, LbType, LbticketSpec, LbticketStatus, Phase};

/// The ingress class CIS watches unless configured otherwise (CIS's `--ingress-class`).
pub const DEFAULT_CLASS: &str = "f5";
/// The port an F5 Ingress serves plain HTTP on.
pub const HTTP_PORT: u16 = 80;
/// The port an F5 Ingress with TLS serves HTTPS on.
pub const HTTPS_PORT: u16 = 443;

/// The BIG-IP partition of the Ingresses of a load balancer whose AS3 tenant is `tenant`.
///
/// NB: not the tenant itself: CIS lets an AS3 ConfigMap's tenant overwrite a partition of the
/// same name configured from Ingresses, and lbdesk writes that tenant (empty, if need be) for
/// as long as the load balancer exists.
pub fn partition(tenant: &str) -> String {
    format!("{tenant}_ingress")
}

/// Whether a ticket's F5 Ingresses belong in the member cluster now: Enabled, Active, an
/// address for F5 Ingresses.
pub fn is_live(spec: &LbticketSpec, status: Option<&LbticketStatus>) -> bool {
    spec.lbtype == LbType::Ingress
        && spec.state == DesiredState::Active
        && status.is_some_and(|s| s.phase == Phase::Enabled && s.veip.is_some())
}

/// The annotations CIS reads, for an Ingress on `veip` in the load balancer's AS3 `tenant`.
pub fn annotations(veip: &str, tenant: &str, tls: bool, class: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::from([
        // NB: CIS honours this annotation before `spec.ingressClassName`, and then needs no
        // IngressClass object in the member cluster.
        ("kubernetes.io/ingress.class".to_string(), class.to_string()),
        ("virtual-server.f5.com/ip".to_string(), veip.to_string()),
        ("virtual-server.f5.com/partition".to_string(), partition(tenant)),
        ("virtual-server.f5.com/http-port".to_string(), HTTP_PORT.to_string()),
        ("virtual-server.f5.com/balance".to_string(), "round-robin".to_string()),
    ]);
    if tls {
        out.insert("virtual-server.f5.com/https-port".into(), HTTPS_PORT.to_string());
        out.insert("ingress.kubernetes.io/ssl-redirect".into(), "true".into());
    }
    out
}

/// The Ingress for `ingress` of ticket `ticket` (in `namespace`, on `veip`, in the load
/// balancer's AS3 `tenant`), with ingress class `class`. Routes with the same host share one
/// rule, in the order first given.
pub fn desired(ticket: &str, namespace: &str, ingress: &F5Ingress, veip: &str, tenant: &str, class: &str) -> Ingress {
    let mut hosts: Vec<(Option<String>, Vec<HTTPIngressPath>)> = Vec::new();
    for route in &ingress.rules {
        let path = HTTPIngressPath {
            path: Some(route.path.clone()),
            path_type: "Prefix".into(),
            backend: IngressBackend {
                service: Some(IngressServiceBackend {
                    name: route.service.clone(),
                    port: Some(ServiceBackendPort { number: Some(route.port.into()), name: None }),
                }),
                resource: None,
            },
        };
        match hosts.iter_mut().find(|(h, _)| *h == route.host) {
            Some((_, paths)) => paths.push(path),
            None => hosts.push((route.host.clone(), vec![path])),
        }
    }
    let named: Vec<String> = hosts.iter().filter_map(|(h, _)| h.clone()).collect();
    let tls = ingress.tls_secret.as_ref().map(|secret| {
        vec![IngressTLS { hosts: (!named.is_empty()).then_some(named), secret_name: Some(secret.clone()) }]
    });
    Ingress {
        metadata: ObjectMeta {
            name: Some(ingress.name.clone()),
            namespace: Some(namespace.to_string()),
            labels: Some(BTreeMap::from([(LABEL_LBTICKET.to_string(), ticket.to_string())])),
            annotations: Some(annotations(veip, tenant, ingress.tls_secret.is_some(), class)),
            ..Default::default()
        },
        spec: Some(IngressSpec {
            ingress_class_name: Some(class.to_string()),
            rules: Some(
                hosts
                    .into_iter()
                    .map(|(host, paths)| KubeRule { host, http: Some(HTTPIngressRuleValue { paths }) })
                    .collect(),
            ),
            tls,
            default_backend: None,
        }),
        status: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::crd::IngressRule;

    fn route(host: Option<&str>, path: &str, service: &str) -> IngressRule {
        IngressRule { host: host.map(String::from), path: path.into(), service: service.into(), port: 8080 }
    }

    #[test]
    fn the_ingress_carries_the_class_the_label_and_the_cis_annotations() {
        let shop = F5Ingress {
            name: "shop".into(),
            rules: vec![route(Some("a.example.com"), "/", "web"), route(None, "/api", "api")],
            tls_secret: None,
        };
        let ing = desired("pay", "team-a", &shop, "20.9.0.3", "shared", "f5");
        assert_eq!(ing.metadata.name.as_deref(), Some("shop"));
        assert_eq!(ing.metadata.namespace.as_deref(), Some("team-a"));
        let labels = ing.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels.get(LABEL_LBTICKET).map(String::as_str), Some("pay"));
        let annotations = ing.metadata.annotations.clone().unwrap_or_default();
        for (key, value) in [
            ("kubernetes.io/ingress.class", "f5"),
            ("virtual-server.f5.com/ip", "20.9.0.3"),
            ("virtual-server.f5.com/partition", "shared_ingress"),
            ("virtual-server.f5.com/http-port", "80"),
        ] {
            assert_eq!(annotations.get(key).map(String::as_str), Some(value), "{key}");
        }
        assert!(!annotations.contains_key("virtual-server.f5.com/https-port"), "no TLS, no HTTPS port");
        let spec = ing.spec.expect("a spec");
        assert_eq!(spec.ingress_class_name.as_deref(), Some("f5"));
        let rules = spec.rules.expect("rules");
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[0].host.as_deref(), Some("a.example.com"));
        assert_eq!(rules[1].host, None, "every host");
        let backend = &rules[1].http.as_ref().expect("paths").paths[0];
        assert_eq!(backend.path.as_deref(), Some("/api"));
        assert_eq!(backend.backend.service.as_ref().map(|s| s.name.as_str()), Some("api"));
        assert!(spec.tls.is_none());
    }

    #[test]
    fn routes_of_one_host_share_a_rule_and_tls_names_the_hosts() {
        let shop = F5Ingress {
            name: "shop".into(),
            rules: vec![route(Some("a.example.com"), "/", "web"), route(Some("a.example.com"), "/api", "api")],
            tls_secret: Some("shop-tls".into()),
        };
        let ing = desired("pay", "team-a", &shop, "20.9.0.3", "shared", "bigip");
        let annotations = ing.metadata.annotations.clone().unwrap_or_default();
        assert_eq!(annotations.get("virtual-server.f5.com/https-port").map(String::as_str), Some("443"));
        assert_eq!(annotations.get("kubernetes.io/ingress.class").map(String::as_str), Some("bigip"));
        let spec = ing.spec.expect("a spec");
        let rules = spec.rules.expect("rules");
        assert_eq!(rules.len(), 1);
        assert_eq!(rules[0].http.as_ref().expect("paths").paths.len(), 2);
        let tls = spec.tls.expect("tls");
        assert_eq!(tls[0].secret_name.as_deref(), Some("shop-tls"));
        assert_eq!(tls[0].hosts.as_deref(), Some(&["a.example.com".to_string()][..]));
    }

    #[test]
    fn only_enabled_active_ingress_addresses_carry_ingresses() {
        let status = |phase| LbticketStatus { phase, veip: Some("20.9.0.3".into()), ..Default::default() };
        let spec = |lbtype, state| LbticketSpec { lbtype, state, ..Default::default() };
        let live = spec(LbType::Ingress, DesiredState::Active);
        assert!(is_live(&live, Some(&status(Phase::Enabled))));
        assert!(!is_live(&live, Some(&status(Phase::Requested))));
        assert!(!is_live(&live, None));
        assert!(!is_live(&spec(LbType::Ingress, DesiredState::Disabled), Some(&status(Phase::Enabled))));
        assert!(!is_live(&spec(LbType::Listener, DesiredState::Active), Some(&status(Phase::Enabled))));
    }
}
