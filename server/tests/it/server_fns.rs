//! The server functions of screens 1–2 called as a crafted client would: every rule the pages
//! grey out is refused here too, with the same reason, and no project sees another's objects.

use app::domain::crd::{Lbticket, Listener, Phase, Protocol, ServiceRef, Session};
use app::error::AppError;
use app::screens::loadbalancers::{LbDetail, LbForm, LbRow};
use app::screens::tickets::{TicketForm, TicketList};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{Patch, PatchParams};
use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{Backend, lb_form, own_lb, until};
use crate::shared::Shared;
use crate::user::{User, ok, refused, save_lb, ticket, ticket_form, wait_phase};
use crate::{on_both_databases, on_sqlite};

/// Shared by the tests here: a test that deletes a load balancer or counts the requests on it
/// registers one of its own (`own_lb`), as the others rely on `demo`.
static LBDESK: Shared = Shared::with_demo_lb();

// NB: the load balancer's credentials are kept in the store's Secrets: on both databases.
on_both_databases!(
    an_admin_saves_a_load_balancer_and_never_gets_a_secret_back,
    a_refused_credential_leaves_no_load_balancer_behind
);

on_sqlite!(
    the_load_balancer_functions_are_for_admins_only,
    a_load_balancer_in_use_keeps_its_locked_fields_and_cannot_be_deleted,
    ticket_actions_are_refused_outside_their_phase,
    a_tenant_reaches_nothing_of_another_project,
);

async fn the_load_balancer_functions_are_for_admins_only(backend: Backend) {
    let lbdesk = LBDESK.get(backend).await;
    let admin = User::sign_in(&lbdesk, "admin").await;
    let alice = User::sign_in(&lbdesk, "alice").await;
    let forbidden = AppError::Forbidden("This is for platform admins.".into());
    for res in [
        alice.form("lb/list", &[("search", "")]).await,
        alice.form("lb/get", &[("name", "demo")]).await,
        alice.form("lb/choices", &[]).await,
        save_lb(&alice, &lb_form("mine")).await,
        alice.form("lb/delete", &[("name", "demo")]).await,
    ] {
        assert_eq!(refused(res, StatusCode::FORBIDDEN).await, forbidden);
    }
    let rows: Vec<LbRow> = ok(admin.form("lb/list", &[("search", "")]).await).await;
    let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
    assert!(names.contains(&"demo") && !names.contains(&"mine"), "the tenant changed nothing: {names:?}");
}

async fn an_admin_saves_a_load_balancer_and_never_gets_a_secret_back(backend: Backend) {
    let lbdesk = LBDESK.get(backend).await;
    let admin = User::sign_in(&lbdesk, "admin").await;
    ok::<String>(save_lb(&admin, &own_lb("saved", 12)).await).await;
    let secrets = ["ltm-token-s3cret", "ve-admin-user", "ve-passw0rd-s3cret"];

    let duplicate = refused(save_lb(&admin, &own_lb("copy", 12)).await, StatusCode::CONFLICT).await;
    assert!(duplicate.to_string().contains("already has this LTM URL"), "{duplicate}");
    let missing_token = LbForm {
        ltm_token: None,
        ltm_url: "http://100.1.13.1/api".into(),
        partition: "bare".into(),
        ..lb_form("bare")
    };
    let missing_token = refused(save_lb(&admin, &missing_token).await, StatusCode::BAD_REQUEST).await;
    assert_eq!(
        missing_token.for_field("ltm.token").as_deref(),
        Some("The LTM token is required."),
        "{missing_token:?}"
    );
    let bad_cidr = LbForm { ve_cidr: "20.1.0.0/33".into(), ltm_url: "http://100.1.14.1/api".into(), ..lb_form("bad") };
    let bad_cidr = refused(save_lb(&admin, &bad_cidr).await, StatusCode::BAD_REQUEST).await;
    assert!(bad_cidr.for_field("ve.cidr").is_some(), "{bad_cidr:?}");

    for res in [
        admin.form("lb/get", &[("name", "saved")]).await,
        admin.form("lb/list", &[("search", "")]).await,
        admin.client.get(format!("{}/loadbalancers/saved/edit", lbdesk.url)).send().await.expect("page"),
    ] {
        let body = res.text().await.expect("body");
        for secret in secrets {
            assert!(!body.contains(secret), "{secret} leaked");
        }
    }
    let detail: LbDetail = ok(admin.form("lb/get", &[("name", "saved")]).await).await;
    assert!(detail.token_set && detail.credentials_set);
    assert_eq!((&detail.form.ltm_token, &detail.form.ve_password), (&None, &None));

    // Saving the edit form without typing a secret keeps the stored ones.
    let edit = LbForm { reserved: "20.12.0.9".into(), ..detail.form };
    ok::<String>(save_lb(&admin, &edit).await).await;
    let detail: LbDetail = ok(admin.form("lb/get", &[("name", "saved")]).await).await;
    assert!(detail.token_set && detail.credentials_set);
    assert_eq!(detail.form.reserved, "20.12.0.9");

    // Deleting it takes its credentials along.
    ok::<()>(admin.form("lb/delete", &[("name", "saved")]).await).await;
    let secrets: Api<Secret> = Api::namespaced(lbdesk.client("mgmt").await, "lbdesk-system");
    until("the load balancer and its credentials to be gone", 10, || async {
        admin.form("lb/get", &[("name", "saved")]).await.status() == StatusCode::NOT_FOUND
            && secrets.get_opt("saved-ltm").await.expect("get").is_none()
            && secrets.get_opt("saved-ve").await.expect("get").is_none()
    })
    .await;
}

