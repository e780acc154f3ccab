//! How long the audit log keeps its entries (`--audit-retention-days`): older ones are purged
//! at start and then hourly.

use std::time::Duration;

use app::ssr::db::Db;

/// Purges the audit entries older than `days` (0 keeps every entry) at once and then hourly,
/// until `stop` resolves (or its sender is dropped); a purge under way finishes first.
pub async fn keep_audit(db: Db, days: u64, mut stop: tokio::sync::oneshot::Receiver<()>) {
    if days == 0 {
        return;
    }
    let mut every_hour = tokio::time::interval(Duration::from_secs(3600));
    loop {
        tokio::select! {
            _ = &mut stop => return,
            _ = every_hour.tick() => match purge_audit(&db, days).await {
                Ok(0) => {}
                Ok(purged) => tracing::info!(purged, days, "purged old audit entries"),
                Err(e) => tracing::warn!(error = %e, "could not purge old audit entries"),
            },
        }
    }
}

/// Deletes the audit entries older than `days` days (0 keeps every entry); returns how many.
pub async fn purge_audit(db: &Db, days: u64) -> Result<u64, sqlx::Error> {
    if days == 0 {
        return Ok(0);
    }
    // NB: a retention longer than the calendar (a typo of many digits) purges nothing.
    let days = time::Duration::days(i64::try_from(days).unwrap_or(i64::MAX).min(1_000_000));
    match time::OffsetDateTime::now_utc().checked_sub(days) {
        Some(cutoff) => db.purge_audit_before(cutoff).await,
        None => Ok(0),
    }
}
