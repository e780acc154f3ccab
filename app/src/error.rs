//! The error every server function returns, preserved across the network boundary.

use serde::{Deserialize, Serialize};
use server_fn::error::{FromServerFnError, ServerFnErrorErr};

/// What went wrong in a server function, typed so the page can put a message where it belongs.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum AppError {
    /// No session, or it expired.
    #[error("Please sign in.")]
    Unauthorized,
    /// Signed in, but this is not yours to see or change.
    #[error("{0}")]
    Forbidden(String),
    /// The object does not exist (or is not visible to this user).
    #[error("{0}")]
    NotFound(String),
    /// A form field is wrong; `field` names the form field the message belongs beside.
    #[error("{message}")]
    Invalid { field: String, message: String },
    /// A rule of the product refuses the action; the reason is for the user.
    #[error("{0}")]
    Refused(String),
    /// Someone else changed the object first; reload and try again.
    #[error("{0}")]
    Conflict(String),
    /// Nothing was saved: the store cannot take a write now (a full disk, a database out of
    /// reach: 503). The message names the cause; the same action may be tried again.
    #[error("{0}")]
    Unavailable(String),
    /// Something failed on the server; details are in the server log.
    #[error("{0}")]
    Internal(String),
    /// Too many attempts in a short time (sign-in); `field` names the form field the message belongs beside.
    #[error("{message}")]
    TooMany { field: String, message: String },
}

impl AppError {
    /// A field error.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        AppError::Invalid { field: field.into(), message: message.into() }
    }

    /// The message to show beside `field`, when this error is about it.
    pub fn for_field(&self, field: &str) -> Option<String> {
        match self {
            AppError::Invalid { field: f, message } if f == field => Some(message.clone()),
            _ => None,
        }
    }

    /// What the reader is told, in the page's locale (the `Display` text is for logs).
    pub fn message(&self) -> String {
        match self {
            AppError::Unauthorized => crate::i18n::t("errors.unauthorized").to_string(),
            other => other.to_string(),
        }
    }

    /// The HTTP status this error is answered with.
    pub fn status(&self) -> u16 {
        match self {
            AppError::Unauthorized => 401,
            AppError::Forbidden(_) => 403,
            AppError::NotFound(_) => 404,
            AppError::Invalid { .. } => 400,
            AppError::Refused(_) | AppError::Conflict(_) => 409,
            AppError::Unavailable(_) => 503,
            AppError::Internal(_) => 500,
            AppError::TooMany { .. } => 429,
        }
    }

    /// Answers the server function's request with this error's HTTP status.
    #[cfg(feature = "ssr")]
    pub fn set_status(&self) {
        if let Some(options) = leptos::prelude::use_context::<leptos_axum::ResponseOptions>()
            && let Ok(status) = http::StatusCode::from_u16(self.status())
        {
            options.set_status(status);
        }
    }
}

impl FromServerFnError for AppError {
    // NB: decoded from text, as every answer is (`codec`): one JSON reader in the browser.
    type Encoder = crate::codec::JsonTextEncoding;

    fn from_server_fn_error(value: ServerFnErrorErr) -> Self {
        match value {
            ServerFnErrorErr::Args(m) | ServerFnErrorErr::MissingArg(m) | ServerFnErrorErr::Deserialization(m) => {
                bad_argument(&m)
            }
            other => AppError::Internal(other.to_string()),
        }
    }
}

/// A call whose arguments do not fit: 400 naming the field, echoing at most a short excerpt
/// of what was sent.
fn bad_argument(text: &str) -> AppError {
    const EXCERPT: usize = 120;
    let (field, message) = match text.split_once(crate::codec::FIELD_SEP) {
        // The fields of a struct argument (a form, a query) are named as the page names them.
        Some((f, m)) if !f.is_empty() && f != "." => (f.split_once('.').map_or(f, |(_, inner)| inner), m),
        Some((_, m)) => ("request", m),
        // NB: form-encoded calls (sign-in) name a missing field only in serde's words.
        None => match text.split_once("missing field `").and_then(|(_, rest)| rest.split('`').next()) {
            Some(f) => (f, text),
            None => ("request", text),
        },
    };
    let more = if message.chars().nth(EXCERPT).is_some() { "…" } else { "" };
    let excerpt: String = message.chars().take(EXCERPT).chain(more.chars()).collect();
    let e = AppError::invalid(field, crate::tf!("errors.bad_argument", excerpt = excerpt));
    // NB: the call failed before its body ran, so nothing else sets the answer's status.
    #[cfg(feature = "ssr")]
    e.set_status();
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_argument_is_400_naming_the_field_with_a_short_excerpt() {
        let e = AppError::from_server_fn_error(ServerFnErrorErr::Deserialization(format!(
            "form.name :: invalid type: integer `5`, expected a string{}",
            "x".repeat(10_000)
        )));
        assert_eq!(e.status(), 400);
        assert!(e.for_field("name").is_some_and(|m| m.len() < 200), "{e:?}");
        let e = AppError::from_server_fn_error(ServerFnErrorErr::Args("failed: missing field `password`".into()));
        assert!(e.for_field("password").is_some(), "{e:?}");
        let e = AppError::from_server_fn_error(ServerFnErrorErr::Deserialization(". :: EOF while parsing".into()));
        assert!(e.for_field("request").is_some(), "{e:?}");
    }
}
