//! Building blocks shared by every screen.

pub mod layout;
