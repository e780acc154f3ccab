//! `lbdesk render`: the binary, its output and its refusals.

use std::process::Command;

fn render(files: &[&str]) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lbdesk"));
    cmd.arg("render");
    for f in files {
        cmd.args(["-f", f]);
    }
    let out = cmd.output().expect("lbdesk runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

fn fixture(name: &str) -> String {
    format!("{}/tests/it/testdata/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, text).expect("write");
    path.display().to_string()
}

#[test]
fn the_seed_objects_render_to_the_expected_declaration() {
    let (code, stdout, stderr) = render(&[&fixture("render-seed.yaml")]);
    assert_eq!(code, 0, "{stderr}");
    let got: serde_json::Value = serde_json::from_str(&stdout).expect("JSON out");
    let want: serde_json::Value =
        serde_json::from_str(include_str!("../../../app/src/domain/testdata/seed-declaration.json")).expect("expected");
    assert_eq!(got["acp-region01/acp-region01"], want);
    assert_eq!(got.as_object().map(|o| o.len()), Some(1));
}

#[test]
fn bad_documents_are_refused_naming_the_document_and_field() {
    let seed = std::fs::read_to_string(fixture("render-seed.yaml")).expect("fixture");
    let dir = tempfile::tempdir().expect("tempdir");
    let cases = [
        ("protocol.yaml", seed.replace("protocol: tcp", "protocol: sctp"), "document 2 (Lbticket test)"),
        (
            "api.yaml",
            seed.replacen("apiVersion: ebcpaas.io/v1", "apiVersion: ebcpaas.lb/v1", 1),
            "apiVersion must be ebcpaas.io/v1",
        ),
        ("cidr.yaml", seed.replace("cidr: 20.1.0.0/16", "cidr: 20.1.0.0/40"), "(Loadbalancer demo): ve.cidr"),
        ("yaml.yaml", format!("{seed}\n---\n: : [\n"), "not YAML"),
        ("kind.yaml", seed.replacen("kind: Lbrule", "kind: Ingress", 1), "kind must be"),
        ("weights.yaml", seed.replace("weight: 40}", "weight: 41}"), "must add up to 100"),
    ];
    for (name, text, want) in cases {
        let (code, stdout, stderr) = render(&[&write(&dir, name, &text)]);
        assert_eq!(code, 1, "{name}: {stdout}");
        assert!(stderr.contains(want), "{name}: {stderr}");
        assert!(stdout.is_empty(), "{name}: nothing printed on error");
    }
}

#[test]
fn an_invalid_declaration_is_refused_naming_the_ticket() {
    let seed = std::fs::read_to_string(fixture("render-seed.yaml")).expect("fixture");
    let twin = "---\napiVersion: ebcpaas.io/v1\nkind: Lbticket\nmetadata: {name: twin}\nspec:\n  loadbalancer: demo\n  namespace: team-a\n  listeners:\n  - {name: web, port: 80, protocol: http, services: [{service: other, port: 8080, weight: 100}]}\nstatus: {phase: Enabled, veip: 20.1.0.10}\n";
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, _, stderr) = render(&[&write(&dir, "a.yaml", &seed), &write(&dir, "b.yaml", twin)]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains("ticket twin, listener web") && stderr.contains("already listens on 20.1.0.10 port 80"),
        "{stderr}"
    );
}
