//! `/listeners/:ticket/:name`: one listener, what BIG-IP runs of it (with its pools' members),
//! and its virtual server as the member cluster's AS3 ConfigMap holds it; updating itself until
//! the cluster carries the current version.

use leptos::prelude::*;

use super::{DeleteListener, ListenerDetail, get_listener};
use crate::components::address::{ThingHead, live_on_address};
use crate::components::form::{action_error, navigate_on_success};
use crate::components::loaded::Loaded;
use crate::components::server_html::ServerHtml;

#[cfg(feature = "ssr")]
pub use body::body_html;

/// `/listeners/:ticket/:name`
#[component]
pub fn ListenerDetailPage() -> impl IntoView {
    let detail = live_on_address(get_listener, |d: &ListenerDetail| &d.address);
    view! { <Loaded resource=detail show=|d| view! { <ListenerBody d /> }.into_any() /> }
}

#[component]
fn ListenerBody(d: ListenerDetail) -> impl IntoView {
    let (ticket, name) = (d.address.ticket.clone(), d.listener.name.clone());
    let delete = ServerAction::<DeleteListener>::new();
    navigate_on_success(delete, |_| "/listeners".to_string());
    view! {
        <ThingHead title=crate::tf!("listeners.detail.title", name = name) address=d.address.clone()
            edit_href=format!("/listeners/{ticket}/{name}/edit") edit=None
            question=crate::tf!("listeners.detail.delete_question", name = name)
            delete=d.delete.clone() error=action_error(delete)
            on_delete=move |_| { delete.dispatch(DeleteListener { ticket: ticket.clone(), name: name.clone() }); } />
        <ServerHtml html=d.body.clone() />
    }
}

/// The static part of the page, rendered by the server.
#[cfg(feature = "ssr")]
mod body {
    use leptos::prelude::*;

    use super::super::{ListenerDetail, protocol_label, session_label};
    use crate::components::address::{Deployed, SplitBar};
    use crate::components::list::table;
    use crate::i18n::t;

    /// The listener's facts, services, what BIG-IP runs of it (`on_bigip`, HTML) and what the member
    /// cluster holds, as HTML. NB: static, so rendered by the server (escaped by Leptos's renderer,
    /// like every page) and only placed by the browser: its code stays out of the bundle.
    pub fn body_html(d: &ListenerDetail, on_bigip: String) -> String {
        let l = d.listener.clone();
        let d = d.clone();
        view! {
            <dl class="facts">
                <dt>{t("listeners.field.port")}</dt><dd>{l.port}</dd>
                <dt>{t("listeners.field.protocol")}</dt><dd>{protocol_label(l.protocol)}</dd>
                <dt>{t("listeners.field.persistence")}</dt><dd>{session_label(l.session)}</dd>
                <dt>{t("listeners.field.rules")}</dt><dd><a href=format!("/rules/{}/{}", d.address.ticket, l.name)>{rules_label(l.rules)}</a></dd>
            </dl>
            <h2>{t("common.services")}</h2>
            <SplitBar services=l.services.clone() />
            {table(&["listeners.col.service", "listeners.field.port", "listeners.col.weight"], l.services.clone(), |s| view! {
                <tr><td translate="no">{s.service.clone()}</td><td>{s.port}</td><td>{format!("{}%", s.weight)}</td></tr>
            })}
            <div inner_html=on_bigip></div>
            <Deployed deployed=d.deployed.clone() held=t("listeners.detail.held")
                missing=t("listeners.detail.missing") />
        }
        .to_html()
    }

    /// The link to a listener's rules.
    fn rules_label(n: usize) -> String {
        match n {
            0 => t("listeners.detail.no_rules").into(),
            n => crate::tf!("listeners.detail.rules", n = n),
        }
    }
}
