//! The arguments of the CIS (k8s-bigip-ctlr v2.20.2) serving a load balancer, read from its
//! Deployment, and whether they let what lbdesk writes reach BIG-IP (`CisReady`).
//!
//! Flags and defaults are those of `cmd/k8s-bigip-ctlr/main.go` at v2.20.2 (see
//! `docs/cis.md`). CIS parses them with pflag: `--flag=value` or `--flag value`, and a bare
//! boolean `--flag` is true.

use std::collections::BTreeMap;

/// The CIS arguments lbdesk depends on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CisArgs {
    /// `--namespace` (repeatable): the only namespaces watched.
    pub namespaces: Vec<String>,
    /// `--namespace-label`: a label selector choosing the watched namespaces.
    pub namespace_label: Option<String>,
    /// `--hubmode`: pools find Services in namespaces other than the ConfigMap's.
    pub hubmode: bool,
    /// `--filter-tenants`: one AS3 post per ConfigMap tenant, and no Ingress posted.
    pub filter_tenants: bool,
    /// `--ingress-class` (default `f5`).
    pub ingress_class: String,
    /// `--manage-configmaps` (default true).
    pub manage_configmaps: bool,
    /// `--manage-ingress` (default true).
    pub manage_ingress: bool,
    /// `--agent` (default `as3`).
    pub agent: String,
    /// `--custom-resource-mode` (default false): CRDs only, no ConfigMap or Ingress.
    pub custom_resource_mode: bool,
    /// `--pool-member-type` (default `nodeport`).
    pub pool_member_type: String,
    /// `--bigip-partition`: CIS's own partition; `<it>` and `<it>_AS3` cannot be AS3 tenants.
    pub bigip_partition: String,
    /// `--default-route-domain` (default 0): written into every posted tenant.
    pub default_route_domain: i64,
    /// `--share-nodes` (default false): Ingress pool members carry `shareNodes: true`.
    pub share_nodes: bool,
}

impl Default for CisArgs {
    fn default() -> Self {
        CisArgs {
            namespaces: Vec::new(),
            namespace_label: None,
            hubmode: false,
            filter_tenants: false,
            ingress_class: "f5".into(),
            manage_configmaps: true,
            manage_ingress: true,
            agent: "as3".into(),
            custom_resource_mode: false,
            pool_member_type: "nodeport".into(),
            bigip_partition: String::new(),
            default_route_domain: 0,
            share_nodes: false,
        }
    }
}

/// The arguments README "Running in a cluster" gives CIS (beside its BIG-IP credentials), with
/// the demo load balancer's namespace selector (`cis=shared`) as the namespace label: what the
/// embedded clusters' simulated CIS runs with, and what the tests hold `check` to.
pub const README_ARGS: [&str; 9] = [
    "--bigip-url=https://192.0.2.10",
    "--bigip-partition=cis",
    "--namespace-label=cis=shared",
    "--hubmode=true",
    "--filter-tenants=false",
    "--pool-member-type=cluster",
    "--ingress-class=f5",
    "--agent=as3",
    "--share-nodes=true",
];

/// Flags that take no separate value: a bare `--flag` is true.
const BOOLEANS: [&str; 5] =
    ["hubmode", "filter-tenants", "manage-configmaps", "manage-ingress", "custom-resource-mode"];

fn boolean(value: &str) -> Result<bool, String> {
    // NB: Go's strconv.ParseBool, which pflag uses.
    match value {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(false),
        other => Err(format!("{other:?} is not a boolean")),
    }
}

impl CisArgs {
    /// Reads a container's command and arguments (the program itself and unknown flags are
    /// passed over). A flag given twice keeps the last value, as pflag does, except
    /// `--namespace`, which adds up.
    pub fn parse<'a>(words: impl IntoIterator<Item = &'a str>) -> Result<CisArgs, String> {
        let mut out = CisArgs::default();
        let mut words = words.into_iter().peekable();
        while let Some(word) = words.next() {
            let Some(flag) = word.strip_prefix("--") else { continue };
            let (name, inline) = match flag.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (flag, None),
            };
            let value = match inline {
                Some(v) => v,
                None if BOOLEANS.contains(&name) => "true".into(),
                None => match words.peek() {
                    Some(next) if !next.starts_with("--") => words.next().unwrap_or_default().to_string(),
                    _ => String::new(),
                },
            };
            let flag_bool = |v: &str| boolean(v).map_err(|e| format!("--{name}: {e}"));
            match name {
                "namespace" => out.namespaces.push(value),
                "namespace-label" => out.namespace_label = Some(value).filter(|v| !v.is_empty()),
                "hubmode" => out.hubmode = flag_bool(&value)?,
                "filter-tenants" => out.filter_tenants = flag_bool(&value)?,
                "manage-configmaps" => out.manage_configmaps = flag_bool(&value)?,
                "manage-ingress" => out.manage_ingress = flag_bool(&value)?,
                "custom-resource-mode" => out.custom_resource_mode = flag_bool(&value)?,
                "share-nodes" => out.share_nodes = flag_bool(&value)?,
                "ingress-class" => out.ingress_class = value,
                "agent" => out.agent = value,
                "pool-member-type" => out.pool_member_type = value,
                "bigip-partition" => out.bigip_partition = value,
                "default-route-domain" => {
                    out.default_route_domain =
                        value.parse().map_err(|_| format!("--default-route-domain: {value:?} is not a number"))?
                }
                _ => {}
            }
        }
        Ok(out)
    }

    /// Whether CIS watches a namespace carrying `labels`.
    pub fn watches(&self, namespace: &str, labels: &BTreeMap<String, String>) -> bool {
        if !self.namespaces.is_empty() {
            return self.namespaces.iter().any(|n| n == namespace);
        }
        match &self.namespace_label {
            None => true,
            Some(selector) => selector_matches(selector, labels).unwrap_or(false),
        }
    }
}

