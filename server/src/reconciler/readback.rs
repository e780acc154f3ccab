//! Reads back what BIG-IP runs of every listener and F5 Ingress. Per load balancer (one AS3
//! tenant, and its Ingress partition, of one BIG-IP), every `bigip_every` and at once when a
//! read is asked for one of its tickets (`ebcpaas.io/read-bigip`): what its cluster's CIS posts
//! by the model (`cis::posts`, read again only when the cluster changed), BIG-IP's tenant and
//! the result of its last declaration, and the members of the pools BIG-IP holds of each. Each
//! live ticket's `status.bigip` is written when what it says changes. A BIG-IP that cannot be
//! read marks only its own tickets, and is tried again after a growing wait. Towards BIG-IP
//! lbdesk only reads.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use app::domain::bigip::{self, MemberState, judge, judge_ingresses};
use app::domain::cis::post::Posted;
use app::domain::cis_ingress;
use app::domain::crd::{
    BigipStatus, CONDITION_LIVE_ON_BIGIP, CisSpec, LbType, Lbticket, ListenerOnBigip, Loadbalancer, OnBigip, PoolMember,
};
use app::domain::policy::effective_partition;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

use super::status::set_condition;
use super::{Context, Shutdown, backoff, live};
use crate::bigip::{Access, BigIp, ReadError};

/// The longest an unreachable BIG-IP waits before it is read again.
const MOST_WAIT: Duration = Duration::from_secs(300);

/// How long one read of BIG-IP may take.
const TIMEOUT: Duration = Duration::from_secs(10);

/// What the CIS model said a cluster's CIS posts, at which revision of the cluster.
type Models = HashMap<(String, CisSpec), (Option<String>, Option<Posted>)>;

/// How often the reader looks for a read asked from a page (or with kubectl).
const ASKED_EVERY: Duration = Duration::from_secs(1);

/// Reads every load balancer's BIG-IP back until `shutdown`: each every `bigip_every` (an
/// unreachable one after a growing wait), and at once when a read is asked for one of its
/// tickets.
pub(super) async fn run(ctx: Arc<Context>, shutdown: Shutdown) {
    let mut every = tokio::time::interval(ctx.config.bigip_every.min(ASKED_EVERY));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // Per load balancer: the failed reads in a row, and when it is read next.
    let mut due: HashMap<String, (u32, Instant)> = HashMap::new();
    let mut models = Models::new();
    loop {
        tokio::select! {
            () = shutdown.clone() => return,
            _ = every.tick() => {}
        }
        let caches = ctx.caches();
        let tickets = caches.tickets.state();
        for lb in caches.loadbalancers.state().iter().filter(|lb| live(&***lb)) {
            let name = lb.name_any();
            let (mine, idle): (Vec<&Arc<Lbticket>>, Vec<&Arc<Lbticket>>) =
                tickets.iter().filter(|t| t.spec.loadbalancer == name && live(&***t)).partition(|t| bigip::placed(t));
            // NB: what an address not in service said of BIG-IP is no longer true.
            for ticket in idle.iter().filter(|t| t.status.as_ref().is_some_and(|s| s.bigip.is_some())) {
                write(&ctx, ticket, None).await;
            }
            let asked = mine.iter().any(|t| bigip::read_asked(t).is_some());
            let later = due.get(&name).is_some_and(|(_, next)| Instant::now() < *next);
            if mine.is_empty() || (later && !asked) {
                continue;
            }
            let expected = expected(&ctx, lb, &mut models).await;
            match read_back(&ctx, lb, &expected, &mine).await {
                Ok(()) => {
                    due.insert(name, (0, Instant::now() + ctx.config.bigip_every));
                }
                Err(e) => {
                    tracing::info!(loadbalancer = %name, reason = %e, "BIG-IP not read back");
                    ctx.metrics.bigip_unread(&name);
                    let failed = due.get(&name).map_or(1, |(n, _)| n + 1);
                    due.insert(name, (failed, Instant::now() + backoff::delay(failed, MOST_WAIT)));
                    let at = now();
                    for ticket in &mine {
                        let mut status = bigip_of(ticket).unwrap_or_default();
                        if status.unreachable.is_empty() {
                            status.unreachable_since = at.clone();
                        }
                        status.unreachable = e.to_string();
                        status.answered = answered(ticket, &status);
                        write(&ctx, ticket, Some(status)).await;
                    }
                }
            }
        }
    }
}

