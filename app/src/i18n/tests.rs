use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::dict::AREAS;
use super::*;

/// The ASCII words a Chinese text may hold: product and protocol names, and what is written
/// as is in a Chinese console (lbdesk's own name included).
pub const ALLOWED_ASCII: &[&str] = &[
    "AS3",
    "F5",
    "BIG-IP",
    "LTM",
    "VE",
    "CIS",
    "IP",
    "IPv4",
    "IPv6",
    "TCP",
    "UDP",
    "HTTP",
    "HTTPS",
    "iRule",
    "ConfigMap",
    "ConfigMaps",
    "Ingress",
    "Ingresses",
    "Service",
    "Secret",
    "Secrets",
    "Lbticket",
    "Lbrule",
    "Loadbalancer",
    "kubectl",
    "YAML",
    "JSON",
    "CIDR",
    "URL",
    "URI",
    "DNS",
    "Cookie",
    "ID",
    "lbdesk",
    "Kubernetes",
    "API",
    "AD",
    "LDAP",
    "TLS",
    "CA",
    "PEM",
    "VIP",
    "SNAT",
    "NAT",
    "UTC",
    "s",
    "ms",
    "B",
    "KB",
    "MB",
    "KiB",
    "MiB",
    "ebcpaas.io",
    "do-not-delete",
    "Host",
    "OK",
];

fn files(locale: Locale) -> Vec<(&'static str, BTreeMap<String, String>)> {
    AREAS
        .iter()
        .map(|(area, en, zh)| {
            let text = if locale == Locale::ZhCn { zh } else { en };
            let parsed = serde_json::from_str(text).unwrap_or_else(|e| panic!("{}/{area}.json: {e}", locale.tag()));
            (*area, parsed)
        })
        .collect()
}

fn parameters(text: &str) -> BTreeSet<String> {
    let unbraced = text.replace("{{", "").replace("}}", "");
    let re = regex_lite::Regex::new(r"\{([a-z_]+)(?::[^}]*)?\}").expect("pattern");
    re.captures_iter(&unbraced).map(|c| c[1].to_string()).collect()
}

#[test]
fn a_locale_is_what_accept_language_prefers_among_ours() {
    for (header, want) in [
        ("zh-CN,zh;q=0.9,en;q=0.8", Some(Locale::ZhCn)),
        ("en-US,en;q=0.9", Some(Locale::En)),
        ("fr-FR, en;q=0.5, zh;q=0.7", Some(Locale::ZhCn)),
        ("zh-Hant-TW", Some(Locale::ZhCn)),
        ("de, fr", None),
        ("zh;q=0, en;q=0.1", Some(Locale::En)),
        ("", None),
        ("*", None),
        ("en;q=abc, zh", Some(Locale::ZhCn)),
    ] {
        assert_eq!(Locale::of_accept_language(header), want, "{header:?}");
    }
    assert_eq!(Locale::of_tag("EN"), Some(Locale::En));
    assert_eq!(Locale::default(), Locale::En, "a client naming no language of ours reads English");
}

#[test]
fn a_template_takes_its_parameters_plural_forms_and_braces() {
    let args = |name: &str| match name {
        "n" => Some("1".to_string()),
        "m" => Some("3".to_string()),
        "who" => Some("{alice}".to_string()),
        _ => None,
    };
    assert_eq!(fill("{n} {n:request|requests}, {m} {m:request|requests}", &args), "1 request, 3 requests");
    assert_eq!(fill("by {who}", &args), "by {alice}", "a value is never read as a template");
    assert_eq!(fill("{{literal}} {missing} }", &args), "{literal} {missing} }");
    assert_eq!(fill("端口 {m} 已被占用", &args), "端口 3 已被占用");
    assert_eq!(fill("{unclosed", &args), "{unclosed");
}

#[test]
fn a_message_renders_nested_messages_in_its_locale() {
    let phase = Msg::new("common.phase.disabled");
    let nested = Msg::new("common.timeline.by").with("user", phase);
    assert_eq!(nested.text_in(Locale::En), "by Disabled");
    assert_eq!(nested.text_in(Locale::ZhCn), "操作人：已禁用");
    assert_eq!(nested.to_string(), "by Disabled", "logs and kubectl read English");
    assert_eq!(crate::msg!("common.usage.text", used = 3, free = 7).text_in(Locale::ZhCn), "已用 3 / 空闲 7");
    assert_eq!(t("common.save"), "Save", "outside a request: English");
}

#[test]
fn every_file_parses_and_holds_only_keys_of_its_area() {
    for locale in Locale::ALL {
        for (area, words) in files(locale) {
            for key in words.keys() {
                assert!(key.starts_with(&format!("{area}.")), "{}/{area}.json holds {key}", locale.tag());
            }
        }
    }
}

