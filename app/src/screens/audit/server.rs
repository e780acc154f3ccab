//! The audit log's server side, on the guarded path: the caller sees every entry if they may
//! read all projects (admins), else the entries of the projects they may read (an entry of no
//! project is never a tenant's).

use serde_json::Value;

use super::{AuditPage, AuditQuery, AuditRow};
use crate::domain::access::{Target, Verb};
use crate::error::AppError;
use crate::i18n::t;
use crate::ssr::audit::{Cursor, Filter, Projects, Record, micros};
use crate::ssr::db_error;
use crate::ssr::guard::caller;

/// Longest filter value accepted: the longest Kubernetes name.
const LONGEST: usize = 253;

/// A page of the entries the caller may see that match `q`.
pub async fn list(q: AuditQuery) -> Result<AuditPage, AppError> {
    let caller = caller().await?;
    caller.may(Verb::Read, Target::Desk, "audit log")?;
    let projects = if caller.may(Verb::Read, Target::AllProjects, "audit log").is_ok() {
        Projects::All
    } else {
        let mine = caller.user.projects.iter().filter(|p| caller.may(Verb::Read, Target::Project(p), "").is_ok());
        Projects::Only(mine.cloned().collect())
    };
    let (filter, cursor) = parse(&q)?;
    let page = crate::ssr::state()?
        .db
        .audit_page(&projects, &filter, cursor.as_ref())
        .await
        .map_err(|e| db_error("could not read the audit log", e))?;
    Ok(AuditPage { rows: page.records.into_iter().map(row).collect(), next: page.next.map(|c| c.to_string()) })
}

/// The query as the database reads it, or the field that is wrong.
fn parse(q: &AuditQuery) -> Result<(Filter, Option<Cursor>), AppError> {
    let text = |field: &str, v: &str| {
        let v = v.trim();
        if v.len() > LONGEST {
            Err(AppError::invalid(field, crate::tf!("audit.filter.too_long", longest = LONGEST)))
        } else {
            Ok((!v.is_empty()).then(|| v.to_string()))
        }
    };
    let from = day("from", &q.from)?;
    let to = day("to", &q.to)?;
    if let (Some(first), Some(last)) = (from, to)
        && last < first
    {
        return Err(AppError::invalid("to", t("audit.filter.to_before_from")));
    }
    let midnight = |d: time::Date| micros(d.midnight().assume_utc());
    let filter = Filter {
        user: text("user", &q.user)?,
        name: text("object", &q.object)?,
        kind: text("kind", &q.kind)?,
        action: text("action", &q.action)?,
        from: from.map(midnight),
        // NB: the last day is included: entries before the next midnight.
        to: to.map(|d| d.next_day().map_or(i64::MAX, midnight)),
    };
    let cursor = match q.cursor.as_str() {
        "" => None,
        c => Some(c.parse().map_err(|()| AppError::invalid("cursor", t("audit.filter.bad_cursor")))?),
    };
    Ok((filter, cursor))
}

/// A day written `YYYY-MM-DD` (what a date input sends), or none when empty.
fn day(field: &str, s: &str) -> Result<Option<time::Date>, AppError> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(None);
    }
    let bad = || AppError::invalid(field, t("audit.filter.bad_day"));
    let mut parts = s.splitn(3, '-').map(|p| p.parse::<u16>().ok());
    let (Some(Some(y)), Some(Some(m)), Some(Some(d))) = (parts.next(), parts.next(), parts.next()) else {
        return Err(bad());
    };
    let month = u8::try_from(m).ok().and_then(|m| time::Month::try_from(m).ok()).ok_or_else(bad)?;
    let d = u8::try_from(d).map_err(|_| bad())?;
    time::Date::from_calendar_date(i32::from(y), month, d).map(Some).map_err(|_| bad())
}

fn row(r: Record) -> AuditRow {
    AuditRow {
        at: r.at_rfc3339(),
        user: r.user,
        via: r.via,
        action: r.action,
        kind: r.kind,
        name: r.name,
        project: r.project,
        before: pretty(r.before),
        after: pretty(r.after),
    }
}

/// Stored JSON, indented for reading (as stored when it does not parse).
fn pretty(json: String) -> String {
    match serde_json::from_str::<Value>(&json) {
        Ok(v) => serde_json::to_string_pretty(&v).unwrap_or(json),
        Err(_) => json,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(from: &str, to: &str) -> AuditQuery {
        AuditQuery { from: from.into(), to: to.into(), ..Default::default() }
    }

    #[test]
    fn days_bound_the_list_in_utc_the_last_one_included() {
        let (f, _) = parse(&query("2024-01-01", "2024-01-01")).expect("valid");
        assert_eq!(f.from, Some(1_704_067_200_000_000));
        assert_eq!(f.to, Some(1_704_153_600_000_000));
    }

    #[test]
    fn a_wrong_field_is_named() {
        let field = |q: AuditQuery| match parse(&q) {
            Err(AppError::Invalid { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        assert_eq!(field(query("2024-13-01", "")), "from");
        assert_eq!(field(query("", "yesterday")), "to");
        assert_eq!(field(query("2024-02-02", "2024-02-01")), "to");
        assert_eq!(field(AuditQuery { user: "x".repeat(254), ..Default::default() }), "user");
        assert_eq!(field(AuditQuery { cursor: "12.zz".into(), ..Default::default() }), "cursor");
    }

    #[test]
    fn blank_fields_do_not_filter() {
        let (f, c) = parse(&AuditQuery { user: "  ".into(), ..Default::default() }).expect("valid");
        assert_eq!((f, c), (Filter::default(), None));
    }
}
