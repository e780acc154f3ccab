//! The demo's accounts and projects, seeded idempotently; with `--demo` in embedded mode, also
//! a load balancer both demo projects may use (`loadbalancer`).
//!
//! Without `--demo` the passwords are random, generated on first start, stored only as
//! argon2 hashes and printed once (again only by `lbdesk reset-demo-passwords`). With
//! `--demo` they are the fixed ones below, set on every start, for demos and tests.

pub mod loadbalancer;

use anyhow::Context;
use app::domain::user::Role;
use app::ssr::accounts::{Account, hash_password, hash_published_password};
use app::ssr::db::Db;

use crate::config::StoreArgs;

/// A demo user and the projects it belongs to.
pub struct DemoUser {
    pub username: &'static str,
    pub display_name: &'static str,
    pub role: Role,
    pub projects: &'static [&'static str],
    /// The password with `--demo`.
    pub demo_password: &'static str,
}

pub const USERS: [DemoUser; 3] = [
    DemoUser {
        username: "admin",
        display_name: "Platform Admin",
        role: Role::Admin,
        projects: &[],
        demo_password: "admin-demo",
    },
    DemoUser {
        username: "alice",
        display_name: "Alice Tenant",
        role: Role::Tenant,
        projects: &["project-a"],
        demo_password: "alice-demo",
    },
    DemoUser {
        username: "bob",
        display_name: "Bob Tenant",
        role: Role::Tenant,
        projects: &["project-b"],
        demo_password: "bob-demo",
    },
];

/// Projects and their (cluster, namespace) pairs.
pub const PROJECTS: [(&str, &[(&str, &str)]); 2] = [
    ("project-a", &[("acp-region01", "default"), ("acp-region01", "team-a")]),
    ("project-b", &[("acp-region01", "team-b"), ("acp-region02", "team-b")]),
];

const SEEDED: &str = "demo_seeded";

/// The login lines to print: (user, password if known, role and projects).
pub type Logins = Vec<(String, Option<String>, String)>;

fn now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// Seeds projects and users; returns the logins to print (passwords only when just set).
pub async fn seed(db: &Db, fixed_passwords: bool) -> anyhow::Result<Logins> {
    for (project, namespaces) in PROJECTS {
        db.upsert_project(project, project).await?;
        for (cluster, namespace) in namespaces {
            db.assign_namespace(project, cluster, namespace).await?;
        }
    }
    let first_start = db.setting(SEEDED).await?.is_none();
    let mut logins = Vec::new();
    for user in &USERS {
        let password = if fixed_passwords {
            Some(user.demo_password.to_string())
        } else if first_start || db.account(user.username).await?.is_none() {
            Some(random_password())
        } else {
            None
        };
        if let Some(password) = &password {
            set_user(db, user, password, fixed_passwords).await?;
        }
        logins.push((user.username.to_string(), password, describe(user)));
    }
    db.set_setting(SEEDED, "true").await?;
    Ok(logins)
}

async fn set_user(db: &Db, user: &DemoUser, password: &str, fixed: bool) -> anyhow::Result<()> {
    let account = Account { username: user.username.into(), display_name: user.display_name.into(), role: user.role };
    let hash = if fixed { hash_published_password(password) } else { hash_password(password) }
        .map_err(|e| anyhow::anyhow!("could not hash a password: {e}"))?;
    db.upsert_user(&account, &hash, now()).await?;
    for project in user.projects {
        db.add_member(project, user.username).await?;
    }
    Ok(())
}

fn describe(user: &DemoUser) -> String {
    if user.projects.is_empty() {
        user.role.label().to_string()
    } else {
        format!("{}, {}", user.role.label(), user.projects.join(", "))
    }
}

fn random_password() -> String {
    use rand::distr::{Alphanumeric, SampleString};
    Alphanumeric.sample_string(&mut rand::rng(), 16)
}

/// `lbdesk reset-demo-passwords`: new random passwords for the demo users, printed once.
pub async fn reset_passwords(store: &StoreArgs) -> anyhow::Result<()> {
    let db = Db::connect(&store.database_url()?).await.context("could not open the database")?;
    let mut logins = Vec::new();
    for user in &USERS {
        let password = random_password();
        set_user(&db, user, &password, false).await?;
        // NB: a reset ends every session begun before it (a stolen cookie dies with the password).
        db.end_sessions(user.username, app::ssr::now_micros()).await?;
        logins.push((user.username.to_string(), Some(password), describe(user)));
    }
    print_logins(&logins);
    Ok(())
}

/// Prints the demo logins to standard output.
pub fn print_logins(logins: &Logins) {
    println!("  Logins:");
    for (user, password, what) in logins {
        match password {
            Some(p) => println!("    {user:<8} {p:<18} ({what})"),
            None => println!("    {user:<8} {:<18} ({what})", "(set earlier)"),
        }
    }
    if logins.iter().any(|(_, p, _)| p.is_none()) {
        println!("  Forgotten a password? `lbdesk reset-demo-passwords` sets and prints new ones.");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_demo_project_of_a_user_exists() {
        for user in &USERS {
            for project in user.projects {
                assert!(PROJECTS.iter().any(|(p, _)| p == project), "{project} of {}", user.username);
            }
        }
    }
}
