//! Screen 3: listeners (virtual servers) on the addresses of the user's projects, kept in their
//! request's `spec.listeners`. The types both halves share and the server functions are here;
//! their server-side bodies are in `server`, the pages beside it.

mod detail;
mod form;
mod list;
#[cfg(feature = "ssr")]
mod server;

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::components::address::{AddressSummary, ServiceChoice};
use crate::components::list::Page;
use crate::components::preview::Preview;
use crate::domain::crd::{Listener, Protocol, ServiceRef, Session};
use crate::error::AppError;

pub use detail::ListenerDetailPage;
pub use form::ListenerFormPage;
pub use list::Listeners;

crate::lazy_screen!(listeners_screen {
    /// The list's route: the screen's pages load in one browser chunk.
    ListenersRoute => Listeners,
    /// A listener's page.
    ListenerDetailRoute => ListenerDetailPage,
});
crate::lazy_screen!(listeners_form {
    /// The listener form, new or edit.
    ListenerFormRoute => ListenerFormPage,
});

/// A listener as the pages show it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ListenerRow {
    pub name: String,
    pub port: u16,
    pub protocol: Protocol,
    pub session: Session,
    /// Its Services with their weights (the default when no rule matches).
    pub services: Vec<ServiceRef>,
    /// How many rules are on it.
    pub rules: usize,
}

impl ListenerRow {
    /// The row of `listener`, with `rules` rules on it.
    pub fn of(listener: &Listener, rules: usize) -> ListenerRow {
        ListenerRow {
            name: listener.name.clone(),
            port: listener.port,
            protocol: listener.protocol,
            session: listener.session,
            services: listener.services.clone(),
            rules,
        }
    }

    /// The listener the row shows.
    pub fn listener(&self) -> Listener {
        Listener {
            name: self.name.clone(),
            port: self.port,
            protocol: self.protocol,
            session: self.session,
            services: self.services.clone(),
        }
    }
}

/// An address and its listeners (a group of the list).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AddressListeners {
    pub address: AddressSummary,
    /// Why no listener can be added now; `None` when one can.
    pub add: Option<String>,
    pub listeners: Vec<ListenerRow>,
}

/// A listener's page.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ListenerDetail {
    pub address: AddressSummary,
    pub listener: ListenerRow,
    /// Why it cannot be deleted now; `None` when it can.
    pub delete: Option<String>,
    /// Its virtual server as the member cluster's AS3 ConfigMap holds it (pretty JSON), if it
    /// does.
    pub deployed: Option<String>,
    /// Its facts, services, what BIG-IP runs of it and what the member cluster holds: HTML the
    /// server rendered (`detail::body_html`).
    pub body: String,
}

/// What the form offers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ListenerChoices {
    pub address: AddressSummary,
    /// Why no listener can be added now; `None` when one can.
    pub add: Option<String>,
    /// The namespace's Services the listener may use (not used by anyone else).
    pub services: Vec<ServiceChoice>,
    /// The listener edited, when editing.
    pub listener: Option<ListenerRow>,
}

/// The listener form (new, or edit with `generation` set).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ListenerForm {
    /// The address request it goes on.
    pub ticket: String,
    pub name: String,
    pub port: u16,
    pub protocol: Protocol,
    pub session: Session,
    pub services: Vec<ServiceRef>,
    /// Set when editing: the request's spec generation the form was loaded from.
    pub generation: Option<i64>,
}

impl ListenerForm {
    /// The change of its request the form makes.
    #[cfg(feature = "ssr")]
    pub fn edit(&self) -> crate::ssr::change::Edit {
        crate::ssr::change::Edit::PutListener { listener: self.listener(), editing: self.generation.is_some() }
    }

    /// The listener the form describes.
    pub fn listener(&self) -> Listener {
        Listener {
            name: self.name.trim().to_string(),
            port: self.port,
            protocol: self.protocol,
            session: self.session,
            services: self.services.clone(),
        }
    }
}

/// How a protocol reads on the pages.
pub fn protocol_label(p: Protocol) -> &'static str {
    match p {
        Protocol::Http => "HTTP",
        Protocol::Https => "HTTPS",
        Protocol::Tcp => "TCP",
        Protocol::Udp => "UDP",
    }
}

/// How a persistence reads on the pages.
fn session_label(s: Session) -> &'static str {
    match s {
        Session::Cookie => crate::i18n::t("listeners.session.cookie"),
        Session::SourceAddress => crate::i18n::t("listeners.session.source_address"),
        Session::None => crate::i18n::t("listeners.session.none"),
    }
}

/// A persistence as the form's select names it (its YAML name: the same in every language).
fn session_value(s: Session) -> &'static str {
    match s {
        Session::Cookie => "cookie",
        Session::SourceAddress => "source-address",
        Session::None => "none",
    }
}

/// The listeners of the current project's addresses (an admin: of `project`, or all when
/// empty), grouped by address, a page of addresses after `after` (a cursor; empty:
/// the first).
#[server(prefix = "/api", endpoint = "listener/list", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn list_listeners(project: String, after: String) -> Result<Page<AddressListeners>, AppError> {
    crate::ssr::reply(server::list(&project, &after).await)
}

/// One listener, with what the member cluster holds of it.
#[server(prefix = "/api", endpoint = "listener/get", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn get_listener(ticket: String, name: String) -> Result<ListenerDetail, AppError> {
    crate::ssr::reply(server::detail(&ticket, &name).await)
}

/// What the form on `ticket` offers (`name`: the listener edited, empty for a new one).
#[server(prefix = "/api", endpoint = "listener/choices", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn listener_form_choices(ticket: String, name: String) -> Result<ListenerChoices, AppError> {
    crate::ssr::reply(server::choices(&ticket, &name).await)
}

/// The AS3 declaration as the form would make it, and its diff against the deployed one.
#[server(prefix = "/api", endpoint = "listener/preview", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn preview_listener(form: ListenerForm) -> Result<Preview, AppError> {
    crate::ssr::reply(server::preview(form).await)
}

/// Adds or edits a listener; returns its name.
#[server(prefix = "/api", endpoint = "listener/save", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn save_listener(form: ListenerForm) -> Result<String, AppError> {
    crate::ssr::reply(server::save(form).await)
}

/// Deletes a listener.
#[server(prefix = "/api", endpoint = "listener/delete", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn delete_listener(ticket: String, name: String) -> Result<(), AppError> {
    crate::ssr::reply(server::delete(&ticket, &name).await)
}
