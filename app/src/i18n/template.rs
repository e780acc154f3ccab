//! A message's words with its parameters filled in (the syntax: the module `i18n`'s note).

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
