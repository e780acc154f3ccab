//! The dictionaries: both compiled into the server from `app/locales/`, one at a time in the
//! browser, taken from the page (or from the server when the reader switches).

use super::locale::Locale;

/// The id of the page's element carrying its dictionary to the browser.
pub const DICTIONARY_ID: &str = "lbdesk-i18n";

/// One locale's words: keys and texts, sorted by key.
#[derive(Debug, Default)]
pub struct Dict(Vec<(&'static str, &'static str)>);

impl Dict {
    /// The text of `key`.
    pub fn get(&self, key: &str) -> Option<&'static str> {
        self.0.binary_search_by(|(k, _)| (*k).cmp(key)).ok().map(|i| self.0[i].1)
    }

    /// Its keys, in order.
    pub fn keys(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.0.iter().map(|(k, _)| *k)
    }
}

#[cfg(feature = "hydrate")]
pub use browser::{current, install, install_from_page};
#[cfg(all(test, not(feature = "hydrate")))]
pub use server::AREAS;
#[cfg(not(feature = "hydrate"))]
pub use server::{current, dictionary, dictionary_json};

/// The server's side: both locales, read once from the files compiled in.
#[cfg(not(feature = "hydrate"))]
mod server {
    use std::collections::BTreeMap;
    use std::sync::LazyLock;

    use super::{Dict, Locale};

    macro_rules! areas {
        ($($area:literal),+ $(,)?) => {
            /// Each area of the console: its name (the prefix of its keys) and its files' text,
            /// English then Chinese.
            pub const AREAS: &[(&str, &str, &str)] = &[$((
                $area,
                include_str!(concat!("../../locales/en/", $area, ".json")),
                include_str!(concat!("../../locales/zh-CN/", $area, ".json")),
            )),+];
        };
    }

    areas![
        "common",
        "errors",
        "refusals",
        "bigip",
        "loadbalancers",
        "tickets",
        "listeners",
        "rules",
        "ingresses",
        "audit",
        "users"
    ];

    /// A locale's files merged, as parsed (a file that does not parse adds nothing: a test
    /// parses every one).
    fn merged(locale: Locale) -> BTreeMap<&'static str, &'static str> {
        let mut all = BTreeMap::new();
        for (_, en, zh) in AREAS {
            let text: &'static str = if locale == Locale::ZhCn { zh } else { en };
            let file: BTreeMap<String, String> = serde_json::from_str(text).unwrap_or_default();
            for (key, words) in file {
                // NB: once per process and locale.
                all.insert(&*String::leak(key), &*String::leak(words));
            }
        }
        all
    }

    static DICTS: LazyLock<[Dict; 2]> = LazyLock::new(|| {
        // NB: a BTreeMap's order is the keys' order: sorted, as `get` needs.
        [Dict(merged(Locale::En).into_iter().collect()), Dict(merged(Locale::ZhCn).into_iter().collect())]
    });

    static JSON: LazyLock<[String; 2]> = LazyLock::new(|| {
        // NB: `<` escaped, so that the text can sit in the page's `<script>` data block.
        [Locale::En, Locale::ZhCn]
            .map(|l| serde_json::to_string(&merged(l)).unwrap_or_else(|_| "{}".into()).replace('<', "\\u003c"))
    });

    /// The dictionary of `locale`.
    pub fn dictionary(locale: Locale) -> &'static Dict {
        &DICTS[locale as usize]
    }

    /// The dictionary of `locale` as the browser receives it: one JSON object, key to text (no
    /// `<` in it).
    pub fn dictionary_json(locale: Locale) -> &'static str {
        &JSON[locale as usize]
    }

    /// The locale of the request being served (its context), English outside of one.
    pub fn current() -> (Locale, &'static Dict) {
        let locale = leptos::prelude::use_context::<Locale>().unwrap_or_default();
        (locale, dictionary(locale))
    }
}

/// The browser's side: the one dictionary the page came with, or the one switched to.
#[cfg(feature = "hydrate")]
mod browser {
    use std::cell::Cell;

    use wasm_bindgen::JsCast;

    use super::{Dict, Locale};

    static EMPTY: Dict = Dict(Vec::new());

    thread_local! {
        static CURRENT: Cell<(Locale, &'static Dict)> = const { Cell::new((Locale::En, &EMPTY)) };
        // NB: each locale's dictionary is built once and kept, so switching back and forth
        // allocates nothing more.
        static LOADED: Cell<[Option<&'static Dict>; 2]> = const { Cell::new([None, None]) };
    }

    /// The page's locale and its dictionary.
    pub fn current() -> (Locale, &'static Dict) {
        CURRENT.with(Cell::get)
    }

    /// Makes `json` (a JSON object, key to text, as the server sends it) the dictionary of
    /// `locale` and `locale` the page's; `false` when it is not such an object.
    pub fn install(locale: Locale, json: &str) -> bool {
        let loaded = LOADED.with(Cell::get)[locale as usize];
        let dict = match loaded {
            Some(dict) => dict,
            None => {
                let Ok(value) = js_sys::JSON::parse(json) else { return false };
                let Some(object) = value.dyn_ref::<js_sys::Object>() else { return false };
                // NB: in the server's order, by key (a BTreeMap's), which a JavaScript object keeps
                // for keys that are not numbers: no sort in the browser.
                let pairs = js_sys::Object::entries(object)
                    .iter()
                    .filter_map(|entry| {
                        let entry = entry.unchecked_into::<js_sys::Array>();
                        Some((&*String::leak(entry.get(0).as_string()?), &*String::leak(entry.get(1).as_string()?)))
                    })
                    .collect();
                let dict: &'static Dict = Box::leak(Box::new(Dict(pairs)));
                LOADED.with(|l| {
                    let mut all = l.get();
                    all[locale as usize] = Some(dict);
                    l.set(all);
                });
                dict
            }
        };
        CURRENT.with(|c| c.set((locale, dict)));
        true
    }

    /// Takes the page's dictionary and locale (its data block and `<html lang>`), before the
    /// page hydrates.
    pub fn install_from_page() {
        let document = leptos::prelude::document();
        let locale = document.document_element().and_then(|html| html.get_attribute("lang"));
        let locale = locale.as_deref().and_then(Locale::of_tag).unwrap_or_default();
        let block = document.get_element_by_id(super::DICTIONARY_ID);
        if let Some(json) = block.and_then(|b| b.text_content()) {
            install(locale, &json);
        }
    }
}
