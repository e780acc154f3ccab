//! Directory sign-in read as OpenLDAP is: groups searched (groupOfNames and posixGroup), and a
//! typed name that is never a filter.

use super::{Style, granted, refused, shared_options, wrong};
use crate::helpers::Backend;
use crate::shared::Shared;

static LBDESK: Shared = Shared::with(|| shared_options("directory-openldap", Style::OpenLdap, |text| text), false);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openldap_groups_are_searched_and_a_name_is_never_a_filter() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    // erik is in team-a-dev (groupOfNames `member`) and team-b-dev (posixGroup `memberUid`).
    let erik = granted(&lbdesk, "erik", "erik-directory").await;
    assert_eq!(erik.2, vec!["project-a".to_string(), "project-b".to_string()]);
    // A disabled account (the filter leaves it out) is refused like a wrong password.
    assert_eq!(refused(&lbdesk, "frank", "frank-directory").await, wrong());
    // A name made of filter syntax and non-ASCII signs in as itself...
    let zoe = granted(&lbdesk, "zoë(*)\\lab", "zoe-directory").await;
    assert_eq!((zoe.0.as_str(), zoe.2), ("zoë(*)\\lab", vec!["project-b".to_string()]));
    // ...and no typed name widens the search to someone else.
    // NB: each with the password of the user it aims at (20 failures make the address wait).
    for (name, password) in [
        ("*", "dora-directory"),
        ("zo*", "zoe-directory"),
        ("zoë(*)*", "zoe-directory"),
        ("erik)(uid=*", "erik-directory"),
        ("*)(|(uid=*", "erik-directory"),
        ("erik\0", "erik-directory"),
        ("dora)(|(uid=*", "dora-directory"),
    ] {
        assert_eq!(refused(&lbdesk, name, password).await, wrong(), "{name:?}");
    }
}
