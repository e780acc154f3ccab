//! Signing in with a directory, against a real one: OpenLDAP (`slapd`, started by
//! `server/tests/directory/start.sh` with its seeded tree) on loopback, with a TLS certificate
//! of a CA made for it, read as Active Directory is (`sAMAccountName`, `memberOf`, disabled
//! accounts by `userAccountControl`) and as OpenLDAP is (`uid`, groups searched).
//!
//! One directory serves the whole test binary ([`shared`]); a test that changes it adds users and
//! groups of its own. Its modules are named after the lbdesk they share (how it reads the
//! directory); the tests of a directory that goes down or hangs each have one of their own
//! ([`outage`]), and so an lbdesk of their own. Every directory server stops when the test binary
//! ends, however it ends.

mod active_directory;
mod local_off;
mod openldap;
mod outage;
mod start_tls;
mod untrusted;

use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

use app::domain::user::{CurrentUser, Role};
use app::error::AppError;
use reqwest::StatusCode;

use crate::helpers::{Options, browser, english};

/// A running slapd with the seeded tree, stopped when dropped or when the test binary ends.
pub struct Slapd {
    pub dir: PathBuf,
    pub ldaps: u16,
    pub ldap: u16,
    /// The shell that stops slapd and removes its folder once its input ends: the input is this
    /// process's, and ends with it (killed or not). NB: slapd runs as a daemon, which the test
    /// binary's end alone would leave running.
    _watcher: Child,
    _temp: Option<tempfile::TempDir>,
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

/// Runs `start.sh` (`$0`, with its arguments: the folder first), says `started`, then waits for
/// its input to end, stops slapd (going on first, if it was frozen) and removes the folder. A
/// slapd that started when the rest did not is stopped at once.
const WATCH: &str = r#"stop() {
    pid=$(cat "$1/slapd.pid" 2>/dev/null) && kill -TERM "$pid" && kill -CONT "$pid"
    for _ in $(seq 1 50); do [ -e "$1/slapd.pid" ] || return 0; sleep 0.1; done
}
sh "$0" "$@" || { stop "$1"; exit 1; }
echo started
read -r _
stop "$1"
rm -rf "$1""#;

/// The directory every test that leaves it running shares: started by the first that asks.
pub fn shared() -> &'static Slapd {
    static SHARED: OnceLock<Slapd> = OnceLock::new();
    SHARED.get_or_init(|| {
        // NB: a folder of /tmp, as a test's own are: the path of slapd's socket in it must fit in
        // 108 bytes, which one beside a checkout's target directory may not.
        let dir = tempfile::Builder::new().prefix("lbdesk-test-ldap-").tempdir().expect("temporary directory");
        Slapd::start_in(dir.keep(), None)
    })
}

impl Slapd {
    /// One of the test's own, to stop or freeze.
    pub fn start() -> Slapd {
        let temp = tempfile::tempdir().expect("temporary directory");
        Slapd::start_in(temp.path().to_path_buf(), Some(temp))
    }

    /// Starts one in `dir` (on other ports again when the ones found free were taken first).
    fn start_in(dir: PathBuf, temp: Option<tempfile::TempDir>) -> Slapd {
        for _ in 0..5 {
            let (ldaps, ldap) = free_ports();
            let mut watcher = Command::new("sh")
                .args(["-c", WATCH])
                .arg(script("start.sh"))
                .arg(&dir)
                .arg(ldaps.to_string())
                .arg(ldap.to_string())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("sh runs");
            let mut said = String::new();
            let stdout = watcher.stdout.take().expect("stdout");
            let _ = std::io::BufReader::new(stdout).read_line(&mut said);
            if said.trim() == "started" {
                return Slapd { dir, ldaps, ldap, _watcher: watcher, _temp: temp };
            }
            let mut why = String::new();
            let _ = watcher.stderr.take().expect("stderr").read_to_string(&mut why);
            let _ = watcher.wait();
            eprintln!("slapd did not start: {why}");
        }
        panic!("slapd did not start (is Debian's slapd installed? `cargo xtask test` installs it)");
    }

