//! What the wall clock ends: sessions past their lifetime or idle time, connections idle or too
//! slow. These tests mostly wait, so they are named to start first: libtest starts tests in the
//! order of their names, and started last they kept the suite waiting on them alone for its
//! last 10 s, both cores idle (docs/perf.md).

mod connections;
mod sessions;
