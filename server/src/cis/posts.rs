//! What the CIS of a member cluster will post to BIG-IP now: the cluster's namespaces,
//! ConfigMaps, Ingresses, Services, Endpoints and Nodes read through `kube::Client`, handed to
//! the domain's CIS model, each post checked against CIS's own AS3 schema. `lbdesk cis-post`
//! prints it.

use std::path::PathBuf;

use anyhow::Context as _;
use app::domain::as3::validate::validate_as_cis;
use app::domain::cis::World;
use app::domain::cis::args::CisArgs;
use app::domain::cis::members::Backends;
use app::domain::cis::post::{Posted, post};
use app::domain::crd::CisSpec;
use k8s_openapi::api::core::v1::{ConfigMap, Endpoints, Namespace, Node, Service};
use k8s_openapi::api::networking::v1::Ingress;
use kube::Api;
use kube::api::ListParams;
use serde_json::{Value, json};

/// The schema version CIS writes when BIG-IP's AS3 is 3.52 or newer (CIS caps it there).
pub const SCHEMA_VERSION: &str = "3.52.0";

async fn all<K>(client: &kube::Client) -> kube::Result<Vec<K>>
where
    K: kube::Resource<DynamicType = ()> + Clone + std::fmt::Debug + serde::de::DeserializeOwned,
{
    Ok(Api::<K>::all(client.clone()).list(&ListParams::default()).await?.items)
}

/// The revision of the cluster `client` reaches (a list's `resourceVersion`), read with one
/// list of one object: what CIS posts can change only when it does.
pub async fn revision(client: &kube::Client) -> kube::Result<Option<String>> {
    let one = ListParams::default().limit(1);
    Ok(Api::<Namespace>::all(client.clone()).list(&one).await?.metadata.resource_version)
}

/// What CIS running with `args` posts for the cluster `client` reaches.
pub async fn posted(client: &kube::Client, args: &CisArgs) -> anyhow::Result<Posted> {
    let namespaces: Vec<Namespace> = all(client).await?;
    let configmaps: Vec<ConfigMap> = all(client).await?;
    let ingresses: Vec<Ingress> = all(client).await?;
    let services: Vec<Service> = all(client).await?;
    let endpoints: Vec<Endpoints> = all(client).await?;
    let nodes: Vec<Node> = all(client).await?;
    let args = args.clone();
    // NB: off the async workers: modelling and validating a cluster's posts takes the CPU for
    // tens of milliseconds with 1,000 listeners, and held up every request and reconcile of the
    // process meanwhile (a save's p95 went from 66 to over 500 ms, docs/perf.md).
    tokio::task::spawn_blocking(move || {
        let world = World {
            args: &args,
            namespaces: &namespaces,
            configmaps: &configmaps,
            ingresses: &ingresses,
            backends: Backends { services: &services, endpoints: &endpoints, nodes: &nodes },
            schema_version: SCHEMA_VERSION,
        };
        post(&world, &validate_as_cis)
    })
    .await
    .context("the model of CIS's posts stopped")
}

/// The report `lbdesk cis-post` prints: every post with its validity, what CIS passes over.
pub fn report(posted: &Posted) -> (Value, bool) {
    let mut ok = posted.invalid.is_empty();
    let posts: Vec<Value> = posted
        .posts
        .iter()
        .map(|p| {
            let valid = validate_as_cis(&p.body);
            ok &= valid.is_ok();
            json!({
                "path": format!("/mgmt/shared/appsvcs/declare{}", p.path),
                "valid": valid.is_ok(),
                "errors": valid.err(),
                "body": p.body,
            })
        })
        .collect();
    let ignored: Vec<Value> = posted.ignored.iter().map(|(what, why)| json!({"what": what, "why": why})).collect();
    (json!({"posts": posts, "ignored": ignored, "heldBack": posted.invalid}), ok)
}

/// `lbdesk cis-post`: prints what the CIS of the kubeconfig's cluster will post, as JSON;
/// fails when CIS would post something invalid or hold a tenant back.
pub async fn run(kubeconfig: Option<PathBuf>, context: Option<String>, cis: CisSpec) -> anyhow::Result<()> {
    let options = kube::config::KubeConfigOptions { context: context.clone(), ..Default::default() };
    let config = match &kubeconfig {
        Some(path) => {
            let file = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("could not read {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(file, &options).await
        }
        None => kube::Config::from_kubeconfig(&options).await,
    }
    .context("could not use the kubeconfig")?;
    let client = kube::Client::try_from(config).context("could not build a Kubernetes client")?;
    let cluster = context.unwrap_or_else(|| "the cluster".into());
    let args = crate::cis::deployment::args_of(&client, &cluster, &cis).await.map_err(anyhow::Error::msg)?;
    let posted = posted(&client, &args).await.context("could not read the cluster")?;
    let (report, ok) = report(&posted);
    println!("{}", serde_json::to_string_pretty(&report).context("could not print")?);
    anyhow::ensure!(ok, "CIS would post an invalid declaration or hold a tenant back (see above)");
    Ok(())
}
