//! The error every server function returns, preserved across the network boundary.

use serde::{Deserialize, Serialize};
use server_fn::codec::JsonEncoding;
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
    /// Something failed on the server; details are in the server log.
    #[error("{0}")]
    Internal(String),
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

    /// The HTTP status this error is answered with.
    pub fn status(&self) -> u16 {
        match self {
            AppError::Unauthorized => 401,
            AppError::Forbidden(_) => 403,
            AppError::NotFound(_) => 404,
            AppError::Invalid { .. } => 422,
            AppError::Refused(_) | AppError::Conflict(_) => 409,
            AppError::Internal(_) => 500,
        }
    }
}

impl FromServerFnError for AppError {
    type Encoder = JsonEncoding;

    fn from_server_fn_error(value: ServerFnErrorErr) -> Self {
        match value {
            ServerFnErrorErr::Args(m) | ServerFnErrorErr::MissingArg(m) => AppError::invalid("request", m),
            other => AppError::Internal(other.to_string()),
        }
    }
}
