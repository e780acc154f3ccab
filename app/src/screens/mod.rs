//! One folder per screen: the types both halves share, the server functions with their
//! server-side bodies, and the pages. Every page is a lazy route (`lazy_page!`): its code reaches
//! the browser in its own chunk, when the page is first opened.

pub mod audit;
pub mod ingresses;
pub mod listeners;
pub mod loadbalancers;
pub mod rules;
pub mod tickets;
