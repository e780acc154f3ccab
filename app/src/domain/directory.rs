//! What a directory account may do in lbdesk: the documented mapping from directory groups to
//! the platform admin role and to projects, applied to the groups a user is in.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::policy::{Refusal, dns_label};
use super::user::Role;

/// A directory group a user is in: its DN, and its name (its `cn`, or the first value of its DN).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    pub dn: String,
    pub name: String,
}

impl Group {
    /// A group known by its DN alone (Active Directory's `memberOf`): named by its first value.
    pub fn of_dn(dn: &str) -> Group {
        Group { dn: dn.to_string(), name: first_value(dn) }
    }
}

/// The value of a DN's first attribute (`CN=Payments Dev,OU=Groups,…` → `Payments Dev`), with
/// RFC 4514's escapes undone; the whole DN when it has no `=`.
fn first_value(dn: &str) -> String {
    let Some((_, rest)) = dn.split_once('=') else { return dn.trim().to_string() };
    // NB: a `\XX` escape is one byte of UTF-8 (multi-byte characters come as pairs in a row),
    // so the value is gathered as bytes.
    let mut bytes = Vec::new();
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        match c {
            ',' | '+' => break,
            '\\' => {
                let pair: String = chars.clone().take(2).collect();
                match u8::from_str_radix(&pair, 16) {
                    Ok(byte) if pair.len() == 2 => {
                        bytes.push(byte);
                        chars.nth(1);
                    }
                    _ => {
                        if let Some(escaped) = chars.next() {
                            bytes.extend(escaped.to_string().bytes());
                        }
                    }
                }
            }
            c => bytes.extend(c.to_string().bytes()),
        }
    }
    String::from_utf8_lossy(&bytes).trim().to_string()
}

/// The groups → role and projects mapping (a file or a mounted ConfigMap).
///
/// ```yaml
/// admins: ["CN=LB-Admins,OU=Groups,DC=bank,DC=example"]
/// projects:
///   payments: ["CN=Payments-Dev,OU=Groups,DC=bank,DC=example", "payments-ops"]
/// ```
///
/// A group is named by its DN or by its name, both compared without regard to case (as the
/// directories compare them).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mapping {
    /// Groups whose members are platform admins.
    #[serde(default)]
    pub admins: Vec<String>,
    /// Per project, the groups whose members work in it.
    #[serde(default)]
    pub projects: BTreeMap<String, Vec<String>>,
}

/// What a directory user is granted: a role, and a tenant's projects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grants {
    pub role: Role,
    /// The projects of a tenant (sorted); none for an admin, who works in every project.
    pub projects: Vec<String>,
}

impl Mapping {
    /// Refuses a mapping naming no group, an empty group or a project that cannot be a name.
    pub fn check(&self) -> Result<(), Refusal> {
        let empty = |groups: &[String]| groups.iter().any(|g| g.trim().is_empty());
        if empty(&self.admins) {
            return Err(Refusal::field("admins", crate::msg!("refusals.mapping.empty_group")));
        }
        for (project, groups) in &self.projects {
            dns_label("projects", project)?;
            if groups.is_empty() || empty(groups) {
                return Err(Refusal::field(format!("projects.{project}"), crate::msg!("refusals.mapping.no_group")));
            }
        }
        if self.admins.is_empty() && self.projects.is_empty() {
            return Err(Refusal::field("admins", crate::msg!("refusals.mapping.grants_nothing")));
        }
        Ok(())
    }

    /// What a user in `groups` is granted; `None` when no group of theirs is in the mapping.
    pub fn grants(&self, groups: &[Group]) -> Option<Grants> {
        let is_in = |named: &[String]| named.iter().any(|n| groups.iter().any(|g| matches(n, g)));
        if is_in(&self.admins) {
            return Some(Grants { role: Role::Admin, projects: Vec::new() });
        }
        let projects: Vec<String> =
            self.projects.iter().filter(|(_, named)| is_in(named)).map(|(p, _)| p.clone()).collect();
        (!projects.is_empty()).then_some(Grants { role: Role::Tenant, projects })
    }
}

