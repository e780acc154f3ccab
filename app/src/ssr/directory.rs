//! Signing in with the bank's directory (Active Directory or OpenLDAP, over LDAPS or StartTLS):
//! lbdesk binds with its service account, finds the user by the name typed (escaped per
//! RFC 4515), reads their groups, binds as them with the password typed, and maps the groups
//! to a role and projects (`domain::directory`). Read-only: lbdesk never writes the directory.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use ldap3::{LdapConnAsync, LdapConnSettings, Scope, SearchEntry, SearchOptions, ldap_escape};
use serde::Deserialize;

use crate::domain::directory::{Grants, Group, Mapping};

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

/// A directory user as lbdesk found them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Person {
    /// The name as the directory spells it (the session's user name).
    pub name: String,
    pub dn: String,
    pub display_name: String,
    pub groups: Vec<Group>,
}

/// The directory could not be asked: why, in words for the sign-in page and the log.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unreachable(pub String);

/// The directory, as configured.
pub struct Directory {
    config: DirectoryConfig,
    tls: Arc<rustls::ClientConfig>,
    bind_password: String,
    /// The mapping last read, with the modification time it was read at.
    mapping: Mutex<(Option<SystemTime>, Mapping)>,
    /// Why the last attempt to reach the directory failed, if it did.
    last_failure: Mutex<Option<String>>,
    /// Whether a probe started by [`Directory::probe_soon`] is under way.
    probing: Arc<std::sync::atomic::AtomicBool>,
}

impl std::fmt::Debug for Directory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // NB: never the bind password.
        f.debug_struct("Directory").field("url", &self.config.url).finish_non_exhaustive()
    }
}

/// A configuration error: the file, the field and why.
fn bad(file: &Path, field: &str, why: impl std::fmt::Display) -> String {
    format!("{}: {field}: {why}", file.display())
}

impl Directory {
    /// Reads the configuration `file`, the bind password, the CA and the mapping it names;
    /// refuses what would not work, naming the field.
    pub fn load(file: &Path) -> Result<Directory, String> {
        let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
        let config: DirectoryConfig = serde_yaml::from_str(&text).map_err(|e| format!("{}: {e}", file.display()))?;
        let scheme = config.url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
        match scheme.as_deref() {
            Some("ldaps") if config.start_tls => {
                return Err(bad(file, "startTls", "an ldaps:// URL is TLS already; StartTLS is for ldap://"));
            }
            Some("ldaps") => {}
            Some("ldap") if config.start_tls || config.allow_plain => {}
            Some("ldap") => {
                return Err(bad(
                    file,
                    "url",
                    "ldap:// would send passwords in clear: use ldaps://, or set startTls (or allowPlain for a lab)",
                ));
            }
            _ => return Err(bad(file, "url", "give ldaps://host[:port] or ldap://host[:port]")),
        }
        for (field, value) in [
            ("bindDn", &config.bind_dn),
            ("users.base", &config.users.base),
            ("users.nameAttribute", &config.users.name_attribute),
        ] {
            if value.trim().is_empty() {
                return Err(bad(file, field, "is empty"));
            }
        }
        if !(1..=60).contains(&config.timeout_seconds) {
            return Err(bad(file, "timeoutSeconds", "give 1 to 60"));
        }
        if config.refresh_seconds == 0 {
            return Err(bad(file, "refreshSeconds", "give at least 1"));
        }
        if config.groups.is_none() && config.users.member_of_attribute.is_none() {
            return Err(bad(file, "groups", "name users.memberOfAttribute or a group search, or no group is found"));
        }
        let password = std::fs::read_to_string(&config.bind_password_file)
            .map_err(|e| bad(file, "bindPasswordFile", e))?
            .trim_end_matches(['\r', '\n'])
            .to_string();
        if password.is_empty() {
            return Err(bad(file, "bindPasswordFile", "the file is empty"));
        }
        let tls = tls_config(config.ca_file.as_deref()).map_err(|e| bad(file, "caFile", e))?;
        let (modified, mapping) = read_mapping(&config.mapping_file).map_err(|e| bad(file, "mappingFile", e))?;
        Ok(Directory {
            config,
            tls,
            bind_password: password,
            mapping: Mutex::new((modified, mapping)),
            last_failure: Mutex::new(None),
            probing: Default::default(),
        })
    }

    /// Whether lbdesk's own accounts may sign in.
    pub fn local_accounts(&self) -> bool {
        self.config.local_accounts
    }

    /// How long a directory user's groups are trusted before they are read again.
    pub fn refresh(&self) -> Duration {
        Duration::from_secs(self.config.refresh_seconds)
    }

