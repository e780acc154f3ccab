//! A model of F5 CIS v2.20.2 (k8s-bigip-ctlr), the only way from lbdesk to BIG-IP: which of
//! lbdesk's objects it reads, what it makes of them, and what it posts to BIG-IP's AS3
//! (`post`); and whether the arguments of the CIS serving a load balancer let everything
//! lbdesk writes through (`args`). Pure: it follows the CIS source (lines cited per item and
//! listed in `docs/cis.md`), so tests can check what BIG-IP will receive, not only what lbdesk
//! writes.

pub mod args;
pub mod ingress;
pub mod members;
pub mod post;
