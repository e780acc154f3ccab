//! Rules of screen 1: abstract load balancers (platform admins).

use std::net::IpAddr;

use super::{Refusal, Verdict, dns_label, escaped, http_url, label_key, label_value, object_name};
use ipnet::IpNet;

use crate::domain::crd::{LbticketSpec, LbticketStatus, Loadbalancer, LoadbalancerSpec, Phase};
use crate::domain::ipam::{Device, PairAllocator, Side};

/// Fields that cannot change while any ticket not Deleted uses the Loadbalancer.
pub const LB_LOCKED_FIELDS: [&str; 4] = ["ltm.cidr", "ve.cidr", "cluster", "nsselector"];

/// How many address requests use the Loadbalancer `lb`: the tickets, not Deleted, that name it
/// (one not yet reconciled counts), and never fewer than the address pairs its address objects
/// hold (its status counters), so an address whose ticket is gone keeps it in use too.
pub fn loadbalancer_use<'a>(
    lb: &Loadbalancer,
    tickets: impl IntoIterator<Item = (&'a LbticketSpec, Option<&'a LbticketStatus>)>,
) -> usize {
    let name = lb.metadata.name.as_deref().unwrap_or_default();
    let requests = tickets
        .into_iter()
        .filter(|(spec, status)| spec.loadbalancer == name && status.is_none_or(|s| s.phase != Phase::Deleted))
        .count();
    let pairs = lb.status.as_ref().and_then(|s| s.capacity.as_ref()).map_or(0, |c| c.ve_used);
    requests.max(usize::try_from(pairs).unwrap_or(usize::MAX))
}

/// Whether `field` (one of [`LB_LOCKED_FIELDS`], else always editable) may be edited now.
pub fn lb_field_editable(field: &str, tickets_in_use: usize) -> Verdict {
    if tickets_in_use > 0 && LB_LOCKED_FIELDS.contains(&field) {
        Err(Refusal::field(field, crate::msg!("refusals.lb.locked", n = tickets_in_use)))
    } else {
        Ok(())
    }
}

/// Whether `old` may become `new` while `tickets_in_use` tickets use it.
pub fn lb_update(old: &LoadbalancerSpec, new: &LoadbalancerSpec, tickets_in_use: usize) -> Verdict {
    let changed = [
        ("ltm.cidr", old.ltm.cidr != new.ltm.cidr),
        ("ve.cidr", old.ve.cidr != new.ve.cidr),
        ("cluster", old.cluster != new.cluster),
        ("nsselector", old.nsselector != new.nsselector),
    ];
    for (field, differs) in changed {
        if differs {
            lb_field_editable(field, tickets_in_use)?;
        }
    }
    Ok(())
}

/// Whether the Loadbalancer may be deleted.
pub fn lb_deletable(tickets_in_use: usize, do_not_delete: bool) -> Verdict {
    if do_not_delete {
        return Err(Refusal::action(crate::msg!("refusals.lb.do_not_delete")));
    }
    if tickets_in_use > 0 {
        return Err(Refusal::action(crate::msg!("refusals.lb.in_use", n = tickets_in_use)));
    }
    Ok(())
}

/// The AS3 tenant the Loadbalancer writes: its partition, else its cluster.
pub fn effective_partition(spec: &LoadbalancerSpec) -> &str {
    spec.partition.as_deref().filter(|p| !p.is_empty()).unwrap_or(&spec.cluster)
}

/// Refuses a duplicate (same LTM URL, VE address, cluster and nsselector) and a second
/// Loadbalancer writing the same AS3 tenant of a cluster (CIS would flap between them).
pub fn lb_unique<'a>(
    name: &str,
    spec: &LoadbalancerSpec,
    others: impl IntoIterator<Item = (&'a str, &'a LoadbalancerSpec)>,
) -> Verdict {
    for (other_name, other) in others {
        if other_name == name {
            continue;
        }
        if other.ltm.url == spec.ltm.url
            && other.ve.addr == spec.ve.addr
            && other.cluster == spec.cluster
            && other.nsselector == spec.nsselector
        {
            return Err(Refusal::action(crate::msg!("refusals.lb.duplicate", other = other_name)));
        }
        if other.cluster == spec.cluster && effective_partition(other) == effective_partition(spec) {
            return Err(Refusal::field(
                "partition",
                crate::msg!(
                    "refusals.lb.tenant_taken",
                    other = other_name,
                    tenant = escaped(effective_partition(spec)),
                    cluster = spec.cluster
                ),
            ));
        }
        if let Some(overlap) = Overlap::between(spec, other_name, other) {
            return Err(Refusal::field(overlap.side.cidr_field(), overlap.msg()));
        }
    }
    Ok(())
}

