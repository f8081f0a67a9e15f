//! The modules of src/ point one way: the state modules (the tables and types the runtime holds,
//! and what they use) never reach `runtime`, which is made of them; only the ABI modules (the
//! MPI_* calls, and what needs the whole runtime) enter it. This test reads src/, finds which
//! modules each module names, and fails on any module that `runtime` depends on, directly or not,
//! and that depends on `runtime` in turn, naming the file and line of every step of the cycle.
//!
//! A module names another through a `crate::`, `super::` or `self::` path, a path that starts
//! with one of its child modules or with a module a `use` brought in, in a `use` or in code.
//! Comments, strings and the `#[cfg(test)] mod tests { ... }` at the end of a file are skipped.
//! A parent's `pub use` of its own child's items is not a dependency of the parent: it gives them
//! a shorter path, which is followed to the child (naming `error::raise` names `error::report`,
//! where `error` re-exports it from; a glob re-export is not followed).

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;

/// Where one module names another: the file and line of the first place it does.
type Place = (String, usize);

/// The modules each module names: from -> (to -> place).
type Graph = BTreeMap<String, BTreeMap<String, Place>>;

/// The names each module re-exports from its children: module -> (name -> the module it is in).
type ReExports = BTreeMap<String, BTreeMap<String, String>>;

#[test]
fn no_module_that_runtime_depends_on_depends_on_runtime() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut sources = Vec::new();
    read_sources(&root, &root, &mut sources);
    assert!(sources.iter().any(|(module, _, _)| module == "runtime"), "src/runtime.rs not found");
    if let Err(cycle) = check(&module_graph(&sources)) {
        panic!("{cycle}");
    }
}

#[test]
fn a_state_module_that_names_the_runtime_is_caught() {
    let runtime = source("runtime", "runtime.rs", "use crate::comm::CommTable;\npub struct Runtime { pub comms: CommTable }\n");
    let comm = source("comm", "comm/mod.rs", "pub mod abi;\nuse std::sync::Arc;\n\npub struct CommTable;\nfn size() { crate::runtime::with(|rt| 1); }\n");
    let abi = source("comm::abi", "comm/abi.rs", "use crate::runtime;\n");
    let failure = check(&module_graph(&[runtime, comm, abi])).unwrap_err();
    assert!(failure.contains("src/comm/mod.rs:5: `comm` names `runtime`"), "{failure}");
    assert!(failure.contains("src/runtime.rs:1 names comm"), "{failure}");
    assert!(!failure.contains("comm::abi"), "{failure}");
}

#[test]
fn abi_modules_and_re_exports_of_them_may_name_the_runtime() {
    let runtime = source("runtime", "runtime.rs", "use crate::comm::{self, CommTable};\nuse crate::error::MpiResult;\n");
    let comm = source(
        "comm",
        "comm/mod.rs",
        "pub mod abi;\npub use abi::MPI_Comm_size;\n// crate::runtime::with in a comment\nconst NAME: &str = \"crate::runtime\";\n#[cfg(test)]\nmod tests {\n    use crate::runtime;\n}\n",
    );
    let abi = source("comm::abi", "comm/abi.rs", "use super::CommTable;\nuse crate::{error::finish, runtime};\n");
    let error = source("error", "error/mod.rs", "pub mod report;\npub use report::finish;\n");
    let report = source("error::report", "error/report.rs", "use crate::runtime;\n");
    let graph = module_graph(&[runtime, comm, abi, error, report]);
    assert_eq!(check(&graph), Ok(()));
    assert!(graph["comm::abi"].contains_key("runtime") && graph["comm::abi"].contains_key("error::report"));
    assert!(graph["comm"].is_empty() && graph["error"].is_empty());
}

