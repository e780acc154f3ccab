//! Reading the audit log: a filtered list, newest first, in pages of [`PAGE`] found by keyset
//! (the `(at, id)` of the last entry shown, never an OFFSET, so a deep page costs what the first
//! does); and the retention purge.

use super::super::db::Db;

/// Entries per page.
pub const PAGE: usize = 50;

/// Rows the purge deletes per statement: SQLite holds its write lock for one statement, so
/// sign-ins and saves wait for a batch, not for the whole backlog.
const PURGE_BATCH: u64 = 5_000;

/// Which projects' entries the reader may see.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Projects {
    /// Every entry, those of no project included (admins).
    All,
    /// The entries of these projects only (tenants; an entry of no project is never theirs).
    Only(Vec<String>),
}

/// What the reader asks for; each field set narrows the list (exact matches: these are
/// Kubernetes and account names, and an exact match is what an index serves).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    pub user: Option<String>,
    /// The object's name.
    pub name: Option<String>,
    pub kind: Option<String>,
    pub action: Option<String>,
    /// Entries at or after this time (unix microseconds).
    pub from: Option<i64>,
    /// Entries before this time (unix microseconds).
    pub to: Option<i64>,
}

/// Where a page starts: just after (older than) this entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cursor {
    pub at: i64,
    pub id: String,
}

impl std::fmt::Display for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.at, self.id)
    }
}

impl std::str::FromStr for Cursor {
    type Err = ();

    /// Reads what `Display` wrote; anything else (a cursor is client input) is refused.
    fn from_str(s: &str) -> Result<Cursor, ()> {
        let (at, id) = s.split_once('.').ok_or(())?;
        let at = at.parse().map_err(|_| ())?;
        let hex = id.len() == 32 && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if hex { Ok(Cursor { at, id: id.to_string() }) } else { Err(()) }
    }
}

/// One entry as stored (`before`/`after` are JSON text, empty when there is none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub id: String,
    /// Unix microseconds.
    pub at: i64,
    pub user: String,
    pub via: String,
    pub action: String,
    pub kind: String,
    pub name: String,
    /// Empty when the object belongs to no project.
    pub project: String,
    pub before: String,
    pub after: String,
}

impl Record {
    /// When, as RFC 3339 (UTC), for the browser to show in the user's time zone.
    pub fn at_rfc3339(&self) -> String {
        crate::ssr::rfc3339_of_micros(self.at)
    }
}

/// A page of entries, newest first, and where the next one starts (none on the last page).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Page {
    pub records: Vec<Record>,
    pub next: Option<Cursor>,
}

type Row = (String, i64, String, String, String, String, String, String, String, String);

const COLUMNS: &str = "id, at, username, via, action, kind, name, project, before, after";

/// A statement under construction with its arguments. NB: SQLite numbers `$n` parameters in
/// the order they first appear, so each is written once, in increasing order.
#[derive(Default)]
struct Statement {
    sql: String,
    args: Vec<Arg>,
}

enum Arg {
    Text(String),
    Int(i64),
}

impl Statement {
    /// Appends ` AND <column> <op> $n` binding `arg`.
    fn and(&mut self, column: &str, op: &str, arg: Arg) {
        self.args.push(arg);
        self.sql.push_str(&format!(" AND {column} {op} ${}", self.args.len()));
    }

    /// One `SELECT` of the newest entries matching `filter` (and `project`, when given) older
    /// than `after`: `PAGE + 1` rows, the extra one telling whether a next page exists.
    fn select(&mut self, filter: &Filter, project: Option<&str>, after: Option<&Cursor>) {
        self.sql.push_str(&format!("SELECT {COLUMNS} FROM audit WHERE 1 = 1"));
        let text = |v: &Option<String>| v.clone().map(Arg::Text);
        if let Some(p) = project {
            self.and("project", "=", Arg::Text(p.to_string()));
        }
        let exact =
            [("username", &filter.user), ("name", &filter.name), ("kind", &filter.kind), ("action", &filter.action)];
        for (column, value) in exact {
            if let Some(v) = text(value) {
                self.and(column, "=", v);
            }
        }
        if let Some(from) = filter.from {
            self.and("at", ">=", Arg::Int(from));
        }
        if let Some(to) = filter.to {
            self.and("at", "<", Arg::Int(to));
        }
        if let Some(c) = after {
            let n = self.args.len();
            self.args.extend([Arg::Int(c.at), Arg::Text(c.id.clone())]);
            self.sql.push_str(&format!(" AND (at, id) < (${}, ${})", n + 1, n + 2));
        }
        self.sql.push_str(&format!(" ORDER BY at DESC, id DESC LIMIT {}", PAGE + 1));
    }
}

