//! The wire format of server function answers: JSON, read as text.
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
}
