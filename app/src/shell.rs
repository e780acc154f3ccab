//! The HTML document, the router, and the signed-in layout around every screen.

use leptos::prelude::*;
use leptos_meta::{MetaTags, Stylesheet, Title, provide_meta_context};
use leptos_router::components::{ParentRoute, Redirect, Route, Router, Routes};
use leptos_router::path;

use crate::components::layout::Layout;
use crate::pages::{loadbalancers, login::Login, not_found::NotFound, screens, tickets};

/// The whole HTML document, rendered on the server.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8" />
                <meta name="viewport" content="width=device-width, initial-scale=1" />
                <link rel="icon" href="/favicon.svg" type="image/svg+xml" />
                <HydrationScripts options />
                <MetaTags />
            </head>
            <body>
                <App />
            </body>
        </html>
    }
}

/// Every route of lbdesk, in one place.
#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    view! {
        <Stylesheet id="lbdesk" href="/pkg/lbdesk.css" />
        <Title formatter=|page: String| if page.is_empty() { "lbdesk".to_string() } else { format!("{page} · lbdesk") } />
        <Router>
            <Routes fallback=|| view! { <NotFound /> }>
                <Route path=path!("/login") view=Login />
                <ParentRoute path=path!("") view=Layout>
                    <Route path=path!("/") view=|| view! { <Redirect path="/tickets" /> } />
                    <Route path=path!("/loadbalancers") view=loadbalancers::Loadbalancers />
                    <Route path=path!("/loadbalancers/new") view=loadbalancers::LoadbalancerForm />
                    <Route path=path!("/loadbalancers/:name") view=loadbalancers::LoadbalancerDetail />
                    <Route path=path!("/loadbalancers/:name/edit") view=loadbalancers::LoadbalancerForm />
                    <Route path=path!("/tickets") view=tickets::Tickets />
                    <Route path=path!("/tickets/new") view=tickets::TicketFormPage />
                    <Route path=path!("/tickets/:name") view=tickets::TicketDetailPage />
                    <Route path=path!("/tickets/:name/edit") view=tickets::TicketFormPage />
                    <Route path=path!("/listeners") view=screens::Listeners />
                    <Route path=path!("/rules") view=screens::Rules />
                    <Route path=path!("/ingresses") view=screens::Ingresses />
                </ParentRoute>
            </Routes>
        </Router>
    }
}
