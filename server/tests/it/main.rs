//! Integration tests: the real server on a port, on SQLite and on PostgreSQL.

mod accounts;
mod helpers;
mod render;
mod web;
