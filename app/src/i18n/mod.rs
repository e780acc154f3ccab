//! The console's words in Chinese and English (`zh-CN`, `en`).
//!
//! Every word a page shows is a key into one dictionary per locale, kept in
//! `app/locales/<locale>/<area>.json` (an area's keys start with its name). The server holds both
//! dictionaries and renders each page in its reader's locale; the page carries that locale's
//! dictionary to the browser in a JSON data block, so hydration sees the
//! same words and the browser bundle carries keys, never the text of either language. Switching
//! asks the server for the other dictionary (`components::locale_switch`) and draws the page again.
//!
//! A message with parameters names them in braces: `{name}`; `{n:one|many}` picks `one` when
//! `n` is 1, else `many` (English plurals; Chinese needs none); `{{` and `}}` are braces. A
//! parameter named `detail…` carries another program's English (a regexp engine's error),
//! which a translation may leave out.
//! Rules of the domain refuse with a [`Msg`] (a key and its arguments), which the page, the
//! server function (in the caller's locale) and admission (in English, for kubectl's users and
//! their tooling) each render.

mod dict;
mod locale;
mod msg;
mod template;

pub use dict::{DICTIONARY_ID, Dict};
#[cfg(not(feature = "hydrate"))]
pub use dict::{dictionary, dictionary_json};
#[cfg(feature = "hydrate")]
pub use dict::{install, install_from_page};
pub use locale::{COOKIE, Locale};
pub use msg::{Arg, Msg};
pub use template::{fill, fill_with};

/// The locale the words are being written in: on the server, the request's (its context); in
/// the browser, the page's.
pub fn locale() -> Locale {
    dict::current().0
}

/// The words of `key` in the current locale (the key itself when no dictionary has it: a test
/// keeps every key in both).
pub fn t(key: &'static str) -> &'static str {
    dict::current().1.get(key).unwrap_or(key)
}

/// The words of a key that came as data (the server's sign-in notes), in the current locale;
/// the key itself when no dictionary has it.
pub fn t_of(key: &str) -> String {
    dict::current().1.get(key).map_or_else(|| key.to_string(), str::to_string)
}

/// The words of a key with parameters, in the current locale:
/// `tf!("listeners.title_edit", name = l.name)`.
#[macro_export]
macro_rules! tf {
    ($key:literal $(, $name:ident = $value:expr)* $(,)?) => {
        $crate::i18n::fill_with(
            $crate::i18n::t($key),
            &[$((stringify!($name), ::std::string::ToString::to_string(&$value))),*],
        )
    };
}

/// A [`Msg`]: `msg!("refusals.port_range")`, `msg!("refusals.weights_sum", total = total)`.
#[macro_export]
macro_rules! msg {
    ($key:literal $(, $name:ident = $value:expr)* $(,)?) => {
        $crate::i18n::Msg::new($key)$(.arg(stringify!($name), ::std::string::ToString::to_string(&$value)))*
    };
}

#[cfg(test)]
mod tests;
