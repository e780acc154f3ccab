//! `/ingresses/:ticket/:name`: one F5 Ingress, the CIS annotations lbdesk gives it, and the
//! Ingress as the member cluster holds it; updating itself until the cluster carries the
//! current version.

use leptos::prelude::*;

use super::{DeleteIngress, IngressDetail, get_ingress};
use crate::components::address::{ThingHead, live_on_address};
use crate::components::form::{action_error, navigate_on_success};
use crate::components::loaded::Loaded;
use crate::components::server_html::ServerHtml;

#[cfg(feature = "ssr")]
pub use body::body_html;

/// `/ingresses/:ticket/:name`
#[component]
pub fn IngressDetailPage() -> impl IntoView {
    let detail = live_on_address(get_ingress, |d: &IngressDetail| &d.address);
    view! { <Loaded resource=detail show=|d| view! { <IngressBody d /> }.into_any() /> }
}

#[component]
fn IngressBody(d: IngressDetail) -> impl IntoView {
    let (ticket, name) = (d.address.ticket.clone(), d.ingress.name.clone());
    let delete = ServerAction::<DeleteIngress>::new();
    navigate_on_success(delete, |_| "/ingresses".to_string());
    view! {
        <ThingHead title=crate::tf!("ingresses.detail.title", name = name) address=d.address.clone()
            edit_href=format!("/ingresses/{ticket}/{name}/edit") edit=d.edit.clone()
            question=crate::tf!("ingresses.detail.delete_question", name = name)
            delete=None error=action_error(delete)
            on_delete=move |_| { delete.dispatch(DeleteIngress { ticket: ticket.clone(), name: name.clone() }); } />
        <ServerHtml html=d.body.clone() />
    }
}

/// The static part of the page, rendered by the server.
#[cfg(feature = "ssr")]
mod body {
    use leptos::prelude::*;

    use super::super::parts::CisAnnotations;
    use super::super::{IngressDetail, hosts};
    use crate::components::address::Deployed;
    use crate::components::list::table;
    use crate::i18n::t;

    /// The F5 Ingress's facts, routes, CIS annotations, what BIG-IP runs of it (`on_bigip`,
    /// HTML) and what the member cluster holds, as HTML. NB: static, so rendered by the server (escaped by Leptos's renderer, like every
    /// page) and only placed by the browser: its code stays out of the bundle.
    pub fn body_html(d: &IngressDetail, on_bigip: String) -> String {
        let d = d.clone();
        let annotations = d.cis.annotations(d.ingress.tls_secret.is_some()).to_string();
        view! {
        <dl class="facts">
            <dt>{t("ingresses.col.hosts")}</dt><dd>{hosts(&d.ingress)}</dd>
            <dt>{t("ingresses.tls_secret")}</dt><dd>{d.ingress.tls_secret.clone().unwrap_or_else(|| t("ingresses.no_tls").into())}</dd>
            <dt>{t("ingresses.detail.class")}</dt><dd><code>{d.cis.class.clone()}</code></dd>
        </dl>
        <h2>{t("ingresses.routes")}</h2>
        {table(&["ingresses.col.host", "ingresses.col.path", "ingresses.col.service", "ingresses.col.port"], d.ingress.rules.clone(), |r| view! {
            <tr><td>{r.host.clone().unwrap_or_else(|| t("ingresses.every_host").into())}</td><td translate="no">{r.path.clone()}</td><td translate="no">{r.service.clone()}</td><td>{r.port}</td></tr>
        })}
        <h2>{t("ingresses.detail.annotations")}</h2>
        <CisAnnotations annotations />
        <div inner_html=on_bigip></div>
        <Deployed deployed=d.deployed.clone() held=t("ingresses.detail.deployed")
            missing=t("ingresses.detail.not_deployed") />
        }
        .to_html()
    }
}