#[test]
fn a_re_export_leads_to_the_module_the_item_is_in() {
    let runtime = source("runtime", "runtime.rs", "pub struct Runtime { pub windows: crate::win::WinTable }\n");
    let win = source("win", "win/mod.rs", "pub mod abi;\npub mod table;\n\npub use table::WinTable;\n");
    let table = source("win::table", "win/table.rs", "pub struct WinTable;\nfn step() { crate::runtime::with(|rt| 1); }\n");
    let failure = check(&module_graph(&[runtime, win, table])).unwrap_err();
    assert!(failure.contains("src/win/table.rs:2: `win::table` names `runtime`"), "{failure}");
    assert!(failure.contains("src/runtime.rs:1 names win::table (in runtime)"), "{failure}");
}

#[test]
fn paths_through_children_and_imported_modules_count() {
    let runtime = source("runtime", "runtime.rs", "use crate::error::ErrorCodes;\n");
    let error = source("error", "error/mod.rs", "pub mod codes;\npub mod handlers;\n\npub fn raise() {\n    handlers::apply();\n}\n");
    let codes = source("error::codes", "error/codes.rs", "pub struct ErrorCodes;\n");
    let handlers = source("error::handlers", "error/handlers.rs", "use crate::{\n    runtime::{self, Runtime},\n};\n");
    let failure = check(&module_graph(&[runtime, error, codes, handlers])).unwrap_err();
    assert!(failure.contains("src/error/handlers.rs:2: `error::handlers` names `runtime`"), "{failure}");
    assert!(failure.contains("error/mod.rs:5 names error::handlers"), "{failure}");
}

fn source(module: &str, path: &str, text: &str) -> (String, String, String) {
    (module.to_string(), path.to_string(), text.to_string())
}

/// Every .rs file under `dir` as (module path, file path relative to src/, text); test-only
/// modules (`tests.rs`) left out.
fn read_sources(root: &Path, dir: &Path, sources: &mut Vec<(String, String, String)>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display())) {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            read_sources(root, &path, sources);
            continue;
        }
        if path.extension().is_none_or(|ext| ext != "rs") {
            continue;
        }
        let relative = path.strip_prefix(root).expect("under src/").to_string_lossy().replace('\\', "/");
        let mut segments: Vec<&str> = relative.trim_end_matches(".rs").split('/').collect();
        if segments.last() == Some(&"mod") || segments == ["lib"] {
            segments.pop();
        }
        if segments.last() == Some(&"tests") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        sources.push((segments.join("::"), relative, text));
    }
}

/// Ok, or the cycle through `runtime` that some module closes: a module that `runtime` depends on
/// and that names `runtime`, with the steps from `runtime` to it.
fn check(graph: &Graph) -> Result<(), String> {
    let from_runtime = paths_from("runtime", graph);
    let offenders: Vec<&String> = from_runtime.keys().filter(|module| module.as_str() != "runtime" && graph[*module].contains_key("runtime")).collect();
    if offenders.is_empty() {
        return Ok(());
    }
    let mut report = String::from("state modules (what `runtime` is made of and depends on) must not name `runtime`; what needs the runtime belongs in an ABI module:\n");
    for module in offenders {
        let (file, line) = &graph[module]["runtime"];
        report.push_str(&format!("src/{file}:{line}: `{module}` names `runtime`, which depends on it:\n"));
        for (from, to) in route(&from_runtime, module) {
            let (file, line) = &graph[&from][&to];
            report.push_str(&format!("    src/{file}:{line} names {to} (in {from})\n"));
        }
    }
    Err(report)
}

/// The modules `start` reaches, each with the module it was first reached from.
fn paths_from(start: &str, graph: &Graph) -> BTreeMap<String, Option<String>> {
    let mut reached = BTreeMap::from([(start.to_string(), None)]);
    let mut queue = VecDeque::from([start.to_string()]);
    while let Some(module) = queue.pop_front() {
        for next in graph.get(&module).into_iter().flat_map(|edges| edges.keys()) {
            if !reached.contains_key(next) {
                reached.insert(next.clone(), Some(module.clone()));
                queue.push_back(next.clone());
            }
        }
    }
    reached
}