/// What `status.bigip.answered` says once the ticket's BIG-IP was read (or tried): the read
/// asked of it, if any, is answered.
fn answered(ticket: &Lbticket, before: &BigipStatus) -> String {
    bigip::read_asked(ticket).map_or_else(|| before.answered.clone(), str::to_string)
}

fn now() -> String {
    k8s_openapi::jiff::Timestamp::now().to_string()
}

fn bigip_of(ticket: &Lbticket) -> Option<BigipStatus> {
    ticket.status.as_ref().and_then(|s| s.bigip.clone())
}

/// `lb`'s tenant and Ingress partition as its cluster's CIS posts them now, by the model (none:
/// CIS posts nothing of it, or the cluster or its CIS cannot be read).
async fn expected(ctx: &Context, lb: &Loadbalancer, models: &mut Models) -> [Option<Value>; 2] {
    let Some(client) = ctx.clusters.member(&lb.spec.cluster) else { return [None, None] };
    let key = (lb.spec.cluster.clone(), lb.spec.cis.clone());
    let revision = crate::cis::posts::revision(&client).await.ok().flatten();
    let stale = revision.is_none() || models.get(&key).is_none_or(|(seen, _)| seen != &revision);
    if stale {
        let args = crate::cis::deployment::args_of(&client, &lb.spec.cluster, &lb.spec.cis).await.ok();
        let posted = match args {
            Some(args) => crate::cis::posts::posted(&client, &args).await.ok(),
            None => None,
        };
        models.insert(key.clone(), (revision, posted));
    }
    let posted = models.get(&key).and_then(|(_, p)| p.as_ref());
    let tenant = effective_partition(&lb.spec);
    [tenant.to_string(), cis_ingress::partition(tenant)].map(|t| posted.and_then(|p| p.tenant(&t)).cloned())
}

/// How lbdesk reaches `lb`'s BIG-IP: its management address (or embedded mode's simulator),
/// with the credentials Secret's user, password and CA bundle.
async fn access(ctx: &Context, lb: &Loadbalancer) -> Result<Access, ReadError> {
    let secret = &lb.spec.ve.credentials_secret_ref;
    let api: Api<Secret> = Api::namespaced(ctx.clusters.mgmt().clone(), &secret.namespace);
    let missing =
        || ReadError::Bad(format!("no credentials: the Secret {}/{} is missing", secret.namespace, secret.name));
    let found = api.get_opt(&secret.name).await.map_err(|e| ReadError::Bad(format!("no credentials: {e}")))?;
    let data = found.and_then(|s| s.data).ok_or_else(missing)?;
    let text = |key: &str| data.get(key).map(|v| String::from_utf8_lossy(&v.0).into_owned());
    Ok(Access {
        url: ctx.config.bigip_url.clone().unwrap_or_else(|| format!("https://{}", lb.spec.ve.addr)),
        username: text("user").unwrap_or_default(),
        password: text("password").unwrap_or_default(),
        ca_pem: data.get("ca.crt").map(|v| v.0.clone()),
        skip_verify: lb.spec.ve.insecure_skip_verify,
        timeout: TIMEOUT,
    })
}

