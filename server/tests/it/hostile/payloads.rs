//! The payloads: hostile text, bodies that are not what they claim, and mutations of a call's
//! real arguments (a value replaced, a key removed or doubled, an unknown key, the whole body).

use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Value, json};

use super::SHARED_LB;

/// Stands for the value a fragment of raw JSON text replaces (see [`Mutation::apply`]).
pub(super) const HOLE: &str = "\u{1}hole\u{1}";

/// Text no form field should choke on.
pub(super) fn hostile_text() -> impl Strategy<Value = String> {
    let fixed: Vec<String> = vec![
        "x".repeat(100_000),
        "\u{202E}lmth.exe\u{202C}".into(),
        "\u{5de}\u{5d7}\u{5e1}\u{5e0}\u{200F}abc".into(),
        "🦀👩‍👩‍👧‍👦🏳️‍🌈".into(),
        "e\u{301}\u{302}\u{303}\u{304}".repeat(40),
        "a\0b".into(),
        "\0".into(),
        "\u{1}\u{7}\u{8}\u{1b}[31m\r\n\t\u{7f}\u{85}\u{2028}".into(),
        "line\nforged=1".into(),
        "[exec rm -rf /]".into(),
        "$x ${y} $::env(HOME)".into(),
        "{".into(),
        "}".into(),
        "\\".into(),
        "\\\";[puts x]".into(),
        "<script>alert(1)</script>".into(),
        "\"><img src=x onerror=alert(1)>".into(),
        "{{7*7}}".into(),
        "../../etc/passwd".into(),
        "name/status".into(),
        "name?x=1".into(),
        "name#f".into(),
        "a%2Fb".into(),
        "<".into(),
        String::new(),
        "   ".into(),
        "\u{FEFF}".into(),
        "20.9.0.5".into(),
        "20.9.0.300".into(),
        "::ffff:20.9.0.1".into(),
        "20.9.0.0/33".into(),
        "-1".into(),
        "Common".into(),
        "kube-system".into(),
        "project-b".into(),
        SHARED_LB.into(),
    ];
    let metachars = ["[", "]", "$", "{", "}", "\\", "<", ">", "\"", "'", "\0", "\n", "/", "%", "&", ";", "`", "|", "#"];
    prop_oneof![
        4 => prop::sample::select(fixed),
        2 => "[a-z][a-z0-9-]{0,12}",
        2 => "\\PC{0,24}",
        1 => "[\\x00-\\x1f\\x7f]{1,6}",
        2 => ("[a-z]{1,8}", prop::sample::select(metachars.to_vec())).prop_map(|(a, m)| format!("{a}{m}{a}")),
    ]
}

/// `depth` arrays inside each other.
pub(super) fn deep_array(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

/// `depth` objects inside each other.
pub(super) fn deep_object(depth: usize) -> String {
    format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth))
}

/// Raw JSON text that goes where a value goes; not always valid JSON.
pub(super) fn fragment() -> impl Strategy<Value = String> {
    let raw: Vec<String> = [
        "null",
        "true",
        "0",
        "-1",
        "-9223372036854775809",
        "9223372036854775808",
        "18446744073709551616",
        "123456789012345678901234567890",
        "1e999",
        "-1e999",
        "1e-999",
        "0.5",
        "-0",
        "1.7976931348623157e308",
        "NaN",
        "Infinity",
        "[]",
        "{}",
        "[[]]",
        "{\"Explode\":1}",
        "[\"a\",1,null]",
        "\"\\ud800\"",
        "\"\\u0000\"",
        "'single'",
        "undefined",
        "",
        "\"unterminated",
        "{\"a\":1,\"a\":2}",
        "\"listener\"",
        "\"Listener\"",
        "\"Active\"",
        "\"Ve\"",
        "\"Disable\"",
        "\"Delete\"",
    ]
    .into_iter()
    .map(String::from)
    .chain([deep_array(1000), deep_object(1000)])
    .collect();
    prop_oneof![
        5 => hostile_text().prop_map(|s| Value::String(s).to_string()),
        3 => prop::sample::select(raw),
        1 => prop::collection::vec(hostile_text(), 0..3).prop_map(|v| json!(v).to_string()),
        1 => any::<i64>().prop_map(|n| n.to_string()),
        1 => any::<f64>().prop_map(|n| json!(n).to_string()),
    ]
}

/// Whole bodies that are not the arguments at all.
pub(super) fn whole_body() -> impl Strategy<Value = Vec<u8>> {
    let bodies: Vec<Vec<u8>> = vec![
        Vec::new(),
        b"hello".to_vec(),
        b"<?xml version=\"1.0\"?><a/>".to_vec(),
        b"username=alice&username=bob&password=x&next=//evil.example".to_vec(),
        vec![0xff, 0xfe, 0x00, 0x7b],
        b"[1,2]".to_vec(),
        b"\"text\"".to_vec(),
        b"null".to_vec(),
        b"123".to_vec(),
        deep_array(1000).into_bytes(),
        deep_object(1000).into_bytes(),
        "{".repeat(100_000).into_bytes(),
        b"\xef\xbb\xbf{}".to_vec(),
        b"{}xyz".to_vec(),
        b"{}{}".to_vec(),
        b"/* comment */{}".to_vec(),
        b"{\"form\":".to_vec(),
        b"{\"name\":\"a\",\"name\":\"b\"}".to_vec(),
    ];
    prop::sample::select(bodies)
}