    /// Why the directory could not be reached at the last attempt; `None` when it could.
    pub fn last_failure(&self) -> Option<String> {
        self.last_failure.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The user `name` signing in with `password`: `None` for an unknown or refused name, a
    /// wrong or empty password, or a user the filter leaves out (disabled).
    pub async fn authenticate(&self, name: &str, password: &str) -> Result<Option<Person>, Unreachable> {
        // NB: a bind with an empty password is an anonymous bind, which succeeds (RFC 4513 5.1.2).
        if password.is_empty() || name.trim().is_empty() {
            return Ok(None);
        }
        self.noted(self.find(name, Some(password))).await
    }

    /// The user `name` as the directory has them now (for the periodic refresh).
    pub async fn lookup(&self, name: &str) -> Result<Option<Person>, Unreachable> {
        self.noted(self.find(name, None)).await
    }

    /// Tries to reach the directory with the service account; the result is what
    /// [`Directory::last_failure`] says after.
    pub async fn probe(&self) {
        let _ = self.noted(async { self.connect().await.map(|_| ()) }).await;
    }

    /// Starts a probe in the background, unless one is under way.
    pub fn probe_soon(self: &Arc<Self>) {
        use std::sync::atomic::Ordering;
        if self.probing.swap(true, Ordering::AcqRel) {
            return;
        }
        let directory = self.clone();
        tokio::spawn(async move {
            directory.probe().await;
            directory.probing.store(false, Ordering::Release);
        });
    }

    /// What the mapping grants `person`; the mapping file is read again when it changed (a bad
    /// new one is logged and the last good one kept).
    pub fn grants(&self, person: &Person) -> Option<Grants> {
        let mut held = self.mapping.lock().unwrap_or_else(|p| p.into_inner());
        let file = &self.config.mapping_file;
        let modified = std::fs::metadata(file).and_then(|m| m.modified()).ok();
        if modified != held.0 {
            match read_mapping(file) {
                Ok(read) => *held = read,
                Err(e) => {
                    // NB: not read again until it changes again.
                    held.0 = modified;
                    tracing::error!(error = %e, "the group mapping is refused; the last good one is kept");
                }
            }
        }
        held.1.grants(&person.groups)
    }

    async fn noted<T>(&self, attempt: impl Future<Output = Result<T, Unreachable>>) -> Result<T, Unreachable> {
        let result = attempt.await;
        let failure = result.as_ref().err().map(|e| e.0.clone());
        if let Some(why) = &failure {
            tracing::warn!(url = %self.config.url, error = %why, "the directory cannot be reached");
        }
        *self.last_failure.lock().unwrap_or_else(|p| p.into_inner()) = failure;
        result
    }

    /// A connection bound as the service account.
    async fn connect(&self) -> Result<ldap3::Ldap, Unreachable> {
        let timeout = Duration::from_secs(self.config.timeout_seconds);
        let settings = LdapConnSettings::new()
            .set_conn_timeout(timeout)
            .set_starttls(self.config.start_tls)
            .set_config(self.tls.clone());
        let (conn, mut ldap) = LdapConnAsync::with_settings(settings, &self.config.url)
            .await
            .map_err(|e| Unreachable(format!("could not connect to {}: {e}", self.config.url)))?;
        ldap3::drive!(conn);
        ldap.with_timeout(timeout)
            .simple_bind(&self.config.bind_dn, &self.bind_password)
            .await
            .and_then(|r| r.success())
            .map_err(|e| Unreachable(format!("the service account's bind was refused: {}", without_secrets(&e))))?;
        Ok(ldap)
    }

    async fn find(&self, name: &str, password: Option<&str>) -> Result<Option<Person>, Unreachable> {
        let timeout = Duration::from_secs(self.config.timeout_seconds);
        let mut ldap = self.connect().await?;
        let users = &self.config.users;
        let filter = user_filter(users, name);
        let mut attrs = vec![users.name_attribute.as_str(), users.display_name_attribute.as_str()];
        attrs.extend(users.member_of_attribute.as_deref());
        let failed = |e: ldap3::LdapError| Unreachable(format!("the directory search failed: {e}"));
        // NB: two entries for one name would make the name ambiguous: asked for two, refused.
        let ldap3::SearchResult(entries, result) = ldap
            .with_timeout(timeout)
            .with_search_options(SearchOptions::new().sizelimit(2))
            .search(&users.base, Scope::Subtree, &filter, attrs)
            .await
            .map_err(failed)?;
        // 4: sizeLimitExceeded, more entries than the two asked for: ambiguous all the same.
        if !matches!(result.rc, 0 | 4) {
            return Err(failed(ldap3::LdapError::from(result)));
        }
        // NB: Active Directory answers references to other partitions beside the entries.
        let entries: Vec<SearchEntry> =
            entries.into_iter().filter(|e| !e.is_ref() && !e.is_intermediate()).map(SearchEntry::construct).collect();
        let [entry] = entries.as_slice() else {
            if entries.len() > 1 {
                tracing::warn!(base = %users.base, "more than one directory entry has the name typed; refused");
            }
            let _ = ldap.unbind().await;
            return Ok(None);
        };
        let first = |attr: &str| attribute(entry, attr).into_iter().next();
        let mut groups: Vec<Group> = match &users.member_of_attribute {
            Some(attr) => attribute(entry, attr).iter().map(|dn| Group::of_dn(dn)).collect(),
            None => Vec::new(),
        };
        let canonical = first(&users.name_attribute).unwrap_or_else(|| name.trim().to_string());
        if let Some(search) = &self.config.groups {
            let filter = group_filter(&search.filter, &entry.dn, &canonical);
            let (found, _) = ldap
                .with_timeout(timeout)
                .search(&search.base, Scope::Subtree, &filter, vec![search.name_attribute.as_str()])
                .await
                .map_err(failed)?
                .success()
                .map_err(failed)?;
            for g in found.into_iter().map(SearchEntry::construct) {
                let name = attribute(&g, &search.name_attribute).into_iter().next();
                let group = Group { name: name.unwrap_or_else(|| Group::of_dn(&g.dn).name), dn: g.dn };
                if !groups.iter().any(|known| known.dn.eq_ignore_ascii_case(&group.dn)) {
                    groups.push(group);
                }
            }
        }
        if let Some(password) = password {
            let bound = ldap.with_timeout(timeout).simple_bind(&entry.dn, password).await;
            match bound.map(|r| r.rc) {
                Ok(0) => {}
                // 49: invalidCredentials (AD also answers it for a disabled or locked account).
                Ok(_) => {
                    let _ = ldap.unbind().await;
                    return Ok(None);
                }
                Err(e) => return Err(Unreachable(format!("the directory did not answer the bind: {e}"))),
            }
        }
        let _ = ldap.unbind().await;
        let display_name = first(&users.display_name_attribute).unwrap_or_else(|| canonical.clone());
        Ok(Some(Person { name: canonical, dn: entry.dn.clone(), display_name, groups }))
    }
}

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

/// The values of `attr` (named without regard to case, as LDAP does).
fn attribute(entry: &SearchEntry, attr: &str) -> Vec<String> {
    entry.attrs.iter().find(|(k, _)| k.eq_ignore_ascii_case(attr)).map(|(_, v)| v.clone()).unwrap_or_default()
}

/// An LDAP error as said to a person: its result code and the server's text, nothing sent.
fn without_secrets(e: &ldap3::LdapError) -> String {
    match e {
        ldap3::LdapError::LdapResult { result } => format!("code {} {}", result.rc, result.text),
        other => other.to_string(),
    }
}

fn read_mapping(file: &Path) -> Result<(Option<SystemTime>, Mapping), String> {
    let modified = std::fs::metadata(file).and_then(|m| m.modified()).ok();
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let mapping: Mapping = serde_yaml::from_str(&text).map_err(|e| format!("{}: {e}", file.display()))?;
    mapping.check().map_err(|r| format!("{}: {}: {}", file.display(), r.field.unwrap_or_default(), r.reason))?;
    Ok((modified, mapping))
}

/// TLS towards the directory: its CA file, or the system's roots.
fn tls_config(ca_file: Option<&Path>) -> Result<Arc<rustls::ClientConfig>, String> {
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

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write");
        path
    }

