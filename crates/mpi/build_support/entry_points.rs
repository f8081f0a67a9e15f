//! Finds the MPI_ entry points a Rust source file defines (used by build.rs, tested by
//! tests/entry_points.rs).

/// The MPI_ functions a Rust source defines: `fn MPI_X(...) ... {` (a definition, not a
/// declaration), and the MPI_ names that a macro invocation lists before its first parenthesis,
/// after optional attributes, which is how the entry-point macros are called:
/// `unsupported!(MPI_X(args) ...)`, `collective!(MPI_X / MPI_IX(args) => ...)`. Names in
/// capitals are predefined callbacks (MPI_COMM_DUP_FN), not MPI functions: they are left out, as
/// they have no place in the profiling interface. (A call in a macro, `assert!(MPI_Wtick() > 0.0)`,
/// names a function that exists too.)
pub fn entry_points(source: &str) -> Vec<String> {
    let mut names = candidates(source);
    names.retain(|name| name.chars().any(|c| c.is_ascii_lowercase()));
    names
}

fn candidates(source: &str) -> Vec<String> {
    let tokens = tokenize(&strip_comments_and_literals(source));
    let mut names = Vec::new();
    for (i, token) in tokens.iter().enumerate() {
        if token == "fn" {
            if let (Some(name), Some(open)) = (tokens.get(i + 1), tokens.get(i + 2)) {
                if name.starts_with("MPI_") && open == "(" && is_definition(&tokens[i + 2..]) {
                    names.push(name.clone());
                }
            }
        } else if token == "!" && tokens.get(i + 1).is_some_and(|t| t == "(" || t == "{" || t == "[") {
            let first_argument = &tokens[skip_attributes(&tokens, i + 2).min(tokens.len())..];
            let before_parenthesis = first_argument.iter().take_while(|t| !matches!(t.as_str(), "(" | ")" | "{" | "}" | "[" | "]" | ";"));
            names.extend(before_parenthesis.filter(|t| t.starts_with("MPI_")).cloned());
        }
    }
    names
}

/// Whether the parameter list starting at `tokens[0]` (an opening parenthesis) is followed by a
/// body rather than ending in `;`.
fn is_definition(tokens: &[String]) -> bool {
    let mut depth = 0usize;
    for (i, token) in tokens.iter().enumerate() {
        match token.as_str() {
            "(" => depth += 1,
            ")" => {
                depth -= 1;
                if depth == 0 {
                    return tokens[i + 1..].iter().find(|t| *t == "{" || *t == ";").is_some_and(|t| t == "{");
                }
            }
            _ => {}
        }
    }
    false
}

/// The index after any `#[...]` attributes starting at `start`.
fn skip_attributes(tokens: &[String], mut start: usize) -> usize {
    while tokens.get(start).is_some_and(|t| t == "#") && tokens.get(start + 1).is_some_and(|t| t == "[") {
        let mut depth = 0usize;
        let mut i = start + 1;
        while let Some(token) = tokens.get(i) {
            match token.as_str() {
                "[" => depth += 1,
                "]" => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        start = i + 1;
    }
    start
}

/// Identifiers (with their digits and underscores) and single punctuation characters.
fn tokenize(text: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut word = String::new();
    for c in text.chars() {
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
            continue;
        }
        if !word.is_empty() {
            tokens.push(std::mem::take(&mut word));
        }
        if !c.is_whitespace() {
            tokens.push(c.to_string());
        }
    }
    if !word.is_empty() {
        tokens.push(word);
    }
    tokens
}

/// `source` without comments, and with string and character literals emptied, so that neither
/// can be mistaken for code.
fn strip_comments_and_literals(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0usize;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !chars[..i].last().is_some_and(|p| p.is_alphanumeric() || *p == '_') {
            // A raw string r"..." or r#"..."#: skip to the quote followed by as many hashes.
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            while j < chars.len() && !(chars[j] == '"' && (1..=hashes).all(|k| chars.get(j + k) == Some(&'#'))) {
                j += 1;
            }
            i = j + 1 + hashes;
            out.push_str("\"\"");
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' && next == Some('\\') {
            // An escaped character literal ('\n', '\'', '\u{7f}').
            i += 3;
            while i < chars.len() && chars[i] != '\'' {
                i += 1;
            }
            i += 1;
            out.push_str("' '");
        } else if c == '\'' && chars.get(i + 2) == Some(&'\'') {
            // A plain character literal; a lifetime ('a) has no closing quote.
            i += 3;
            out.push_str("' '");
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The MPI_ types a Rust source defines (`type MPI_Comm = ...`, `struct MPI_Status`): a macro
/// may name them next to an entry point, and they are not functions.
pub fn type_names(source: &str) -> Vec<String> {
    let tokens = tokenize(&strip_comments_and_literals(source));
    tokens.windows(2).filter(|pair| (pair[0] == "type" || pair[0] == "struct") && pair[1].starts_with("MPI_")).map(|pair| pair[1].clone()).collect()
}
