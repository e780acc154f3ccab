//! Screen 5's server functions called as a crafted client would: an F5 Ingress saved on an
//! address for F5 Ingresses reaches the member cluster as an Ingress with the CIS annotations,
//! and every rule the page greys out is refused beside its field.

use std::collections::BTreeMap;

use app::components::address::Carried;
use app::components::list::Page;
use app::domain::cis_ingress;
use app::domain::crd::{IngressRule, LABEL_LBTICKET, LbType, Phase, ServiceRef};
use app::error::AppError;
use app::screens::audit::AuditPage;
use app::screens::ingresses::{AddressIngresses, IngressChoices, IngressDetail, IngressForm};
use app::screens::listeners::ListenerForm;
use app::screens::tickets::TicketForm;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::networking::v1::Ingress;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{Backend, Lbdesk, until};
use crate::on_sqlite;
use crate::shared::Shared;
use crate::user::{User, ok, own_namespace, refused, ticket_form, wait_phase};

on_sqlite!(an_ingress_is_saved_listed_and_carried_by_the_member_cluster);

fn route(host: Option<&str>, path: &str, service: &str, port: u16) -> IngressRule {
    IngressRule { host: host.map(String::from), path: path.into(), service: service.into(), port }
}

fn form(ticket: &str, name: &str, rules: Vec<IngressRule>) -> IngressForm {
    IngressForm { ticket: ticket.into(), name: name.into(), rules, ..Default::default() }
}

/// Shared by the tests here: one works in team-a, the other in a namespace of its own.
static LBDESK: Shared = Shared::with_demo_lb();

/// Alice's request `name` in `namespace`, for `lbtype`, once Enabled.
async fn address(alice: &User, name: &str, namespace: &str, lbtype: LbType) {
    let ticket = TicketForm { lbtype, ..ticket_form(name, namespace, "") };
    ok::<String>(alice.json("ticket/save", json!({"form": ticket})).await).await;
    wait_phase(alice, name, Phase::Enabled).await;
}

async fn choices(user: &User, ticket: &str, name: &str) -> IngressChoices {
    ok(user.form("ingress/choices", &[("ticket", ticket), ("name", name)]).await).await
}

async fn detail(user: &User, ticket: &str, name: &str) -> IngressDetail {
    ok(user.form("ingress/get", &[("ticket", ticket), ("name", name)]).await).await
}

/// A Secret of `type_` in acp-region01's `team-a`.
async fn secret(lbdesk: &Lbdesk, name: &str, type_: &str) {
    let secrets: Api<Secret> = Api::namespaced(lbdesk.client("acp-region01").await, "team-a");
    let data = BTreeMap::from([
        ("tls.crt".to_string(), ByteString(b"certificate".to_vec())),
        ("tls.key".to_string(), ByteString(b"key-s3cret".to_vec())),
    ]);
    let secret = Secret {
        metadata: ObjectMeta { name: Some(name.into()), ..Default::default() },
        type_: Some(type_.into()),
        data: Some(data),
        ..Default::default()
    };
    secrets.create(&PostParams::default(), &secret).await.expect("a Secret");
}

