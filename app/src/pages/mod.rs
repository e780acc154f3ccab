//! The pages outside the screen folders: sign-in and the unknown address.

pub mod login;
pub mod not_found;