impl Db {
    /// A page of the entries `projects` allows that match `filter`, newest first, starting after
    /// `after` (the first page when none).
    pub async fn audit_page(
        &self,
        projects: &Projects,
        filter: &Filter,
        after: Option<&Cursor>,
    ) -> Result<Page, sqlx::Error> {
        let mut st = Statement::default();
        match projects {
            Projects::All => st.select(filter, None, after),
            Projects::Only(list) if list.is_empty() => return Ok(Page::default()),
            // NB: one branch per project, each an index range read of at most PAGE + 1 rows, then
            // merged: `project IN (…)` would have the engine read and sort every entry of those
            // projects (or scan the whole log for a small project's few).
            Projects::Only(list) => {
                for (i, project) in list.iter().enumerate() {
                    if i > 0 {
                        st.sql.push_str(" UNION ALL ");
                    }
                    st.sql.push_str("SELECT * FROM (");
                    st.select(filter, Some(project), after);
                    st.sql.push_str(&format!(") AS p{i}"));
                }
                st.sql.push_str(&format!(" ORDER BY at DESC, id DESC LIMIT {}", PAGE + 1));
            }
        }
        let mut query = sqlx::query_as::<_, Row>(&st.sql);
        for arg in st.args {
            query = match arg {
                Arg::Text(s) => query.bind(s),
                Arg::Int(i) => query.bind(i),
            };
        }
        let rows = query.fetch_all(&self.pool).await?;
        let mut records: Vec<Record> = rows
            .into_iter()
            .map(|(id, at, user, via, action, kind, name, project, before, after)| Record {
                id,
                at,
                user,
                via,
                action,
                kind,
                name,
                project,
                before,
                after,
            })
            .collect();
        let next = if records.len() > PAGE {
            records.truncate(PAGE);
            records.last().map(|r| Cursor { at: r.at, id: r.id.clone() })
        } else {
            None
        };
        Ok(Page { records, next })
    }