/// The steps (from, to) from the start of `reached` to `module`.
fn route(reached: &BTreeMap<String, Option<String>>, module: &str) -> Vec<(String, String)> {
    let mut steps = Vec::new();
    let mut current = module.to_string();
    while let Some(Some(previous)) = reached.get(&current) {
        steps.push((previous.clone(), current.clone()));
        current = previous.clone();
    }
    steps.reverse();
    steps
}

/// Which modules each module of `sources` names, with the place of the first mention.
fn module_graph(sources: &[(String, String, String)]) -> Graph {
    let modules: Vec<&str> = sources.iter().map(|(module, _, _)| module.as_str()).collect();
    let codes: Vec<String> = sources.iter().map(|(_, _, text)| without_tests(&blank_comments_and_strings(text))).collect();
    let re_exports = re_exports(sources, &codes, &modules);
    let mut graph = Graph::new();
    for ((module, file, _), code) in sources.iter().zip(&codes) {
        let children: Vec<&str> = modules.iter().filter_map(|m| child_name(module, m)).collect();
        let mut edges = BTreeMap::new();
        let mut aliases: BTreeMap<String, String> = BTreeMap::new();
        let mut used_spans = Vec::new();
        for statement in use_statements(code) {
            used_spans.push(statement.span.clone());
            for path in expand(&code[statement.tree.clone()]) {
                let (path, alias) = match path.split_once(" as ") {
                    Some((path, alias)) => (path.trim().to_string(), Some(alias.trim().to_string())),
                    None => (path, None),
                };
                let segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty() && *s != "self" && *s != "*").collect();
                if statement.re_export && segments.first().is_some_and(|first| children.contains(first)) {
                    continue;
                }
                let Some(full) = full_path(module, &segments, &children, &BTreeMap::new()) else { continue };
                if modules.contains(&full.join("::").as_str()) {
                    let name = alias.unwrap_or_else(|| full.last().cloned().unwrap_or_default());
                    aliases.insert(name, full.join("::"));
                }
                // The line of the path's last segment, for a tree over several lines.
                let last = segments.last().map_or(statement.span.start, |last| code[statement.span.clone()].find(last).map_or(statement.span.start, |p| statement.span.start + p));
                add_edge(&mut edges, module, &modules, &re_exports, &full, (file.clone(), line_of(code, last)));
            }
        }
        for (start, path) in code_paths(code) {
            if used_spans.iter().any(|span| span.contains(&start)) {
                continue;
            }
            let segments: Vec<&str> = path.split("::").collect();
            if let Some(full) = full_path(module, &segments, &children, &aliases) {
                add_edge(&mut edges, module, &modules, &re_exports, &full, (file.clone(), line_of(code, start)));
            }
        }
        graph.insert(module.clone(), edges);
    }
    graph
}

/// What each module re-exports from its children by name (`pub use child::Name`).
fn re_exports(sources: &[(String, String, String)], codes: &[String], modules: &[&str]) -> ReExports {
    let mut re_exports = ReExports::new();
    for ((module, _, _), code) in sources.iter().zip(codes) {
        let children: Vec<&str> = modules.iter().filter_map(|m| child_name(module, m)).collect();
        for statement in use_statements(code).into_iter().filter(|statement| statement.re_export) {
            for path in expand(&code[statement.tree.clone()]) {
                let (path, alias) = match path.split_once(" as ") {
                    Some((path, alias)) => (path.trim().to_string(), Some(alias.trim().to_string())),
                    None => (path, None),
                };
                let segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty() && *s != "self").collect();
                if !segments.first().is_some_and(|first| children.contains(first)) || segments.last() == Some(&"*") {
                    continue;
                }
                let Some(full) = full_path(module, &segments, &children, &BTreeMap::new()) else { continue };
                let Some(home) = (1..=full.len()).rev().map(|n| full[..n].join("::")).find(|candidate| modules.contains(&candidate.as_str())) else { continue };
                let name = alias.unwrap_or_else(|| full.last().cloned().unwrap_or_default());
                re_exports.entry(module.clone()).or_default().insert(name, home);
            }
        }
    }
    re_exports
}

