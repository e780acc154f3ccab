//! Storage faults: what a failed database call means for the one who asked (a full disk, a
//! database out of reach), and whether the store takes writes now, for `/readyz`.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What kind of storage fault an error is; its `cause` is said to the user in their words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// No room left: the disk (or the database's quota) is full. HTTP 507.
    Full,
    /// The database cannot take the write now: unreachable, restarting, busy past its wait,
    /// or failing to write its files. HTTP 503.
    Unavailable(Cause),
}

/// Why the database is unavailable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// Not reachable: the connection was lost or refused, or no connection was free in time.
    Unreachable,
    /// Another writer held the database past the busy timeout.
    Busy,
    /// The database could not read or write its files.
    Io,
    /// The database refuses writes (read-only, shutting down, recovering).
    ReadOnly,
}

impl Fault {
    /// The HTTP status this fault is answered with.
    pub fn status(self) -> u16 {
        match self {
            Fault::Full => 507,
            Fault::Unavailable(_) => 503,
        }
    }

    /// What the fault is, in English (logs, the API's Status, kubectl).
    pub fn cause(self) -> &'static str {
        match self {
            Fault::Full => "the database's disk is full",
            Fault::Unavailable(Cause::Unreachable) => "the database is not reachable",
            Fault::Unavailable(Cause::Busy) => "the database is busy",
            Fault::Unavailable(Cause::Io) => "the database could not write to its disk",
            Fault::Unavailable(Cause::ReadOnly) => "the database does not take writes now",
        }
    }

    /// The key of the reader's words for the cause (`errors.store.*`).
    pub fn key(self) -> &'static str {
        match self {
            Fault::Full => "errors.store.full",
            Fault::Unavailable(Cause::Unreachable) => "errors.store.unreachable",
            Fault::Unavailable(Cause::Busy) => "errors.store.busy",
            Fault::Unavailable(Cause::Io) => "errors.store.io",
            Fault::Unavailable(Cause::ReadOnly) => "errors.store.read_only",
        }
    }

    /// The fault a Kubernetes API answer names (`the embedded API answers 507 or 503 with the
    /// cause as its message`), for a page that wrote through it.
    pub fn of_status(code: u16, message: &str) -> Option<Fault> {
        let all = [
            Fault::Full,
            Fault::Unavailable(Cause::Unreachable),
            Fault::Unavailable(Cause::Busy),
            Fault::Unavailable(Cause::Io),
            Fault::Unavailable(Cause::ReadOnly),
        ];
        match code {
            507 => Some(Fault::Full),
            503 => Some(
                all.into_iter().find(|f| message.contains(f.cause())).unwrap_or(Fault::Unavailable(Cause::Unreachable)),
            ),
            _ => None,
        }
    }
}

/// The storage fault an error is, if it is one (a constraint or a bad statement is not).
///
/// SQLite's result codes (`SQLITE_FULL` 13, `SQLITE_BUSY` 5, `SQLITE_LOCKED` 6, `SQLITE_IOERR`
/// 10 and its extended codes, `SQLITE_READONLY` 8, `SQLITE_CANTOPEN` 14) and PostgreSQL's
/// SQLSTATE classes (53 insufficient resources, 53100 disk full; 08 connection exceptions;
/// 57P0x shut down or starting; 25006 read-only transaction) say which.
pub fn fault(e: &sqlx::Error) -> Option<Fault> {
    match e {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed
        | sqlx::Error::Protocol(_) => Some(Fault::Unavailable(Cause::Unreachable)),
        sqlx::Error::Database(db) => {
            let code = db.code()?;
            // NB: a SQLSTATE has five characters; SQLite's codes, extended ones included, four
            // digits at most.
            let fault = match code.as_ref() {
                "53100" => Fault::Full,
                c if c.starts_with("53") || c.starts_with("08") => Fault::Unavailable(Cause::Unreachable),
                c if c.starts_with("57P") => Fault::Unavailable(Cause::Unreachable),
                "25006" => Fault::Unavailable(Cause::ReadOnly),
                c if c.len() == 5 => return None,
                c => match c.parse::<i64>().ok()? & 0xff {
                    13 => Fault::Full,
                    5 | 6 => Fault::Unavailable(Cause::Busy),
                    10 | 14 => Fault::Unavailable(Cause::Io),
                    8 => Fault::Unavailable(Cause::ReadOnly),
                    _ => return None,
                },
            };
            Some(fault)
        }
        _ => None,
    }
}

/// How long a failed write keeps the store unready when nothing has written since: the probe
/// alone could pass on a nearly full disk (a row fits where an object does not).
const FAILED_WRITE_COUNTS: Duration = Duration::from_secs(5);

/// The outcome of the latest writes, for `/readyz`.
#[derive(Debug, Default)]
pub struct Health {
    failed: Mutex<Option<(Instant, Fault)>>,
}

impl Health {
    /// Records what a write came to.
    pub fn record<T>(&self, result: &Result<T, sqlx::Error>) {
        let Ok(mut failed) = self.failed.lock() else { return };
        match result {
            Ok(_) => *failed = None,
            Err(e) => {
                if let Some(f) = fault(e) {
                    *failed = Some((Instant::now(), f));
                }
            }
        }
    }

    /// The fault of a write that failed lately, with nothing written since.
    pub fn recent_fault(&self) -> Option<Fault> {
        let failed = self.failed.lock().ok()?;
        failed.filter(|(at, _)| at.elapsed() < FAILED_WRITE_COUNTS).map(|(_, f)| f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_answers_name_their_fault() {
        assert_eq!(Fault::of_status(507, "anything"), Some(Fault::Full));
        let busy = Fault::Unavailable(Cause::Busy);
        assert_eq!(Fault::of_status(503, &format!("cannot store: {}", busy.cause())), Some(busy));
        assert_eq!(Fault::of_status(503, "overloaded"), Some(Fault::Unavailable(Cause::Unreachable)));
        assert_eq!(Fault::of_status(500, "the database's disk is full"), None);
    }

    #[test]
    fn lost_connections_are_faults_and_a_success_clears_one() {
        let lost = sqlx::Error::Io(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        assert_eq!(fault(&lost), Some(Fault::Unavailable(Cause::Unreachable)));
        assert_eq!(fault(&sqlx::Error::RowNotFound), None);
        let health = Health::default();
        health.record::<()>(&Err(lost));
        assert_eq!(health.recent_fault(), Some(Fault::Unavailable(Cause::Unreachable)));
        health.record(&Ok(()));
        assert_eq!(health.recent_fault(), None);
    }
}
