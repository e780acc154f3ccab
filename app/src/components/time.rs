//! Times, shown in the user's locale once the page runs in the browser.

use leptos::prelude::*;

/// An RFC 3339 time: as written on the server, in the browser's locale once hydrated.
/// The server renders the text alone (no signal, no effect): lists render many of these.
#[component]
pub fn LocalTime(#[prop(into)] at: String) -> impl IntoView {
    #[cfg(feature = "hydrate")]
    let shown = {
        let text = RwSignal::new(at.clone());
        let iso = at.clone();
        Effect::new(move |_| {
            let date = js_sys::Date::new(&wasm_bindgen::JsValue::from_str(&iso));
            if !date.get_time().is_nan() {
                text.set(String::from(date.to_locale_string("default", &wasm_bindgen::JsValue::UNDEFINED)));
            }
        });
        text
    };
    #[cfg(not(feature = "hydrate"))]
    let shown = at.clone();
    view! { <time datetime=at>{shown}</time> }
}