/// The name of `candidate` under `module` when it is a direct child.
fn child_name<'a>(module: &str, candidate: &'a str) -> Option<&'a str> {
    let rest = if module.is_empty() { candidate } else { candidate.strip_prefix(module)?.strip_prefix("::")? };
    (!rest.is_empty() && !rest.contains("::")).then_some(rest)
}

/// The crate-absolute segments of `segments` as written in `module`; None for paths outside the
/// crate (std, other crates, local names).
fn full_path(module: &str, segments: &[&str], children: &[&str], aliases: &BTreeMap<String, String>) -> Option<Vec<String>> {
    let mut base: Vec<String> = if module.is_empty() { Vec::new() } else { module.split("::").map(str::to_string).collect() };
    let mut rest = segments;
    match rest.first().copied()? {
        "crate" => {
            base.clear();
            rest = &rest[1..];
        }
        "super" => {
            while rest.first() == Some(&"super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        "self" => rest = &rest[1..],
        first if children.contains(&first) => {}
        first => {
            base = aliases.get(first)?.split("::").map(str::to_string).collect();
            rest = &rest[1..];
        }
    }
    base.extend(rest.iter().map(|s| s.to_string()));
    Some(base)
}

/// Records that `module` names the module that is the longest prefix of `full`.
/// Records that `module` names the module that is the longest prefix of `full`, or, when the
/// next segment is a name that module re-exports from a child, that child.
fn add_edge(edges: &mut BTreeMap<String, Place>, module: &str, modules: &[&str], re_exports: &ReExports, full: &[String], place: Place) {
    let Some(length) = (1..=full.len()).rev().find(|&n| modules.contains(&full[..n].join("::").as_str())) else { return };
    let mut target = full[..length].join("::");
    if let Some(name) = full.get(length) {
        while let Some(home) = re_exports.get(&target).and_then(|names| names.get(name)).filter(|home| **home != target) {
            target = home.clone();
        }
    }
    if target != module {
        edges.entry(target).or_insert(place);
    }
}

/// `text` with comments and the contents of string and character literals blanked (newlines kept).
fn blank_comments_and_strings(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for byte in &mut out[from..to] {
            if *byte != b'\n' {
                *byte = b' ';
            }
        }
    };
    let mut i = 0;
    while i < bytes.len() {
        let rest = &bytes[i..];
        if rest.starts_with(b"//") {
            let end = rest.iter().position(|&b| b == b'\n').map_or(bytes.len(), |p| i + p);
            blank(&mut out, i, end);
            i = end;
        } else if rest.starts_with(b"/*") {
            let end = text[i + 2..].find("*/").map_or(bytes.len(), |p| i + 2 + p + 2);
            blank(&mut out, i, end);
            i = end;
        } else if rest.starts_with(b"r#\"") || rest.starts_with(b"r\"") {
            let hashes = rest[1..].iter().take_while(|&&b| b == b'#').count();
            let closing = format!("\"{}", "#".repeat(hashes));
            let start = i + 2 + hashes;
            let end = text[start..].find(&closing).map_or(bytes.len(), |p| start + p + closing.len());
            blank(&mut out, i, end);
            i = end;
        } else if rest[0] == b'"' {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != b'"' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i, (j + 1).min(bytes.len()));
            i = j + 1;
        } else if rest[0] == b'\'' && (rest.get(1) == Some(&b'\\') || rest.get(2) == Some(&b'\'')) {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != b'\'' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i, (j + 1).min(bytes.len()));
            i = j + 1;
        } else if is_ident_byte(rest[0]) {
            // A whole identifier, so that a quote inside `b'x'` or a lifetime is not misread.
            i += rest.iter().take_while(|&&b| is_ident_byte(b)).count();
        } else {
            i += 1;
        }
    }
    String::from_utf8(out).expect("only ASCII bytes were replaced")
}

