//! The `lbdesk` server: command line, web surface, demo seed. The binary is a thin `main`.

pub mod admission;
pub mod api;
pub mod cli;
pub mod crdgen;
pub mod demo;
pub mod driver;
pub mod embedded;
pub mod reconciler;
pub mod render;
pub mod serve;
pub mod telemetry;
pub mod tls;
pub mod web;
