//! The audit log end to end: writes through the embedded API are authorized by admission and
//! audited with the requesting user, lbdesk's own are not audited twice, the `/audit` list
//! shows a tenant only their projects' entries, and old entries are purged.

use app::domain::crd::{Lbrule, Lbticket, Loadbalancer};
use app::screens::audit::AuditPage;
use app::screens::tickets::TicketForm;
use app::ssr::audit::{Entry, Filter, Projects, Record, Via};
use app::ssr::db::Db;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use reqwest::StatusCode;
use serde_json::{Value, json};
use server::admission::NOT_YOURS;

use crate::helpers::{Backend, Lbdesk, Options, TestDb, browser, signed_in, start_on, until};
use crate::on_both_databases;
use crate::shared::Shared;
use crate::user::own_tenant;

on_both_databases!(
    a_kubectl_write_with_the_admin_token_is_audited_as_admin_and_lbdesks_own_writes_once,
    a_tenant_cannot_write_another_projects_objects_through_the_embedded_api,
    the_audit_list_shows_a_tenant_only_their_projects_entries,
    old_audit_entries_are_purged_at_start_and_by_the_retention,
);

/// lbdesk without the reconciler: only the tests' writes reach the log.
fn quiet_options() -> Options {
    Options { reconciler: false, ..Default::default() }
}

/// Shared by the tests that read the log of the objects or projects they name; the purge at
/// start (a restart on a database written before) gets a fresh lbdesk.
static QUIET: Shared = Shared::with(quiet_options, false);

fn ticket(name: &str, project: Option<&str>) -> Lbticket {
    let labels = project.map(|p| json!({"ebcpaas.io/project": p, "ebcpaas.io/cluster": "acp-region01"}));
    serde_json::from_value(json!({
        "apiVersion": "ebcpaas.io/v1", "kind": "Lbticket",
        "metadata": {"name": name, "labels": labels.unwrap_or(json!({}))},
        "spec": {"claimer": "someone", "loadbalancer": "not-yet", "namespace": "team-a"},
    }))
    .expect("a ticket")
}

fn rule(name: &str, ticket: &str, label: &str) -> Lbrule {
    serde_json::from_value(json!({
        "apiVersion": "ebcpaas.io/v1", "kind": "Lbrule",
        "metadata": {"name": name, "labels": {"ebcpaas.io/project": label}},
        "spec": {
            "lbticket": ticket, "listener": "lsnr1", "priority": 10, "match": "any",
            "services": [{"service": "svc03", "port": 8080, "weight": 100}],
            "rules": [{"type": "domain", "values": [{"operator": "equal", "value": "a.example.com"}]}],
        },
    }))
    .expect("a rule")
}

/// Every entry matching `filter`, newest first.
async fn entries(db: &Db, filter: Filter) -> Vec<Record> {
    let (mut out, mut after) = (Vec::new(), None);
    loop {
        let page = db.audit_page(&Projects::All, &filter, after.as_ref()).await.expect("the audit log");
        out.extend(page.records);
        match page.next {
            Some(next) => after = Some(next),
            None => return out,
        }
    }
}

fn named(name: &str) -> Filter {
    Filter { name: Some(name.into()), ..Default::default() }
}

/// The API's refusal: its code and message.
fn refusal<T: std::fmt::Debug>(result: Result<T, kube::Error>) -> (u16, String) {
    match result {
        Err(kube::Error::Api(s)) => (s.code, s.message),
        other => panic!("refused, not {other:?}"),
    }
}

async fn list(lbdesk: &Lbdesk, client: &reqwest::Client, query: Value) -> (StatusCode, String) {
    let res = client.post(format!("{}/api/audit/list", lbdesk.url)).json(&json!({ "query": query })).send().await;
    let res = res.expect("request");
    (res.status(), res.text().await.expect("body"))
}

async fn page(lbdesk: &Lbdesk, client: &reqwest::Client, query: Value) -> AuditPage {
    let (status, body) = list(lbdesk, client, query).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    serde_json::from_str(&body).expect("a page")
}

