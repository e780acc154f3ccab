//! lbdesk's application crate: the pure domain, and the screens with their server functions.
//!
//! The domain compiles for the browser and the server alike; everything that touches a
//! database, a cluster or a session lives behind the `ssr` feature in [`ssr`].

#![recursion_limit = "256"]

pub mod auth;
pub mod codec;
pub mod components;
pub mod domain;
pub mod error;
pub mod i18n;
pub mod pages;
pub mod screens;
#[cfg(feature = "ssr")]
pub mod ssr;
pub mod wire;

mod shell;

pub use shell::{App, shell};