/// `code` without its unit-test module (`#[cfg(test)] mod tests { ... }`, the end of a file).
fn without_tests(code: &str) -> String {
    let mut search = 0;
    while let Some(found) = code[search..].find("#[cfg(test)]") {
        let at = search + found;
        let after = code[at + "#[cfg(test)]".len()..].trim_start();
        if after.starts_with("mod tests") && after["mod tests".len()..].trim_start().starts_with('{') {
            return code[..at].to_string();
        }
        search = at + 1;
    }
    code.to_string()
}

fn is_ident_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// One `use` statement: where it is, where its tree is, and whether it is `pub` (a re-export).
struct UseStatement {
    span: std::ops::Range<usize>,
    tree: std::ops::Range<usize>,
    re_export: bool,
}

/// The `use` statements of `code` (comments and strings already blanked).
fn use_statements(code: &str) -> Vec<UseStatement> {
    let bytes = code.as_bytes();
    let mut statements = Vec::new();
    let mut search = 0;
    while let Some(found) = code[search..].find("use") {
        let at = search + found;
        search = at + 3;
        let word_before = at > 0 && is_ident_byte(bytes[at - 1]);
        let word_after = bytes.get(at + 3).is_some_and(|&b| is_ident_byte(b));
        if word_before || word_after {
            continue;
        }
        let before = code[..at].trim_end();
        let re_export = before.ends_with("pub") || (before.ends_with(')') && before[..before.rfind('(').unwrap_or(0)].trim_end().ends_with("pub"));
        let statement_start = re_export || before.is_empty() || before.ends_with([';', '{', '}', ']']);
        if !statement_start {
            continue;
        }
        let Some(end) = code[at..].find(';').map(|p| at + p) else { break };
        statements.push(UseStatement { span: at..end, tree: at + 3..end, re_export });
        search = end;
    }
    statements
}

/// The paths of a use tree: `a::{b, c::{d, e as f}}` gives `a::b`, `a::c::d`, `a::c::e as f`.
fn expand(tree: &str) -> Vec<String> {
    let tree: String = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    let tree = tree.trim().trim_start_matches("::");
    let Some(open) = tree.find('{') else { return vec![tree.to_string()] };
    let prefix = tree[..open].trim_end_matches("::").trim();
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut items = Vec::new();
    let (mut depth, mut current) = (0, String::new());
    for ch in inner.chars() {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(ch);
    }
    items.push(current);
    let joined = |item: String| if prefix.is_empty() { item } else { format!("{prefix}::{item}") };
    items.into_iter().filter(|item| !item.trim().is_empty()).flat_map(|item| expand(&item)).map(joined).collect()
}

/// The paths in `code` (`a::b::c` chains of lowercase segments), each with where it starts.
fn code_paths(code: &str) -> Vec<(usize, String)> {
    let bytes = code.as_bytes();
    let mut paths = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !is_ident_byte(bytes[i]) || (i > 0 && (is_ident_byte(bytes[i - 1]) || code[..i].ends_with("::"))) {
            i += 1;
            continue;
        }
        let start = i;
        let mut segments = Vec::new();
        loop {
            let length = bytes[i..].iter().take_while(|&&b| is_ident_byte(b)).count();
            segments.push(&code[i..i + length]);
            i += length;
            if !code[i..].starts_with("::") || !bytes.get(i + 2).is_some_and(|&b| is_ident_byte(b)) {
                break;
            }
            i += 2;
        }
        if segments.len() > 1 {
            paths.push((start, segments.join("::")));
        }
    }
    paths
}

/// The 1-based line of byte offset `at`.
fn line_of(code: &str, at: usize) -> usize {
    code[..at].matches('\n').count() + 1
}
