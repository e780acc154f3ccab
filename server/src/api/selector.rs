//! Label and field selectors, as the Kubernetes API reads them from a query string.

use std::collections::BTreeMap;

/// One requirement of a label selector.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Requirement {
    Exists(String),
    NotExists(String),
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
}

/// A parsed label selector; empty matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector(Vec<Requirement>);

/// Splits on commas that are not inside parentheses.
fn split_top(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

fn valid_key(k: &str) -> bool {
    !k.is_empty() && k.len() <= 317 && k.chars().all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
}

fn valid_value(v: &str) -> bool {
    v.len() <= 63 && v.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

impl LabelSelector {
    /// Parses `app=web,tier!=db,env in (a,b),!legacy`.
    pub fn parse(text: &str) -> Result<LabelSelector, String> {
        let mut reqs = Vec::new();
        for part in split_top(text).into_iter().map(str::trim).filter(|p| !p.is_empty()) {
            let bad = || format!("invalid label selector {part:?}");
            let req = if let Some(key) = part.strip_prefix('!') {
                Requirement::NotExists(key.trim().to_string())
            } else if let Some((key, values)) = set_op(part, " notin ") {
                Requirement::NotIn(key, values.ok_or_else(bad)?)
            } else if let Some((key, values)) = set_op(part, " in ") {
                Requirement::In(key, values.ok_or_else(bad)?)
            } else if let Some((k, v)) = part.split_once("!=") {
                Requirement::NotEquals(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                Requirement::Equals(k.trim().into(), v.trim().into())
            } else {
                Requirement::Exists(part.to_string())
            };
            let (key, values): (&str, Vec<&str>) = match &req {
                Requirement::Exists(k) | Requirement::NotExists(k) => (k, vec![]),
                Requirement::Equals(k, v) | Requirement::NotEquals(k, v) => (k, vec![v]),
                Requirement::In(k, vs) | Requirement::NotIn(k, vs) => (k, vs.iter().map(String::as_str).collect()),
            };
            if !valid_key(key) || !values.iter().all(|v| valid_value(v)) {
                return Err(bad());
            }
            reqs.push(req);
        }
        Ok(LabelSelector(reqs))
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.iter().all(|r| match r {
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::NotExists(k) => !labels.contains_key(k),
            Requirement::Equals(k, v) => labels.get(k) == Some(v),
            Requirement::NotEquals(k, v) => labels.get(k) != Some(v),
            Requirement::In(k, vs) => labels.get(k).is_some_and(|l| vs.contains(l)),
            Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|l| !vs.contains(l)),
        })
    }
}

/// `key in (a,b)` → (key, Some([a, b])); malformed sets give `None` values.
fn set_op(part: &str, op: &str) -> Option<(String, Option<Vec<String>>)> {
    let (key, rest) = part.split_once(op)?;
    let rest = rest.trim();
    let values = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .map(|inner| inner.split(',').map(|v| v.trim().to_string()).collect());
    Some((key.trim().to_string(), values))
}

/// A field selector on `metadata.name` and `metadata.namespace`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector(Vec<(String, bool, String)>);

impl FieldSelector {
    /// Parses `metadata.name=x,metadata.namespace!=y`.
    pub fn parse(text: &str) -> Result<FieldSelector, String> {
        let mut reqs = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (field, equal, value) = if let Some((f, v)) = part.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                (f, true, v)
            } else {
                return Err(format!("invalid field selector {part:?}"));
            };
            let field = field.trim();
            if field != "metadata.name" && field != "metadata.namespace" {
                return Err(format!("field label not supported: {field}"));
            }
            reqs.push((field.to_string(), equal, value.trim().to_string()));
        }
        Ok(FieldSelector(reqs))
    }

    /// Whether an object named `name` in `namespace` ('' when cluster-scoped) matches.
    pub fn matches(&self, namespace: &str, name: &str) -> bool {
        self.0.iter().all(|(field, equal, value)| {
            let actual = if field == "metadata.name" { name } else { namespace };
            (actual == value) == *equal
        })
    }

    /// The single name asked for, if the selector pins one (lets a list use the primary key).
    pub fn pinned_name(&self) -> Option<&str> {
        self.0.iter().find(|(f, eq, _)| f == "metadata.name" && *eq).map(|(_, _, v)| v.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn label_selectors_follow_kubernetes() {
        let l = labels(&[("app", "web"), ("tier", "front"), ("ebcpaas.io/project", "project-a")]);
        for (sel, want) in [
            ("", true),
            ("app=web", true),
            ("app==web", true),
            ("app=db", false),
            ("app!=db", true),
            ("missing!=x", true),
            ("app in (web,api)", true),
            ("app in (api)", false),
            ("app notin (api, db)", true),
            ("missing notin (a)", true),
            ("tier", true),
            ("!tier", false),
            ("!legacy", true),
            ("app=web,tier in (front),ebcpaas.io/project=project-a", true),
            ("app=web,tier=back", false),
        ] {
            assert_eq!(LabelSelector::parse(sel).expect(sel).matches(&l), want, "{sel}");
        }
        for bad in ["app in web", "app=we b", "a b c"] {
            assert!(LabelSelector::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn field_selectors_take_name_and_namespace() {
        let f = FieldSelector::parse("metadata.name=a,metadata.namespace!=kube-system").expect("valid");
        assert!(f.matches("default", "a"));
        assert!(!f.matches("kube-system", "a"));
        assert!(!f.matches("default", "b"));
        assert_eq!(f.pinned_name(), Some("a"));
        assert!(FieldSelector::parse("spec.x=1").is_err());
    }
}
