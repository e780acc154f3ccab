//! Building blocks shared by every screen.

pub mod controls;
pub mod layout;
pub mod loaded;
pub mod time;
