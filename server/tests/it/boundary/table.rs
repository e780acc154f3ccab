//! The boundary suite's table: every server function, who may call it, arguments aimed at
//! project-b's request, and the arguments a wrong-typed or oversized call names.

use app::domain::crd::{IngressRule, Operator, RuleCondition, RuleType, RuleValue, ServiceRef};
use app::screens::ingresses::IngressForm;
use app::screens::listeners::ListenerForm;
use app::screens::rules::RuleForm;
use app::screens::tickets::TicketForm;
use serde_json::{Value, json};

use crate::helpers::lb_form;

/// Who may call a server function.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Access {
    /// Anyone (sign-in; sign-out, which a session ended elsewhere still needs).
    Public,
    /// Anyone signed in; answers only with the caller's own things.
    Desk,
    /// Platform admins.
    Admin,
    /// Tenants, on their projects' objects.
    Project,
}

/// The type an argument has, so a test can send it the wrong one.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Ty {
    Str,
    /// A name or search term: bounded, so a huge one is refused naming it.
    Bounded,
    Enum,
    Struct,
}

#[derive(Clone, Copy)]
pub(crate) struct Case {
    pub(crate) path: &'static str,
    pub(crate) access: Access,
    /// Arguments aimed at project-b's request `b-secret` (or harmless ones).
    pub(crate) args: fn() -> Value,
    /// Top-level and nested arguments (dotted paths), for the wrong-typed and oversized calls,
    /// with the field a refusal names (a form's fields as the page names them).
    pub(crate) fields: &'static [(&'static str, Ty, &'static str)],
    /// Whether the form encoding is what the function reads (sign-in and sign-out, which work
    /// before the page has hydrated).
    pub(crate) form_encoded: bool,
}

pub(crate) const SECRET_TICKET: &str = "b-secret";
pub(crate) const SECRET_VEIP: &str = "20.1.0.77";

pub(crate) fn ticket_form(name: &str) -> TicketForm {
    TicketForm {
        name: name.into(),
        cluster: "acp-region01".into(),
        namespace: "team-b".into(),
        loadbalancer: "demo".into(),
        veip: SECRET_VEIP.into(),
        ..Default::default()
    }
}

fn listener_form(ticket: &str) -> ListenerForm {
    ListenerForm {
        ticket: ticket.into(),
        name: "web".into(),
        port: 80,
        services: vec![ServiceRef { service: "svc01".into(), port: 8080, weight: 100 }],
        ..Default::default()
    }
}

const LISTENER_FORM_FIELDS: &[(&str, Ty, &str)] = &[
    ("form", Ty::Struct, "form"),
    ("form.ticket", Ty::Bounded, "ticket"),
    ("form.name", Ty::Bounded, "name"),
    ("form.protocol", Ty::Enum, "protocol"),
];

fn ingress_form(ticket: &str) -> IngressForm {
    IngressForm {
        ticket: ticket.into(),
        name: "shop".into(),
        rules: vec![IngressRule { host: None, path: "/".into(), service: "svc01".into(), port: 8080 }],
        ..Default::default()
    }
}

fn rule_form(ticket: &str) -> RuleForm {
    RuleForm {
        ticket: ticket.into(),
        listener: "web".into(),
        name: "canary".into(),
        conditions: vec![RuleCondition {
            type_: RuleType::Header,
            key: Some("X-Canary".into()),
            values: vec![RuleValue { operator: Operator::Equal, value: "1".into() }],
        }],
        services: vec![ServiceRef { service: "svc01".into(), port: 8080, weight: 100 }],
        ..Default::default()
    }
}

const RULE_FORM_FIELDS: &[(&str, Ty, &str)] = &[
    ("form", Ty::Struct, "form"),
    ("form.ticket", Ty::Bounded, "ticket"),
    ("form.listener", Ty::Bounded, "listener"),
    ("form.name", Ty::Bounded, "name"),
    ("form.match_", Ty::Enum, "match_"),
];

