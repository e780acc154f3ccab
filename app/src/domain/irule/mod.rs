//! The one consolidated iRule of a virtual server.
//!
//! Rules in priority order become an `if / elseif` chain, the first match wins, the listener's
//! own weights are the final `else`, and every branch names a pool by its full path, so no pool
//! chosen for an earlier request of the connection survives. Weighted choice is sticky per
//! client: `crc32(client address) % 100` against cumulative weights, as [`super::routing`].
//!
//! NB: user values never become code. Each is emitted as one `"…"` Tcl literal with every
//! character Tcl would substitute (`\ " $ [ ]`) or count as a brace (`{ }`) escaped, control
//! and non-ASCII characters as `\uXXXX` (BIG-IP's Tcl 8.4 reads exactly four digits), and every
//! condition braced so `expr` substitutes once. The iRule is declared with `expand: false`, so
//! AS3's backquote expansion never touches it.

use std::fmt::Write;

use super::crd::{LbruleSpec, Listener, MatchMode, Operator, RuleCondition, RuleType, ServiceRef};
use super::policy::parse_range;
use super::routing::ordered;

/// `text` as a Tcl double-quoted literal that substitutes back to exactly `text`.
pub fn tcl_quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    quote_into(&mut out, text);
    out
}

fn quote_into(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '\\' | '"' | '$' | '[' | ']' | '{' | '}' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            _ => {
                // NB: characters beyond U+FFFF are refused by validation; BMP ones fit \uXXXX.
                let _ = write!(out, "\\u{:04x}", u32::from(c).min(0xFFFF));
            }
        }
    }
    out.push('"');
}

