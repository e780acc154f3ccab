//! One module per screen.

pub mod login;
pub mod not_found;
pub mod screens;
