//! Names and small values: Kubernetes names, label keys and values, URLs, length limits.

pub use crate::domain::text::{escaped, loggable, shown};

use super::{Refusal, Verdict};

/// Longest value of a rule condition.
pub const MAX_VALUE_LEN: usize = 256;
/// Longest header, cookie or query-parameter name.
pub const MAX_KEY_LEN: usize = 64;
/// Most values in one condition.
pub const MAX_VALUES: usize = 32;
/// Most conditions in one rule.
pub const MAX_CONDITIONS: usize = 16;
/// Most backends behind one listener or rule.
pub const MAX_SERVICES: usize = 16;
/// Most listeners on one address.
pub const MAX_LISTENERS: usize = 64;

fn is_dns_char(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'
}

/// An RFC 1123 label: what namespaces, listeners and most Kubernetes names are.
pub fn dns_label(field: &str, value: &str) -> Verdict {
    let ok = !value.is_empty()
        && value.len() <= 63
        && value.chars().all(is_dns_char)
        && !value.starts_with('-')
        && !value.ends_with('-');
    if ok { Ok(()) } else { Err(Refusal::field(field, crate::msg!("refusals.name.dns_label", value = escaped(value)))) }
}

/// An RFC 1035 label: what Service names are (a letter first).
pub fn service_name(field: &str, value: &str) -> Verdict {
    dns_label(field, value)?;
    if value.starts_with(|c: char| c.is_ascii_lowercase()) {
        Ok(())
    } else {
        Err(Refusal::field(field, crate::msg!("refusals.name.service", value = escaped(value))))
    }
}

/// An RFC 1123 subdomain: what the names of cluster-scoped objects are.
pub fn object_name(field: &str, value: &str) -> Verdict {
    if value.is_empty() || value.len() > 253 {
        return Err(Refusal::field(field, crate::msg!("refusals.name.length")));
    }
    for part in value.split('.') {
        dns_label(field, part)
            .map_err(|_| Refusal::field(field, crate::msg!("refusals.name.object", value = escaped(value))))?;
    }
    Ok(())
}

/// A Kubernetes label key (`[prefix/]name`).
pub fn label_key(field: &str, key: &str) -> Verdict {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        object_name(field, prefix)
            .map_err(|_| Refusal::field(field, crate::msg!("refusals.name.label_prefix", key = escaped(key))))?;
    }
    label_value(field, name)?;
    if name.is_empty() {
        return Err(Refusal::field(field, crate::msg!("refusals.name.label_key_empty")));
    }
    Ok(())
}

/// A Kubernetes label value: up to 63 of `[A-Za-z0-9._-]`, alphanumeric at both ends.
pub fn label_value(field: &str, value: &str) -> Verdict {
    let ok = value.is_empty()
        || (value.len() <= 63
            && value.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && value.starts_with(|c: char| c.is_ascii_alphanumeric())
            && value.ends_with(|c: char| c.is_ascii_alphanumeric()));
    if ok {
        Ok(())
    } else {
        Err(Refusal::field(field, crate::msg!("refusals.name.label_value", value = escaped(value))))
    }
}

/// An `http://` or `https://` URL with a host.
pub fn http_url(field: &str, value: &str) -> Verdict {
    let rest = value.strip_prefix("https://").or_else(|| value.strip_prefix("http://"));
    match rest {
        Some(r) if !r.is_empty() && !r.starts_with('/') && !value.chars().any(char::is_whitespace) => Ok(()),
        _ => Err(Refusal::field(field, crate::msg!("refusals.value.http_url", value = escaped(value)))),
    }
}

/// A non-empty value at most `max` characters long.
pub fn bounded(field: &str, value: &str, max: usize) -> Verdict {
    if value.is_empty() {
        Err(Refusal::field(field, crate::msg!("refusals.value.required")))
    } else if value.chars().count() > max {
        Err(Refusal::field(field, crate::msg!("refusals.value.too_long", max = max)))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_is_named_as_kubernetes_allows() {
        use crate::domain::crd::address_name;
        use crate::domain::ipam::Device;
        for (device, ip) in [(Device::ve("200.1.1.1"), "10.1.0.7"), (Device::ltm("https://ltm.bank/api"), "fd00::")] {
            let name = address_name(&device, ip.parse().expect("ip"));
            object_name("name", &name).expect("a valid object name");
        }
    }

    #[test]
    fn names_follow_kubernetes() {
        for (f, value, ok) in [
            (dns_label as fn(&str, &str) -> Verdict, "team-a", true),
            (dns_label, "1team", true),
            (dns_label, "Team", false),
            (dns_label, "team-", false),
            (dns_label, "", false),
            (dns_label, &"a".repeat(64), false),
            (service_name, "svc01", true),
            (service_name, "1svc", false),
            (object_name, "demo.lb-1", true),
            (object_name, "demo..lb", false),
            (object_name, "Demo", false),
            (label_key, "foo", true),
            (label_key, "example.com/zone", true),
            (label_key, "Ex ample", false),
            (label_key, "example.com/", false),
            (label_value, "", true),
            (label_value, "zone_1", true),
            (label_value, "-zone", false),
            (http_url, "http://100.1.1.1/api", true),
            (http_url, "https://ltm.bank", true),
            (http_url, "ftp://ltm", false),
            (http_url, "http:///x", false),
        ] {
            assert_eq!(f("field", value).is_ok(), ok, "{value:?}");
        }
    }

    #[test]
    fn refusals_name_the_field() {
        let r = dns_label("namespace", "Bad").expect_err("refused");
        assert_eq!(r.field.as_deref(), Some("namespace"));
        assert_eq!(r.under("listeners[1]").field.as_deref(), Some("listeners[1].namespace"));
        assert_eq!(
            bounded("value", &"x".repeat(11), 10).expect_err("long").reason.to_string(),
            "at most 10 characters"
        );
        let huge = dns_label("name", &"x".repeat(100_000)).expect_err("huge").reason.to_string();
        assert!(huge.starts_with(&format!("\"{}…\" must", "x".repeat(64))), "{huge}");
    }
}