/// Two load balancers whose ranges on one side overlap on the same device: an address of both
/// ranges would be one address of that VE or LTM, however the two load balancers share it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Overlap {
    pub side: Side,
    /// This load balancer's range.
    pub range: String,
    /// The other load balancer, and its range.
    pub other: String,
    pub other_range: String,
    pub device: Device,
}

impl Overlap {
    /// The first side on which `spec`'s range overlaps `other`'s on the same device.
    pub fn between(spec: &LoadbalancerSpec, other_name: &str, other: &LoadbalancerSpec) -> Option<Overlap> {
        [Side::Ve, Side::Ltm].into_iter().find_map(|side| Overlap::on(side, spec, other_name, other))
    }

    /// Whether `spec`'s range of `side` overlaps `other`'s on the same device.
    pub fn on(side: Side, spec: &LoadbalancerSpec, other_name: &str, other: &LoadbalancerSpec) -> Option<Overlap> {
        let device = Device::of(spec, side);
        let range = |s: &LoadbalancerSpec| if side == Side::Ve { s.ve.cidr.clone() } else { s.ltm.cidr.clone() };
        let (mine, theirs) = (range(spec), range(other));
        let net = |r: &str| r.trim().parse::<IpNet>().ok();
        let (a, b) = (net(&mine)?, net(&theirs)?);
        let overlap = a.contains(&b.network()) || b.contains(&a.network());
        (overlap && Device::of(other, side) == device).then(|| Overlap {
            side,
            range: mine,
            other: other_name.to_string(),
            other_range: theirs,
            device,
        })
    }

    /// What the admin is told.
    pub fn msg(&self) -> crate::i18n::Msg {
        crate::msg!(
            "refusals.lb.range_overlap",
            range = escaped(&self.range),
            other = self.other,
            other_range = escaped(&self.other_range),
            device = escaped(&self.device.to_string())
        )
    }
}

/// Every overlap among `lbs` (name, spec), by load balancer: what an upgrade from a version that
/// let an admin save them finds, shown on the admin's page and a condition.
pub fn overlaps<'a>(
    lbs: impl IntoIterator<Item = (&'a str, &'a LoadbalancerSpec)> + Clone,
) -> std::collections::BTreeMap<String, Vec<Overlap>> {
    let mut found: std::collections::BTreeMap<String, Vec<Overlap>> = Default::default();
    for (name, spec) in lbs.clone() {
        for (other_name, other) in lbs.clone() {
            if other_name == name {
                continue;
            }
            for side in [Side::Ve, Side::Ltm] {
                if let Some(o) = Overlap::on(side, spec, other_name, other) {
                    found.entry(name.to_string()).or_default().push(o);
                }
            }
        }
    }
    found
}

/// Whether a tenant working in `project` on `cluster` may choose this Loadbalancer.
pub fn lb_offered_to(spec: &LoadbalancerSpec, cluster: &str, project: &str) -> Verdict {
    if spec.cluster != cluster {
        return Err(Refusal::field(
            "loadbalancer",
            crate::msg!("refusals.lb.other_cluster", cluster = spec.cluster, wanted = cluster),
        ));
    }
    if !spec.scope.is_empty() && !spec.scope.iter().any(|p| p == project) {
        return Err(Refusal::field("loadbalancer", crate::msg!("refusals.lb.not_offered", project = project)));
    }
    Ok(())
}

