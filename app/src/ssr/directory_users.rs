//! Directory users in lbdesk's own tables, so that the navigation, `authorize` and the audit log
//! see them as they see a local account: recorded with what their groups grant at sign-in, and
//! read again from the directory while they stay signed in.

use std::sync::Arc;

use super::accounts::{Account, SessionFacts};
use super::db::Db;
use super::directory::{Directory, Person};

/// Why a directory user who gave the right password is not let in.
#[derive(Debug, PartialEq, Eq)]
pub enum NotAdmitted {
    /// None of their groups is in the mapping.
    NoGroup,
    /// Their name is a local account's, which the directory cannot take over.
    LocalName,
}

/// Records `person` with what the mapping grants them now (`at`, unix microseconds).
pub async fn admit(
    db: &Db,
    directory: &Directory,
    person: &Person,
    at: i64,
) -> Result<Result<Account, NotAdmitted>, sqlx::Error> {
    let Some(grants) = directory.grants(person) else { return Ok(Err(NotAdmitted::NoGroup)) };
    let account =
        Account { username: person.name.clone(), display_name: person.display_name.clone(), role: grants.role };
    if db.sync_directory_user(&account, &grants.projects, at).await? {
        Ok(Ok(account))
    } else {
        Ok(Err(NotAdmitted::LocalName))
    }
}

/// How many refresh periods a directory user keeps what they were granted while the directory
/// cannot be reached; past that, their sessions no longer sign them in until it answers again.
const GRACE_PERIODS: i64 = 3;

/// Whether `username` (signed in; `facts` of their account) may go on: a local account may; a
/// directory account's groups are read again once its refresh period has passed: a user the
/// directory no longer has, has disabled, or no longer puts in a mapped group loses every
/// project and session now.
pub async fn still_granted(
    db: &Db,
    directory: Option<&Arc<Directory>>,
    username: &str,
    facts: &SessionFacts,
    now: i64,
) -> bool {
    if !facts.directory {
        return true;
    }
    let synced = facts.synced_at;
    // NB: with the directory configured away, its accounts sign no one in.
    let Some(directory) = directory else { return false };
    let period = i64::try_from(directory.refresh().as_micros()).unwrap_or(i64::MAX);
    if now.saturating_sub(synced) < period {
        return true;
    }
    let in_grace = now.saturating_sub(synced) < period.saturating_mul(GRACE_PERIODS);
    // NB: while the directory is known to be down, no request waits for its timeout: a probe in
    // the background finds when it is back.
    if directory.last_failure().is_some() {
        directory.probe_soon();
        return in_grace;
    }
    let admitted = match directory.lookup(username).await {
        Ok(Some(person)) if person.name == username => admit(db, directory, &person, now).await,
        Ok(_) => Ok(Err(NotAdmitted::NoGroup)),
        Err(_) => return in_grace,
    };
    match admitted {
        Ok(Ok(_)) => true,
        Ok(Err(_)) => {
            tracing::info!(user = %username, "the directory no longer grants this user anything; sessions ended");
            if let Err(e) = db.revoke_directory_user(username, now).await {
                tracing::error!(error = %e, user = %username, "could not revoke a directory user");
            }
            false
        }
        Err(e) => {
            tracing::warn!(error = %e, "could not record the directory user; the session stands");
            true
        }
    }
}
