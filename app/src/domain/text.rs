//! Users' text as lbdesk quotes it back: in a message, in a log line.

/// A user's value as a message quotes it: escaped, and cut short (a megabyte-long name is not
/// sent back in full).
pub fn shown(value: &str) -> String {
    format!("\"{}\"", escaped(value))
}

/// A user-typed name as it may go into a log line: escaped (a newline cannot forge a line) and
/// bounded (a megabyte-long name is not written in full).
pub fn loggable(name: &str) -> String {
    escaped(name.trim())
}

/// `value` cut at 64 characters (an ellipsis says so), with what could mislead whoever reads it
/// escaped as `\u{…}`: quotes and backslashes, control characters (a newline cannot forge a log
/// line), and invisible and direction-changing characters (a name cannot pass for another).
/// NB: written out rather than `escape_debug`, whose Unicode tables the browser bundle would
/// carry for a few messages.
pub fn escaped(value: &str) -> String {
    const MAX: usize = 64;
    let mut out = String::with_capacity(value.len().min(4 * MAX) + 3);
    for c in value.chars().take(MAX) {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() || invisible(c) => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    if value.chars().nth(MAX).is_some() {
        out.push('…');
    }
    out
}

/// Characters that show as nothing, or turn the text around them.
fn invisible(c: char) -> bool {
    matches!(
        c,
        '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{feff}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quoted_value_cannot_mislead_its_reader() {
        let cases = [
            ("plain", "plain"),
            ("a \"quote\" and a \\", "a \\\"quote\\\" and a \\\\"),
            ("two\nlines\r\t", "two\\nlines\\r\\t"),
            ("bell\u{7}", "bell\\u{7}"),
            ("admin\u{202e}nimda", "admin\\u{202e}nimda"),
            ("zero\u{200b}width\u{feff}", "zero\\u{200b}width\\u{feff}"),
            ("租户 é", "租户 é"),
        ];
        for (value, want) in cases {
            assert_eq!(escaped(value), want, "{value:?}");
        }
        assert_eq!(escaped(&"x".repeat(65)), format!("{}…", "x".repeat(64)), "cut at 64 characters");
        assert_eq!(shown("a\"b"), "\"a\\\"b\"");
    }
}