/// Writes the Tcl expression of what a condition type looks at.
fn subject_into(out: &mut String, c: &RuleCondition) {
    let key = c.key.as_deref().unwrap_or("");
    let (head, keyed) = match c.type_ {
        RuleType::Domain => (r#"[string tolower [getfield [HTTP::host] ":" 1]]"#, false),
        RuleType::Url => ("[HTTP::path]", false),
        RuleType::Header => ("[HTTP::header value ", true),
        RuleType::Cookie => ("[HTTP::cookie value ", true),
        RuleType::Urlparam => ("[URI::query [HTTP::uri] ", true),
        RuleType::Ip => ("[IP::client_addr]", false),
    };
    out.push_str(head);
    if keyed {
        quote_into(out, key);
        out.push(']');
    }
}

/// Writes one value test, as a braced-safe Tcl expression.
fn test_into(out: &mut String, c: &RuleCondition, op: Operator, value: &str, http: bool) {
    if c.type_ == RuleType::Ip {
        out.push_str("[IP::addr [IP::client_addr] equals ");
        quote_into(out, value);
        out.push(']');
        return;
    }
    if !http {
        // TCP/UDP carry no HTTP data; validation refuses such conditions, parity says "no match".
        out.push('0');
        return;
    }
    let lowered;
    let value = if c.type_ == RuleType::Domain {
        lowered = value.to_lowercase();
        lowered.as_str()
    } else {
        value
    };
    match op {
        Operator::Equal => {
            out.push('(');
            subject_into(out, c);
            out.push_str(" eq ");
            quote_into(out, value);
            out.push(')');
        }
        Operator::Startwith => {
            out.push_str("([string first ");
            quote_into(out, value);
            out.push(' ');
            subject_into(out, c);
            out.push_str("] == 0)");
        }
        Operator::Regexp => {
            out.push_str("[regexp -- ");
            quote_into(out, value);
            out.push(' ');
            subject_into(out, c);
            out.push(']');
        }
        Operator::Range => match parse_range(value) {
            Ok((lo, hi)) => {
                out.push_str("([regexp {^[0-9]{1,9}$} ");
                subject_into(out, c);
                out.push_str("] && [scan ");
                subject_into(out, c);
                let _ = write!(out, " %d] >= {lo} && [scan ");
                subject_into(out, c);
                let _ = write!(out, " %d] <= {hi})");
            }
            Err(_) => out.push('0'),
        },
    }
}

/// Writes the condition of a rule: its conditions joined by its match mode, values OR'ed.
fn condition_into(out: &mut String, rule: &LbruleSpec, http: bool) {
    let join = match rule.match_ {
        MatchMode::Any => " || ",
        MatchMode::All => " && ",
    };
    if rule.rules.is_empty() {
        out.push('0');
    }
    for (i, c) in rule.rules.iter().enumerate() {
        if i > 0 {
            out.push_str(join);
        }
        out.push('(');
        for (j, v) in c.values.iter().enumerate() {
            if j > 0 {
                out.push_str(" || ");
            }
            test_into(out, c, v.operator, &v.value, http);
        }
        out.push(')');
    }
}

/// Writes the weighted choice among `services`, indented by `pad`.
fn choose_into(out: &mut String, services: &[ServiceRef], pool_of: PoolPath, pad: &str) {
    let pool = |out: &mut String, s: &ServiceRef, pad: &str| {
        out.push_str(pad);
        out.push_str("pool ");
        pool_of(out, s);
        out.push('\n');
    };
    let live: Vec<&ServiceRef> = services.iter().filter(|s| s.weight > 0).collect();
    match live.as_slice() {
        [] => {
            out.push_str(pad);
            out.push_str("reject\n");
        }
        [only] => pool(out, only, pad),
        [init @ .., last] => {
            let inner = format!("{pad}    ");
            let mut upto = 0;
            for (i, s) in init.iter().enumerate() {
                upto += s.weight;
                let keyword = if i == 0 { "if" } else { "} elseif" };
                let _ = writeln!(out, "{pad}{keyword} {{ $lbd_bucket < {upto} }} {{");
                pool(out, s, &inner);
            }
            out.push_str(pad);
            out.push_str("} else {\n");
            pool(out, last, &inner);
            out.push_str(pad);
            out.push_str("}\n");
        }
    }
}

/// Writes the full path of a backend's pool.
pub type PoolPath<'p> = &'p dyn Fn(&mut String, &ServiceRef);

/// The iRule of a listener with its rules (any order); `pool_of` writes a backend's full pool path.
pub fn render(listener: &Listener, rules: &[(&str, &LbruleSpec)], pool_of: PoolPath) -> String {
    let http = listener.protocol.is_http();
    let mut out = String::with_capacity(512 + 384 * rules.len());
    out.push_str(if http { "when HTTP_REQUEST {\n" } else { "when CLIENT_ACCEPTED {\n" });
    out.push_str("    set lbd_bucket [expr {(0xffffffff & [crc32 [IP::client_addr]]) % 100}]\n");
    let rules = ordered(rules);
    if rules.is_empty() {
        choose_into(&mut out, &listener.services, pool_of, "    ");
    } else {
        for (i, (name, rule)) in rules.iter().enumerate() {
            // NB: a comment ends at a newline, so only a well-formed name may appear in one.
            if name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.') {
                let _ = writeln!(out, "    # rule {name}");
            }
            out.push_str(if i == 0 { "    if { " } else { "    } elseif { " });
            condition_into(&mut out, rule, http);
            out.push_str(" } {\n");
            choose_into(&mut out, &rule.services, pool_of, "        ");
        }
        out.push_str("    } else {\n");
        choose_into(&mut out, &listener.services, pool_of, "        ");
        out.push_str("    }\n");
    }
    out.push_str("}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_escapes_everything_tcl_substitutes() {
        assert_eq!(tcl_quote("a.domain.com"), r#""a.domain.com""#);
        assert_eq!(tcl_quote(r#"[exec rm]$x"\{}"#), r#""\[exec rm\]\$x\"\\\{\}""#);
        assert_eq!(tcl_quote("a\nb\u{7f}é`"), "\"a\\u000ab\\u007f\\u00e9`\"");
        assert_eq!(tcl_quote("; # `x`"), "\"; # `x`\"");
    }

    #[test]
    fn a_malformed_rule_name_never_reaches_a_comment() {
        use crate::domain::crd::{MatchMode, Protocol, Session};
        let listener = Listener {
            name: "web".into(),
            port: 80,
            protocol: Protocol::Http,
            session: Session::None,
            services: vec![ServiceRef { service: "a".into(), port: 80, weight: 100 }],
        };
        let rule = LbruleSpec { match_: MatchMode::Any, services: listener.services.clone(), ..Default::default() };
        let text = render(&listener, &[("x\nlbd_pwned", &rule), ("ok-name", &rule)], &|out, _| out.push('p'));
        assert!(!text.contains("lbd_pwned"), "{text}");
        assert!(text.contains("# rule ok-name"));
    }

    #[test]
    fn names_and_keys_are_quoted_too() {
        let c = RuleCondition { type_: RuleType::Header, key: Some("X-\"Y".into()), values: vec![] };
        let mut out = String::new();
        subject_into(&mut out, &c);
        assert_eq!(out, r#"[HTTP::header value "X-\"Y"]"#);
    }
}

#[cfg(test)]
mod tcl_tests;
