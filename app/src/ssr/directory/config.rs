//! The directory's configuration: the file `--directory` names, as lbdesk reads it, and the TLS
//! it makes from it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

/// How lbdesk reaches the directory and reads it: the file `--directory` names.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DirectoryConfig {
    /// `ldaps://host:636`, or `ldap://host:389` with `startTls` (or, for a lab, `allowPlain`).
    pub url: String,
    /// Upgrade an `ldap://` connection with StartTLS before anything is sent.
    #[serde(default)]
    pub start_tls: bool,
    /// Let an `ldap://` URL without StartTLS send passwords in clear (never in production).
    #[serde(default)]
    pub allow_plain: bool,
    /// The CA certificate(s) (PEM) the directory's certificate is checked against; the
    /// system's when absent.
    pub ca_file: Option<PathBuf>,
    /// The service account lbdesk searches with.
    pub bind_dn: String,
    /// A file holding its password (a mounted Secret): never on the command line.
    pub bind_password_file: PathBuf,
    /// Seconds a connection or an operation may take.
    #[serde(default = "default_timeout")]
    pub timeout_seconds: u64,
    pub users: UserSearch,
    /// Where groups are searched (OpenLDAP's `groupOfNames` or `posixGroup`); with
    /// `users.memberOfAttribute` alone (Active Directory), none.
    pub groups: Option<GroupSearch>,
    /// The groups → role and projects mapping (`domain::directory::Mapping`), read again when
    /// it changes.
    pub mapping_file: PathBuf,
    /// Seconds after which a signed-in directory user's groups are read again.
    #[serde(default = "default_refresh")]
    pub refresh_seconds: u64,
    /// Whether lbdesk's own accounts (break-glass) may still sign in.
    #[serde(default = "yes")]
    pub local_accounts: bool,
}

/// Where and how users are found.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UserSearch {
    pub base: String,
    /// Which entries are users who may sign in (e.g. not disabled); ANDed with the name.
    #[serde(default = "any_entry")]
    pub filter: String,
    /// The attribute holding the name typed: `sAMAccountName` (AD), `uid` (OpenLDAP).
    #[serde(default = "uid")]
    pub name_attribute: String,
    #[serde(default = "display_name")]
    pub display_name_attribute: String,
    /// The attribute listing the user's groups' DNs (`memberOf`), if the directory keeps one.
    pub member_of_attribute: Option<String>,
}

/// Where and how a user's groups are found.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GroupSearch {
    pub base: String,
    /// `{dn}` is the user's DN and `{name}` their name, both escaped.
    #[serde(default = "member_filter")]
    pub filter: String,
    #[serde(default = "cn")]
    pub name_attribute: String,
}

fn default_timeout() -> u64 {
    5
}
fn default_refresh() -> u64 {
    300
}
fn yes() -> bool {
    true
}
fn any_entry() -> String {
    "(objectClass=*)".into()
}
fn uid() -> String {
    "uid".into()
}
fn display_name() -> String {
    "displayName".into()
}
fn member_filter() -> String {
    "(|(member={dn})(memberUid={name}))".into()
}
fn cn() -> String {
    "cn".into()
}

/// TLS towards the directory: its CA file, or the system's roots.
pub(super) fn tls_config(ca_file: Option<&Path>) -> Result<Arc<rustls::ClientConfig>, String> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    match ca_file {
        Some(file) => {
            let pem = std::fs::read(file).map_err(|e| format!("{}: {e}", file.display()))?;
            let certs = CertificateDer::pem_slice_iter(&pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("{}: unreadable PEM: {e}", file.display()))?;
            if certs.is_empty() {
                return Err(format!("{}: no certificate in it", file.display()));
            }
            for cert in certs {
                roots.add(cert).map_err(|e| format!("{}: {e}", file.display()))?;
            }
        }
        None => {
            let native = rustls_native_roots();
            if native.is_empty() {
                return Err("no caFile given and the system has no CA certificates".into());
            }
            roots.add_parsable_certificates(native);
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// The system's CA certificates (Debian's bundle).
fn rustls_native_roots() -> Vec<rustls::pki_types::CertificateDer<'static>> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    CertificateDer::pem_file_iter("/etc/ssl/certs/ca-certificates.crt")
        .map(|certs| certs.flatten().collect())
        .unwrap_or_default()
}
