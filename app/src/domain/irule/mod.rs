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
    out
}

/// The Tcl expression of what a condition type looks at.
fn subject(c: &RuleCondition) -> String {
    let key = tcl_quote(c.key.as_deref().unwrap_or(""));
    match c.type_ {
        RuleType::Domain => r#"[string tolower [getfield [HTTP::host] ":" 1]]"#.to_string(),
        RuleType::Url => "[HTTP::path]".to_string(),
        RuleType::Header => format!("[HTTP::header value {key}]"),
        RuleType::Cookie => format!("[HTTP::cookie value {key}]"),
        RuleType::Urlparam => format!("[URI::query [HTTP::uri] {key}]"),
        RuleType::Ip => "[IP::client_addr]".to_string(),
    }
}

/// One value test, as a braced-safe Tcl expression.
fn test(c: &RuleCondition, op: Operator, value: &str, http: bool) -> String {
    if c.type_ == RuleType::Ip {
        return format!("[IP::addr [IP::client_addr] equals {}]", tcl_quote(value));
    }
    if !http {
        // TCP/UDP carry no HTTP data; validation refuses such conditions, parity says "no match".
        return "0".to_string();
    }
    let s = subject(c);
    let value = if c.type_ == RuleType::Domain { value.to_lowercase() } else { value.to_string() };
    match op {
        Operator::Equal => format!("({s} eq {})", tcl_quote(&value)),
        Operator::Startwith => format!("([string first {} {s}] == 0)", tcl_quote(&value)),
        Operator::Regexp => format!("[regexp -- {} {s}]", tcl_quote(&value)),
        Operator::Range => match parse_range(&value) {
            Ok((lo, hi)) => {
                format!("([regexp {{^[0-9]{{1,9}}$}} {s}] && [scan {s} %d] >= {lo} && [scan {s} %d] <= {hi})")
            }
            Err(_) => "0".to_string(),
        },
    }
}

fn rule_condition(rule: &LbruleSpec, http: bool) -> String {
    let join = match rule.match_ {
        MatchMode::Any => " || ",
        MatchMode::All => " && ",
    };
    let parts: Vec<String> = rule
        .rules
        .iter()
        .map(|c| {
            let values: Vec<String> = c.values.iter().map(|v| test(c, v.operator, &v.value, http)).collect();
            format!("({})", values.join(" || "))
        })
        .collect();
    if parts.is_empty() { "0".to_string() } else { parts.join(join) }
}

/// The weighted choice among `services`, indented by `pad`.
fn choose(services: &[ServiceRef], pool_of: &dyn Fn(&ServiceRef) -> String, pad: &str) -> String {
    let live: Vec<&ServiceRef> = services.iter().filter(|s| s.weight > 0).collect();
    match live.as_slice() {
        [] => format!("{pad}reject\n"),
        [only] => format!("{pad}pool {}\n", pool_of(only)),
        [init @ .., last] => {
            let mut out = String::new();
            let mut upto = 0;
            for (i, s) in init.iter().enumerate() {
                upto += s.weight;
                let keyword = if i == 0 { "if" } else { "} elseif" };
                let _ = writeln!(out, "{pad}{keyword} {{ $lbd_bucket < {upto} }} {{");
                let _ = writeln!(out, "{pad}    pool {}", pool_of(s));
            }
            let _ = writeln!(out, "{pad}}} else {{");
            let _ = writeln!(out, "{pad}    pool {}", pool_of(last));
            let _ = writeln!(out, "{pad}}}");
            out
        }
    }
}

/// The iRule of a listener with its rules (any order); `pool_of` gives a backend's full pool path.
pub fn render(listener: &Listener, rules: &[(&str, &LbruleSpec)], pool_of: &dyn Fn(&ServiceRef) -> String) -> String {
    let http = listener.protocol.is_http();
    let event = if http { "HTTP_REQUEST" } else { "CLIENT_ACCEPTED" };
    let mut out = String::new();
    let _ = writeln!(out, "when {event} {{");
    out.push_str("    set lbd_bucket [expr {(0xffffffff & [crc32 [IP::client_addr]]) % 100}]\n");
    let rules = ordered(rules);
    if rules.is_empty() {
        out.push_str(&choose(&listener.services, pool_of, "    "));
    } else {
        for (i, (name, rule)) in rules.iter().enumerate() {
            let keyword = if i == 0 { "if" } else { "} elseif" };
            let _ = writeln!(out, "    # rule {name}");
            let _ = writeln!(out, "    {keyword} {{ {} }} {{", rule_condition(rule, http));
            out.push_str(&choose(&rule.services, pool_of, "        "));
        }
        out.push_str("    } else {\n");
        out.push_str(&choose(&listener.services, pool_of, "        "));
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
    fn names_and_keys_are_quoted_too() {
        let c = RuleCondition { type_: RuleType::Header, key: Some("X-\"Y".into()), values: vec![] };
        assert_eq!(subject(&c), r#"[HTTP::header value "X-\"Y"]"#);
    }
}

#[cfg(test)]
mod tcl_tests;
