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

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::api::networking::v1::Ingress;

use args::CisArgs;
use members::Backends;

/// The member cluster as CIS reads it.
#[derive(Clone, Copy, Debug)]
pub struct World<'a> {
    pub args: &'a CisArgs,
    pub namespaces: &'a [Namespace],
    pub configmaps: &'a [ConfigMap],
    pub ingresses: &'a [Ingress],
    pub backends: Backends<'a>,
    /// The schema version BIG-IP's AS3 reports (`/mgmt/shared/appsvcs/info`), which CIS
    /// writes in the header.
    pub schema_version: &'a str,
}

/// Whether CIS watches the namespace `name` (its informers follow `--namespace` or
/// `--namespace-label`; `--hubmode` does not widen them).
pub fn watched(world: &World<'_>, name: &str) -> bool {
    let labels = world
        .namespaces
        .iter()
        .find(|n| n.metadata.name.as_deref() == Some(name))
        .map(|n| n.metadata.labels.clone().unwrap_or_default());
    labels.is_some_and(|l| world.args.watches(name, &l))
}
