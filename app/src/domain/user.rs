//! Who is signed in, as every layer sees it: a role, the projects, the project chosen now.

use serde::{Deserialize, Serialize};

use crate::domain::access::{Principal, Target, Verb, authorize};

/// A user's role.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Role {
    /// Sees and does everything, including Loadbalancers.
    Admin,
    /// Works only in the projects they belong to.
    Tenant,
}

impl Role {
    /// The name shown beside the user.
    pub fn label(self) -> &'static str {
        match self {
            Role::Admin => "Platform admin",
            Role::Tenant => "Tenant user",
        }
    }

    /// The key of its words in the console's dictionaries.
    pub fn word_key(self) -> &'static str {
        match self {
            Role::Admin => "common.role.admin",
            Role::Tenant => "common.role.tenant",
        }
    }
}

/// The namespaces of a project: (cluster, namespace) pairs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scope {
    pub namespaces: Vec<(String, String)>,
}

/// The signed-in user as the pages see them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CurrentUser {
    pub username: String,
    pub display_name: String,
    pub role: Role,
    /// Projects the user may switch to (an admin: all of them).
    pub projects: Vec<String>,
    /// The project the user works in now.
    pub project: Option<String>,
}

impl CurrentUser {
    /// Whether the user may `verb` the `target` (what the pages offer; the server asks again).
    pub fn may(&self, verb: Verb, target: Target<'_>) -> bool {
        authorize(&self.principal(), verb, target).allowed()
    }

    /// The user as the authorization rule sees them.
    pub fn principal(&self) -> Principal {
        match self.role {
            Role::Admin => Principal::Admin { name: self.username.clone() },
            Role::Tenant => Principal::Tenant { name: self.username.clone(), projects: self.projects.clone() },
        }
    }
}
