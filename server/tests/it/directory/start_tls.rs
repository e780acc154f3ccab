//! A directory reached on its plain port with StartTLS.

use super::{Style, granted, shared, shared_options};
use crate::helpers::Backend;
use crate::shared::Shared;

/// The shared directory's plain port, upgraded before anything is sent.
static LBDESK: Shared = Shared::with(
    || {
        let (ldaps, ldap) =
            (format!("ldaps://127.0.0.1:{}", shared().ldaps), format!("ldap://127.0.0.1:{}", shared().ldap));
        shared_options("directory-start-tls", Style::OpenLdap, |text| {
            format!("{}startTls: true\n", text.replace(&ldaps, &ldap))
        })
    },
    false,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_tls_upgrades_a_plain_port_before_anything_is_sent() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    assert_eq!(granted(&lbdesk, "dora", "dora-directory").await.2, vec!["project-a".to_string()]);
}
