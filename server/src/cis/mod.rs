//! The F5 CIS of a member cluster, as lbdesk reads it through `kube::Client`: its Deployment
//! and arguments (`deployment`), and what it will post to BIG-IP given everything the cluster
//! holds now (`posts`, the domain's CIS model over live objects). The reconciler's `CisReady`,
//! `lbdesk cis-post` and the tests read CIS through here.

pub mod deployment;
pub mod posts;