/// Whether an equality-based label selector (`k=v`, `k==v`, `k!=v`, `k`, `!k`, comma
/// separated) matches `labels`; `Err` for a form lbdesk does not read (set-based).
pub fn selector_matches(selector: &str, labels: &BTreeMap<String, String>) -> Result<bool, String> {
    let mut all = true;
    for term in selector.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let ok = if let Some((k, v)) = term.split_once("!=") {
            labels.get(k.trim()).map(String::as_str) != Some(v.trim())
        } else if let Some((k, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
            labels.get(k.trim()).map(String::as_str) == Some(v.trim())
        } else if let Some(k) = term.strip_prefix('!') {
            !labels.contains_key(k.trim())
        } else if term.contains(' ') || term.contains('(') {
            return Err(format!("the selector {selector:?} is set-based; lbdesk reads k=v, k!=v, k and !k"));
        } else {
            labels.contains_key(term)
        };
        all &= ok;
    }
    Ok(all)
}

/// What lbdesk needs of the CIS of a load balancer.
#[derive(Clone, Debug)]
pub struct Needs<'a> {
    /// The member cluster (for messages).
    pub cluster: &'a str,
    /// The load balancer's nsselector: the labels lbdesk puts on every namespace CIS must read.
    pub nsselector: &'a BTreeMap<String, String>,
    /// The AS3 tenant the load balancer writes.
    pub tenant: &'a str,
    /// The ingress class lbdesk's F5 Ingresses carry.
    pub ingress_class: &'a str,
}

