//! HTML the server rendered for a page (static parts kept out of the browser bundle), placed as
//! it is, its times shown in the reader's locale and time zone once in the browser.

use leptos::prelude::*;

/// `html` (rendered, and so escaped, by Leptos's renderer on the server) in a `<div>`; each
/// `<time datetime>` in it is written again in the browser as [`super::time::LocalTime`] writes
/// times.
#[component]
pub fn ServerHtml(html: String) -> impl IntoView {
    let node = NodeRef::<leptos::html::Div>::new();
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        let Some(div) = node.get() else { return };
        // NB: one at a time, each marked done (a NodeList is web-sys code the bundle lacks).
        while let Ok(Some(time)) = div.query_selector("time[datetime]:not([data-local])") {
            if let Some(local) = time.get_attribute("datetime").and_then(|at| super::time::local(&at)) {
                time.set_text_content(Some(&local));
            }
            if time.set_attribute("data-local", "").is_err() {
                break;
            }
        }
    });
    view! { <div node_ref=node inner_html=html></div> }
}