async fn a_kubectl_write_with_the_admin_token_is_audited_as_admin_and_lbdesks_own_writes_once(backend: Backend) {
    let lbdesk = QUIET.get(backend).await;
    let tickets: Api<Lbticket> = Api::all(lbdesk.client("mgmt").await);
    tickets.create(&PostParams::default(), &ticket("audited", Some("project-a"))).await.expect("created");
    let label = json!({"metadata": {"labels": {"team": "web"}}});
    tickets.patch("audited", &PatchParams::default(), &Patch::Merge(&label)).await.expect("labelled");
    // A status is lbdesk's record of what it observed: the admin's write of one is refused
    // (a forged address or message would be acted on and shown), lbdesk's own is not audited.
    let disabled = json!({"status": {"phase": "Disabled"}});
    match tickets.patch_status("audited", &PatchParams::default(), &Patch::Merge(&disabled)).await {
        Err(kube::Error::Api(e)) => {
            assert_eq!(e.code, 403, "{e:?}");
            assert!(e.message.contains(server::admission::STATUS_IS_LBDESKS), "{e:?}");
        }
        other => panic!("a status written with the admin token: {other:?}"),
    }
    let own: Api<Lbticket> = Api::all(lbdesk.clusters.mgmt().clone());
    own.patch_status("audited", &PatchParams::default(), &Patch::Merge(&disabled)).await.expect("status");
    tickets.delete("audited", &DeleteParams::default()).await.expect("deleted");

    let log = entries(&lbdesk.db, named("audited")).await;
    let actions: Vec<&str> = log.iter().map(|r| r.action.as_str()).collect();
    assert_eq!(actions, ["delete", "update", "create"], "newest first");
    for r in &log {
        assert_eq!((r.user.as_str(), r.via.as_str(), r.kind.as_str()), ("admin", "api", "Lbticket"));
        assert_eq!(r.project, "project-a");
    }
    let (delete, update, create) = (&log[0], &log[1], &log[2]);
    assert!(create.before.is_empty() && create.after.contains("\"audited\""), "{create:?}");
    assert!(update.before.contains("audited") && update.after.contains("\"team\":\"web\""), "{update:?}");
    assert!(delete.after.is_empty() && delete.before.contains("Disabled"), "{delete:?}");

    // lbdesk's own writes (the demo load balancer, seeded at start) are not audited as its user…
    let own = Filter { user: Some(app::domain::access::Principal::System.name().into()), ..Default::default() };
    assert!(entries(&lbdesk.db, own).await.is_empty());
    assert!(entries(&lbdesk.db, named(server::demo::loadbalancer::NAME)).await.is_empty());
    // …and a page's write is audited once, by the page, as the signed-in user.
    let alice = signed_in(&lbdesk, "alice").await;
    let form = TicketForm {
        name: "from-the-page".into(),
        cluster: "acp-region01".into(),
        namespace: "team-a".into(),
        loadbalancer: server::demo::loadbalancer::NAME.into(),
        ..Default::default()
    };
    let res = alice.post(format!("{}/api/ticket/save", lbdesk.url)).json(&json!({ "form": form })).send().await;
    let res = res.expect("request");
    assert!(res.status().is_success(), "{}", res.text().await.unwrap_or_default());
    let log = entries(&lbdesk.db, named("from-the-page")).await;
    let seen: Vec<(&str, &str, &str)> =
        log.iter().map(|r| (r.user.as_str(), r.via.as_str(), r.action.as_str())).collect();
    assert_eq!(seen, [("alice", "page", "create")]);
}