async fn a_load_balancer_in_use_keeps_its_locked_fields_and_cannot_be_deleted(backend: Backend) {
    let lbdesk = LBDESK.get(backend).await;
    let admin = User::sign_in(&lbdesk, "admin").await;
    ok::<String>(save_lb(&admin, &own_lb("locked", 15)).await).await;
    let alice = User::sign_in(&lbdesk, "alice").await;
    let form = TicketForm { loadbalancer: "locked".into(), ..ticket_form("locking", "team-a", "") };
    ok::<String>(alice.json("ticket/save", json!({ "form": form })).await).await;

    let detail: LbDetail = ok(admin.form("lb/get", &[("name", "locked")]).await).await;
    let locked = LbForm { ve_cidr: "20.2.0.0/16".into(), ..detail.form.clone() };
    let error = refused(save_lb(&admin, &locked).await, StatusCode::BAD_REQUEST).await;
    assert_eq!(error.for_field("ve.cidr").as_deref(), Some("Locked: in use by 1 address request; delete it first."));
    let error = refused(admin.form("lb/delete", &[("name", "locked")]).await, StatusCode::CONFLICT).await;
    assert_eq!(error, AppError::Refused("Cannot delete: in use by 1 address request; delete it first.".into()));
    // What is not locked still saves.
    // The reconciler writes the status meanwhile (capacity, pairs): that is no conflict.
    let free = LbForm { partition: "locked-b".into(), ..detail.form };
    ok::<String>(save_lb(&admin, &free).await).await;
    // A form loaded before someone else's edit is.
    let stale = LbForm { reserved: "20.15.0.7".into(), ..free };
    let error = refused(save_lb(&admin, &stale).await, StatusCode::CONFLICT).await;
    assert_eq!(error, AppError::Conflict("This was changed since you opened it; reload and try again.".into()));
}

async fn ticket_actions_are_refused_outside_their_phase(backend: Backend) {
    let lbdesk = LBDESK.get(backend).await;
    let alice = User::sign_in(&lbdesk, "alice").await;

    // The claimer is the session's user, whatever the request says.
    let mut crafted = json!({ "form": ticket_form("web-a", "team-a", "") });
    crafted["form"]["claimer"] = json!("mallory");
    ok::<String>(alice.json("ticket/save", crafted).await).await;
    let tickets: Api<Lbticket> = Api::all(lbdesk.client("mgmt").await);
    assert_eq!(tickets.get("web-a").await.expect("ticket").spec.claimer, "alice");

    let enabled = wait_phase(&alice, "web-a", Phase::Enabled).await;
    let edit = TicketForm {
        veip: "20.1.0.50".into(),
        generation: Some(enabled.generation),
        ..ticket_form("web-a", "team-a", "")
    };
    let error = refused(alice.json("ticket/save", json!({ "form": edit })).await, StatusCode::CONFLICT).await;
    assert!(error.to_string().starts_with("Only a request that is Created or Failed can be edited"), "{error}");
    let error =
        refused(alice.form("ticket/act", &[("name", "web-a"), ("action", "Delete")]).await, StatusCode::CONFLICT).await;
    assert_eq!(error.to_string(), "Disable the request before deleting it; it is Enabled.");
    let error =
        refused(alice.form("ticket/act", &[("name", "web-a"), ("action", "Enable")]).await, StatusCode::CONFLICT).await;
    assert_eq!(error.to_string(), "Only a Disabled request can be enabled; this one is Enabled.");

    // With a listener on it, disabling would cut live traffic.
    let listener = Listener {
        name: "web".into(),
        port: 80,
        protocol: Protocol::Http,
        session: Session::None,
        services: vec![ServiceRef { service: "web-v1".into(), port: 8080, weight: 100 }],
    };
    tickets
        .patch("web-a", &PatchParams::default(), &Patch::Merge(json!({ "spec": { "listeners": [listener] } })))
        .await
        .expect("a listener");
    // NB: the pages read the API's watch: they see a write through it a moment later.
    let listeners = |n: usize| {
        let alice = &alice;
        async move { ticket(alice, "web-a").await.usage.listeners == n }
    };
    until("the page to see the listener", 10, || listeners(1)).await;
    let error =
        refused(alice.form("ticket/act", &[("name", "web-a"), ("action", "Disable")]).await, StatusCode::CONFLICT)
            .await;
    assert_eq!(error.to_string(), "Disabling would take its 1 listener off the load balancer; remove it first.");
    tickets
        .patch("web-a", &PatchParams::default(), &Patch::Merge(json!({ "spec": { "listeners": [] } })))
        .await
        .expect("no listener");
    until("the page to see no listener", 10, || listeners(0)).await;
    ok::<()>(alice.form("ticket/act", &[("name", "web-a"), ("action", "Disable")]).await).await;
    wait_phase(&alice, "web-a", Phase::Disabled).await;
    ok::<()>(alice.form("ticket/act", &[("name", "web-a"), ("action", "Delete")]).await).await;
    wait_phase(&alice, "web-a", Phase::Deleted).await;

    // An address outside the range is refused beside its field.
    let outside = ticket_form("web-b", "team-a", "30.0.0.1");
    let error = refused(alice.json("ticket/save", json!({ "form": outside })).await, StatusCode::BAD_REQUEST).await;
    assert!(error.for_field("veip").is_some_and(|m| m.contains("not inside")), "{error:?}");
}

