//! `lbdesk route`: the binary answers each request line as the domain's router does, and
//! refuses bad input naming the line and field.

use std::io::Write;
use std::process::{Command, Stdio};

use app::domain::as3::names;
use app::domain::routing::bucket;
use serde_json::{Value, json};

fn route(vs: &str, stdin: &str) -> (i32, String, String) {
    let seed = format!("{}/tests/it/testdata/render-seed.yaml", env!("CARGO_MANIFEST_DIR"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_lbdesk"))
        .args(["route", "-f", &seed, "--vs", vs])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("lbdesk runs");
    child.stdin.take().expect("stdin").write_all(stdin.as_bytes()).expect("write");
    let out = child.wait_with_output().expect("lbdesk ends");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// What the seed's split of `first`/`second` (weights `w` and 100 − `w`) gives client `client`.
fn split(client: &str, first: &str, second: &str, w: u32, port: u16) -> (String, u16) {
    ((if bucket(client) < w { first } else { second }).to_string(), port)
}

#[test]
fn each_request_line_gets_its_rule_bucket_and_pool() {
    let lines = [
        json!({"host": "A.Domain.com:8080", "client": "10.1.1.1"}),
        json!({"host": "b.example.com", "uri": "/", "headers": {"content-length": "500"}, "client": "10.1.1.2"}),
        json!({"host": "b.example.com", "uri": "/x?y=1", "client": "10.2.2.2", "cookies": {"k": "v"}}),
        json!({}),
    ];
    let stdin: String = lines.iter().map(|l| format!("{l}\n\n")).collect();
    let (code, stdout, stderr) = route("20.1.0.10:80", &stdin);
    assert_eq!(code, 0, "{stderr}");
    let answers: Vec<Value> = stdout.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    assert_eq!(answers.len(), 4, "one answer per request, blank lines skipped: {stdout}");
    let want = [
        (Some("smpl"), "10.1.1.1", split("10.1.1.1", "svc03", "svc04", 90, 8080)),
        (Some("smpl"), "10.1.1.2", split("10.1.1.2", "svc03", "svc04", 90, 8080)),
        (None, "10.2.2.2", split("10.2.2.2", "svc01", "svc02", 60, 8080)),
        (None, "", split("", "svc01", "svc02", 60, 8080)),
    ];
    for (answer, (rule, client, (service, port))) in answers.iter().zip(want) {
        let expected = json!({
            "rule": rule, "bucket": bucket(client), "service": service, "port": port, "pool": names::pool(&service, port),
        });
        assert_eq!(answer, &expected);
    }
}

#[test]
fn bad_input_is_refused_naming_the_line_and_field() {
    let cases = [
        (
            "20.1.0.10:80",
            "{\"host\": \"a\"}\n{\"client\": \"not-an-ip\"}\n",
            "line 2: client: \"not-an-ip\" is not an IP address",
        ),
        ("20.1.0.10:80", "{\"hots\": \"a\"}\n", "line 1: not a request: unknown field `hots`"),
        ("20.1.0.10:80", "{\"headers\": [\"a\"]}\n", "line 1: not a request: invalid type"),
        ("20.1.0.10:80", "not json\n", "line 1: not a request"),
        ("20.1.0.10", "", "--vs: expected IP:PORT"),
        ("20.1.0.99:80", "", "no address request in the files has VE IP 20.1.0.99"),
        ("20.1.0.10:81", "", "address request test has no listener on port 81"),
    ];
    for (vs, stdin, want) in cases {
        let (code, _, stderr) = route(vs, stdin);
        assert_eq!(code, 1, "{vs} {stdin:?}: {stderr}");
        assert!(stderr.contains(want), "{vs} {stdin:?}: {stderr}");
    }
}