    #[test]
    fn a_configuration_that_would_not_work_is_refused_naming_the_field() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let d = dir.path();
        write(d, "bind", "secret\n");
        write(d, "empty", "");
        write(d, "mapping.yaml", "admins: [lb-admins]\n");
        write(d, "bad-mapping.yaml", "projects: {Bad: [g]}\n");
        write(d, "ca.pem", "not a certificate");
        let base = "bindDn: cn=lbdesk\nbindPasswordFile: BIND\nmappingFile: MAP\n\
                    users: {base: 'ou=people', memberOfAttribute: memberOf}\n";
        let load = |extra: &str, bind: &str, map: &str| {
            let text = format!("{extra}\n{}", base.replace("BIND", bind).replace("MAP", map));
            let file = write(d, "directory.yaml", &text);
            Directory::load(&file).map(|_| ()).map_err(|e| e.split(": ").nth(1).unwrap_or_default().to_string())
        };
        let (bind, map) = (d.join("bind"), d.join("mapping.yaml"));
        let (bind, map) = (bind.to_str().expect("utf-8"), map.to_str().expect("utf-8"));
        assert_eq!(load("url: ldaps://dc.bank.example", bind, map), Ok(()));
        assert_eq!(load("url: ldap://dc.bank.example", bind, map), Err("url".into()));
        assert_eq!(load("url: ldap://dc.bank.example\nstartTls: true", bind, map), Ok(()));
        assert_eq!(load("url: ldaps://dc\nstartTls: true", bind, map), Err("startTls".into()));
        assert_eq!(load("url: http://dc", bind, map), Err("url".into()));
        assert_eq!(load("url: ldaps://dc\ntimeoutSeconds: 0", bind, map), Err("timeoutSeconds".into()));
        let empty = d.join("empty");
        assert_eq!(load("url: ldaps://dc", empty.to_str().expect("utf-8"), map), Err("bindPasswordFile".into()));
        let ca = d.join("ca.pem");
        let with_ca = format!("url: ldaps://dc\ncaFile: {}", ca.display());
        assert_eq!(load(&with_ca, bind, map), Err("caFile".into()));
        let bad_map = d.join("bad-mapping.yaml");
        assert_eq!(load("url: ldaps://dc", bind, bad_map.to_str().expect("utf-8")), Err("mappingFile".into()));
        let unknown = load("url: ldaps://dc\nbindPassword: secret", bind, map).err().unwrap_or_default();
        assert!(unknown.contains("bindPassword"), "{unknown}");
    }
}