/// Whether `named` (a DN or a name, as the mapping writes it) is the group `g`.
fn matches(named: &str, g: &Group) -> bool {
    let named = named.trim();
    if named.contains('=') { same_dn(named, &g.dn) } else { named.eq_ignore_ascii_case(&g.name) }
}

/// DNs compared as directories write them back: case and the spaces after separators aside.
fn same_dn(a: &str, b: &str) -> bool {
    let canon = |dn: &str| -> String {
        dn.split(',').map(|rdn| rdn.trim().replace(" = ", "=").replace("= ", "=")).collect::<Vec<_>>().join(",")
    };
    canon(a).to_lowercase() == canon(b).to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapping() -> Mapping {
        serde_json::from_value(serde_json::json!({
            "admins": ["CN=LB-Admins,OU=Groups,DC=bank,DC=example"],
            "projects": {
                "project-a": ["cn=team-a-dev,ou=groups,dc=bank,dc=example"],
                "project-b": ["team-b-dev", "Team-B-Ops"],
            },
        }))
        .expect("a mapping")
    }

    fn group(dn: &str) -> Group {
        Group::of_dn(dn)
    }

    #[test]
    fn a_group_is_matched_by_dn_or_by_name_whatever_the_case() {
        let m = mapping();
        let a = m.grants(&[group("CN=Team-A-Dev, OU=Groups, DC=Bank, DC=Example")]);
        assert_eq!(a, Some(Grants { role: Role::Tenant, projects: vec!["project-a".into()] }));
        let b = m.grants(&[group("cn=team-b-ops,ou=groups,dc=bank,dc=example")]);
        assert_eq!(b, Some(Grants { role: Role::Tenant, projects: vec!["project-b".into()] }));
        let posix = Group { dn: "cn=team-b-dev,ou=groups,dc=bank,dc=example".into(), name: "team-b-dev".into() };
        let both = m.grants(&[group("cn=team-a-dev,ou=groups,dc=bank,dc=example"), posix]);
        assert_eq!(both, Some(Grants { role: Role::Tenant, projects: vec!["project-a".into(), "project-b".into()] }));
    }

    #[test]
    fn an_admin_group_makes_an_admin_and_no_mapped_group_grants_nothing() {
        let m = mapping();
        let admin = m.grants(&[group("cn=lb-admins,ou=groups,dc=bank,dc=example"), group("cn=team-b-ops,o=x")]);
        assert_eq!(admin, Some(Grants { role: Role::Admin, projects: vec![] }));
        assert_eq!(m.grants(&[group("cn=unrelated,ou=groups,dc=bank,dc=example")]), None);
        assert_eq!(m.grants(&[]), None);
        // A DN in the mapping is never matched by a group's name alone, nor a name by a longer DN.
        assert_eq!(m.grants(&[group("cn=team-a-dev,ou=other,dc=bank,dc=example")]), None);
    }

    #[test]
    fn a_dn_s_first_value_is_read_with_its_escapes() {
        assert_eq!(first_value("CN=Payments Dev,OU=Groups"), "Payments Dev");
        assert_eq!(first_value("cn=a\\,b,ou=x"), "a,b");
        assert_eq!(first_value("cn=zo\\c3\\ab (*),ou=x"), "zoë (*)");
        assert_eq!(first_value("cn=x+uid=y,ou=z"), "x");
        assert_eq!(first_value("plain"), "plain");
        assert_eq!(first_value("cn=odd\\"), "odd");
    }

    #[test]
    fn a_bad_mapping_is_refused_naming_where() {
        let refused = |json: serde_json::Value| {
            serde_json::from_value::<Mapping>(json).expect("parses").check().err().and_then(|r| r.field)
        };
        assert_eq!(refused(serde_json::json!({})), Some("admins".into()));
        assert_eq!(refused(serde_json::json!({"admins": [" "]})), Some("admins".into()));
        assert_eq!(refused(serde_json::json!({"projects": {"Bad Name": ["g"]}})), Some("projects".into()));
        assert_eq!(refused(serde_json::json!({"projects": {"p": []}})), Some("projects.p".into()));
        assert!(serde_json::from_value::<Mapping>(serde_json::json!({"admin": ["g"]})).is_err(), "unknown field");
        assert_eq!(mapping().check(), Ok(()));
    }
}