async fn a_tenant_cannot_write_another_projects_objects_through_the_embedded_api(backend: Backend) {
    let lbdesk = QUIET.get(backend).await;
    let store = server::api::store::Store::new(lbdesk.db.clone(), 100);
    store.add_token("alice-token", "alice", 0).await.expect("a token for alice");
    let admin = lbdesk.client("mgmt").await;
    let alice = lbdesk.client_with_token("mgmt", "alice-token").await;
    Api::<Lbticket>::all(admin.clone())
        .create(&PostParams::default(), &ticket("b-private", Some("project-b")))
        .await
        .expect("the admin writes anywhere");
    let tickets: Api<Lbticket> = Api::all(alice.clone());
    let pp = PostParams::default();

    // Another project's ticket, a ticket of no project, a change of another project's ticket:
    // refused alike, naming nothing.
    let change = Patch::Merge(json!({"spec": {"namespace": "team-a"}}));
    for ((code, message), name) in [
        (refusal(tickets.create(&pp, &ticket("b-sneaky", Some("project-b"))).await), "b-sneaky"),
        (refusal(tickets.create(&pp, &ticket("unowned", None)).await), "unowned"),
        (refusal(tickets.patch("b-private", &PatchParams::default(), &change).await), "b-private"),
        (refusal(tickets.delete("b-private", &DeleteParams::default()).await), "b-private"),
    ] {
        assert_eq!(code, 403, "{message}");
        assert!(message.contains(NOT_YOURS) && !message.contains(name), "{message}");
    }
    // A rule on another project's ticket, whatever label the rule itself carries.
    let (code, message) =
        refusal(Api::<Lbrule>::all(alice.clone()).create(&pp, &rule("r", "b-private", "project-a")).await);
    assert_eq!((code, message.contains(NOT_YOURS)), (403, true), "{message}");
    // Load balancers are the admins'.
    let lb: Loadbalancer = serde_json::from_value(json!({
        "apiVersion": "ebcpaas.io/v1", "kind": "Loadbalancer", "metadata": {"name": "mine"},
        "spec": {"ltm": {"url": "http://100.1.1.1/api", "tokenSecretRef": {"namespace": "lbdesk-system", "name": "x"}, "cidr": "10.0.0.0/24"},
                 "ve": {"addr": "200.1.1.1", "credentialsSecretRef": {"namespace": "lbdesk-system", "name": "y"}, "cidr": "20.1.0.0/16"},
                 "cluster": "acp-region01", "cis": {"namespace": "kube-system"}},
    }))
    .expect("a load balancer");
    let (code, message) = refusal(Api::<Loadbalancer>::all(alice.clone()).create(&pp, &lb).await);
    assert_eq!(code, 403, "{message}");
    assert!(message.contains("This is for platform admins."), "{message}");

    // Her own project's ticket is hers, and she cannot give it away.
    tickets.create(&pp, &ticket("a-mine", Some("project-a"))).await.expect("her project's ticket");
    let away = json!({"metadata": {"labels": {"ebcpaas.io/project": "project-b"}}});
    let (code, _) = refusal(tickets.patch("a-mine", &PatchParams::default(), &Patch::Merge(&away)).await);
    assert_eq!(code, 403);

    // Only the allowed write is in the log, as hers (of the objects named here).
    let hers = entries(&lbdesk.db, Filter { user: Some("alice".into()), ..Default::default() }).await;
    let named_here = ["b-sneaky", "unowned", "b-private", "a-mine", "r", "mine"];
    let seen: Vec<(&str, &str, &str)> = hers
        .iter()
        .filter(|r| named_here.contains(&r.name.as_str()))
        .map(|r| (r.name.as_str(), r.action.as_str(), r.project.as_str()))
        .collect();
    assert_eq!(seen, [("a-mine", "create", "project-a")]);
    assert_eq!(entries(&lbdesk.db, named("b-private")).await.len(), 1, "the admin's create alone");
}

