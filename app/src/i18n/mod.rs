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
mod msg;

pub use dict::Dict;
#[cfg(not(feature = "hydrate"))]
pub use dict::{dictionary, dictionary_json};
#[cfg(feature = "hydrate")]
pub use dict::{install, install_from_page};
pub use msg::{Arg, Msg};

use serde::{Deserialize, Serialize};

/// A language of the console.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Locale {
    /// English: what a client that names no language we speak gets (scripts, `curl`).
    #[default]
    #[serde(rename = "en")]
    En,
    /// Simplified Chinese.
    #[serde(rename = "zh-CN")]
    ZhCn,
}

/// The cookie remembering the locale of a browser (the sign-in page's, and a signed-in user's
/// until the page is served from their saved choice).
pub const COOKIE: &str = "lbdesk_locale";

/// The id of the page's element carrying its dictionary to the browser.
pub const DICTIONARY_ID: &str = "lbdesk-i18n";

impl Locale {
    /// Every locale, in the order the switch offers them.
    pub const ALL: [Locale; 2] = [Locale::ZhCn, Locale::En];

    /// Its BCP 47 tag, as `<html lang>`, the cookie and the database say it.
    pub fn tag(self) -> &'static str {
        match self {
            Locale::En => "en",
            Locale::ZhCn => "zh-CN",
        }
    }

    /// Its name in its own language, as the switch shows it.
    pub fn own_name(self) -> &'static str {
        match self {
            Locale::En => "English",
            Locale::ZhCn => "中文",
        }
    }

    /// The locale a language tag asks for: any Chinese (`zh`, `zh-CN`, `zh-Hans`, …) or any
    /// English; `None` for the rest.
    pub fn of_tag(tag: &str) -> Option<Locale> {
        let primary = tag.trim().split(['-', '_']).next().unwrap_or_default();
        if primary.eq_ignore_ascii_case("zh") {
            Some(Locale::ZhCn)
        } else if primary.eq_ignore_ascii_case("en") {
            Some(Locale::En)
        } else {
            None
        }
    }

    /// The locale an `Accept-Language` header prefers most among ours (by quality, then
    /// order); `None` when it names none of them.
    pub fn of_accept_language(header: &str) -> Option<Locale> {
        let mut best: Option<(u16, Locale)> = None;
        for range in header.split(',') {
            let mut parts = range.split(';');
            let Some(locale) = parts.next().and_then(Locale::of_tag) else { continue };
            let quality = parts
                .find_map(|p| p.trim().strip_prefix("q="))
                .map_or(Some(1000), |q| q.trim().parse::<f32>().ok().map(|q| (q.clamp(0.0, 1.0) * 1000.0) as u16));
            match quality {
                Some(q) if q > 0 && best.is_none_or(|(b, _)| q > b) => best = Some((q, locale)),
                _ => {}
            }
        }
        best.map(|(_, locale)| locale)
    }
}

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

/// `template` with its parameters filled in by `arg` (see the module's note on the syntax); a
/// parameter `arg` does not know is left as written.
pub fn fill(template: &str, arg: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(template.len() + 16);
    let mut rest = template;
    while let Some(at) = rest.find(['{', '}']) {
        out.push_str(&rest[..at]);
        let brace = &rest[at..];
        if brace.starts_with("{{") || brace.starts_with("}}") {
            out.push_str(&brace[..1]);
            rest = &brace[2..];
            continue;
        }
        let Some(end) = brace.find('}').filter(|_| brace.starts_with('{')) else {
            out.push_str(&brace[..1]);
            rest = &brace[1..];
            continue;
        };
        let inside = &brace[1..end];
        let (name, forms) = match inside.split_once(':') {
            Some((name, forms)) => (name, forms.split_once('|')),
            None => (inside, None),
        };
        match (arg(name), forms) {
            (Some(value), Some((one, many))) => out.push_str(if value == "1" { one } else { many }),
            (Some(value), None) => out.push_str(&value),
            (None, _) => out.push_str(&brace[..=end]),
        }
        rest = &brace[end + 1..];
    }
    out.push_str(rest);
    out
}

/// `template` with the parameters `args` (name, value) filled in.
pub fn fill_with(template: &str, args: &[(&str, String)]) -> String {
    fill(template, &|wanted| args.iter().find(|(name, _)| *name == wanted).map(|(_, value)| value.clone()))
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
