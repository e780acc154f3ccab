//! Signing in with the bank's directory (Active Directory or OpenLDAP, over LDAPS or StartTLS):
//! lbdesk binds with its service account, finds the user by the name typed (escaped per
//! RFC 4515), reads their groups, binds as them with the password typed, and maps the groups
//! to a role and projects (`domain::directory`). Read-only: lbdesk never writes the directory.
//! How it is configured is in `config`, the search filters in `filter`.

mod config;
mod filter;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use ldap3::{LdapConnAsync, LdapConnSettings, Scope, SearchEntry, SearchOptions};

pub use config::{DirectoryConfig, GroupSearch, UserSearch};
pub use filter::{group_filter, user_filter};

use crate::domain::directory::{Grants, Group, Mapping};
use config::tls_config;

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

    /// Tries to reach the directory with the service account, in the background unless a try
    /// is under way already; [`Directory::last_failure`] says how it went.
    pub fn probe_soon(self: &Arc<Self>) {
        use std::sync::atomic::Ordering;
        if self.probing.swap(true, Ordering::AcqRel) {
            return;
        }
        let directory = self.clone();
        tokio::spawn(async move {
            if let Ok(mut ldap) = directory.noted(directory.connect()).await {
                let _ = ldap.unbind().await;
            }
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

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

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