async fn the_audit_list_shows_a_tenant_only_their_projects_entries(backend: Backend) {
    let lbdesk = QUIET.get(backend).await;
    // Projects and a tenant of the test's own: it pages through a project's whole log.
    let alice = own_tenant(&lbdesk, "auditor", "audit-pa").await.client;
    lbdesk.db.upsert_project("audit-pb", "audit-pb").await.expect("a second project");
    let tickets: Api<Lbticket> = Api::all(lbdesk.client("mgmt").await);
    for (name, project) in [("audit-a-one", "audit-pa"), ("audit-b-one", "audit-pb")] {
        tickets.create(&PostParams::default(), &ticket(name, Some(project))).await.expect("created");
    }
    let lb = Entry {
        user: "admin".into(),
        via: Via::Page,
        action: "update".into(),
        kind: "Loadbalancer".into(),
        name: "audit-lb-of-no-project".into(),
        project: None,
        before: None,
        after: Some(json!({"spec": {}})),
        version: None,
    };
    lbdesk.db.audit(&lb).await.expect("written");
    for i in 0..55 {
        let e = Entry {
            name: format!("audit-a-{i:02}"),
            project: Some("audit-pa".into()),
            kind: "Lbticket".into(),
            ..lb.clone()
        };
        lbdesk.db.audit(&e).await.expect("written");
    }

    // The tenant: her project's 56 entries in two pages, nothing else, whatever she asks for.
    let first = page(&lbdesk, &alice, json!({})).await;
    assert_eq!(first.rows.len(), 50);
    let cursor = first.next.clone().expect("a second page");
    let second = page(&lbdesk, &alice, json!({ "cursor": cursor })).await;
    assert_eq!((second.rows.len(), second.next.clone()), (6, None));
    let rows: Vec<_> = first.rows.iter().chain(&second.rows).collect();
    assert!(rows.iter().all(|r| r.project == "audit-pa"), "{rows:?}");
    assert!(rows.iter().any(|r| r.name == "audit-a-one" && r.user == "admin" && r.via == "api"));
    for query in
        [json!({}), json!({"object": "audit-b-one"}), json!({"user": "admin"}), json!({"kind": "Loadbalancer"})]
    {
        let (status, body) = list(&lbdesk, &alice, query.clone()).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert!(
            !body.contains("audit-b-one") && !body.contains("audit-pb") && !body.contains("audit-lb-of-no-project"),
            "{query}: {body}"
        );
    }
    assert_eq!(
        page(&lbdesk, &alice, json!({"user": "admin", "kind": "Lbticket", "action": "create"})).await.rows.len(),
        1
    );

    // The admin: everything, the entry of no project included.
    let admin = signed_in(&lbdesk, "admin").await;
    assert_eq!(page(&lbdesk, &admin, json!({"object": "audit-b-one"})).await.rows.len(), 1);
    assert_eq!(page(&lbdesk, &admin, json!({"object": "audit-lb-of-no-project"})).await.rows[0].project, "");

    // Nobody signed in, and a wrong day.
    assert_eq!(list(&lbdesk, &browser(), json!({})).await.0, StatusCode::UNAUTHORIZED);
    let (status, body) = list(&lbdesk, &alice, json!({"from": "2024-02-30"})).await;
    let error: app::error::AppError = serde_json::from_str(&body).expect("a typed error");
    assert_eq!(status.as_u16(), error.status(), "{body}");
    assert_eq!(error.for_field("from").as_deref(), Some("Give a day as YYYY-MM-DD."));
}

async fn old_audit_entries_are_purged_at_start_and_by_the_retention(backend: Backend) {
    let test_db = TestDb::new(backend).await;
    let db = test_db.connect().await;
    let now = time::OffsetDateTime::now_utc();
    let entry = |name: &str| Entry {
        user: "admin".into(),
        via: Via::Api,
        action: "update".into(),
        kind: "Lbticket".into(),
        name: name.into(),
        project: Some("project-a".into()),
        before: None,
        after: None,
        version: None,
    };
    db.audit_at(&entry("ancient"), now - time::Duration::days(400)).await.expect("written");
    db.audit_at(&entry("recent"), now - time::Duration::days(1)).await.expect("written");
    db.pool.close().await;

    // The default retention (365 days) purges at start.
    let lbdesk = start_on(test_db, quiet_options()).await;
    until("the ancient entry to be purged", 10, || async { entries(&lbdesk.db, named("ancient")).await.is_empty() })
        .await;
    assert_eq!(entries(&lbdesk.db, named("recent")).await.len(), 1);

    // 0 keeps every entry; otherwise what is older than the days given goes.
    lbdesk.db.audit_at(&entry("last-month"), now - time::Duration::days(31)).await.expect("written");
    assert_eq!(server::retention::purge_audit(&lbdesk.db, 0).await.expect("purge"), 0);
    assert_eq!(server::retention::purge_audit(&lbdesk.db, 30).await.expect("purge"), 1);
    assert!(entries(&lbdesk.db, named("last-month")).await.is_empty());
    assert_eq!(entries(&lbdesk.db, named("recent")).await.len(), 1);
}

