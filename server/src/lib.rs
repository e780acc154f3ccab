//! The `lbdesk` server: command line and settings, web surface, embedded Kubernetes API,
//! admission, reconciler, driver, demo seed. The binary is a thin `main`.
//!
//! NB: no module imports from one that imports it back: `cli` dispatches to the others, which
//! read their settings from `config`; `api` calls `admission`, never the other way round; the
//! reconciler reaches Kubernetes through `kube::Client` only.

pub mod admission;
pub mod api;
pub mod audit_follow;
pub mod bigip;
pub mod cis;
pub mod cli;
pub mod config;
pub mod crdgen;
pub mod demo;
pub mod driver;
pub mod embedded;
pub mod leader;
pub mod members;
pub mod metrics;
pub mod net;
pub mod reconciler;
pub mod render;
pub mod retention;
pub mod route;
pub mod serve;
pub mod sims;
pub mod telemetry;
pub mod tls;
pub mod web;
pub mod webhook;