/// Reads `lb`'s BIG-IP and writes what it runs of each of `tickets` (its live tickets'
/// listeners and F5 Ingresses), judged against `expected` (its tenant and Ingress partition).
async fn read_back(
    ctx: &Context,
    lb: &Loadbalancer,
    expected: &[Option<Value>; 2],
    tickets: &[&Arc<Lbticket>],
) -> Result<(), ReadError> {
    let bigip = BigIp::new(&access(ctx, lb).await?).map_err(ReadError::Bad)?;
    let tenant = effective_partition(&lb.spec);
    let ingress_tenant = cis_ingress::partition(tenant);
    let on_bigip = bigip.tenant(tenant).await?;
    let rejected = bigip.rejection(tenant).await?;
    // NB: the Ingress partition is read only for a load balancer with F5 Ingresses.
    let (ingresses_on, ingresses_rejected) = match tickets.iter().any(|t| t.spec.lbtype == LbType::Ingress) {
        true => (bigip.tenant(&ingress_tenant).await?, bigip.rejection(&ingress_tenant).await?),
        false => (None, None),
    };
    let at = now();
    let (mut live_count, mut counts) = (0, BTreeMap::<MemberState, usize>::new());
    for ticket in tickets {
        let before = bigip_of(ticket).unwrap_or_default();
        let veip = ticket.status.as_ref().and_then(|s| s.veip.as_deref()).unwrap_or_default();
        let (judged, on, in_tenant) = match ticket.spec.lbtype {
            LbType::Listener => (
                judge(
                    &ticket.name_any(),
                    &ticket.spec,
                    tenant,
                    expected[0].as_ref(),
                    on_bigip.as_ref(),
                    rejected.as_ref(),
                ),
                &before.listeners,
                tenant,
            ),
            LbType::Ingress => (
                judge_ingresses(
                    &ticket.spec,
                    veip,
                    &ingress_tenant,
                    expected[1].as_ref(),
                    ingresses_on.as_ref(),
                    ingresses_rejected.as_ref(),
                ),
                &before.ingresses,
                ingress_tenant.as_str(),
            ),
        };
        let mut things = Vec::new();
        for judged in judged {
            let (state, reason, differs) = judged.state.recorded();
            live_count += usize::from(state == OnBigip::Live);
            let mut members = Vec::new();
            for (app, pool) in &judged.pools {
                for m in bigip.members(in_tenant, app, pool).await? {
                    *counts.entry(m.state).or_default() += 1;
                    members.push(PoolMember { pool: pool.clone(), address: m.address, port: m.port, state: m.state });
                }
            }
            let was = on.iter().find(|l| l.name == judged.listener && l.state == state);
            let since = was.map_or_else(|| at.clone(), |l| l.since.clone());
            things.push(ListenerOnBigip { name: judged.listener, state, since, reason, differs, members });
        }
        let answered = answered(ticket, &before);
        let status = match ticket.spec.lbtype {
            LbType::Listener => BigipStatus { listeners: things, answered, ..Default::default() },
            LbType::Ingress => BigipStatus { ingresses: things, answered, ..Default::default() },
        };
        write(ctx, ticket, Some(status)).await;
    }
    let by_state = [
        ("up", MemberState::Up),
        ("down", MemberState::Down),
        ("disabled", MemberState::Disabled),
        ("unknown", MemberState::Unknown),
    ];
    let members = by_state.map(|(label, state)| (label, counts.get(&state).copied().unwrap_or_default()));
    ctx.metrics.bigip_read(&lb.name_any(), live_count, members);
    Ok(())
}

/// Writes `status` as the ticket's `status.bigip` (none: removed) and its `LiveOnBigip`
/// condition when they differ from what the ticket says; a failed or lost write is tried again
/// on the next round.
async fn write(ctx: &Context, ticket: &Lbticket, status: Option<BigipStatus>) {
    if bigip_of(ticket) == status {
        return;
    }
    let mut conditions = ticket.status.as_ref().map(|s| s.conditions.clone()).unwrap_or_default();
    match &status {
        Some(s) => {
            let (live, reason, message) = bigip::condition(s);
            set_condition(&mut conditions, CONDITION_LIVE_ON_BIGIP, live, reason, &message, ticket.metadata.generation);
        }
        None => conditions.retain(|c| c.type_ != CONDITION_LIVE_ON_BIGIP),
    }
    // NB: a merge patch keeps what it does not name: the fields gone are written as null. The
    // conditions are written whole, so on the version read: another writer's newer conditions
    // make this one a conflict, and the next round writes again.
    let bigip = status.as_ref().map(|s| {
        json!({
            "unreachable": (!s.unreachable.is_empty()).then_some(&s.unreachable),
            "unreachableSince": (!s.unreachable_since.is_empty()).then_some(&s.unreachable_since),
            "listeners": s.listeners,
            "ingresses": s.ingresses,
            "answered": (!s.answered.is_empty()).then_some(&s.answered),
        })
    });
    let patch = json!({
        "metadata": {"resourceVersion": ticket.metadata.resource_version},
        "status": {"bigip": bigip, "conditions": conditions},
    });
    let api: Api<Lbticket> = Api::all(ctx.clusters.mgmt().clone());
    if let Err(e) = api.patch_status(&ticket.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await {
        tracing::debug!(ticket = %ticket.name_any(), error = %e, "what BIG-IP runs was not written");
    }
}
