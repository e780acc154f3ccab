//! The accounts' server side, on the guarded path: platform admins only, and ending sessions is
//! audited like any other change.

use super::UserRow;
use crate::domain::access::{Target, Verb};
use crate::error::AppError;
use crate::ssr::guard::{Written, caller_for};
use crate::ssr::{internal, now_micros, rfc3339_of_micros, state};

/// Longest user name accepted.
const LONGEST: usize = 253;

pub async fn list() -> Result<Vec<UserRow>, AppError> {
    caller_for(Verb::Read, Target::Accounts, "accounts").await?;
    let accounts = state()?.db.accounts().await.map_err(|e| internal("could not read the accounts", e))?;
    Ok(accounts
        .into_iter()
        .map(|(account, projects, since)| UserRow {
            username: account.username,
            display_name: account.display_name,
            role: account.role.label().to_string(),
            projects,
            sessions_ended: if since > 0 { rfc3339_of_micros(since) } else { String::new() },
        })
        .collect())
}

pub async fn end_sessions(username: &str) -> Result<(), AppError> {
    let caller = caller_for(Verb::Write, Target::Accounts, "accounts").await?;
    if username.is_empty() || username.len() > LONGEST {
        return Err(AppError::invalid("username", format!("Give a user name of 1 to {LONGEST} characters.")));
    }
    let db = &state()?.db;
    let known = db.account(username).await.map_err(|e| internal("could not read the accounts", e))?;
    if known.is_none() {
        return Err(AppError::invalid("username", "There is no such user."));
    }
    caller
        .write(|| async {
            db.end_sessions(username, now_micros()).await.map_err(|e| internal("could not end the sessions", e))?;
            Ok(Written::change("end sessions", "User", username, None))
        })
        .await
}
