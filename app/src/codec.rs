//! The wire format of server functions: arguments and answers as JSON, read as text.
//!
//! A page's resources are read back from the server-rendered HTML with `serde_json::from_str`;
//! server_fn's own JSON codec reads answers with `from_slice`. Reading both as text means each
//! answer type has one deserializer in the browser bundle instead of two.

use serde::{Serialize, de::DeserializeOwned};
use server_fn::codec::Post;
use server_fn::{Bytes, ContentType, Decodes, Encodes, Format, FormatType};

/// JSON in a `POST` answer, decoded from text.
pub type JsonText = Post<JsonTextEncoding>;

pub struct JsonTextEncoding;

impl ContentType for JsonTextEncoding {
    const CONTENT_TYPE: &'static str = "application/json";
}

impl FormatType for JsonTextEncoding {
    const FORMAT_TYPE: Format = Format::Text;
}

impl<T: Serialize> Encodes<T> for JsonTextEncoding {
    type Error = serde_json::Error;

    fn encode(output: &T) -> Result<Bytes, Self::Error> {
        serde_json::to_vec(output).map(Bytes::from)
    }
}

impl<T: DeserializeOwned> Decodes<T> for JsonTextEncoding {
    type Error = serde_json::Error;

    fn decode(bytes: Bytes) -> Result<T, Self::Error> {
        let text = std::str::from_utf8(&bytes).map_err(serde::de::Error::custom)?;
        serde_json::from_str(text)
    }
}

/// Arguments in a `POST` body as JSON. A value that does not fit names its field (the path in
/// the arguments), so a bad call answers 400 saying which argument is wrong.
pub type JsonArgs = Post<JsonArgsEncoding>;

pub struct JsonArgsEncoding;

impl ContentType for JsonArgsEncoding {
    const CONTENT_TYPE: &'static str = "application/json";
}

impl FormatType for JsonArgsEncoding {
    const FORMAT_TYPE: Format = Format::Text;
}

impl<T: Serialize> Encodes<T> for JsonArgsEncoding {
    type Error = serde_json::Error;

    fn encode(args: &T) -> Result<Bytes, Self::Error> {
        serde_json::to_vec(args).map(Bytes::from)
    }
}

// NB: only the server decodes arguments; the browser's copy stays small (no path tracking).
#[cfg(not(feature = "ssr"))]
impl<T: DeserializeOwned> Decodes<T> for JsonArgsEncoding {
    type Error = serde_json::Error;

    fn decode(bytes: Bytes) -> Result<T, Self::Error> {
        let text = std::str::from_utf8(&bytes).map_err(serde::de::Error::custom)?;
        serde_json::from_str(text)
    }
}

#[cfg(feature = "ssr")]
impl<T: DeserializeOwned> Decodes<T> for JsonArgsEncoding {
    type Error = ArgError;

    fn decode(bytes: Bytes) -> Result<T, Self::Error> {
        let text = std::str::from_utf8(&bytes)
            .map_err(|_| ArgError { field: String::new(), message: crate::i18n::t("errors.body_not_utf8").into() })?;
        serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_str(text)).map_err(|e| {
            let message = e.inner().to_string();
            // NB: a missing field is reported at its parent; name the field itself.
            let missing = message.strip_prefix("missing field `").and_then(|m| m.split('`').next());
            let field = match (e.path().to_string(), missing) {
                (parent, Some(m)) if parent == "." => m.to_string(),
                (parent, Some(m)) => format!("{parent}.{m}"),
                (path, None) => path,
            };
            ArgError { field, message }
        })
    }
}

/// An argument that does not fit, and where (`a.b[0].c`; empty or `.` for the whole body).
#[derive(Debug)]
pub struct ArgError {
    pub field: String,
    pub message: String,
}

/// Separates the field from the message in the error's text (server_fn carries it as text).
pub const FIELD_SEP: &str = " :: ";

impl std::fmt::Display for ArgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{FIELD_SEP}{}", self.field, self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_round_trip_and_bad_bytes_are_an_error() {
        let sent = vec![("pair".to_string(), 2u16)];
        let bytes = <JsonTextEncoding as Encodes<_>>::encode(&sent).expect("encodes");
        let back: Vec<(String, u16)> = <JsonTextEncoding as Decodes<_>>::decode(bytes).expect("decodes");
        assert_eq!(back, sent);
        let garbled = <JsonTextEncoding as Decodes<Vec<(String, u16)>>>::decode(Bytes::from_static(b"[[\"\xff\", 1]]"));
        assert!(garbled.is_err());
        let truncated = <JsonTextEncoding as Decodes<Vec<(String, u16)>>>::decode(Bytes::from_static(b"[[\"a\""));
        assert!(truncated.is_err());
    }

    /// Only the server decodes arguments (with their paths).
    #[cfg(feature = "ssr")]
    mod args {
        use super::*;

        #[derive(Debug, serde::Deserialize, Serialize)]
        struct Args {
            form: Form,
        }

        #[derive(Debug, serde::Deserialize, Serialize)]
        struct Form {
            name: String,
            port: u16,
        }

        fn arg_error(body: &'static [u8]) -> String {
            <JsonArgsEncoding as Decodes<Args>>::decode(Bytes::from_static(body)).expect_err("refused").to_string()
        }

        #[test]
        fn a_bad_argument_names_its_field() {
            assert!(arg_error(br#"{"form": {"name": "a", "port": -1}}"#).starts_with("form.port :: "));
            assert!(arg_error(br#"{"form": {"name": 5, "port": 1}}"#).starts_with("form.name :: invalid type"));
            assert!(arg_error(br#"{"form": {"port": 1}}"#).starts_with("form.name :: missing field `name`"));
            assert!(arg_error(br#"{}"#).starts_with("form :: missing field `form`"));
            assert!(
                arg_error(br#"{"form": {"name": "a", "name": "b", "port": 1}}"#).contains("duplicate field `name`")
            );
            let garbage = arg_error(b"[[[[");
            assert!(garbage.contains(" :: ") && !garbage.starts_with("form."), "{garbage}");
            let args = Args { form: Form { name: "a".into(), port: 80 } };
            let bytes = <JsonArgsEncoding as Encodes<Args>>::encode(&args).expect("encodes");
            let back: Args = <JsonArgsEncoding as Decodes<Args>>::decode(bytes).expect("decodes");
            assert_eq!(back.form.port, 80);
        }
    }
}
