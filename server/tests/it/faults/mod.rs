//! The fault suite: lbdesk under the faults a bank's operations meet (a full disk, a database
//! restarted, kill -9 in the middle of a burst, racing writers, a misbehaving driver), each
//! test proving one invariant of `docs/reliability.md`: nothing acknowledged is lost, nothing
//! is invented.

mod crash;
mod devices;
mod quotas;
mod semantics;
mod shares;
mod storage;
