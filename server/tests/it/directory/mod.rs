//! Signing in with a directory, against a real one: a throw-away OpenLDAP (`slapd`, started by
//! `server/tests/directory/start.sh` with its seeded tree) on loopback, with a TLS certificate
//! of a CA made for it, read as Active Directory is (`sAMAccountName`, `memberOf`, disabled
//! accounts by `userAccountControl`) and as OpenLDAP is (`uid`, groups searched).

mod refresh;
mod sign_in;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use app::domain::user::CurrentUser;
use reqwest::StatusCode;

use crate::helpers::{Backend, Lbdesk, Options, browser, spawn_lbdesk_with};

/// A running slapd with the seeded tree; stopped when dropped.
pub struct Slapd {
    pub dir: tempfile::TempDir,
    pub ldaps: u16,
    pub ldap: u16,
}

/// Two ports free now.
fn free_ports() -> (u16, u16) {
    let bind = || std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let (a, b) = (bind(), bind());
    (a.local_addr().expect("address").port(), b.local_addr().expect("address").port())
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/directory").join(name)
}

impl Slapd {
    /// Starts one (on other ports again when the ones found free were taken first).
    pub fn start() -> Slapd {
        let dir = tempfile::tempdir().expect("temporary directory");
        for _ in 0..5 {
            let (ldaps, ldap) = free_ports();
            let out = Command::new("sh")
                .arg(script("start.sh"))
                .arg(dir.path())
                .arg(ldaps.to_string())
                .arg(ldap.to_string())
                .output()
                .expect("sh runs");
            if out.status.success() {
                return Slapd { dir, ldaps, ldap };
            }
            eprintln!("slapd did not start: {}", String::from_utf8_lossy(&out.stderr));
        }
        panic!("slapd did not start (is Debian's slapd installed? `cargo xtask test` installs it)");
    }

    /// Changes the directory as its administrator would (`ldapmodify` with `ldif`).
    pub fn modify(&self, ldif: &str) {
        use std::io::Write;
        let socket = self.dir.path().join("ldapi").to_string_lossy().replace('/', "%2F");
        let mut child = Command::new("ldapmodify")
            .args(["-x", "-D", "cn=admin,dc=bank,dc=example", "-w", "admin-secret"])
            .arg("-H")
            .arg(format!("ldapi://{socket}"))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("ldapmodify runs");
        child.stdin.take().expect("stdin").write_all(ldif.as_bytes()).expect("write the change");
        assert!(child.wait().expect("ldapmodify ends").success(), "the directory takes the change:\n{ldif}");
    }

    /// Takes `member` (a user's DN under ou=people) out of the group `group`.
    pub fn remove_member(&self, group: &str, member: &str) {
        self.modify(&format!(
            "dn: cn={group},ou=groups,dc=bank,dc=example\nchangetype: modify\ndelete: member\n\
             member: {member},ou=people,dc=bank,dc=example\n"
        ));
    }

    /// Sends slapd `signal`.
    fn signal(&self, signal: &str) {
        let pid = std::fs::read_to_string(self.dir.path().join("slapd.pid")).unwrap_or_default();
        if let Ok(pid) = pid.trim().parse::<i32>() {
            let _ = Command::new("kill").arg(format!("-{signal}")).arg(pid.to_string()).status();
        }
    }

    /// Freezes it: connections are taken (by the kernel) and never answered.
    pub fn hang(&self) {
        self.signal("STOP");
    }

    /// Lets a frozen one go on.
    pub fn resume(&self) {
        self.signal("CONT");
    }

    /// Stops it now (frozen or not).
    pub fn stop(&self) {
        if self.dir.path().join("slapd.pid").exists() {
            self.signal("TERM");
            self.resume();
            // NB: gone once its pid file is.
            for _ in 0..100 {
                if !self.dir.path().join("slapd.pid").exists() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        }
    }
}

impl Drop for Slapd {
    fn drop(&mut self) {
        self.stop();
    }
}

/// How the directory is read: as Active Directory is, or as OpenLDAP is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    ActiveDirectory,
    OpenLdap,
}

/// lbdesk's configuration for `slapd` read in `style` (written by `start.sh`, its mapping
/// `mapping.yaml` beside it), with `extra` lines (e.g. `refreshSeconds: 1`): its path.
pub fn config(slapd: &Slapd, style: Style, extra: &str) -> PathBuf {
    let dir = slapd.dir.path();
    let base = match style {
        Style::ActiveDirectory => "active-directory.yaml",
        Style::OpenLdap => "openldap.yaml",
    };
    let text = std::fs::read_to_string(dir.join(base)).expect("start.sh wrote the configuration");
    let file = dir.join("directory.yaml");
    std::fs::write(&file, format!("{text}{extra}\n")).expect("write");
    file
}

/// lbdesk (demo data, on `backend`) signing users in with `slapd` read in `style`.
pub async fn lbdesk_with(backend: Backend, slapd: &Slapd, style: Style, extra: &str) -> Lbdesk {
    let options = Options { directory: Some(config(slapd, style, extra)), ..Default::default() };
    spawn_lbdesk_with(backend, options).await
}

/// lbdesk (demo data, on `backend`) with `slapd`'s configuration in `style` rewritten by `edit`
/// (a directory that cannot work as it is written).
pub async fn lbdesk_edited(backend: Backend, slapd: &Slapd, style: Style, edit: impl FnOnce(&str) -> String) -> Lbdesk {
    let file = config(slapd, style, "");
    let text = std::fs::read_to_string(&file).expect("read");
    std::fs::write(&file, edit(&text)).expect("write");
    spawn_lbdesk_with(backend, Options { directory: Some(file), ..Default::default() }).await
}

/// Signs in as `name` with `password`: the browser, and the answer.
pub async fn sign_in(lbdesk: &Lbdesk, name: &str, password: &str) -> (reqwest::Client, StatusCode, String) {
    let client = browser();
    let res = client
        .post(format!("{}/api/login", lbdesk.url))
        .form(&[("username", name), ("password", password)])
        .send()
        .await
        .expect("request");
    let status = res.status();
    (client, status, res.text().await.expect("body"))
}

/// Who `client` is signed in as, or the status it is refused with.
pub async fn me(lbdesk: &Lbdesk, client: &reqwest::Client) -> Result<CurrentUser, StatusCode> {
    let res = client.post(format!("{}/api/me", lbdesk.url)).json(&serde_json::json!({})).send().await.expect("request");
    if res.status().is_success() { Ok(res.json().await.expect("a user")) } else { Err(res.status()) }
}
