//! Screen 5: F5 Ingresses on the addresses of the user's projects, kept in their request's
//! `spec.ingresses` and written by the reconciler as Kubernetes Ingresses that F5 CIS serves.
//! The types both halves share and the server functions are here; their server-side bodies are
//! in `server`, the pages beside it.

mod detail;
mod form;
mod list;
mod parts;
#[cfg(feature = "ssr")]
mod server;

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::components::address::{AddressSummary, ServiceChoice};
use crate::components::list::Page;
use crate::domain::crd::{F5Ingress, IngressRule};
use crate::error::AppError;

pub use detail::IngressDetailPage;
pub use form::IngressFormPage;
pub use list::Ingresses;

crate::lazy_screen!(ingresses_screen {
    /// The list's route: the screen's pages load in one browser chunk.
    IngressesRoute => Ingresses,
    /// An F5 Ingress's page.
    IngressDetailRoute => IngressDetailPage,
});
crate::lazy_screen!(ingresses_form {
    /// The F5 Ingress form, new or edit.
    IngressFormRoute => IngressFormPage,
});

/// An address and its F5 Ingresses (a group of the list).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AddressIngresses {
    pub address: AddressSummary,
    /// Why no F5 Ingress can be added now; `None` when one can.
    pub add: Option<String>,
    pub ingresses: Vec<F5Ingress>,
}

/// The CIS side of an F5 Ingress: what lbdesk writes besides its routes. Computed on the
/// server (`cis_ingress::annotations`, the reconciler's), so the pages only show text.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Cis {
    /// The ingress class CIS watches.
    pub class: String,
    /// The annotations, one `key: value` a line: without TLS, and with TLS.
    pub annotations: [String; 2],
}

impl Cis {
    /// The annotations an Ingress gets, with TLS or without.
    pub fn annotations(&self, tls: bool) -> &str {
        &self.annotations[usize::from(tls)]
    }
}

/// An F5 Ingress's page.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IngressDetail {
    pub address: AddressSummary,
    pub ingress: F5Ingress,
    /// Why it cannot be changed now; `None` when it can.
    pub edit: Option<String>,
    pub cis: Cis,
    /// The Ingress as the member cluster holds it now (its annotations, class and labels, as
    /// pretty JSON), if it does.
    pub deployed: Option<String>,
    /// Its facts, routes, CIS annotations and what the member cluster holds: HTML the server
    /// rendered (`detail::body_html`).
    pub body: String,
}

/// What the form offers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IngressChoices {
    pub address: AddressSummary,
    /// Why no F5 Ingress can be added or changed now; `None` when one can.
    pub add: Option<String>,
    /// The namespace's Services the Ingress may route to (not used by anyone else).
    pub services: Vec<ServiceChoice>,
    /// The names of the namespace's TLS Secrets (never their data).
    pub secrets: Vec<String>,
    pub cis: Cis,
    /// The F5 Ingress edited, when editing.
    pub ingress: Option<F5Ingress>,
}

/// The F5 Ingress form (new, or edit with `generation` set).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IngressForm {
    /// The address request it goes on.
    pub ticket: String,
    pub name: String,
    pub rules: Vec<IngressRule>,
    /// A TLS Secret of the namespace; empty or absent for plain HTTP.
    pub tls_secret: Option<String>,
    /// Set when editing: the request's spec generation the form was loaded from.
    pub generation: Option<i64>,
}

impl IngressForm {
    /// The change of its request the form makes.
    #[cfg(feature = "ssr")]
    pub fn edit(&self) -> crate::ssr::change::Edit {
        crate::ssr::change::Edit::PutIngress { ingress: self.ingress(), editing: self.generation.is_some() }
    }

    /// The F5 Ingress the form describes: blank hosts are every host, a blank path is `/`.
    pub fn ingress(&self) -> F5Ingress {
        let rules = self.rules.iter().map(|r| IngressRule {
            host: r.host.as_deref().map(str::trim).filter(|h| !h.is_empty()).map(String::from),
            path: Some(r.path.trim()).filter(|p| !p.is_empty()).unwrap_or("/").to_string(),
            service: r.service.clone(),
            port: r.port,
        });
        F5Ingress {
            name: self.name.trim().to_string(),
            rules: rules.collect(),
            tls_secret: self.tls_secret.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(String::from),
        }
    }
}

/// The hosts an Ingress's routes match, as the pages show them.
fn hosts(ingress: &F5Ingress) -> String {
    let mut hosts: Vec<&str> = ingress.rules.iter().map(|r| r.host.as_deref().unwrap_or("*")).collect();
    hosts.dedup();
    hosts.join(", ")
}

/// The F5 Ingresses of the current project's addresses (an admin: of `project`, or all when
/// empty), grouped by address, a page of addresses after `after` (a cursor; empty:
/// the first).
#[server(prefix = "/api", endpoint = "ingress/list", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn list_ingresses(project: String, after: String) -> Result<Page<AddressIngresses>, AppError> {
    crate::ssr::reply(server::list(&project, &after).await)
}

/// One F5 Ingress, with what the member cluster holds of it.
#[server(prefix = "/api", endpoint = "ingress/get", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn get_ingress(ticket: String, name: String) -> Result<IngressDetail, AppError> {
    crate::ssr::reply(server::detail(&ticket, &name).await)
}

/// What the form on `ticket` offers (`name`: the F5 Ingress edited, empty for a new one).
#[server(prefix = "/api", endpoint = "ingress/choices", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn ingress_form_choices(ticket: String, name: String) -> Result<IngressChoices, AppError> {
    crate::ssr::reply(server::choices(&ticket, &name).await)
}

/// Adds or edits an F5 Ingress; returns its name.
#[server(prefix = "/api", endpoint = "ingress/save", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn save_ingress(form: IngressForm) -> Result<String, AppError> {
    crate::ssr::reply(server::save(form).await)
}

/// Deletes an F5 Ingress.
#[server(prefix = "/api", endpoint = "ingress/delete", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn delete_ingress(ticket: String, name: String) -> Result<(), AppError> {
    crate::ssr::reply(server::delete(&ticket, &name).await)
}