/// Why CIS with `args` would not post what lbdesk writes for a load balancer, or `Ok`. The
/// first problem found, in words an operator acts on.
pub fn check(args: &CisArgs, needs: &Needs<'_>) -> Result<(), String> {
    let cis = format!("CIS in {}", needs.cluster);
    if args.agent != "as3" {
        return Err(format!("{cis} runs with --agent={}: lbdesk writes AS3; run it with --agent=as3", args.agent));
    }
    if args.custom_resource_mode {
        return Err(format!("{cis} runs with --custom-resource-mode=true: it reads no AS3 ConfigMap and no Ingress"));
    }
    if args.bigip_partition.is_empty() {
        return Err(format!("{cis} runs without --bigip-partition, which it requires"));
    }
    if !args.manage_configmaps {
        return Err(format!("{cis} runs with --manage-configmaps=false: listeners and rules will not be posted"));
    }
    if !args.namespaces.is_empty() {
        return Err(format!(
            "{cis} runs with --namespace={}: it watches only those namespaces; run it with --namespace-label instead",
            args.namespaces.join(",")
        ));
    }
    if let Some(selector) = &args.namespace_label {
        match selector_matches(selector, needs.nsselector) {
            Ok(true) => {}
            Ok(false) => {
                let labels: Vec<String> = needs.nsselector.iter().map(|(k, v)| format!("{k}={v}")).collect();
                let labels = if labels.is_empty() { "no label".to_string() } else { labels.join(",") };
                return Err(format!(
                    "{cis} runs with --namespace-label={selector}, which the load balancer's namespace selector ({labels}) does not satisfy: CIS would not read the AS3 ConfigMap"
                ));
            }
            Err(why) => return Err(format!("{cis} runs with --namespace-label: {why}")),
        }
    }
    if !args.hubmode {
        return Err(format!(
            "{cis} runs without --hubmode=true: pools would not find Services outside the ConfigMap's namespace"
        ));
    }
    if !matches!(args.pool_member_type.as_str(), "cluster" | "nodeport") {
        return Err(format!(
            "{cis} runs with --pool-member-type={}: lbdesk supports cluster and nodeport",
            args.pool_member_type
        ));
    }
    if !args.bigip_partition.is_empty()
        && (needs.tenant == args.bigip_partition || needs.tenant == format!("{}_AS3", args.bigip_partition))
    {
        return Err(format!(
            "{cis} runs with --bigip-partition={}: CIS refuses the AS3 tenant {}; give the load balancer another partition",
            args.bigip_partition, needs.tenant
        ));
    }
    if args.filter_tenants {
        return Err(format!("{cis} runs with --filter-tenants=true: F5 Ingresses will not be posted"));
    }
    if !args.manage_ingress {
        return Err(format!("{cis} runs with --manage-ingress=false: F5 Ingresses will not be posted"));
    }
    if args.ingress_class != needs.ingress_class {
        return Err(format!(
            "{cis} runs with --ingress-class={}, lbdesk writes F5 Ingresses of class {}: they will not be posted",
            args.ingress_class, needs.ingress_class
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn arguments_are_read_as_pflag_reads_them() {
        let args = CisArgs::parse(["/app/bin/k8s-bigip-ctlr", "--hubmode", "--namespace", "a", "--namespace=b"])
            .expect("parses");
        assert!(args.hubmode, "a bare boolean flag is true");
        assert_eq!(args.namespaces, ["a", "b"], "--namespace adds up, spaced or inline");
        assert_eq!(args.ingress_class, "f5", "defaults");
        assert!(args.manage_configmaps && args.manage_ingress && !args.filter_tenants);
        let args =
            CisArgs::parse(["--filter-tenants=T", "--filter-tenants=0", "--ingress-class", "bigip"]).expect("parses");
        assert!(!args.filter_tenants, "the last one wins");
        assert_eq!(args.ingress_class, "bigip");
        let bad = CisArgs::parse(["--hubmode=yes"]).expect_err("not a Go boolean");
        assert!(bad.contains("--hubmode") && bad.contains("yes"), "{bad}");
    }

    #[test]
    fn selectors_are_matched_as_kubernetes_matches_them() {
        let ns = labels(&[("zone", "acp"), ("team", "a")]);
        for (selector, want) in [
            ("zone=acp", Ok(true)),
            ("zone==acp", Ok(true)),
            ("zone=acp,team=a", Ok(true)),
            ("zone=other", Ok(false)),
            ("zone!=other", Ok(true)),
            ("team", Ok(true)),
            ("!team", Ok(false)),
            ("missing", Ok(false)),
            ("", Ok(true)),
        ] {
            assert_eq!(selector_matches(selector, &ns), want, "{selector:?}");
        }
        assert!(selector_matches("zone in (acp)", &ns).is_err(), "set-based selectors are said so");
    }

    #[test]
    fn cis_is_ready_only_when_it_posts_everything_lbdesk_writes() {
        let nsselector = labels(&[("cis", "shared")]);
        let needs = Needs { cluster: "acp-region01", nsselector: &nsselector, tenant: "shared", ingress_class: "f5" };
        let with = |extra: &[&str]| {
            let mut words: Vec<&str> = README_ARGS.to_vec();
            words.extend_from_slice(extra);
            check(&CisArgs::parse(words).expect("parses"), &needs)
        };
        assert_eq!(with(&[]), Ok(()), "the README's arguments");
        for (desc, extra, says) in [
            (
                "filter-tenants drops Ingresses",
                &["--filter-tenants=true"][..],
                "--filter-tenants=true: F5 Ingresses will not be posted",
            ),
            ("no hub mode", &["--hubmode=false"], "without --hubmode=true"),
            ("a label the namespaces do not carry", &["--namespace-label=zone=other"], "does not satisfy"),
            ("fixed namespaces", &["--namespace=kube-system"], "--namespace=kube-system"),
            ("another ingress class", &["--ingress-class=nginx"], "--ingress-class=nginx"),
            ("no ConfigMaps", &["--manage-configmaps=false"], "listeners and rules will not be posted"),
            ("no Ingresses", &["--manage-ingress=false"], "--manage-ingress=false"),
            ("CRD mode", &["--custom-resource-mode"], "--custom-resource-mode=true"),
            ("another agent", &["--agent=cccl"], "--agent=cccl"),
            ("its own partition", &["--bigip-partition=shared"], "refuses the AS3 tenant shared"),
            ("an unsupported member type", &["--pool-member-type=nodeportlocal"], "nodeportlocal"),
            ("no partition of its own", &["--bigip-partition="], "without --bigip-partition"),
        ] {
            let why = with(extra).expect_err(desc);
            assert!(why.starts_with("CIS in acp-region01"), "{desc}: {why}");
            assert!(why.contains(says), "{desc}: {why}");
        }
        let all = BTreeMap::new();
        let no_label = Needs { nsselector: &all, ..needs.clone() };
        let words: Vec<&str> = README_ARGS.iter().copied().filter(|w| !w.starts_with("--namespace-label")).collect();
        assert_eq!(check(&CisArgs::parse(words).expect("parses"), &no_label), Ok(()), "CIS watching every namespace");
    }

    #[test]
    fn which_namespaces_cis_watches() {
        let zone = labels(&[("zone", "acp")]);
        let none = BTreeMap::new();
        let label = CisArgs { namespace_label: Some("zone=acp".into()), ..Default::default() };
        assert!(label.watches("team-a", &zone));
        assert!(!label.watches("kube-system", &none), "an unlabelled namespace is not watched");
        let fixed = CisArgs { namespaces: vec!["team-a".into()], ..Default::default() };
        assert!(fixed.watches("team-a", &none) && !fixed.watches("team-b", &zone));
        assert!(CisArgs::default().watches("anything", &none), "neither flag: every namespace");
    }
}