    /// Deletes the entries older than `cutoff` (retention); returns how many.
    pub async fn purge_audit_before(&self, cutoff: time::OffsetDateTime) -> Result<u64, sqlx::Error> {
        let cutoff = super::micros(cutoff);
        let mut purged = 0;
        loop {
            let done =
                sqlx::query("DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE at < $1 ORDER BY at LIMIT $2)")
                    .bind(cutoff)
                    .bind(PURGE_BATCH as i64)
                    .execute(&self.pool)
                    .await?
                    .rows_affected();
            purged += done;
            if done < PURGE_BATCH {
                return Ok(purged);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Entry, Via};
    use super::*;
    use time::{Duration, OffsetDateTime};

    async fn db() -> Db {
        // NB: a named, shared in-memory database: every connection of the pool sees the same one.
        let url = format!("sqlite:file:lbdesk-audit-{:016x}?mode=memory&cache=shared", rand::random::<u64>());
        Db::connect(&url).await.expect("an in-memory database")
    }

    fn t0() -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(1_704_067_200).expect("2024-01-01")
    }

    fn entry(user: &str, action: &str, kind: &str, name: &str, project: &str) -> Entry {
        Entry {
            user: user.into(),
            via: Via::Page,
            action: action.into(),
            kind: kind.into(),
            name: name.into(),
            project: (!project.is_empty()).then(|| project.to_string()),
            before: None,
            after: Some(serde_json::json!({"spec": {"n": name}})),
            version: None,
        }
    }

    /// Every page from the first, in order.
    async fn all_pages(db: &Db, projects: &Projects, filter: &Filter) -> Vec<Record> {
        let (mut out, mut after) = (Vec::new(), None);
        loop {
            let page = db.audit_page(projects, filter, after.as_ref()).await.expect("a page");
            assert!(page.records.len() <= PAGE);
            out.extend(page.records);
            match page.next {
                Some(next) => after = Some(next),
                None => return out,
            }
        }
    }

    fn names(records: &[Record]) -> Vec<&str> {
        records.iter().map(|r| r.name.as_str()).collect()
    }

    #[tokio::test]
    async fn pages_run_newest_first_by_keyset_and_the_last_one_says_so() {
        let db = db().await;
        for i in 0..120 {
            db.audit_at(
                &entry("alice", "create", "Lbticket", &format!("t{i:03}"), "project-a"),
                t0() + Duration::seconds(i),
            )
            .await
            .expect("written");
        }
        // Three entries of the same microsecond: their ids order them, none is lost or repeated.
        for name in ["same-1", "same-2", "same-3"] {
            db.audit_at(&entry("alice", "update", "Lbticket", name, "project-a"), t0() + Duration::seconds(60))
                .await
                .expect("written");
        }
        let first = db.audit_page(&Projects::All, &Filter::default(), None).await.expect("a page");
        assert_eq!(first.records.len(), PAGE);
        assert_eq!(first.records[0].name, "t119");
        let second = db.audit_page(&Projects::All, &Filter::default(), first.next.as_ref()).await.expect("a page");
        assert_eq!(second.records.len(), PAGE);
        let every = all_pages(&db, &Projects::All, &Filter::default()).await;
        assert_eq!(every.len(), 123);
        assert!(every.windows(2).all(|w| (w[0].at, &w[0].id) > (w[1].at, &w[1].id)), "strictly newest first");
        let mut same: Vec<&str> = names(&every).into_iter().filter(|n| n.starts_with("same")).collect();
        same.sort();
        assert_eq!(same, ["same-1", "same-2", "same-3"]);
        let last = db.audit_page(&Projects::All, &Filter::default(), Some(&Cursor { at: 0, id: "0".repeat(32) })).await;
        assert_eq!(last.expect("a page"), Page::default(), "nothing is older than the epoch");
    }

    #[tokio::test]
    async fn each_filter_narrows_the_list_to_exact_matches() {
        let db = db().await;
        let rows = [
            ("alice", "create", "Lbticket", "web", "project-a", 0),
            ("alice", "disable", "Lbticket", "web", "project-a", 10),
            ("bob", "create", "Lbticket", "web-2", "project-b", 20),
            ("admin", "update", "Loadbalancer", "shared-lb", "", 30),
            ("alice", "create", "Lbrule", "web", "project-a", 40),
        ];
        for (user, action, kind, name, project, s) in rows {
            db.audit_at(&entry(user, action, kind, name, project), t0() + Duration::seconds(s)).await.expect("written");
        }
        let at = |s: i64| Some(super::super::micros(t0() + Duration::seconds(s)));
        let cases: Vec<(Filter, Vec<(&str, &str)>)> = vec![
            (
                Filter { user: Some("alice".into()), ..Default::default() },
                vec![("Lbrule", "create"), ("Lbticket", "disable"), ("Lbticket", "create")],
            ),
            (
                Filter { name: Some("web".into()), ..Default::default() },
                vec![("Lbrule", "create"), ("Lbticket", "disable"), ("Lbticket", "create")],
            ),
            (Filter { name: Some("we".into()), ..Default::default() }, vec![]),
            (Filter { kind: Some("Loadbalancer".into()), ..Default::default() }, vec![("Loadbalancer", "update")]),
            (
                Filter { action: Some("create".into()), ..Default::default() },
                vec![("Lbrule", "create"), ("Lbticket", "create"), ("Lbticket", "create")],
            ),
            (
                Filter { from: at(10), to: at(30), ..Default::default() },
                vec![("Lbticket", "create"), ("Lbticket", "disable")],
            ),
            (
                Filter {
                    user: Some("alice".into()),
                    kind: Some("Lbticket".into()),
                    action: Some("create".into()),
                    to: at(40),
                    ..Default::default()
                },
                vec![("Lbticket", "create")],
            ),
        ];
        for (filter, want) in cases {
            let got = all_pages(&db, &Projects::All, &filter).await;
            let got: Vec<(&str, &str)> = got.iter().map(|r| (r.kind.as_str(), r.action.as_str())).collect();
            assert_eq!(got, want, "{filter:?}");
        }
    }

    #[tokio::test]
    async fn a_tenant_sees_only_the_entries_of_their_projects_and_never_those_of_none() {
        let db = db().await;
        // 70 entries each in project-a and project-b, interleaved in time, and 5 of no project.
        for i in 0..140 {
            let project = if i % 2 == 0 { "project-a" } else { "project-b" };
            let e = entry("bob", "create", "Lbticket", &format!("{project}-{i:03}"), project);
            db.audit_at(&e, t0() + Duration::seconds(i)).await.expect("written");
        }
        for i in 0..5 {
            let e = entry("admin", "create", "Loadbalancer", &format!("lb-{i}"), "");
            db.audit_at(&e, t0() + Duration::seconds(1000 + i)).await.expect("written");
        }
        let only = |p: &[&str]| Projects::Only(p.iter().map(|s| s.to_string()).collect());
        let a = all_pages(&db, &only(&["project-a"]), &Filter::default()).await;
        assert_eq!(a.len(), 70);
        assert!(a.iter().all(|r| r.project == "project-a"), "{:?}", names(&a));
        let ab = all_pages(&db, &only(&["project-a", "project-b"]), &Filter::default()).await;
        assert_eq!(ab.len(), 140, "both projects, merged across pages");
        assert!(ab.windows(2).all(|w| (w[0].at, &w[0].id) > (w[1].at, &w[1].id)), "newest first across projects");
        assert!(ab.iter().all(|r| !r.project.is_empty()));
        let first = db.audit_page(&only(&["project-b", "project-a"]), &Filter::default(), None).await.expect("page");
        assert_eq!(first.records[0].name, "project-b-139");
        assert_eq!(db.audit_page(&only(&[]), &Filter::default(), None).await.expect("page"), Page::default());
        let other = Filter { name: Some("project-b-001".into()), ..Default::default() };
        assert!(all_pages(&db, &only(&["project-a"]), &other).await.is_empty(), "a filter cannot widen the projects");
        assert_eq!(all_pages(&db, &Projects::All, &Filter::default()).await.len(), 145);
    }

    #[tokio::test]
    async fn the_purge_deletes_what_is_older_than_the_cutoff_in_batches() {
        let db = db().await;
        let old = PURGE_BATCH as i64 + 7;
        for i in 0..old {
            let e = entry("admin", "update", "Lbticket", "old", "project-a");
            db.audit_at(&e, t0() + Duration::milliseconds(i)).await.expect("written");
        }
        for i in 0..3 {
            db.audit_at(&entry("admin", "update", "Lbticket", "new", "project-a"), t0() + Duration::days(1 + i))
                .await
                .expect("written");
        }
        let purged = db.purge_audit_before(t0() + Duration::days(1)).await.expect("purged");
        assert_eq!(purged, old as u64);
        let left = all_pages(&db, &Projects::All, &Filter::default()).await;
        assert_eq!(names(&left), ["new", "new", "new"]);
        assert_eq!(db.purge_audit_before(t0() + Duration::days(1)).await.expect("purged"), 0);
    }

    #[test]
    fn a_cursor_reads_back_what_it_wrote_and_nothing_else() {
        let c = Cursor { at: 1_704_067_200_000_001, id: "0123456789abcdef0123456789abcdef".into() };
        assert_eq!(c.to_string().parse::<Cursor>(), Ok(c));
        for bad in
            ["", "1", "x.0123456789abcdef0123456789abcdef", "1.0123", "1.0123456789ABCDEF0123456789abcdef", "1.'; --"]
        {
            assert!(bad.parse::<Cursor>().is_err(), "{bad}");
        }
    }
}
