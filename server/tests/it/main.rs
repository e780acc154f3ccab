//! Integration tests: the real server on a port, on SQLite and on PostgreSQL.

mod accounts;
mod api_input;
mod audit;
mod boundary;
mod conformance;
mod demo;
mod helpers;
mod hostile;
mod ingresses;
mod kubectl;
mod listeners;
mod log_capture;
mod panics;
mod reconcile;
mod reflector;
mod render;
mod route;
mod rules;
mod secrets;
mod server_fns;
mod user;
mod web;
mod web_csrf;
mod web_headers;
mod web_signin;
mod web_tls;