/// What lbdesk writes in a member cluster, written there by someone else, is audited with who
/// did it (issue #27): an F5 Ingress in its ticket's project, a shared AS3 ConfigMap for admins;
/// other objects there, and lbdesk's own writes, are not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_to_lbdesks_objects_in_a_member_cluster_are_audited_whoever_makes_them() {
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::api::networking::v1::Ingress;
    let lbdesk = QUIET.get(Backend::Sqlite).await;
    let tickets: Api<Lbticket> = Api::all(lbdesk.client("mgmt").await);
    tickets.create(&PostParams::default(), &ticket("owner", Some("project-a"))).await.expect("created");
    let member = lbdesk.client("acp-region01").await;
    let cms: Api<ConfigMap> = Api::namespaced(member.clone(), "team-a");
    let configmap = |name: &str, labels: Value| -> ConfigMap {
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}, "data": {"template": "{}"}}))
            .expect("a ConfigMap")
    };
    let ours = json!({"app.kubernetes.io/managed-by": "lbdesk", "as3": "true", "f5type": "virtual-server"});
    cms.create(&PostParams::default(), &configmap("as3-shared", ours)).await.expect("created");
    let forged = json!({"data": {"template": "{\"forged\": true}"}});
    cms.patch("as3-shared", &PatchParams::default(), &Patch::Merge(&forged)).await.expect("patched");
    cms.create(&PostParams::default(), &configmap("someone-elses", json!({"team": "a"}))).await.expect("created");
    let ingresses: Api<Ingress> = Api::namespaced(member.clone(), "team-a");
    let ingress: Ingress = serde_json::from_value(json!({
        "metadata": {"name": "shop", "labels": {"ebcpaas.io/lbticket": "owner"}},
        "spec": {"rules": [{"host": "shop.example.com"}]},
    }))
    .expect("an Ingress");
    ingresses.create(&PostParams::default(), &ingress).await.expect("created");
    ingresses.delete("shop", &DeleteParams::default()).await.expect("deleted");
    // lbdesk's own write of its object is not audited here (its reconciler logs it).
    let own = lbdesk.clusters.member("acp-region01").expect("the member cluster");
    let own_cms: Api<ConfigMap> = Api::namespaced(own, "team-a");
    own_cms
        .patch("as3-shared", &PatchParams::default(), &Patch::Merge(json!({"data": {"template": "{}"}})))
        .await
        .expect("own");

    let log = entries(&lbdesk.db, named("acp-region01/team-a/as3-shared")).await;
    let seen: Vec<(&str, &str, &str, &str)> =
        log.iter().map(|r| (r.user.as_str(), r.via.as_str(), r.action.as_str(), r.kind.as_str())).collect();
    assert_eq!(
        seen,
        [("admin", "api", "update", "ConfigMap"), ("admin", "api", "create", "ConfigMap")],
        "newest first"
    );
    assert!(log[0].after.contains("forged") && log[0].project.is_empty(), "{:?}", log[0]);
    let log = entries(&lbdesk.db, named("acp-region01/team-a/shop")).await;
    let seen: Vec<(&str, &str, &str)> =
        log.iter().map(|r| (r.action.as_str(), r.kind.as_str(), r.project.as_str())).collect();
    assert_eq!(seen, [("delete", "Ingress", "project-a"), ("create", "Ingress", "project-a")]);
    assert!(entries(&lbdesk.db, named("acp-region01/team-a/someone-elses")).await.is_empty(), "not lbdesk's");
}