const RULE_KEYS: &[(&str, Ty, &str)] =
    &[("ticket", Ty::Bounded, "ticket"), ("listener", Ty::Bounded, "listener"), ("name", Ty::Bounded, "name")];

const INGRESS_FORM_FIELDS: &[(&str, Ty, &str)] =
    &[("form", Ty::Struct, "form"), ("form.ticket", Ty::Bounded, "ticket"), ("form.name", Ty::Bounded, "name")];

pub(crate) const TABLE: &[Case] = &[
    Case {
        path: "/api/login",
        access: Access::Public,
        args: || json!({"username": "alice", "password": "wrong"}),
        fields: &[("username", Ty::Str, "username"), ("password", Ty::Str, "password")],
        form_encoded: true,
    },
    Case { path: "/api/logout", access: Access::Public, args: || json!({}), fields: &[], form_encoded: true },
    Case {
        path: "/api/locale",
        access: Access::Public,
        args: || json!({"locale": "en"}),
        fields: &[("locale", Ty::Bounded, "locale")],
        form_encoded: false,
    },
    Case { path: "/api/me", access: Access::Desk, args: || json!({}), fields: &[], form_encoded: false },
    Case {
        path: "/api/switch-project",
        access: Access::Project,
        args: || json!({"project": "project-b"}),
        fields: &[("project", Ty::Bounded, "project")],
        form_encoded: false,
    },
    Case {
        path: "/api/lb/list",
        access: Access::Admin,
        args: || json!({"search": ""}),
        fields: &[("search", Ty::Bounded, "search")],
        form_encoded: false,
    },
    Case {
        path: "/api/lb/get",
        access: Access::Admin,
        args: || json!({"name": "demo"}),
        fields: &[("name", Ty::Bounded, "name")],
        form_encoded: false,
    },
    Case {
        path: "/api/lb/pairs",
        access: Access::Admin,
        args: || json!({"name": "demo", "search": "", "after": ""}),
        fields: &[("name", Ty::Bounded, "name"), ("search", Ty::Bounded, "search"), ("after", Ty::Bounded, "after")],
        form_encoded: false,
    },
    Case {
        path: "/api/lb/save",
        access: Access::Admin,
        args: || json!({"form": lb_form("demo")}),
        fields: &[
            ("form", Ty::Struct, "form"),
            ("form.name", Ty::Bounded, "metadata.name"),
            ("form.ltm_token", Ty::Bounded, "ltm.token"),
        ],
        form_encoded: false,
    },
    Case {
        path: "/api/lb/delete",
        access: Access::Admin,
        args: || json!({"name": "demo"}),
        fields: &[("name", Ty::Bounded, "name")],
        form_encoded: false,
    },
    Case { path: "/api/lb/choices", access: Access::Admin, args: || json!({}), fields: &[], form_encoded: false },
    Case {
        path: "/api/ticket/list",
        access: Access::Desk,
        args: || json!({"project": "project-b"}),
        fields: &[("project", Ty::Bounded, "project")],
        form_encoded: false,
    },
    Case {
        path: "/api/ticket/get",
        access: Access::Project,
        args: || json!({"name": SECRET_TICKET}),
        fields: &[("name", Ty::Bounded, "name")],
        form_encoded: false,
    },
    Case { path: "/api/ticket/choices", access: Access::Desk, args: || json!({}), fields: &[], form_encoded: false },
    Case {
        path: "/api/ticket/check-address",
        access: Access::Project,
        args: || json!({"loadbalancer": "demo", "side": "ve", "address": SECRET_VEIP, "ticket": SECRET_TICKET}),
        fields: &[
            ("loadbalancer", Ty::Bounded, "loadbalancer"),
            ("side", Ty::Enum, "side"),
            ("address", Ty::Bounded, "veip"),
            ("ticket", Ty::Str, "ticket"),
        ],
        form_encoded: false,
    },
    Case {
        path: "/api/ticket/save",
        access: Access::Project,
        args: || json!({"form": TicketForm { generation: Some(1), ..ticket_form(SECRET_TICKET) }}),
        fields: &[
            ("form", Ty::Struct, "form"),
            ("form.name", Ty::Bounded, "name"),
            ("form.lbtype", Ty::Enum, "lbtype"),
        ],
        form_encoded: false,
    },
    Case {
        path: "/api/ticket/act",
        access: Access::Project,
        args: || json!({"name": SECRET_TICKET, "action": "Disable"}),
        fields: &[("name", Ty::Bounded, "name"), ("action", Ty::Enum, "action")],
        form_encoded: false,
    },
    Case {
        path: "/api/listener/list",
        access: Access::Desk,
        args: || json!({"project": "project-b", "after": ""}),
        fields: &[("project", Ty::Bounded, "project"), ("after", Ty::Bounded, "after")],
        form_encoded: false,
    },
    Case {
        path: "/api/listener/get",
        access: Access::Project,
        args: || json!({"ticket": SECRET_TICKET, "name": "web"}),
        fields: &[("ticket", Ty::Bounded, "ticket"), ("name", Ty::Bounded, "name")],
        form_encoded: false,
    },
    Case {
        path: "/api/bigip/read",
        access: Access::Project,
        args: || json!({"ticket": SECRET_TICKET}),
        fields: &[("ticket", Ty::Bounded, "ticket")],
        // NB: the "Read BIG-IP now" button is a plain form.
        form_encoded: true,
    },
    Case {
        path: "/api/listener/choices",
        access: Access::Project,
        args: || json!({"ticket": SECRET_TICKET, "name": ""}),
        fields: &[("ticket", Ty::Bounded, "ticket"), ("name", Ty::Bounded, "name")],
        form_encoded: false,
    },
    Case {
        path: "/api/listener/preview",
        access: Access::Project,
        args: || json!({"form": listener_form(SECRET_TICKET)}),
        fields: LISTENER_FORM_FIELDS,
        form_encoded: false,
    },
    Case {
        path: "/api/listener/save",
        access: Access::Project,
        args: || json!({"form": listener_form(SECRET_TICKET)}),
        fields: LISTENER_FORM_FIELDS,
        form_encoded: false,
    },
    Case {
        path: "/api/listener/delete",
        access: Access::Project,
        args: || json!({"ticket": SECRET_TICKET, "name": "web"}),
        fields: &[("ticket", Ty::Bounded, "ticket"), ("name", Ty::Bounded, "name")],
        form_encoded: false,
    },
    Case {
        path: "/api/rule/listener",
        access: Access::Project,
        args: || json!({"ticket": SECRET_TICKET, "listener": "web"}),
        fields: &[("ticket", Ty::Bounded, "ticket"), ("listener", Ty::Bounded, "listener")],
        form_encoded: false,
    },
    Case {
        path: "/api/rule/get",
        access: Access::Project,
        args: || json!({"ticket": SECRET_TICKET, "listener": "web", "name": "canary"}),
        fields: RULE_KEYS,
        form_encoded: false,
    },
    Case {
        path: "/api/rule/choices",
        access: Access::Project,
        args: || json!({"ticket": SECRET_TICKET, "listener": "web", "name": ""}),
        fields: RULE_KEYS,
        form_encoded: false,
    },
    Case {
        path: "/api/rule/preview",
        access: Access::Project,
        args: || json!({"form": rule_form(SECRET_TICKET)}),
        fields: RULE_FORM_FIELDS,
        form_encoded: false,
    },
    Case {
        path: "/api/rule/save",
        access: Access::Project,
        args: || json!({"form": rule_form(SECRET_TICKET)}),
        fields: RULE_FORM_FIELDS,
        form_encoded: false,
    },
    Case {
        path: "/api/rule/delete",
        access: Access::Project,
        args: || json!({"ticket": SECRET_TICKET, "listener": "web", "name": "canary"}),
        fields: RULE_KEYS,
        form_encoded: false,
    },
    Case {
        path: "/api/rule/shift",
        access: Access::Project,
        args: || json!({"ticket": SECRET_TICKET, "listener": "web", "name": "canary", "version": "1", "second": 25}),
        fields: &[
            ("ticket", Ty::Bounded, "ticket"),
            ("listener", Ty::Bounded, "listener"),
            ("name", Ty::Bounded, "name"),
            ("version", Ty::Str, "version"),
            ("second", Ty::Enum, "second"),
        ],
        form_encoded: false,
    },
    Case {
        path: "/api/rule/move",
        access: Access::Project,
        args: || json!({"ticket": SECRET_TICKET, "listener": "web", "name": "canary", "up": true}),
        fields: &[
            ("ticket", Ty::Bounded, "ticket"),
            ("listener", Ty::Bounded, "listener"),
            ("name", Ty::Bounded, "name"),
            ("up", Ty::Enum, "up"),
        ],
        form_encoded: false,
    },
    Case {
        path: "/api/ingress/list",
        access: Access::Desk,
        args: || json!({"project": "project-b", "after": ""}),
        fields: &[("project", Ty::Bounded, "project"), ("after", Ty::Bounded, "after")],
        form_encoded: false,
    },
    Case {
        path: "/api/ingress/get",
        access: Access::Project,
        args: || json!({"ticket": SECRET_TICKET, "name": "shop"}),
        fields: &[("ticket", Ty::Bounded, "ticket"), ("name", Ty::Bounded, "name")],
        form_encoded: false,
    },
    Case {
        path: "/api/ingress/choices",
        access: Access::Project,
        args: || json!({"ticket": SECRET_TICKET, "name": ""}),
        fields: &[("ticket", Ty::Bounded, "ticket"), ("name", Ty::Bounded, "name")],
        form_encoded: false,
    },
    Case {
        path: "/api/ingress/save",
        access: Access::Project,
        args: || json!({"form": ingress_form(SECRET_TICKET)}),
        fields: INGRESS_FORM_FIELDS,
        form_encoded: false,
    },
    Case {
        path: "/api/ingress/delete",
        access: Access::Project,
        args: || json!({"ticket": SECRET_TICKET, "name": "shop"}),
        fields: &[("ticket", Ty::Bounded, "ticket"), ("name", Ty::Bounded, "name")],
        form_encoded: false,
    },
    Case {
        path: "/api/audit/list",
        access: Access::Desk,
        args: || json!({"query": {"user": "", "object": SECRET_TICKET, "kind": "", "action": "", "from": "", "to": "", "cursor": ""}}),
        fields: &[
            ("query", Ty::Struct, "query"),
            ("query.object", Ty::Bounded, "object"),
            ("query.cursor", Ty::Bounded, "cursor"),
        ],
        form_encoded: false,
    },
    Case { path: "/api/users/list", access: Access::Admin, args: || json!({}), fields: &[], form_encoded: false },
    Case {
        path: "/api/quota/save",
        access: Access::Admin,
        args: || json!({"form": {"project": "project-b", "addresses": "1", "listeners": "", "rules": "", "ingresses": "", "declaration_kib": "", "version": null}}),
        fields: &[
            ("form", Ty::Struct, "form"),
            ("form.project", Ty::Bounded, "project"),
            ("form.rules", Ty::Bounded, "rules"),
        ],
        form_encoded: false,
    },
    Case {
        path: "/api/users/end-sessions",
        access: Access::Admin,
        args: || json!({"username": "bob"}),
        fields: &[("username", Ty::Bounded, "username")],
        form_encoded: false,
    },
];

pub(crate) fn case(path: &str) -> &'static Case {
    TABLE.iter().find(|c| c.path == path).unwrap_or_else(|| {
        panic!("the server function {path} has no entry in the boundary table (server/tests/it/boundary/table.rs)")
    })
}
