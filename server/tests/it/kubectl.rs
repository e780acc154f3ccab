//! kubectl against `lbdesk kubeconfig`'s embedded API: the admission message on a denied
//! create, and admission refusing what the screens grey out. (Applying, listing, labelling and
//! deleting the seed's objects, without the reconciler, is in `manifests`.)

use std::process::Command;

use app::domain::crd::Lbticket;
use kube::api::Api;

use crate::helpers::{Backend, Lbdesk, until};
use crate::shared::Shared;

/// Shared by the tests here.
static LBDESK: Shared = Shared::new();

pub(crate) struct Kubectl {
    kubeconfig: std::path::PathBuf,
    cache: tempfile::TempDir,
}

impl Kubectl {
    pub(crate) fn new(lbdesk: &Lbdesk, dir: &tempfile::TempDir) -> Kubectl {
        let kubeconfig = dir.path().join("kubeconfig");
        std::fs::write(&kubeconfig, serde_yaml::to_string(&lbdesk.kubeconfig).expect("yaml")).expect("write");
        Kubectl { kubeconfig, cache: tempfile::tempdir().expect("cache dir") }
    }

    /// Runs kubectl; (success, stdout, stderr).
    pub(crate) fn run(&self, args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
        use std::io::Write;
        let mut cmd = Command::new("kubectl");
        cmd.arg("--kubeconfig").arg(&self.kubeconfig).arg("--cache-dir").arg(self.cache.path()).args(args);
        cmd.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().expect("kubectl is installed (`cargo xtask test` installs it)");
        if let Some(input) = stdin {
            child.stdin.take().expect("stdin").write_all(input.as_bytes()).expect("write");
        }
        drop(child.stdin.take());
        let out = child.wait_with_output().expect("kubectl runs");
        (out.status.success(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_create_shows_the_admission_message() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let k = Kubectl::new(&lbdesk, &dir);
    let bad = "apiVersion: ebcpaas.io/v1\nkind: Lbticket\nmetadata: {name: bad}\nspec: {loadbalancer: demo, namespace: default, lbtype: banana}\n";
    let (ok, _, err) = k.run(&["apply", "-f", "-"], Some(bad));
    assert!(!ok);
    // A value of the wrong type is refused by the schema, before admission, as a real API server does.
    assert!(err.contains("The Lbticket \"bad\" is invalid: spec.lbtype: unknown variant `banana`"), "{err}");
    let bad_ip = bad.replace("lbtype: banana", "veip: 20.1.0.999");
    let (ok, _, err) = k.run(&["create", "-f", "-"], Some(&bad_ip));
    assert!(!ok && err.contains("veip: \"20.1.0.999\" is not an IP address"), "{err}");
    let (found, _, err) = k.run(&["get", "lbticket", "bad", "-o", "name"], None);
    assert!(!found && err.contains("NotFound"), "nothing was stored: {err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admission_refuses_what_the_screens_grey_out() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let k = Kubectl::new(&lbdesk, &dir);
    let lb = "apiVersion: ebcpaas.io/v1\nkind: Loadbalancer\nmetadata: {name: demo}\nspec:\n  ltm: {url: http://100.1.1.1/api, tokenSecretRef: {namespace: lbdesk-system, name: t}, cidr: 10.0.0.0/24}\n  ve: {addr: 200.1.1.1, credentialsSecretRef: {namespace: lbdesk-system, name: c}, cidr: 20.1.0.0/24}\n  cluster: acp-region01\n  scope: [project-a]\n";
    let (ok, _, err) = k.run(&["apply", "-f", "-"], Some(lb));
    assert!(ok, "{err}");
    let ticket = "apiVersion: ebcpaas.io/v1\nkind: Lbticket\nmetadata: {name: t1, labels: {ebcpaas.io/project: project-a, ebcpaas.io/cluster: acp-region01}}\nspec: {claimer: alice, loadbalancer: demo, namespace: team-a}\n";
    let (ok, _, err) = k.run(&["apply", "-f", "-"], Some(ticket));
    assert!(ok, "{err}");
    let tickets: Api<Lbticket> = Api::all(lbdesk.client("mgmt").await);
    until("t1 to be Enabled", 10, || async {
        let status = tickets.get("t1").await.ok().and_then(|t| t.status);
        status.is_some_and(|s| s.phase == app::domain::crd::Phase::Enabled)
    })
    .await;
    let denied = |args: &[&str], stdin: Option<&str>, want: &str| {
        let (ok, _, err) = k.run(args, stdin);
        assert!(!ok, "{args:?} was allowed");
        assert!(err.contains("denied the request") && err.contains(want), "{args:?}: {err}");
    };
    denied(
        &["patch", "lb", "demo", "--type", "merge", "-p", r#"{"spec":{"ve":{"cidr":"20.2.0.0/24"}}}"#],
        None,
        "ve.cidr: Locked: in use by 1 address request",
    );
    denied(&["delete", "lb", "demo"], None, "Cannot delete: in use by 1 address request");
    denied(
        &["patch", "lbt", "t1", "--type", "merge", "-p", r#"{"spec":{"veip":"20.1.0.50"}}"#],
        None,
        "Only a request that is Created or Failed can be edited; this one is Enabled",
    );
    denied(&["delete", "lbt", "t1"], None, "Disable the request before deleting it; it is Enabled");
    let outside = ticket.replace("name: t1", "name: t2").replace("project-a", "project-b");
    denied(
        &["apply", "-f", "-"],
        Some(&outside),
        "loadbalancer: This load balancer is not offered to project project-b",
    );
    let (ok, _, err) =
        k.run(&["patch", "lb", "demo", "--type", "merge", "-p", r#"{"spec":{"reserved":["20.1.0.200"]}}"#], None);
    assert!(ok, "the rest stays editable: {err}");
}