/// Field checks of a Loadbalancer spec (what admission checks for any write).
pub fn validate_lb(name: &str, spec: &LoadbalancerSpec) -> Verdict {
    object_name("metadata.name", name)?;
    http_url("ltm.url", &spec.ltm.url)?;
    if spec.ve.addr.trim().parse::<IpAddr>().is_err() {
        return Err(Refusal::field("ve.addr", crate::msg!("refusals.value.not_ip", value = escaped(&spec.ve.addr))));
    }
    for (field, secret) in [
        ("ltm.tokenSecretRef", &spec.ltm.token_secret_ref),
        ("ve.credentialsSecretRef", &spec.ve.credentials_secret_ref),
    ] {
        dns_label(&format!("{field}.namespace"), &secret.namespace)?;
        object_name(&format!("{field}.name"), &secret.name)?;
    }
    dns_label("cluster", &spec.cluster)?;
    dns_label("cis.namespace", &spec.cis.namespace)?;
    for (key, value) in &spec.nsselector {
        label_key("nsselector", key)?;
        label_value("nsselector", value)?;
    }
    if let Some(partition) = spec.partition.as_deref().filter(|p| !p.is_empty()) {
        partition_name(partition)?;
    }
    for project in &spec.scope {
        dns_label("scope", project)?;
    }
    PairAllocator::new(spec, &[])?;
    Ok(())
}

