//! A list's `continue` token: where its next page starts, as hex of `namespace/name`.

use super::status::ApiError;
use super::store::Row;

/// The token of the list's next page: where it starts after `row`.
pub fn encode(row: &Row) -> String {
    format!("{}/{}", row.namespace, row.name).bytes().map(|b| format!("{b:02x}")).collect()
}

/// The row a client's token says the page starts after: (namespace, name).
pub fn decode(token: &str) -> Result<(String, String), ApiError> {
    let bad = || ApiError::BadRequest("invalid continue token".into());
    if !token.len().is_multiple_of(2) {
        return Err(bad());
    }
    // NB: by bytes: a token is the client's, and may hold any character; a slice of the string
    // inside one would panic.
    let digit = |b: u8| char::from(b).to_digit(16).and_then(|d| u8::try_from(d).ok());
    let bytes: Option<Vec<u8>> =
        token.as_bytes().chunks(2).map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?)).collect();
    let text = String::from_utf8(bytes.ok_or_else(bad)?).map_err(|_| bad())?;
    let (ns, name) = text.split_once('/').ok_or_else(bad)?;
    Ok((ns.to_string(), name.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_round_trip() {
        let row = Row { namespace: "team-a".into(), name: "x.y".into(), labels: "{}".into(), body: "{}".into() };
        assert_eq!(decode(&encode(&row)).expect("valid"), ("team-a".into(), "x.y".into()));
        assert!(decode("zz").is_err());
        // A character of two bytes where a hex digit goes: refused, never a panic.
        for token in ["1é1", "ab1é1", "é", "ééé"] {
            assert!(decode(token).is_err(), "{token}");
        }
    }
}
