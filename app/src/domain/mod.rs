//! The pure core of lbdesk: no I/O, no clocks, no async. Compiles for the browser too.

pub mod crd;
pub mod ipam;
