//! Who may do what (DESIGN §9): the one authorization rule. The navigation, every server
//! function (through `ssr::guard`) and admission ask it; nothing else decides access.

/// Who is asking.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Principal {
    /// No session, or a token nobody issued.
    Anonymous,
    /// A platform admin: everything.
    Admin { name: String },
    /// A tenant user: the objects of their projects; load balancers only as choices.
    Tenant { name: String, projects: Vec<String> },
    /// lbdesk itself (its web layer and reconciler): it has already asked for its users.
    System,
}

impl Principal {
    /// The name written to the audit log.
    pub fn name(&self) -> &str {
        match self {
            Principal::Anonymous => "anonymous",
            Principal::Admin { name } | Principal::Tenant { name, .. } => name,
            Principal::System => "system:lbdesk",
        }
    }
}

/// What the principal wants to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    /// List a kind, or see one object.
    Read,
    /// Create, change, enable, disable or delete.
    Write,
}

/// What it is wanted on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target<'a> {
    /// The desk itself: the screens every signed-in user works in (their lists show only what
    /// the user may see).
    Desk,
    /// Load balancers as objects (screen 1, their credentials, their address lists).
    Loadbalancers,
    /// The load balancers a project may request addresses on, as choices in a form.
    LoadbalancerChoices,
    /// Objects of a project: address requests, listeners, rules, F5 Ingresses, their audit
    /// entries; also working in the project (switching to it).
    Project(&'a str),
    /// An object that belongs to no project (a ticket written without its project label):
    /// only admins see it.
    Unowned,
    /// Every project's objects at once (the all-projects lists, the whole audit log).
    AllProjects,
    /// The accounts and their sessions (ending a user's sessions).
    Accounts,
}

/// The answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    /// Not signed in.
    Unauthenticated,
    /// Signed in, not allowed, and allowed to know that it exists (the reason is for the user).
    Forbidden(crate::i18n::Msg),
    /// Signed in and not allowed to know it exists: answer as for an object that is not there.
    NotFound,
}

impl Verdict {
    pub fn allowed(&self) -> bool {
        *self == Verdict::Allow
    }
}

/// Whether `principal` may `verb` the `target`.
pub fn authorize(principal: &Principal, verb: Verb, target: Target<'_>) -> Verdict {
    let projects = match principal {
        Principal::Anonymous => return Verdict::Unauthenticated,
        Principal::Admin { .. } | Principal::System => return Verdict::Allow,
        Principal::Tenant { projects, .. } => projects,
    };
    match (target, verb) {
        (Target::Loadbalancers | Target::AllProjects | Target::Accounts, _) => admins_only(),
        (Target::Desk | Target::LoadbalancerChoices, Verb::Read) => Verdict::Allow,
        (Target::Desk | Target::LoadbalancerChoices, Verb::Write) => admins_only(),
        (Target::Project(p), _) if projects.iter().any(|m| m == p) => Verdict::Allow,
        // NB: another project's objects, and ownerless ones, are "not there" to a tenant: no
        // name, address or phase leaks through a different answer.
        (Target::Project(_) | Target::Unowned, _) => Verdict::NotFound,
    }
}

fn admins_only() -> Verdict {
    Verdict::Forbidden(crate::msg!("refusals.admins_only"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table() {
        let admin = Principal::Admin { name: "root".into() };
        let alice = Principal::Tenant { name: "alice".into(), projects: vec!["project-a".into()] };
        let none = Principal::Tenant { name: "nobody".into(), projects: vec![] };
        use Verb::{Read, Write};
        let admins = admins_only();
        assert!(matches!(&admins, Verdict::Forbidden(said) if said.to_string() == "This is for platform admins."));
        let cases: Vec<(&Principal, Verb, Target, Verdict)> = vec![
            (&Principal::Anonymous, Read, Target::Project("project-a"), Verdict::Unauthenticated),
            (&Principal::Anonymous, Read, Target::LoadbalancerChoices, Verdict::Unauthenticated),
            (&Principal::Anonymous, Write, Target::Loadbalancers, Verdict::Unauthenticated),
            (&admin, Read, Target::Loadbalancers, Verdict::Allow),
            (&admin, Write, Target::Loadbalancers, Verdict::Allow),
            (&admin, Write, Target::Project("project-b"), Verdict::Allow),
            (&admin, Read, Target::Unowned, Verdict::Allow),
            (&admin, Read, Target::AllProjects, Verdict::Allow),
            (&Principal::System, Write, Target::Unowned, Verdict::Allow),
            (&alice, Read, Target::Loadbalancers, admins.clone()),
            (&alice, Write, Target::Loadbalancers, admins.clone()),
            (&alice, Read, Target::LoadbalancerChoices, Verdict::Allow),
            (&alice, Read, Target::Desk, Verdict::Allow),
            (&Principal::Anonymous, Read, Target::Desk, Verdict::Unauthenticated),
            (&alice, Write, Target::LoadbalancerChoices, admins.clone()),
            (&alice, Read, Target::Project("project-a"), Verdict::Allow),
            (&alice, Write, Target::Project("project-a"), Verdict::Allow),
            (&alice, Read, Target::Project("project-b"), Verdict::NotFound),
            (&alice, Write, Target::Project("project-b"), Verdict::NotFound),
            (&alice, Read, Target::Project("project-a-x"), Verdict::NotFound),
            (&alice, Read, Target::Unowned, Verdict::NotFound),
            (&alice, Read, Target::AllProjects, admins.clone()),
            (&alice, Read, Target::Accounts, admins.clone()),
            (&alice, Write, Target::Accounts, admins.clone()),
            (&admin, Write, Target::Accounts, Verdict::Allow),
            (&Principal::Anonymous, Read, Target::Accounts, Verdict::Unauthenticated),
            (&none, Read, Target::Project(""), Verdict::NotFound),
            (&none, Read, Target::LoadbalancerChoices, Verdict::Allow),
        ];
        for (who, verb, target, want) in cases {
            assert_eq!(authorize(who, verb, target), want, "{who:?} {verb:?} {target:?}");
        }
    }

    #[test]
    fn names_for_the_audit_log() {
        assert_eq!(Principal::System.name(), "system:lbdesk");
        assert_eq!(Principal::Tenant { name: "alice".into(), projects: vec![] }.name(), "alice");
        assert_eq!(Principal::Anonymous.name(), "anonymous");
    }
}