    /// Changes the directory as its administrator would (`ldapmodify` with `ldif`).
    pub fn modify(&self, ldif: &str) {
        use std::io::Write;
        let socket = self.dir.join("ldapi").to_string_lossy().replace('/', "%2F");
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

    /// Adds the user `name` (password `<name>-directory`, enabled), a member of `groups`.
    pub fn add_user(&self, name: &str, groups: &[&str]) {
        let mut ldif = format!(
            "dn: uid={name},ou=people,dc=bank,dc=example\nchangetype: add\nobjectClass: inetOrgPerson\n\
             objectClass: adAccount\ncn: {name}\nsn: {name}\nuid: {name}\nsAMAccountName: {name}\n\
             userPassword: {name}-directory\nuserAccountControl: 512\n"
        );
        for group in groups {
            ldif.push_str(&format!(
                "\ndn: cn={group},ou=groups,dc=bank,dc=example\nchangetype: modify\nadd: member\n\
                 member: uid={name},ou=people,dc=bank,dc=example\n"
            ));
        }
        self.modify(&ldif);
    }

    /// Adds the group `name` (groupOfNames) with the user `member` in it.
    pub fn add_group(&self, name: &str, member: &str) {
        self.modify(&format!(
            "dn: cn={name},ou=groups,dc=bank,dc=example\nchangetype: add\nobjectClass: groupOfNames\n\
             cn: {name}\nmember: uid={member},ou=people,dc=bank,dc=example\n"
        ));
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
        let pid = std::fs::read_to_string(self.dir.join("slapd.pid")).unwrap_or_default();
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
        if self.dir.join("slapd.pid").exists() {
            self.signal("TERM");
            self.resume();
            // NB: gone once its pid file is.
            for _ in 0..100 {
                if !self.dir.join("slapd.pid").exists() {
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

/// The directory's local `bob` (in team-a-dev), whose name is a local account's too: added once.
pub fn directory_bob() {
    static ADDED: OnceLock<()> = OnceLock::new();
    ADDED.get_or_init(|| shared().add_user("bob", &["team-a-dev"]));
}

/// How the directory is read: as Active Directory is, or as OpenLDAP is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    ActiveDirectory,
    OpenLdap,
}

/// lbdesk's configuration for `slapd` read in `style` (written by `start.sh`, its mapping
/// `mapping.yaml` beside it), rewritten by `edit`, in the folder `into`: its path.
pub fn config(slapd: &Slapd, style: Style, into: &Path, edit: impl FnOnce(String) -> String) -> PathBuf {
    let base = match style {
        Style::ActiveDirectory => "active-directory.yaml",
        Style::OpenLdap => "openldap.yaml",
    };
    let text = std::fs::read_to_string(slapd.dir.join(base)).expect("start.sh wrote the configuration");
    let file = into.join("directory.yaml");
    std::fs::write(&file, edit(text)).expect("write");
    file
}

/// The options of a module's lbdesk reading the shared directory in `style`, its configuration
/// rewritten by `edit`, in the module's folder `name`.
pub fn shared_options(name: &str, style: Style, edit: impl FnOnce(String) -> String) -> Options {
    let file = config(shared(), style, &crate::shared::files(name), edit);
    Options { directory: Some(file), ..Default::default() }
}

/// Signs in as `name` with `password`: the browser, and the answer.
pub async fn sign_in(
    lbdesk: &crate::helpers::Lbdesk,
    name: &str,
    password: &str,
) -> (reqwest::Client, StatusCode, String) {
    let client = browser();
    let (status, body) = sign_in_with(&client, lbdesk, name, password).await;
    (client, status, body)
}

/// The same in `client`.
pub async fn sign_in_with(
    client: &reqwest::Client,
    lbdesk: &crate::helpers::Lbdesk,
    name: &str,
    password: &str,
) -> (StatusCode, String) {
    let res = crate::web::login(client, lbdesk, name, password).await;
    let status = res.status();
    (status, res.text().await.expect("body"))
}

/// Who `client` is signed in as, or the status it is refused with.
pub async fn me(lbdesk: &crate::helpers::Lbdesk, client: &reqwest::Client) -> Result<CurrentUser, StatusCode> {
    let res = crate::web::me(client, lbdesk).await;
    if res.status().is_success() { Ok(res.json().await.expect("a user")) } else { Err(res.status()) }
}

/// Signs `name` in and returns their role and projects.
pub async fn granted(lbdesk: &crate::helpers::Lbdesk, name: &str, password: &str) -> (String, Role, Vec<String>) {
    let client = signed_in(lbdesk, name, password).await;
    let user = me(lbdesk, &client).await.unwrap_or_else(|s| panic!("{name} is signed in: {s}"));
    (user.username, user.role, user.projects)
}

/// Signs `name` in (they must be let in) and returns the browser.
pub async fn signed_in(lbdesk: &crate::helpers::Lbdesk, name: &str, password: &str) -> reqwest::Client {
    let (client, status, body) = sign_in(lbdesk, name, password).await;
    assert!(status.is_success() || status.is_redirection(), "{name} signs in: {status} {body}");
    client
}

/// Refused, and with what.
pub async fn refused(lbdesk: &crate::helpers::Lbdesk, name: &str, password: &str) -> AppError {
    let (client, status, body) = sign_in(lbdesk, name, password).await;
    assert!(!status.is_success() && !status.is_redirection(), "{name:?} is refused: {status} {body}");
    assert_eq!(me(lbdesk, &client).await, Err(StatusCode::UNAUTHORIZED), "{name:?} is not signed in");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

/// The one refusal of a wrong name or password.
pub fn wrong() -> AppError {
    AppError::invalid("password", english("common.login.wrong"))
}

/// The projects `client` works in, or the status it is refused with.
pub async fn projects(lbdesk: &crate::helpers::Lbdesk, client: &reqwest::Client) -> Result<Vec<String>, StatusCode> {
    me(lbdesk, client).await.map(|u| u.projects)
}

/// What the sign-in page says about signing in: how, and whether the directory is down.
pub async fn notes(lbdesk: &crate::helpers::Lbdesk) -> Notes {
    let page = reqwest::get(format!("{}/login", lbdesk.url)).await.expect("request").text().await.expect("page");
    let said = |id: &str| {
        let after = &page[page.find(&format!("data-testid=\"{id}\""))?..];
        let text = &after[after.find('>')? + 1..];
        text.split('<').next().map(String::from)
    };
    Notes { how: said("sign-in-how"), down: said("directory-down") }
}

pub struct Notes {
    pub how: Option<String>,
    pub down: Option<String>,
}