async fn a_tenant_reaches_nothing_of_another_project(backend: Backend) {
    let lbdesk = LBDESK.get(backend).await;
    let admin = User::sign_in(&lbdesk, "admin").await;
    let only_b = LbForm {
        scope: vec!["project-b".into()],
        partition: "only-b".into(),
        ltm_url: "http://100.1.1.2/api".into(),
        ve_addr: "200.1.1.2".into(),
        ..lb_form("only-b")
    };
    ok::<String>(save_lb(&admin, &only_b).await).await;
    let alice = User::sign_in(&lbdesk, "alice").await;
    ok::<String>(alice.json("ticket/save", json!({ "form": ticket_form("web-c", "team-a", "") })).await).await;
    wait_phase(&alice, "web-c", Phase::Enabled).await;

    let bob = User::sign_in(&lbdesk, "bob").await;
    let rows = ok::<TicketList>(bob.form("ticket/list", &[("project", "project-a")]).await).await.rows;
    assert!(rows.is_empty(), "bob lists nothing of project-a: {rows:?}");
    let hidden = AppError::NotFound("There is no such address request in your projects.".into());
    for res in [
        bob.form("ticket/get", &[("name", "web-c")]).await,
        bob.form("ticket/act", &[("name", "web-c"), ("action", "Disable")]).await,
        bob.json(
            "ticket/save",
            json!({ "form": TicketForm { generation: Some(1), ..ticket_form("web-c", "team-a", "") } }),
        )
        .await,
    ] {
        assert_eq!(refused(res, StatusCode::NOT_FOUND).await, hidden);
    }
    // Nor a namespace of project-a, nor a load balancer not offered to his project.
    let error = refused(
        bob.json("ticket/save", json!({ "form": ticket_form("b-1", "team-a", "") })).await,
        StatusCode::BAD_REQUEST,
    )
    .await;
    assert!(error.for_field("namespace").is_some(), "{error:?}");
    let error = refused(
        alice
            .json(
                "ticket/save",
                json!({ "form": TicketForm { loadbalancer: "only-b".into(), ..ticket_form("a-2", "team-a", "") } }),
            )
            .await,
        StatusCode::BAD_REQUEST,
    )
    .await;
    // The same words as for a load balancer that does not exist: no ownership oracle.
    let no_lb = Some("There is no such load balancer offered to your project.");
    assert_eq!(error.for_field("loadbalancer").as_deref(), no_lb);
    let probe = [("loadbalancer", "only-b"), ("side", "ve"), ("address", "20.1.0.1"), ("ticket", "x")];
    let error = refused(alice.form("ticket/check-address", &probe).await, StatusCode::BAD_REQUEST).await;
    assert_eq!(error.for_field("loadbalancer").as_deref(), no_lb);
    // Nothing bob tried changed alice's request.
    assert_eq!(ticket(&alice, "web-c").await.row.phase, Phase::Enabled);
}

async fn a_refused_credential_leaves_no_load_balancer_behind(backend: Backend) {
    let lbdesk = LBDESK.get(backend).await;
    let admin = User::sign_in(&lbdesk, "admin").await;
    // Over a Secret's 1 MiB: once the load balancer was saved and its credentials then failed.
    let form = LbForm {
        ltm_token: Some("t".repeat(1536 * 1024)),
        ltm_url: "http://100.1.1.4/api".into(),
        partition: "half".into(),
        ..lb_form("half")
    };
    let error = refused(save_lb(&admin, &form).await, StatusCode::BAD_REQUEST).await;
    assert!(error.for_field("ltm.token").is_some(), "{error:?}");
    assert_eq!(admin.form("lb/get", &[("name", "half")]).await.status(), StatusCode::NOT_FOUND);
    let secrets: Api<Secret> = Api::namespaced(lbdesk.clusters.mgmt().clone(), "lbdesk-system");
    assert_eq!(secrets.get_opt("half-ltm").await.expect("secrets"), None);
}
