//! The console's two languages, and which one a browser asks for.

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