/// The credentials typed in the form (each absent when left as it is): bounded and on one
/// line, checked before anything is written so a refused credential leaves no half-saved
/// load balancer behind. `new` requires all three.
pub fn validate_credentials(token: Option<&str>, user: Option<&str>, password: Option<&str>, new: bool) -> Verdict {
    for (field, value, what) in [
        ("ltm.token", token, crate::msg!("refusals.lb.credential.ltm_token")),
        ("ve.user", user, crate::msg!("refusals.lb.credential.ve_user")),
        ("ve.password", password, crate::msg!("refusals.lb.credential.ve_password")),
    ] {
        match value.filter(|v| !v.is_empty()) {
            None if new => {
                return Err(Refusal::field(field, crate::msg!("refusals.lb.credential.required").with("what", what)));
            }
            None => {}
            Some(v) if v.len() > 4096 => {
                return Err(Refusal::field(field, crate::msg!("refusals.lb.credential.too_long").with("what", what)));
            }
            Some(v) if v.chars().any(char::is_control) => {
                return Err(Refusal::field(field, crate::msg!("refusals.lb.credential.one_line").with("what", what)));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// A partition (AS3 tenant) name: AS3's item rule, not a reserved name.
pub fn partition_name(partition: &str) -> Verdict {
    let legal = partition.len() <= 64
        && partition.starts_with(|c: char| c.is_ascii_alphabetic())
        && partition.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
        && !partition.ends_with('-');
    if !legal {
        return Err(Refusal::field("partition", crate::msg!("refusals.lb.partition_name")));
    }
    if ["Common", "Shared"].contains(&partition) {
        return Err(Refusal::field(
            "partition",
            crate::msg!("refusals.lb.partition_reserved", value = escaped(partition)),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::crd::{Loadbalancer, LoadbalancerSpec};

    #[test]
    fn credentials_are_required_bounded_and_one_line() {
        let field = |v: Verdict| v.expect_err("refused").field;
        assert!(validate_credentials(Some("t"), Some("u"), Some("p"), true).is_ok());
        assert!(validate_credentials(None, None, None, false).is_ok());
        assert_eq!(field(validate_credentials(None, Some("u"), Some("p"), true)).as_deref(), Some("ltm.token"));
        assert_eq!(field(validate_credentials(Some("t"), Some(""), Some("p"), true)).as_deref(), Some("ve.user"));
        let huge = "x".repeat(1 << 20);
        assert_eq!(field(validate_credentials(Some(&huge), None, None, false)).as_deref(), Some("ltm.token"));
        assert_eq!(field(validate_credentials(None, None, Some("a\nb"), false)).as_deref(), Some("ve.password"));
    }

    fn lb() -> LoadbalancerSpec {
        let docs = include_str!("../testdata/seed-objects.yaml");
        let lb: Loadbalancer = serde_yaml::from_str(docs.split("\n---\n").next().expect("lb")).expect("lb");
        lb.spec
    }

    #[test]
    fn locked_fields_flip_with_the_first_ticket() {
        for field in LB_LOCKED_FIELDS {
            assert!(lb_field_editable(field, 0).is_ok(), "{field}");
            let r = lb_field_editable(field, 1).expect_err("locked");
            assert_eq!(r.reason.to_string(), "Locked: in use by 1 address request; delete it first.");
            assert_eq!(r.field.as_deref(), Some(field));
        }
        assert!(lb_field_editable("ltm.url", 5).is_ok(), "not a locked field");
        let old = lb();
        let mut new = old.clone();
        new.ve.cidr = "20.2.0.0/16".into();
        assert!(lb_update(&old, &new, 0).is_ok());
        assert_eq!(lb_update(&old, &new, 2).expect_err("locked").field.as_deref(), Some("ve.cidr"));
        let mut ok = old.clone();
        ok.reserved.push("20.1.0.5".into());
        ok.scope.push("project-b".into());
        assert!(lb_update(&old, &ok, 2).is_ok(), "the rest stays editable");
    }

    #[test]
    fn deletion_waits_for_the_last_ticket_and_respects_the_label() {
        assert!(lb_deletable(0, false).is_ok());
        assert!(
            lb_deletable(1, false)
                .expect_err("in use")
                .reason
                .to_string()
                .starts_with("Cannot delete: in use by 1 address request")
        );
        assert!(lb_deletable(0, true).is_err());
    }

    #[test]
    fn tickets_deleted_do_not_count_and_held_addresses_do() {
        let spec = LbticketSpec { loadbalancer: "demo".into(), ..Default::default() };
        let deleted = LbticketStatus { phase: Phase::Deleted, ..Default::default() };
        let enabled = LbticketStatus { phase: Phase::Enabled, ..Default::default() };
        let other = LbticketSpec { loadbalancer: "other".into(), ..Default::default() };
        let all = [(&spec, Some(&deleted)), (&spec, Some(&enabled)), (&spec, None), (&other, None)];
        let mut demo = Loadbalancer::new("demo", lb());
        assert_eq!(loadbalancer_use(&demo, all), 2);
        // Three pairs held, one of them by a ticket that is gone: three in use.
        let capacity = crate::domain::crd::Capacity { ve_used: 3, ltm_used: 3, ..Default::default() };
        demo.status = Some(crate::domain::crd::LoadbalancerStatus { capacity: Some(capacity), ..Default::default() });
        assert_eq!(loadbalancer_use(&demo, all), 3);
    }

    #[test]
    fn duplicates_and_shared_tenants_are_refused() {
        let a = lb();
        assert!(lb_unique("a", &a, [("a", &a)]).is_ok(), "itself is no duplicate");
        assert!(
            lb_unique("b", &a, [("a", &a)]).expect_err("dup").reason.to_string().contains("already has this LTM URL")
        );
        let mut b = a.clone();
        b.ve.addr = "200.1.1.2".into();
        let r = lb_unique("b", &b, [("a", &a)]).expect_err("same tenant");
        assert_eq!(r.field.as_deref(), Some("partition"));
        b.partition = Some("other".into());
        b.ltm.url = "http://100.1.1.2/api".into();
        assert!(lb_unique("b", &b, [("a", &a)]).is_ok());
        let mut c = a.clone();
        c.nsselector.insert("zone".into(), "2".into());
        c.partition = Some("p2".into());
        c.ve.cidr = "20.2.0.0/16".into();
        c.ltm.cidr = "10.0.1.0/24".into();
        assert!(lb_unique("c", &c, [("a", &a)]).is_ok(), "another nsselector is another load balancer");
    }

    #[test]
    fn ranges_that_overlap_on_one_device_are_refused_naming_the_other() {
        let a = lb();
        // Each row: what changes in a copy of `a` (its own partition and namespace selector: not
        // a duplicate), and the field refused.
        type Change = fn(&mut LoadbalancerSpec);
        let rows: [(&str, Change, Option<&str>); 7] = [
            ("half of a's VE range, on a's VE", |s| s.ve.cidr = "20.1.0.128/25".into(), Some("ve.cidr")),
            ("a range holding a's, on a's VE", |s| s.ve.cidr = "20.0.0.0/8".into(), Some("ve.cidr")),
            (
                "the same VE range on another VE",
                |s| {
                    s.ve.addr = "200.1.1.9".into();
                    s.ltm.url = "http://100.1.1.9/api".into();
                },
                None,
            ),
            (
                "the VE written otherwise is the same VE",
                |s| {
                    s.ve.addr = " 200.1.1.1".into();
                    s.ve.cidr = "20.1.3.0/24".into();
                },
                Some("ve.cidr"),
            ),
            (
                "an LTM range inside a's, on a's LTM",
                |s| {
                    s.ve.addr = "200.1.1.9".into();
                    s.ltm.cidr = "10.0.0.64/26".into();
                },
                Some("ltm.cidr"),
            ),
            (
                "a's LTM URL written otherwise",
                |s| {
                    s.ve.addr = "200.1.1.9".into();
                    s.ltm.url = "HTTP://100.1.1.1:80/api/".into();
                },
                Some("ltm.cidr"),
            ),
            (
                "ranges apart on both devices",
                |s| {
                    s.ve.cidr = "20.2.0.0/16".into();
                    s.ltm.cidr = "10.0.1.0/24".into();
                },
                None,
            ),
        ];
        for (what, change, refused) in rows {
            let mut b = a.clone();
            b.partition = Some("b".into());
            b.nsselector.insert("lb".into(), "b".into());
            change(&mut b);
            let verdict = lb_unique("b", &b, [("a", &a)]);
            assert_eq!(verdict.as_ref().err().and_then(|r| r.field.as_deref()), refused, "{what}: {verdict:?}");
            if let Err(r) = verdict {
                let said = r.reason.to_string();
                assert!(
                    said.contains("load balancer a")
                        && said.contains(if refused == Some("ve.cidr") { "20.1.0.0/16" } else { "10.0.0.0/24" }),
                    "{what}: {said}"
                );
            }
        }
    }

    #[test]
    fn overlaps_already_saved_are_found_on_each_side() {
        let a = lb();
        let mut b = a.clone();
        b.partition = Some("b".into());
        b.ve.cidr = "20.1.0.128/25".into();
        let c = LoadbalancerSpec {
            ve: crate::domain::crd::VeSpec { addr: "200.9.9.9".into(), ..a.ve.clone() },
            ..b.clone()
        };
        let found = overlaps([("a", &a), ("b", &b), ("c", &c)]);
        let sides = |n: &str| found.get(n).map(|o| o.iter().map(|o| (o.other.clone(), o.side)).collect::<Vec<_>>());
        assert_eq!(sides("a"), Some(vec![("b".into(), Side::Ve), ("b".into(), Side::Ltm), ("c".into(), Side::Ltm)]));
        assert_eq!(sides("c"), Some(vec![("a".into(), Side::Ltm), ("b".into(), Side::Ltm)]));
    }

    #[test]
    fn tenants_see_only_their_cluster_and_scope() {
        let mut spec = lb();
        assert!(lb_offered_to(&spec, "acp-region01", "project-a").is_ok(), "empty scope: everyone");
        assert!(lb_offered_to(&spec, "acp-region02", "project-a").is_err());
        spec.scope = vec!["project-b".into()];
        assert!(lb_offered_to(&spec, "acp-region01", "project-a").is_err());
        assert!(lb_offered_to(&spec, "acp-region01", "project-b").is_ok());
    }

    #[test]
    fn field_checks_name_the_field() {
        assert!(validate_lb("demo", &lb()).is_ok());
        type Break = fn(&mut LoadbalancerSpec);
        let cases: [(&str, Break); 9] = [
            ("ltm.url", |s| s.ltm.url = "100.1.1.1".into()),
            ("ve.addr", |s| s.ve.addr = "200.1.1".into()),
            ("ve.cidr", |s| s.ve.cidr = "20.1.0.0/33".into()),
            ("ltm.cidr", |s| s.ltm.cidr = "10.0.0.1/24".into()),
            ("reserved", |s| s.reserved = vec!["20.1.0.x".into()]),
            ("cluster", |s| s.cluster = "ACP".into()),
            ("nsselector", |s| {
                s.nsselector.insert("bad key!".into(), "x".into());
            }),
            ("partition", |s| s.partition = Some("Common".into())),
            ("ltm.tokenSecretRef.name", |s| s.ltm.token_secret_ref.name = String::new()),
        ];
        for (field, break_it) in cases {
            let mut spec = lb();
            break_it(&mut spec);
            assert_eq!(validate_lb("demo", &spec).expect_err(field).field.as_deref(), Some(field));
        }
        assert_eq!(validate_lb("Demo", &lb()).expect_err("name").field.as_deref(), Some("metadata.name"));
    }
}
