//! The pure core of lbdesk: no I/O, no clocks, no async. Compiles for the browser too.

pub mod access;
pub mod as3;
pub mod bigip;
pub mod cis;
pub mod cis_ingress;
pub mod crc32;
pub mod crd;
pub mod directory;
pub mod hash;
pub mod ipam;
pub mod irule;
pub mod policy;
pub mod routing;
pub mod text;
pub mod user;
