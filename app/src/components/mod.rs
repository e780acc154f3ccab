//! Building blocks shared by every screen.

pub mod address;
#[cfg(feature = "ssr")]
pub mod bigip;
pub mod controls;
pub mod form;
pub mod layout;
pub mod lazy;
pub mod list;
pub mod loaded;
pub mod locale_switch;
pub mod notice;
pub mod preview;
pub mod server_html;
pub mod time;
