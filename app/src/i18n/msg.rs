//! A message not yet in words: what a rule of the domain says, rendered where it is read.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

#[cfg(not(feature = "hydrate"))]
use super::locale::Locale;
use super::template::fill;

/// A dictionary key and its parameters.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Msg {
    pub key: Cow<'static, str>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<(Cow<'static, str>, Arg)>,
}

/// A parameter's value: text as given (a name, a number, what the user typed), or another
/// message, rendered in the same locale.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Arg {
    Text(String),
    Msg(Msg),
}

impl Msg {
    /// The message of `key`, without parameters yet.
    pub fn new(key: &'static str) -> Msg {
        Msg { key: Cow::Borrowed(key), args: Vec::new() }
    }

    /// With the parameter `name` set to `value`.
    pub fn arg(mut self, name: &'static str, value: impl Into<String>) -> Msg {
        self.args.push((Cow::Borrowed(name), Arg::Text(value.into())));
        self
    }

    /// With the parameter `name` set to another message.
    pub fn with(mut self, name: &'static str, value: Msg) -> Msg {
        self.args.push((Cow::Borrowed(name), Arg::Msg(value)));
        self
    }

    /// In the current locale (the request's on the server, the page's in the browser).
    pub fn text(&self) -> String {
        self.render(&|key| super::dict::current().1.get(key))
    }

    /// In `locale`.
    #[cfg(not(feature = "hydrate"))]
    pub fn text_in(&self, locale: Locale) -> String {
        let dict = super::dict::dictionary(locale);
        self.render(&|key| dict.get(key))
    }

    fn render(&self, words: &dyn Fn(&str) -> Option<&'static str>) -> String {
        let template = words(&self.key).unwrap_or(&self.key);
        fill(template, &|name| {
            self.args.iter().find(|(n, _)| n == name).map(|(_, value)| match value {
                Arg::Text(text) => text.clone(),
                Arg::Msg(msg) => msg.render(words),
            })
        })
    }
}

/// On the server, in English: what logs, admission's answers to kubectl and the CLI say (a
/// reader is told [`Msg::text`]). In the browser, in the page's locale.
impl std::fmt::Display for Msg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        #[cfg(not(feature = "hydrate"))]
        return f.write_str(&self.text_in(Locale::En));
        #[cfg(feature = "hydrate")]
        f.write_str(&self.text())
    }
}