async fn an_ingress_is_saved_listed_and_carried_by_the_member_cluster(backend: Backend) {
    let lbdesk = LBDESK.get(backend).await;
    let (admin, alice) = (User::sign_in(&lbdesk, "admin").await, User::sign_in(&lbdesk, "alice").await);
    address(&alice, "gate", "team-a", LbType::Ingress).await;
    secret(&lbdesk, "gate-tls", "kubernetes.io/tls").await;
    secret(&lbdesk, "gate-env", "Opaque").await;

    let offered = choices(&alice, "gate", "").await;
    assert_eq!(offered.add, None, "an Enabled address for F5 Ingresses takes them");
    assert_eq!(offered.secrets, ["gate-tls"], "only TLS Secrets, by name");
    assert!(offered.services.iter().any(|s| s.name == "web-v1" && s.ports == [8080, 8443]), "{:?}", offered.services);
    let shop = IngressForm {
        tls_secret: Some("gate-tls".into()),
        ..form(
            "gate",
            "shop",
            vec![route(Some("shop.example.com"), "/", "web-v1", 8080), route(None, "/api", "api", 8080)],
        )
    };
    assert_eq!(ok::<String>(alice.json("ingress/save", json!({"form": shop})).await).await, "shop");

    let list =
        ok::<Page<AddressIngresses>>(alice.form("ingress/list", &[("project", ""), ("after", "")]).await).await.rows;
    let gate = list.iter().find(|g| g.address.ticket == "gate").expect("the address is listed");
    assert_eq!(gate.ingresses, [shop.ingress()]);
    let veip = gate.address.veip.clone();
    assert!(veip.starts_with("20.1.0."), "{veip}");

    let d = detail(&alice, "gate", "shop").await;
    assert_eq!(d.ingress, shop.ingress());
    assert_eq!((d.edit.as_deref(), d.cis.class.as_str()), (None, "f5"));
    // The annotations the page shows are the reconciler's, from the address and the AS3 tenant.
    let wanted = |tls| cis_ingress::annotations(&veip, "acp-region01", tls, "f5");
    for (tls, shown) in [(false, d.cis.annotations(false)), (true, d.cis.annotations(true))] {
        let lines: Vec<String> = wanted(tls).iter().map(|(k, v)| format!("{k}: {v}")).collect();
        assert_eq!(shown, lines.join("\n"), "TLS: {tls}");
    }

    // An edit, from the form as loaded; its Services are no longer offered to another Ingress.
    let loaded = choices(&alice, "gate", "shop").await;
    assert!(loaded.services.iter().any(|s| s.name == "web-v1"), "its own Services: {:?}", loaded.services);
    assert!(choices(&alice, "gate", "").await.services.iter().all(|s| s.name != "web-v1" && s.name != "api"));
    let edit = IngressForm {
        tls_secret: None,
        generation: Some(loaded.address.generation),
        ..form("gate", "shop", vec![route(Some("shop.example.com"), "/shop", "web-v1", 8443)])
    };
    ok::<String>(alice.json("ingress/save", json!({"form": edit})).await).await;
    assert_eq!(detail(&alice, "gate", "shop").await.ingress, edit.ingress());
    let stale = refused(alice.json("ingress/save", json!({"form": edit})).await, StatusCode::CONFLICT).await;
    assert!(matches!(stale, AppError::Conflict(_)), "{stale:?}");

    // Both changes are in the audit log, as the pages' user.
    let query = json!({"user": "", "object": "gate", "kind": "", "action": "", "from": "", "to": "", "cursor": ""});
    let audit: AuditPage = ok(admin.json("audit/list", json!({"query": query})).await).await;
    for action in ["add F5 Ingress", "update F5 Ingress"] {
        assert!(audit.rows.iter().any(|r| r.action == action && r.user == "alice"), "{action}: {:?}", audit.rows);
    }

    // The Ingress the reconciler writes: the annotations the page shows, the class, the label.
    let ingresses: Api<Ingress> = Api::namespaced(lbdesk.client("acp-region01").await, "team-a");
    until("the member cluster to hold the edited Ingress", 20, || async {
        let found = ingresses.get_opt("shop").await.ok().flatten();
        found.and_then(|i| i.metadata.annotations).is_some_and(|a| !a.contains_key("virtual-server.f5.com/https-port"))
    })
    .await;
    let ingress = ingresses.get("shop").await.expect("the Ingress");
    let annotations = ingress.metadata.annotations.clone().unwrap_or_default();
    for (key, value) in wanted(false) {
        assert_eq!(annotations.get(&key), Some(&value), "{key}");
    }
    assert_eq!(annotations.get("virtual-server.f5.com/ip"), Some(&veip));
    assert_eq!(ingress.spec.as_ref().and_then(|s| s.ingress_class_name.as_deref()), Some("f5"));
    assert_eq!(ingress.metadata.labels.unwrap_or_default().get(LABEL_LBTICKET).map(String::as_str), Some("gate"));
    until("the page to say the member cluster carries it", 20, || async {
        let d = detail(&alice, "gate", "shop").await;
        d.address.carried == Carried::Yes && d.deployed.is_some_and(|j| j.contains(&veip))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ingress_refusals_reach_their_fields_and_an_address_in_use_stays() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    own_namespace(&lbdesk, "acp-region01", "project-a", "refusals").await;
    let alice = User::sign_in(&lbdesk, "alice").await;
    address(&alice, "counter", "refusals", LbType::Listener).await;
    address(&alice, "door", "refusals", LbType::Ingress).await;
    let listener = ListenerForm {
        ticket: "counter".into(),
        name: "web".into(),
        port: 80,
        services: vec![ServiceRef { service: "web-v1".into(), port: 8080, weight: 100 }],
        ..Default::default()
    };
    ok::<String>(alice.json("listener/save", json!({"form": listener})).await).await;
    let save = |f: IngressForm| alice.json("ingress/save", json!({"form": f}));
    ok::<String>(save(form("door", "web", vec![route(None, "/", "api", 8080)])).await).await;

    assert!(choices(&alice, "counter", "").await.add.is_some_and(|r| r.contains("listeners")));
    // NB: every refusal's field, row by row, is `ssr::change`'s table test; here, one refusal
    // of the one check admission also makes and one of what only the member cluster can tell
    // travel the server function to their form fields.
    for (what, f, field) in [
        ("a Service a listener uses", form("door", "web2", vec![route(None, "/", "web-v1", 8080)]), "rules[0].service"),
        (
            "a TLS Secret the namespace does not have",
            IngressForm {
                tls_secret: Some("nope".into()),
                ..form("door", "web2", vec![route(None, "/", "dns", 8053)])
            },
            "tlsSecret",
        ),
    ] {
        let error = refused(save(f).await, StatusCode::BAD_REQUEST).await;
        assert!(error.for_field(field).is_some(), "{what}: {error:?}");
    }

    // The address cannot be disabled while it carries an F5 Ingress.
    let disable = || alice.form("ticket/act", &[("name", "door"), ("action", "Disable")]);
    let error = refused(disable().await, StatusCode::CONFLICT).await;
    assert_eq!(error, AppError::Refused("In use by 1 F5 Ingress; remove it first.".into()));

    // Another project's tenant learns nothing: the answer of a request that does not exist.
    let bob = User::sign_in(&lbdesk, "bob").await;
    let hidden = AppError::NotFound("There is no such address request in your projects.".into());
    for ticket in ["door", "no-such-request"] {
        for res in [
            bob.form("ingress/get", &[("ticket", ticket), ("name", "web")]).await,
            bob.form("ingress/choices", &[("ticket", ticket), ("name", "")]).await,
            bob.json("ingress/save", json!({"form": form(ticket, "web3", vec![route(None, "/", "dns", 8053)])})).await,
            bob.form("ingress/delete", &[("ticket", ticket), ("name", "web")]).await,
        ] {
            assert_eq!(refused(res, StatusCode::NOT_FOUND).await, hidden, "{ticket}");
        }
    }
    let bobs = ok::<Page<AddressIngresses>>(bob.form("ingress/list", &[("project", "project-a"), ("after", "")]).await)
        .await
        .rows;
    assert!(bobs.is_empty(), "{bobs:?}");

    // Deleted, it no longer holds the address up.
    ok::<()>(alice.form("ingress/delete", &[("ticket", "door"), ("name", "web")]).await).await;
    let gone =
        refused(alice.form("ingress/get", &[("ticket", "door"), ("name", "web")]).await, StatusCode::NOT_FOUND).await;
    assert_eq!(gone, AppError::NotFound("There is no such F5 Ingress in your projects.".into()));
    ok::<()>(disable().await).await;
}
