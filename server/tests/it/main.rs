//! Integration tests: the real server on a port, on SQLite and on PostgreSQL.

mod accounts;
mod api_input;
mod conformance;
mod helpers;
mod kubectl;
mod reconcile;
mod reflector;
mod render;
mod server_fns;
mod web;
