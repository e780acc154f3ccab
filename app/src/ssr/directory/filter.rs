//! The directory's search filters, with what a user typed escaped (RFC 4515).

use ldap3::ldap_escape;

use super::UserSearch;

/// The user search: the configured filter ANDed with the name typed, escaped (RFC 4515), so
/// that `*`, `(`, `)`, `\` and NUL in a name match themselves and never widen the search.
pub fn user_filter(users: &UserSearch, name: &str) -> String {
    format!("(&{}({}={}))", parenthesised(&users.filter), users.name_attribute, ldap_escape(name.trim()))
}

/// The group search with `{dn}` and `{name}` filled in, escaped.
pub fn group_filter(template: &str, dn: &str, name: &str) -> String {
    // NB: one pass, so that a `{name}` inside a DN is not filled in again.
    let mut out = String::new();
    let mut rest = template;
    while let Some(at) = rest.find('{') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        if let Some(after) = rest.strip_prefix("{dn}") {
            out.push_str(&ldap_escape(dn));
            rest = after;
        } else if let Some(after) = rest.strip_prefix("{name}") {
            out.push_str(&ldap_escape(name));
            rest = after;
        } else {
            out.push('{');
            rest = &rest[1..];
        }
    }
    out.push_str(rest);
    parenthesised(&out)
}

fn parenthesised(filter: &str) -> String {
    let f = filter.trim();
    if f.starts_with('(') { f.to_string() } else { format!("({f})") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn users(filter: &str, attr: &str) -> UserSearch {
        UserSearch {
            base: "ou=people,dc=bank,dc=example".into(),
            filter: filter.into(),
            name_attribute: attr.into(),
            display_name_attribute: "displayName".into(),
            member_of_attribute: None,
        }
    }

    #[test]
    fn a_typed_name_never_widens_the_user_search() {
        let ad = users("(&(objectClass=user)(!(userAccountControl:1.2.840.113556.1.4.803:=2)))", "sAMAccountName");
        assert_eq!(
            user_filter(&ad, "alice"),
            "(&(&(objectClass=user)(!(userAccountControl:1.2.840.113556.1.4.803:=2)))(sAMAccountName=alice))"
        );
        let ol = users("objectClass=inetOrgPerson", "uid");
        for (typed, escaped) in [
            ("*", "\\2a"),
            ("alice)(uid=*", "alice\\29\\28uid=\\2a"),
            ("*)(|(uid=*", "\\2a\\29\\28|\\28uid=\\2a"),
            ("a\\b", "a\\5cb"),
            ("nul\0", "nul\\00"),
            ("zoë(*)\\lab", "zoë\\28\\2a\\29\\5clab"),
        ] {
            assert_eq!(user_filter(&ol, typed), format!("(&(objectClass=inetOrgPerson)(uid={escaped}))"), "{typed:?}");
        }
    }

    #[test]
    fn the_group_search_is_filled_in_once_and_escaped() {
        let filter = group_filter("(|(member={dn})(memberUid={name}))", "cn=Zoe (Lab),ou=p", "zo*{name}");
        assert_eq!(filter, "(|(member=cn=Zoe \\28Lab\\29,ou=p)(memberUid=zo\\2a{name}))");
        assert_eq!(group_filter("member={dn}", "cn=a", "a"), "(member=cn=a)");
    }
}
