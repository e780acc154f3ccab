//! Times, shown in the user's locale once the page runs in the browser.

use leptos::prelude::*;

/// An RFC 3339 time: as written on the server, in the browser's locale once hydrated.
#[component]
pub fn LocalTime(#[prop(into)] at: String) -> impl IntoView {
    let text = RwSignal::new(at.clone());
    let iso = at.clone();
    Effect::new(move |_| {
        #[cfg(feature = "hydrate")]
        {
            let date = js_sys::Date::new(&wasm_bindgen::JsValue::from_str(&iso));
            if !date.get_time().is_nan() {
                text.set(String::from(date.to_locale_string("default", &wasm_bindgen::JsValue::UNDEFINED)));
            }
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = &iso;
    });
    view! { <time datetime=at>{move || text.get()}</time> }
}
