//! Which Services of a namespace are in use, and by whom: a Service belongs to one listener
//! (with the rules on it) or to one F5 Ingress. The picker of screens 3–5 offers only the free
//! ones, and a save, the server function and admission refuse one used elsewhere.

use std::collections::BTreeMap;

use super::{Refusal, Verdict};
use crate::domain::crd::{LABEL_CLUSTER, Lbrule, LbruleSpec, Lbticket, LbticketSpec, Loadbalancer, ServiceRef};
use crate::i18n::Msg;

/// The member cluster of a ticket: its label (set by the pages), else its load balancer's (a
/// ticket applied with kubectl may carry no label).
pub fn ticket_cluster<'a>(ticket: &'a Lbticket, loadbalancers: &'a [Loadbalancer]) -> Option<&'a str> {
    let labels = ticket.metadata.labels.as_ref();
    labels.and_then(|l| l.get(LABEL_CLUSTER)).map(String::as_str).or_else(|| {
        loadbalancers
            .iter()
            .find(|lb| lb.metadata.name.as_deref() == Some(ticket.spec.loadbalancer.as_str()))
            .map(|lb| lb.spec.cluster.as_str())
    })
}

/// Who uses a Service: one listener (with its rules) or one F5 Ingress.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Owner {
    Listener {
        ticket: String,
        listener: String,
    },
    /// An F5 Ingress: its name is unique in the namespace (it is the Ingress's name there).
    Ingress(String),
}

impl Owner {
    fn describe(&self) -> Msg {
        match self {
            Owner::Listener { ticket, listener } => {
                crate::msg!("refusals.services.owner_listener", listener = listener, ticket = ticket)
            }
            Owner::Ingress(name) => crate::msg!("refusals.services.owner_ingress", name = name),
        }
    }
}

/// The Services of one namespace in use, and by whom.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    owners: BTreeMap<String, Owner>,
    /// Service → each port it backs a pool on, with the rule that uses it so (`None`: a
    /// listener). NB: CIS puts a Service in one pool only (it labels the Service with the
    /// pool), so a listener and its rules use a Service on one port; the AS3 declaration of
    /// two would be invalid, and a write through the API would hold the whole tenant back.
    ports: BTreeMap<String, Vec<(u16, Option<String>)>>,
    /// F5 Ingress name → the ticket it is on.
    ingresses: BTreeMap<String, String>,
}

