//! One module per screen.

pub mod loadbalancers;
pub mod login;
pub mod not_found;
pub mod screens;
pub mod tickets;