#[test]
fn both_locales_have_the_same_keys_with_the_same_parameters() {
    let (en, zh) = (files(Locale::En), files(Locale::ZhCn));
    for ((area, en), (_, zh)) in en.iter().zip(&zh) {
        let (en_keys, zh_keys): (BTreeSet<_>, BTreeSet<_>) = (en.keys().collect(), zh.keys().collect());
        assert_eq!(en_keys.difference(&zh_keys).collect::<Vec<_>>(), Vec::<&&String>::new(), "missing in zh-CN/{area}");
        assert_eq!(zh_keys.difference(&en_keys).collect::<Vec<_>>(), Vec::<&&String>::new(), "missing in en/{area}");
        for (key, text) in en {
            // NB: a `{detail…}` is another program's English (a regexp engine's error), which a
            // translation may leave out; every other parameter is in both.
            let needed =
                |t: &str| parameters(t).into_iter().filter(|p| !p.starts_with("detail")).collect::<BTreeSet<_>>();
            assert_eq!(needed(text), needed(&zh[key]), "{key}: parameters differ");
            assert!(parameters(&zh[key]).is_subset(&parameters(text)), "{key}: a parameter English has not");
            assert!(!text.trim().is_empty() && !zh[key].trim().is_empty(), "{key}: empty");
        }
    }
}

#[test]
fn the_chinese_words_hold_no_english_and_the_english_no_chinese() {
    let word = regex_lite::Regex::new(r"[A-Za-z][A-Za-z0-9.\-]*[A-Za-z0-9]|[A-Za-z]").expect("pattern");
    for (area, zh) in files(Locale::ZhCn) {
        for (key, text) in zh {
            let bare = regex_lite::Regex::new(r"\{[^}]*\}").expect("pattern").replace_all(&text, "");
            for w in word.find_iter(&bare) {
                assert!(
                    ALLOWED_ASCII.contains(&w.as_str()),
                    "zh-CN/{area}.json {key}: English word {:?} in {text:?}",
                    w.as_str()
                );
            }
        }
    }
    for (area, en) in files(Locale::En) {
        for (key, text) in en {
            assert!(!text.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c)), "en/{area}.json {key}: {text}");
        }
    }
}

/// Sources whose literals are not keys though they look like some: this file, and the
/// directory configuration's field paths (`users.base`), which startup errors name in English.
const NOT_SCANNED: &[&str] = &["i18n/tests.rs", "ssr/directory/config.rs", "ssr/directory/mod.rs"];

/// Every string literal of the app's source that looks like a key (an area, a dot, more).
fn keys_in_source() -> BTreeMap<String, String> {
    let areas: Vec<&str> = AREAS.iter().map(|(a, ..)| *a).collect();
    let re = regex_lite::Regex::new(&format!(r#""((?:{})\.[a-z0-9_.]+)""#, areas.join("|"))).expect("pattern");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = BTreeMap::new();
    // NB: the server crate speaks English (logs, CLI, admission); every word a page shows is here.
    let mut dirs = vec![root.join("app/src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") && !NOT_SCANNED.iter().any(|n| path.ends_with(n)) {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                // NB: comments name keys as examples.
                let code: Vec<&str> = text.lines().filter(|l| !l.trim_start().starts_with("//")).collect();
                for c in re.captures_iter(&code.join("\n")) {
                    found.entry(c[1].to_string()).or_insert_with(|| path.display().to_string());
                }
            }
        }
    }
    found
}

#[test]
fn every_key_is_used_and_every_key_used_is_in_the_dictionaries() {
    let used = keys_in_source();
    let known: BTreeSet<String> = files(Locale::En).into_iter().flat_map(|(_, words)| words.into_keys()).collect();
    let missing: Vec<_> = used.iter().filter(|(k, _)| !known.contains(*k)).collect();
    assert!(missing.is_empty(), "keys used but in no dictionary: {missing:#?}");
    let unused: Vec<_> = known.iter().filter(|k| !used.contains_key(*k)).collect();
    assert!(unused.is_empty(), "keys in the dictionaries no source uses: {unused:#?}");
}

#[test]
fn the_dictionary_a_page_carries_is_json_without_a_tag() {
    for locale in Locale::ALL {
        let json = dictionary_json(locale);
        assert!(!json.contains('<'), "{}: nothing can close the page's data block", locale.tag());
        let parsed: BTreeMap<String, String> = serde_json::from_str(json).expect("a JSON object");
        let merged: usize = files(locale).iter().map(|(_, words)| words.len()).sum();
        assert_eq!(parsed.len(), merged, "{}: every key of every area", locale.tag());
        assert_eq!(parsed.get("common.save").map(String::as_str), dictionary(locale).get("common.save"));
    }
}
