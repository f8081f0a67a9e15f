//! Reads the function prototypes out of include/mpi.h (tests only: the header is regular enough
//! that statements split at `;` and comments and preprocessor lines can simply be dropped).

use std::path::{Path, PathBuf};

pub fn mpi_h_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../include/mpi.h")
}

/// The line that opens the generated PMPI_ block in mpi.h, and the one that closes it.
pub const PMPI_BEGIN: &str = "/* BEGIN PMPI PROTOTYPES (generated: do not edit) */";
pub const PMPI_END: &str = "/* END PMPI PROTOTYPES */";

/// One function declaration: its name and its text on one line, ending in `;`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prototype {
    pub name: String,
    pub text: String,
}

/// The prototypes of functions whose names start with `prefix` (e.g. "MPI_"), in header order,
/// each name once (the first declaration wins).
pub fn prototypes(header: &str, prefix: &str) -> Vec<Prototype> {
    let code: String = strip_comments(header).lines().filter(|line| !line.trim_start().starts_with('#')).collect::<Vec<_>>().join("\n");
    let mut found: Vec<Prototype> = Vec::new();
    for statement in code.split(';') {
        // Drop whatever a brace opened or closed before the declaration (extern "C" {, struct bodies).
        let statement = statement.rsplit(['{', '}']).next().unwrap_or("");
        let text = statement.split_whitespace().collect::<Vec<_>>().join(" ").replace("( ", "(").replace(" )", ")");
        if text.is_empty() || text.starts_with("typedef") {
            continue;
        }
        let Some(open) = text.find('(') else { continue };
        let Some(name) = text[..open].split([' ', '*']).next_back() else { continue };
        if name.starts_with(prefix) && !found.iter().any(|p| p.name == name) {
            found.push(Prototype { name: name.to_string(), text: format!("{text};") });
        }
    }
    found
}

/// The predefined callbacks declared as functions through a callback type, such as
/// `MPI_Comm_copy_attr_function MPI_COMM_DUP_FN;`: their names, in header order.
pub fn declared_callbacks(header: &str) -> Vec<String> {
    let code: String = strip_comments(header).lines().filter(|line| !line.trim_start().starts_with('#')).collect::<Vec<_>>().join("\n");
    code.split(';')
        .map(|statement| statement.rsplit(['{', '}']).next().unwrap_or("").split_whitespace().collect::<Vec<_>>())
        .filter_map(|words| match words[..] {
            [kind, name] if kind.ends_with("_function") && name.starts_with("MPI_") => Some(name.to_string()),
            _ => None,
        })
        .collect()
}

/// Whether `name` is a predefined callback (MPI_COMM_DUP_FN) rather than an MPI function
/// (MPI_Send, MPI_T_init_thread): callbacks are spelt in capitals and have no PMPI_ twin.
pub fn is_callback_name(name: &str) -> bool {
    !name.chars().any(|c| c.is_ascii_lowercase())
}

/// The text of the PMPI_ block for the MPI_ prototypes of `header` (without the marker lines).
pub fn pmpi_block(header: &str) -> String {
    let before_block = header.split(PMPI_BEGIN).next().unwrap_or(header);
    prototypes(before_block, "MPI_")
        .iter()
        .map(|p| {
            let at = p.text.find(&format!("{}(", p.name)).expect("the name is followed by its parameters");
            format!("{}P{}\n", &p.text[..at], &p.text[at..])
        })
        .collect()
}

/// `text` without /* */ and // comments.
pub fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let block = rest.find("/*");
        let line = rest.find("//");
        match (block, line) {
            (Some(b), l) if l.is_none_or(|l| b < l) => {
                out.push_str(&rest[..b]);
                out.push(' ');
                rest = rest[b + 2..].split_once("*/").map_or("", |(_, after)| after);
            }
            (_, Some(l)) => {
                out.push_str(&rest[..l]);
                rest = rest[l..].find('\n').map_or("", |end| &rest[l + end..]);
            }
            _ => {
                out.push_str(rest);
                return out;
            }
        }
    }
}
