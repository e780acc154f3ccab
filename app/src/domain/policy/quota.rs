//! What a project may hold (its `Lbquota`, or the defaults), what it holds, and the one check
//! the pages, the server functions and admission make: a change that makes the project hold
//! more than its quota is refused, saying which quota and how much is left; a change that does
//! not make it hold more never is (a quota lowered below what is held takes nothing away).

use crate::domain::crd::{Lbquota, LbquotaSpec, Lbrule, Lbticket, LoadbalancerSpec, Phase, project_of};
use crate::domain::ipam::PairAllocator;

use super::Refusal;

/// What a project may hold on one load balancer and its tenant, and in all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Address pairs on the load balancer.
    pub addresses: u64,
    pub listeners: Option<u64>,
    pub rules: Option<u64>,
    pub ingresses: Option<u64>,
    /// Bytes of the load balancer's AS3 tenant, as sent.
    pub declaration_bytes: u64,
}

impl Limits {
    /// The limits of `project` (its quota among `quotas`, else the defaults) on a load
    /// balancer of `spec`, whose tenant holds `tenant_bytes`.
    pub fn for_project(quotas: &[Lbquota], project: &str, spec: &LoadbalancerSpec, tenant_bytes: u64) -> Limits {
        let quota = quotas.iter().find(|q| q.metadata.name.as_deref() == Some(project)).map(|q| &q.spec);
        Limits::of(quota, spec, tenant_bytes)
    }

    /// The limits of a project with `quota` (none: the defaults) on a load balancer of `spec`,
    /// whose tenant holds `tenant_bytes`.
    pub fn of(quota: Option<&LbquotaSpec>, spec: &LoadbalancerSpec, tenant_bytes: u64) -> Limits {
        let q = quota.cloned().unwrap_or_default();
        Limits {
            addresses: q.addresses_per_loadbalancer.unwrap_or_else(|| pairs(spec).div_ceil(2)),
            listeners: q.listeners,
            rules: q.rules,
            ingresses: q.ingresses,
            declaration_bytes: q.declaration_bytes.unwrap_or(tenant_bytes / 2),
        }
    }
}

/// The largest limit a quota takes (beyond it, a limit means nothing).
pub const MAX_LIMIT: u64 = 1_000_000_000;

/// A limit as typed in the quota form: empty for the default, else a whole number.
pub fn limit(field: &str, text: &str) -> Result<Option<u64>, Refusal> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    match text.parse::<u64>() {
        Ok(n) if n <= MAX_LIMIT => Ok(Some(n)),
        _ => Err(Refusal::field(field, crate::msg!("refusals.quota.limit_typed", max = MAX_LIMIT))),
    }
}

/// Whether a quota's limits are in range (a `kubectl` write is checked as the form is).
pub fn validate_quota(name: &str, spec: &LbquotaSpec) -> Result<(), Refusal> {
    super::dns_label("metadata.name", name)?;
    let limits = [
        ("addressesPerLoadbalancer", spec.addresses_per_loadbalancer),
        ("listeners", spec.listeners),
        ("rules", spec.rules),
        ("ingresses", spec.ingresses),
        ("declarationBytes", spec.declaration_bytes),
    ];
    for (field, value) in limits {
        if value.is_some_and(|v| v > MAX_LIMIT) {
            return Err(Refusal::field(field, crate::msg!("refusals.quota.limit", max = MAX_LIMIT)));
        }
    }
    Ok(())
}

/// The address pairs a load balancer's ranges hold (none when they are not usable).
pub fn pairs(spec: &LoadbalancerSpec) -> u64 {
    PairAllocator::new(spec, &[]).map(|a| a.free_pairs()).unwrap_or(0)
}

/// What a project holds: address requests on one load balancer, listeners, rules and F5
/// Ingresses on all its requests, bytes of the load balancer's AS3 tenant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Held {
    pub addresses: u64,
    pub listeners: u64,
    pub rules: u64,
    pub ingresses: u64,
    pub declaration_bytes: u64,
}