impl Usage {
    /// What the tickets of one namespace (`tickets`: every ticket of that namespace and
    /// cluster, each by name) and the rules on them use. `skip` leaves one ticket's own
    /// listeners and F5 Ingresses out (not the rules on it): the ticket being changed, whose new
    /// form [`Usage::admit`] then checks.
    pub fn of_namespace<'a>(
        tickets: impl IntoIterator<Item = (&'a str, &'a LbticketSpec)>,
        rules: impl IntoIterator<Item = (&'a str, &'a LbruleSpec)>,
        skip: Option<&str>,
    ) -> Usage {
        let mut usage = Usage::default();
        let mut names = std::collections::BTreeSet::new();
        for (name, spec) in tickets {
            names.insert(name);
            if Some(name) != skip {
                usage.add_ticket(name, spec);
            }
        }
        for (rule, r) in rules.into_iter().filter(|(_, r)| names.contains(r.lbticket.as_str())) {
            usage.add_pools(&r.lbticket, &r.listener, &r.services, Some(rule));
        }
        usage
    }

    /// What the other tickets of `ticket`'s namespace (same cluster, same namespace) and every
    /// rule on its namespace's tickets use: what `ticket`'s new form is checked against with
    /// [`Usage::admit`]. The one adapter the server functions and admission both call.
    pub fn around(ticket: &Lbticket, tickets: &[Lbticket], loadbalancers: &[Loadbalancer], rules: &[Lbrule]) -> Usage {
        Usage::of_namespace_of(ticket, tickets, loadbalancers, rules, ticket.metadata.name.as_deref())
    }

    /// What every ticket of `ticket`'s namespace, `ticket` included, and every rule on them
    /// use: what a rule on one of `ticket`'s listeners is checked against.
    pub fn beside(ticket: &Lbticket, tickets: &[Lbticket], loadbalancers: &[Loadbalancer], rules: &[Lbrule]) -> Usage {
        Usage::of_namespace_of(ticket, tickets, loadbalancers, rules, None)
    }

    fn of_namespace_of(
        ticket: &Lbticket,
        tickets: &[Lbticket],
        loadbalancers: &[Loadbalancer],
        rules: &[Lbrule],
        skip: Option<&str>,
    ) -> Usage {
        let cluster = ticket_cluster(ticket, loadbalancers);
        let neighbours = tickets
            .iter()
            .filter(|t| t.spec.namespace == ticket.spec.namespace && ticket_cluster(t, loadbalancers) == cluster);
        let named = neighbours.map(|t| (t.metadata.name.as_deref().unwrap_or_default(), &t.spec));
        let rules = rules.iter().map(|r| (r.metadata.name.as_deref().unwrap_or_default(), &r.spec));
        Usage::of_namespace(named, rules, skip)
    }

    /// Records everything `spec` of ticket `name` uses.
    fn add_ticket(&mut self, name: &str, spec: &LbticketSpec) {
        for l in &spec.listeners {
            self.add_backends(name, &l.name, &l.services);
        }
        for ingress in &spec.ingresses {
            self.ingresses.entry(ingress.name.clone()).or_insert_with(|| name.to_string());
            for route in &ingress.rules {
                self.add(&route.service, Owner::Ingress(ingress.name.clone()));
            }
        }
    }

    /// Records that `owner` uses `service` (the first owner recorded wins).
    pub fn add(&mut self, service: &str, owner: Owner) {
        self.owners.entry(service.to_string()).or_insert(owner);
    }

    /// Records every Service behind `listener` of `ticket`.
    pub fn add_backends(&mut self, ticket: &str, listener: &str, services: &[ServiceRef]) {
        self.add_pools(ticket, listener, services, None);
    }

    /// Records every Service behind `listener` of `ticket`, or behind `rule` on it, and the
    /// port it backs a pool on.
    fn add_pools(&mut self, ticket: &str, listener: &str, services: &[ServiceRef], rule: Option<&str>) {
        for s in services {
            self.add(&s.service, Owner::Listener { ticket: ticket.into(), listener: listener.into() });
            self.ports.entry(s.service.clone()).or_default().push((s.port, rule.map(String::from)));
        }
    }

    /// Whether `me` may use `service`: nobody else does.
    pub fn available(&self, service: &str, me: &Owner) -> Verdict {
        match self.owners.get(service) {
            Some(owner) if owner != me => {
                let reason = crate::msg!("refusals.services.taken", service = service).with("owner", owner.describe());
                Err(Refusal::field("services", reason))
            }
            _ => Ok(()),
        }
    }

    /// Whether `me` may use `service` on `port`: nobody else uses it, and no other listener or
    /// rule here uses it on another port. `rule`: the rule asking, whose stored form does not
    /// count.
    pub fn available_on(&self, service: &str, port: u16, me: &Owner, rule: Option<&str>) -> Verdict {
        self.available(service, me)?;
        let uses = self.ports.get(service).into_iter().flatten();
        match uses.filter(|(_, by)| by.is_none() || by.as_deref() != rule).find(|(p, _)| *p != port) {
            Some((other, _)) => Err(Refusal::field(
                "services",
                crate::msg!("refusals.services.one_port", service = service, port = other),
            )),
            None => Ok(()),
        }
    }

    /// The Service picker: the namespace's Services minus those used by another owner.
    pub fn candidates<'a>(&self, services: &'a [String], me: &Owner) -> Vec<&'a String> {
        services.iter().filter(|s| self.available(s, me).is_ok()).collect()
    }

    /// Whether ticket `name` may take the form `spec` beside the others recorded here: every
    /// Service it uses is free, and its F5 Ingresses' names are not taken in the namespace.
    /// The refusal names the field of `spec` at fault.
    pub fn admit(mut self, name: &str, spec: &LbticketSpec) -> Verdict {
        for (i, l) in spec.listeners.iter().enumerate() {
            let me = Owner::Listener { ticket: name.into(), listener: l.name.clone() };
            for (j, s) in l.services.iter().enumerate() {
                self.available_on(&s.service, s.port, &me, None)
                    .map_err(|r| Refusal::field(format!("listeners[{i}].services[{j}].service"), r.reason))?;
                self.add_backends(name, &l.name, std::slice::from_ref(s));
            }
        }
        for (i, ingress) in spec.ingresses.iter().enumerate() {
            if let Some(other) = self.ingresses.get(&ingress.name) {
                return Err(Refusal::field(
                    format!("ingresses[{i}].name"),
                    crate::msg!("refusals.ingress.name_taken_in_namespace", name = ingress.name, other = other),
                ));
            }
            let me = Owner::Ingress(ingress.name.clone());
            for (j, route) in ingress.rules.iter().enumerate() {
                self.available(&route.service, &me)
                    .map_err(|r| Refusal::field(format!("ingresses[{i}].rules[{j}].service"), r.reason))?;
                self.add(&route.service, me.clone());
            }
            self.ingresses.insert(ingress.name.clone(), name.to_string());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::crd::{F5Ingress, IngressRule, LbType, Listener, Protocol, Session};

    fn svc(service: &str, port: u16, weight: u32) -> ServiceRef {
        ServiceRef { service: service.into(), port, weight }
    }

    fn listeners(names: &[(&str, &str)]) -> LbticketSpec {
        let listener = |(name, service): &(&str, &str)| Listener {
            name: name.to_string(),
            port: 80,
            protocol: Protocol::Http,
            session: Session::None,
            services: vec![svc(service, 8080, 100)],
        };
        LbticketSpec { listeners: names.iter().map(listener).collect(), ..Default::default() }
    }

    fn ingress(name: &str, service: &str) -> LbticketSpec {
        let route = IngressRule { host: None, path: "/".into(), service: service.into(), port: 80 };
        LbticketSpec {
            lbtype: LbType::Ingress,
            ingresses: vec![F5Ingress { name: name.into(), rules: vec![route], tls_secret: None }],
            ..Default::default()
        }
    }

    #[test]
    fn the_picker_hides_services_of_other_owners() {
        let mut usage = Usage::default();
        usage.add_backends("t1", "web", &[svc("svc01", 8080, 100)]);
        usage.add("svc02", Owner::Ingress("ing".into()));
        let all: Vec<String> = ["svc01", "svc02", "svc03"].map(String::from).to_vec();
        let me = Owner::Listener { ticket: "t1".into(), listener: "web".into() };
        assert_eq!(usage.candidates(&all, &me), [&all[0], &all[2]], "its own stay pickable");
        let other = Owner::Listener { ticket: "t1".into(), listener: "api".into() };
        assert_eq!(usage.candidates(&all, &other), [&all[2]]);
        assert_eq!(
            usage.available("svc01", &other).expect_err("used").reason.to_string(),
            "Service svc01 is already used by listener web of t1."
        );
    }

    #[test]
    fn a_service_serves_one_listener_or_one_ingress_in_its_namespace() {
        let t1 = listeners(&[("web", "svc01")]);
        let t2 = ingress("shop", "svc02");
        let rule = LbruleSpec {
            lbticket: "t1".into(),
            listener: "web".into(),
            services: vec![svc("svc03", 8080, 100)],
            ..Default::default()
        };
        let usage = || Usage::of_namespace([("t1", &t1), ("t2", &t2)], [("r", &rule)], Some("t3"));
        for (what, name, spec, refused_at) in [
            ("a free Service", "t3", listeners(&[("api", "svc04")]), None),
            ("another listener's", "t3", listeners(&[("api", "svc01")]), Some("listeners[0].services[0].service")),
            ("an F5 Ingress's", "t3", listeners(&[("api", "svc02")]), Some("listeners[0].services[0].service")),
            ("a rule's", "t3", listeners(&[("api", "svc03")]), Some("listeners[0].services[0].service")),
            (
                "twice in one request",
                "t3",
                listeners(&[("a", "svc04"), ("b", "svc04")]),
                Some("listeners[1].services[0].service"),
            ),
            ("an ingress on a listener's", "t3", ingress("web2", "svc01"), Some("ingresses[0].rules[0].service")),
            ("a taken Ingress name", "t3", ingress("shop", "svc09"), Some("ingresses[0].name")),
        ] {
            let got = usage().admit(name, &spec).err().and_then(|r| r.field);
            assert_eq!(got.as_deref(), refused_at, "{what}");
        }
        // The request being changed keeps its own Services; the rules on its listeners stay
        // theirs.
        let again = || Usage::of_namespace([("t1", &t1), ("t2", &t2)], [("r", &rule)], Some("t1"));
        assert_eq!(again().admit("t1", &listeners(&[("web", "svc03"), ("api", "svc01")])), Ok(()));
        let taken = again().admit("t1", &listeners(&[("web", "svc01"), ("api", "svc03")]));
        assert_eq!(
            taken.expect_err("the rule's").reason.to_string(),
            "Service svc03 is already used by listener web of t1."
        );
    }

    #[test]
    fn a_service_backs_one_pool_a_listener_and_its_rules_use_it_on_one_port() {
        let t1 = listeners(&[("web", "svc01")]);
        let rule = LbruleSpec {
            lbticket: "t1".into(),
            listener: "web".into(),
            services: vec![svc("svc03", 8080, 100)],
            ..Default::default()
        };
        // What a rule on `web` is checked against (nothing left out).
        let beside = Usage::of_namespace([("t1", &t1)], [("canary", &rule)], None);
        let web = Owner::Listener { ticket: "t1".into(), listener: "web".into() };
        for (what, service, port, asking, allowed) in [
            ("the listener's Service on its port", "svc01", 8080, "other", true),
            ("the listener's Service on another port", "svc01", 8443, "other", false),
            ("another rule's Service on its port", "svc03", 8080, "other", true),
            ("another rule's Service on another port", "svc03", 8443, "other", false),
            ("the rule itself taking its Service to another port", "svc03", 8443, "canary", true),
            ("the rule itself taking the listener's to another port", "svc01", 8443, "canary", false),
            ("a free Service on any port", "svc04", 9000, "other", true),
        ] {
            assert_eq!(beside.available_on(service, port, &web, Some(asking)).is_ok(), allowed, "{what}");
        }
        assert_eq!(
            beside.available_on("svc03", 8443, &web, Some("other")).expect_err("two pools").reason.to_string(),
            "Service svc03 already backs a pool on port 8080 here; CIS puts a Service in one pool only."
        );

        // The request changed: its listener takes the rule's Service to another port, or one
        // Service on two ports.
        let listener = |services: Vec<ServiceRef>| LbticketSpec {
            listeners: vec![Listener {
                name: "web".into(),
                port: 80,
                protocol: Protocol::Http,
                session: Session::None,
                services,
            }],
            ..Default::default()
        };
        let around = || Usage::of_namespace([("t1", &t1)], [("canary", &rule)], Some("t1"));
        for (what, services, refused_at) in [
            ("the rule's Service on its port", vec![svc("svc03", 8080, 100)], None),
            (
                "the rule's Service on another port",
                vec![svc("svc03", 8443, 100)],
                Some("listeners[0].services[0].service"),
            ),
            (
                "one Service on two ports",
                vec![svc("svc01", 8080, 50), svc("svc01", 8443, 50)],
                Some("listeners[0].services[1].service"),
            ),
        ] {
            let got = around().admit("t1", &listener(services)).err().and_then(|r| r.field);
            assert_eq!(got.as_deref(), refused_at, "{what}");
        }
    }
}
