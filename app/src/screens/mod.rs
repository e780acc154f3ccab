//! One folder per screen: the types both halves share, the server functions with their
//! server-side bodies, and the pages. Every page is a lazy route (`lazy_screen!`): a screen's pages
//! reach the browser in the screen's own chunk, when one of them is first opened.

pub mod audit;
pub mod ingresses;
pub mod listeners;
pub mod loadbalancers;
pub mod rules;
pub mod tickets;
pub mod users;