impl Held {
    /// What `project` holds among `tickets` and `rules`; addresses on load balancer `lb`.
    /// `declaration_bytes` is left for the caller, who renders the tenant.
    pub fn of<'a>(
        project: &str,
        lb: &str,
        tickets: impl IntoIterator<Item = &'a Lbticket>,
        rules: impl IntoIterator<Item = &'a Lbrule>,
    ) -> Held {
        let mut held = Held::default();
        let mut names = Vec::new();
        for t in tickets {
            if project_of(t) != Some(project) {
                continue;
            }
            let phase = t.status.as_ref().map(|s| s.phase).unwrap_or_default();
            if matches!(phase, Phase::Deleted) {
                continue;
            }
            names.push(t.metadata.name.as_deref().unwrap_or_default());
            if t.spec.loadbalancer == lb && phase != Phase::Failed {
                held.addresses += 1;
            }
            held.listeners += t.spec.listeners.len() as u64;
            held.ingresses += t.spec.ingresses.len() as u64;
        }
        held.rules = rules.into_iter().filter(|r| names.contains(&r.spec.lbticket.as_str())).count() as u64;
        held
    }
}

/// Whether going from `before` to `after` keeps the project within `limits` on load balancer
/// `lb`: only what grows is checked.
pub fn within_quota(limits: &Limits, before: &Held, after: &Held, lb: &str) -> Result<(), Refusal> {
    let checks = [
        (after.addresses, before.addresses, Some(limits.addresses), crate::msg!("refusals.quota.addresses", lb = lb)),
        (after.listeners, before.listeners, limits.listeners, crate::msg!("refusals.quota.listeners")),
        (after.rules, before.rules, limits.rules, crate::msg!("refusals.quota.rules")),
        (after.ingresses, before.ingresses, limits.ingresses, crate::msg!("refusals.quota.ingresses")),
    ];
    for (now, was, limit, said) in checks {
        if let Some(limit) = limit.filter(|l| now > was && now > *l) {
            let left = limit.saturating_sub(was);
            return Err(Refusal::action(
                said.arg("limit", limit.to_string()).arg("was", was.to_string()).arg("left", left.to_string()),
            ));
        }
    }
    let (now, was, limit) = (after.declaration_bytes, before.declaration_bytes, limits.declaration_bytes);
    if now > was && now > limit {
        return Err(Refusal::action(crate::msg!(
            "refusals.quota.declaration",
            limit = limit / 1024,
            lb = lb,
            used = was.div_ceil(1024),
            left = limit.saturating_sub(was) / 1024,
            now = now.div_ceil(1024)
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::domain::crd::{
        F5Ingress, LABEL_PROJECT, LbruleSpec, LbticketSpec, LbticketStatus, Listener, Protocol, Session,
    };

    fn spec(ve: &str, ltm: &str) -> LoadbalancerSpec {
        let mut spec = LoadbalancerSpec::default();
        spec.ve.cidr = ve.into();
        spec.ltm.cidr = ltm.into();
        spec
    }

    fn ticket(name: &str, project: &str, lb: &str, phase: Phase, listeners: usize, ingresses: usize) -> Lbticket {
        let spec = LbticketSpec {
            loadbalancer: lb.into(),
            listeners: (0..listeners)
                .map(|i| Listener {
                    name: format!("l{i}"),
                    port: 80,
                    protocol: Protocol::Http,
                    session: Session::None,
                    services: Vec::new(),
                })
                .collect(),
            ingresses: (0..ingresses)
                .map(|i| F5Ingress { name: format!("i{i}"), rules: Vec::new(), tls_secret: None })
                .collect(),
            ..Default::default()
        };
        let mut t = Lbticket::new(name, spec);
        t.metadata.labels = Some(BTreeMap::from([(LABEL_PROJECT.to_string(), project.to_string())]));
        t.status = Some(LbticketStatus { phase, ..Default::default() });
        t
    }

    #[test]
    fn the_defaults_keep_a_project_to_half_a_range_and_half_a_tenant() {
        let cases = [
            ("a /24 and a /24: 254 pairs", spec("20.1.0.0/24", "10.0.0.0/24"), 127),
            ("the smaller range counts", spec("20.1.0.0/16", "10.0.0.0/29"), 3),
            ("one pair: the project may have it", spec("20.1.0.1/32", "10.0.0.1/32"), 1),
            ("ranges not usable: nothing", spec("not a range", "10.0.0.0/24"), 0),
        ];
        for (what, spec, addresses) in cases {
            let limits = Limits::of(None, &spec, 921_600);
            assert_eq!(limits.addresses, addresses, "{what}");
            assert_eq!((limits.listeners, limits.rules, limits.ingresses), (None, None, None), "{what}");
            assert_eq!(limits.declaration_bytes, 460_800, "{what}");
        }
        let quota = LbquotaSpec { addresses_per_loadbalancer: Some(200), rules: Some(5), ..Default::default() };
        let limits = Limits::of(Some(&quota), &spec("20.1.0.0/24", "10.0.0.0/24"), 921_600);
        assert_eq!((limits.addresses, limits.rules, limits.listeners), (200, Some(5), None), "the quota's own");
    }

    #[test]
    fn what_a_project_holds() {
        let tickets = [
            ticket("a1", "project-a", "demo", Phase::Enabled, 2, 0),
            ticket("a2", "project-a", "demo", Phase::Failed, 1, 1),
            ticket("a3", "project-a", "other", Phase::Created, 0, 2),
            ticket("a4", "project-a", "demo", Phase::Deleted, 5, 5),
            ticket("b1", "project-b", "demo", Phase::Enabled, 7, 7),
        ];
        let rule = |ticket: &str| Lbrule::new("r", LbruleSpec { lbticket: ticket.into(), ..Default::default() });
        let rules = [rule("a1"), rule("a1"), rule("a3"), rule("a4"), rule("b1")];
        let held = Held::of("project-a", "demo", &tickets, &rules);
        let want = Held { addresses: 1, listeners: 3, rules: 3, ingresses: 3, declaration_bytes: 0 };
        assert_eq!(held, want, "a Failed request holds no address; a Deleted one nothing");
    }

    #[test]
    fn limits_are_typed_as_whole_numbers_or_left_empty() {
        assert_eq!(limit("rules", " "), Ok(None));
        assert_eq!(limit("rules", "12"), Ok(Some(12)));
        for bad in ["-1", "1.5", "ten", "1000000001"] {
            assert_eq!(limit("rules", bad).expect_err(bad).field.as_deref(), Some("rules"), "{bad}");
        }
        let huge = LbquotaSpec { declaration_bytes: Some(MAX_LIMIT + 1), ..Default::default() };
        assert_eq!(validate_quota("project-a", &huge).expect_err("huge").field.as_deref(), Some("declarationBytes"));
        assert!(validate_quota("Project A", &LbquotaSpec::default()).is_err(), "a project name");
        assert_eq!(validate_quota("project-a", &LbquotaSpec::default()), Ok(()));
    }

    #[test]
    fn only_what_grows_past_its_quota_is_refused_saying_what_is_left() {
        let limits =
            Limits { addresses: 2, listeners: Some(3), rules: None, ingresses: Some(0), declaration_bytes: 10_240 };
        let held = |addresses, listeners, ingresses, declaration_bytes| Held {
            addresses,
            listeners,
            rules: 40,
            ingresses,
            declaration_bytes,
        };
        let cases = [
            ("a second address", held(1, 0, 0, 0), held(2, 0, 0, 0), None),
            (
                "a third",
                held(2, 0, 0, 0),
                held(3, 0, 0, 0),
                Some("quota is 2 address requests on load balancer demo; it has 2 (0 left)"),
            ),
            ("a fourth listener", held(0, 3, 0, 0), held(0, 4, 0, 0), Some("quota is 3 listeners; it has 3 (0 left)")),
            ("an F5 Ingress with none allowed", held(0, 0, 0, 0), held(0, 0, 1, 0), Some("quota is 0 F5 Ingresses")),
            ("rules are unlimited", held(0, 0, 0, 0), held(0, 0, 0, 0), None),
            ("over already, not growing", held(5, 9, 3, 90_000), held(5, 8, 3, 80_000), None),
            (
                "the declaration past its share",
                held(0, 0, 0, 9_000),
                held(0, 0, 0, 11_000),
                Some("quota is 10 KiB of the AS3 declaration"),
            ),
            ("the declaration within it", held(0, 0, 0, 9_000), held(0, 0, 0, 10_000), None),
        ];
        for (what, before, after, want) in cases {
            let got = within_quota(&limits, &before, &after, "demo");
            match want {
                None => assert_eq!(got, Ok(()), "{what}"),
                Some(says) => {
                    let refusal = got.expect_err(what);
                    assert!(refusal.reason.to_string().contains(says), "{what}: {}", refusal.reason);
                    assert!(refusal.reason.to_string().ends_with("A platform admin can raise it."), "{what}");
                }
            }
        }
    }
}