/// One change to a function's real arguments.
#[derive(Clone, Debug)]
pub(super) enum Mutation {
    /// A value (any node of the arguments) replaced by a fragment.
    Replace(Index, String),
    /// Two values replaced.
    Two(Index, String, Index, String),
    /// A key (or array element) left out.
    Remove(Index),
    /// A key written twice (the second time with the fragment), or an element added after it.
    Duplicate(Index, String),
    /// A key the function does not know.
    Extra(String),
    /// The whole body replaced.
    Whole(Vec<u8>),
}

pub(super) fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        6 => (any::<Index>(), fragment()).prop_map(|(i, f)| Mutation::Replace(i, f)),
        1 => (any::<Index>(), fragment(), any::<Index>(), fragment()).prop_map(|(i, f, j, g)| Mutation::Two(i, f, j, g)),
        1 => any::<Index>().prop_map(Mutation::Remove),
        1 => (any::<Index>(), fragment()).prop_map(|(i, f)| Mutation::Duplicate(i, f)),
        1 => fragment().prop_map(Mutation::Extra),
        2 => whole_body().prop_map(Mutation::Whole),
    ]
}

/// The JSON pointers of every node of `value` but the root.
pub(super) fn pointers(value: &Value, at: &str, out: &mut Vec<String>) {
    let escape = |k: &str| k.replace('~', "~0").replace('/', "~1");
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let p = format!("{at}/{}", escape(k));
                out.push(p.clone());
                pointers(v, &p, out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                let p = format!("{at}/{i}");
                out.push(p.clone());
                pointers(v, &p, out);
            }
        }
        _ => {}
    }
}

/// `value` as text with the node at `pointer` replaced by the raw text `with(original)`.
pub(super) fn splice(value: &Value, pointer: &str, with: impl FnOnce(&Value) -> String) -> String {
    let mut out = value.clone();
    let Some(node) = out.pointer_mut(pointer) else { return value.to_string() };
    let original = std::mem::replace(node, Value::String(HOLE.into()));
    out.to_string().replacen(&Value::String(HOLE.into()).to_string(), &with(&original), 1)
}

impl Mutation {
    /// The body this mutation makes of `args`.
    pub(super) fn apply(&self, args: &Value) -> Vec<u8> {
        let mut all = Vec::new();
        pointers(args, "", &mut all);
        let pick = |i: &Index| (!all.is_empty()).then(|| all[i.index(all.len())].clone());
        let extra = |fragment: &str| match args {
            Value::Object(map) if !map.is_empty() => {
                let text = args.to_string();
                format!("{{\"zz\\u0000extra\":{fragment},{}", &text[1..])
            }
            _ => format!("{{\"zz\":{fragment}}}"),
        };
        let text = match self {
            Mutation::Whole(body) => return body.clone(),
            Mutation::Extra(f) => extra(f),
            Mutation::Replace(i, f) => match pick(i) {
                Some(p) => splice(args, &p, |_| f.clone()),
                None => extra(f),
            },
            Mutation::Two(i, f, j, g) => match (pick(i), pick(j)) {
                (Some(p), Some(q)) if !p.starts_with(&q) && !q.starts_with(&p) => {
                    // Both holes first, then the fragments (a fragment is not JSON to parse again).
                    let mut out = args.clone();
                    for (ptr, n) in [(&p, 1), (&q, 2)] {
                        if let Some(node) = out.pointer_mut(ptr) {
                            *node = Value::String(format!("{HOLE}{n}"));
                        }
                    }
                    out.to_string().replacen(&Value::String(format!("{HOLE}1")).to_string(), f, 1).replacen(
                        &Value::String(format!("{HOLE}2")).to_string(),
                        g,
                        1,
                    )
                }
                (Some(p), _) => splice(args, &p, |_| f.clone()),
                _ => extra(f),
            },
            Mutation::Remove(i) => match pick(i) {
                Some(p) => {
                    let (parent, last) = p.rsplit_once('/').unwrap_or(("", &p));
                    let mut out = args.clone();
                    match out.pointer_mut(parent) {
                        Some(Value::Object(map)) => {
                            map.remove(&last.replace("~1", "/").replace("~0", "~"));
                        }
                        Some(Value::Array(items)) => {
                            if let Ok(n) = last.parse::<usize>()
                                && n < items.len()
                            {
                                items.remove(n);
                            }
                        }
                        _ => {}
                    }
                    out.to_string()
                }
                None => String::new(),
            },
            Mutation::Duplicate(i, f) => match pick(i) {
                Some(p) => {
                    let (parent, last) = p.rsplit_once('/').unwrap_or(("", &p));
                    let key = last.replace("~1", "/").replace("~0", "~");
                    let in_object = matches!(args.pointer(parent), Some(Value::Object(_)));
                    splice(args, &p, |original| {
                        if in_object {
                            format!("{original},{}:{f}", Value::String(key))
                        } else {
                            format!("{original},{f}")
                        }
                    })
                }
                None => extra(f),
            },
        };
        text.into_bytes()
    }
}

/// The content type a call claims; mostly the right one.
pub(super) fn content_type(right: &'static str) -> impl Strategy<Value = Option<&'static str>> {
    prop_oneof![
        8 => Just(Some(right)),
        1 => prop::sample::select(vec![
            Some("text/plain"),
            Some("application/x-www-form-urlencoded"),
            Some("application/json; charset=utf-16"),
            Some("multipart/form-data; boundary=x"),
            Some("application/json"),
            None,
        ]),
    ]
}
