//! Times, shown in the page's locale and the browser's time zone once the page runs there.

use leptos::prelude::*;

/// An RFC 3339 time: as written on the server, in the page's locale and the browser's time
/// zone once hydrated. The server renders the text alone (no signal, no effect): lists render
/// many of these.
#[component]
pub fn LocalTime(#[prop(into)] at: String) -> impl IntoView {
    #[cfg(feature = "hydrate")]
    let shown = {
        let text = RwSignal::new(at.clone());
        let iso = at.clone();
        Effect::new(move |_| {
            if let Some(local) = local(&iso) {
                text.set(local);
            }
        });
        text
    };
    #[cfg(not(feature = "hydrate"))]
    let shown = at.clone();
    view! { <time datetime=at>{shown}</time> }
}

/// `iso` (RFC 3339) in the page's locale and the browser's time zone; `None` when it is no time.
#[cfg(feature = "hydrate")]
pub fn local(iso: &str) -> Option<String> {
    let date = js_sys::Date::new(&wasm_bindgen::JsValue::from_str(iso));
    if date.get_time().is_nan() {
        return None;
    }
    Some(String::from(date.to_locale_string(crate::i18n::locale().tag(), &wasm_bindgen::JsValue::UNDEFINED)))
}
