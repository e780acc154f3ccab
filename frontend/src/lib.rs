//! The browser half of lbdesk: hydrates the server-rendered pages.

/// Hydrates the page. Every screen is a lazy route whose code arrives in its own chunk, so
/// hydration waits for the open screen's chunk before it walks that screen's HTML.
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    // NB: before hydration, which must write the words the server wrote.
    app::i18n::install_from_page();
    wasm_bindgen_futures::spawn_local(async {
        let Some(body) = leptos::prelude::document().body() else { return };
        leptos::mount::hydrate_from_async(body.clone(), app::App).await.forget();
        // Marks the page interactive: end-to-end tests (and styles) can wait for it.
        let _ = body.set_attribute("data-hydrated", "true");
    });
}
