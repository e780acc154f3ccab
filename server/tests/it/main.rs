//! Integration tests: the real server on a port, on SQLite and on PostgreSQL.

mod accounts;
mod api_input;
mod conformance;
mod demo;
mod helpers;
mod kubectl;
mod panics;
mod reconcile;
mod reflector;
mod render;
mod server_fns;
mod web;
