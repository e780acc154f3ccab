//! The HTML document, the router, and the signed-in layout around every screen.

use leptos::prelude::*;
use leptos_meta::{MetaTags, Title, provide_meta_context};
use leptos_router::components::{ParentRoute, Redirect, Route, Router, Routes};
use leptos_router::{Lazy, path};

use crate::components::layout::Layout;
use crate::pages::{login::LoginRoute, not_found::NotFound};
use crate::screens::{audit, ingresses, listeners, loadbalancers, rules, tickets, users};

/// The whole HTML document, rendered on the server; its scripts, styles and chunks come from
/// `{bundle}/pkg/` (`bundle`: the versioned path the server gives the built bundle, or empty).
pub fn shell(options: LeptosOptions, bundle: String) -> impl IntoView {
    let stylesheet = format!("{bundle}/pkg/lbdesk.css");
    let locale = crate::i18n::locale();
    view! {
        <!DOCTYPE html>
        <html lang=locale.tag()>
            <head>
                <meta charset="utf-8" />
                <meta name="viewport" content="width=device-width, initial-scale=1" />
                <link rel="icon" href="/favicon.svg" type="image/svg+xml" />
                <meta name=crate::auth::SIGN_IN_NOTES content=crate::auth::sign_in_notes().join("\n") />
                // NB: a data block, never run; it carries the page's nonce all the same, as every
                // inline script of the page does. Its JSON has no `<`: nothing in it closes it.
                <script type="application/json" id=crate::i18n::DICTIONARY_ID nonce=leptos::nonce::use_nonce()
                    inner_html=shell_dictionary(locale) />
                <link rel="stylesheet" href=stylesheet />
                <HydrationScripts options root=bundle />
                <MetaTags />
            </head>
            <body>
                <App />
            </body>
        </html>
    }
}

/// The dictionary the page carries to the browser (see `i18n`).
fn shell_dictionary(locale: crate::i18n::Locale) -> &'static str {
    #[cfg(not(feature = "hydrate"))]
    return crate::i18n::dictionary_json(locale);
    #[cfg(feature = "hydrate")]
    {
        let _ = locale;
        ""
    }
}

/// Every route of lbdesk, in one place.
#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    provide_context(crate::components::locale_switch::Switches(RwSignal::new(0)));
    view! {
        <Title formatter=|page: String| if page.is_empty() { "lbdesk".to_string() } else { format!("{page} · lbdesk") } />
        <Router>
            <Routes fallback=|| view! { <NotFound /> }>
                <Route path=path!("/login") view={Lazy::<LoginRoute>::new()} />
                <ParentRoute path=path!("") view=Layout>
                    <Route path=path!("/") view=|| view! { <Redirect path="/tickets" /> } />
                    <Route path=path!("/loadbalancers") view={Lazy::<loadbalancers::LoadbalancersRoute>::new()} />
                    <Route path=path!("/loadbalancers/new") view={Lazy::<loadbalancers::LoadbalancerFormRoute>::new()} />
                    <Route path=path!("/loadbalancers/:name") view={Lazy::<loadbalancers::LoadbalancerDetailRoute>::new()} />
                    <Route path=path!("/loadbalancers/:name/edit") view={Lazy::<loadbalancers::LoadbalancerFormRoute>::new()} />
                    <Route path=path!("/tickets") view={Lazy::<tickets::TicketsRoute>::new()} />
                    <Route path=path!("/tickets/new") view={Lazy::<tickets::TicketFormRoute>::new()} />
                    <Route path=path!("/tickets/:name") view={Lazy::<tickets::TicketDetailRoute>::new()} />
                    <Route path=path!("/tickets/:name/edit") view={Lazy::<tickets::TicketFormRoute>::new()} />
                    <Route path=path!("/listeners") view={Lazy::<listeners::ListenersRoute>::new()} />
                    <Route path=path!("/listeners/:ticket/new") view={Lazy::<listeners::ListenerFormRoute>::new()} />
                    <Route path=path!("/listeners/:ticket/:name") view={Lazy::<listeners::ListenerDetailRoute>::new()} />
                    <Route path=path!("/listeners/:ticket/:name/edit") view={Lazy::<listeners::ListenerFormRoute>::new()} />
                    <Route path=path!("/rules") view={Lazy::<rules::RulesRoute>::new()} />
                    <Route path=path!("/rules/:ticket/:listener") view={Lazy::<rules::ListenerRulesRoute>::new()} />
                    <Route path=path!("/rules/:ticket/:listener/new") view={Lazy::<rules::RuleFormRoute>::new()} />
                    <Route path=path!("/rules/:ticket/:listener/:name") view={Lazy::<rules::RuleRoute>::new()} />
                    <Route path=path!("/rules/:ticket/:listener/:name/edit") view={Lazy::<rules::RuleFormRoute>::new()} />
                    <Route path=path!("/ingresses") view={Lazy::<ingresses::IngressesRoute>::new()} />
                    <Route path=path!("/ingresses/:ticket/new") view={Lazy::<ingresses::IngressFormRoute>::new()} />
                    <Route path=path!("/ingresses/:ticket/:name") view={Lazy::<ingresses::IngressDetailRoute>::new()} />
                    <Route path=path!("/ingresses/:ticket/:name/edit") view={Lazy::<ingresses::IngressFormRoute>::new()} />
                    <Route path=path!("/audit") view={Lazy::<audit::AuditRoute>::new()} />
                    <Route path=path!("/users") view={Lazy::<users::UsersRoute>::new()} />
                </ParentRoute>
            </Routes>
        </Router>
    }
}
