//! Generates the Fortran layer from include/mpi.h (used by build.rs, tested by
//! tests/fortran_generator.rs): the Rust entry points with gfortran's calling convention (every
//! argument by reference, CHARACTER lengths appended as `usize`, `ierror` last), `mpif.h`, and the
//! source of the `mpi` and `mpi_f08` modules. A function added to mpi.h gets its Fortran binding
//! without edits here as long as its parameters are of the kinds below; the few that need code of
//! their own (argv, callbacks with Fortran signatures, MPI-1 INTEGER addresses) are written by hand
//! in src/fortran_binding/manual.rs and listed in [`HANDWRITTEN`].

use std::fmt::Write as _;

use crate::fortran_interfaces::{handwritten_interfaces, sizeof_generic, sizeof_procedures, Module};

/// MPI functions whose Fortran binding is written by hand (same symbols, see manual.rs).
pub const HANDWRITTEN: &[&str] = &[
    "MPI_Init",
    "MPI_Init_thread",
    "MPI_Info_create_env",
    "MPI_Pcontrol",
    "MPI_Comm_spawn",
    "MPI_Comm_spawn_multiple",
    "MPI_Comm_create_keyval",
    "MPI_Type_create_keyval",
    "MPI_Win_create_keyval",
    "MPI_Keyval_create",
    "MPI_Grequest_start",
    "MPI_Attr_put",
    "MPI_Attr_get",
    "MPI_Type_hvector",
    "MPI_Type_hindexed",
    "MPI_Type_struct",
    "MPI_Type_extent",
    "MPI_Type_lb",
    "MPI_Type_ub",
    "MPI_Address",
    "MPI_Register_datarep",
    "MPI_Register_datarep_c",
    "MPI_Status_f2f08",
    "MPI_Status_f082f",
];

/// Whether `name` has no Fortran binding at all: the tool interface (MPI_T has none) and the
/// C-only handle and status conversions (the two between a Fortran INTEGER status and mpi_f08's
/// TYPE(MPI_Status) are written by hand: mpi_f08 alone declares them).
pub fn c_only(name: &str) -> bool {
    name.starts_with("MPI_T_") || name.ends_with("_c2f") || name.ends_with("_f2c") || name.starts_with("MPI_Status_") && name.contains("f08") && !F08_STATUS_CONVERSIONS.contains(&name)
}

/// The conversions between the two Fortran statuses, bound by hand for mpi_f08 alone.
pub const F08_STATUS_CONVERSIONS: &[&str] = &["MPI_Status_f2f08", "MPI_Status_f082f"];

/// MPI 4.0's large-count `_c` functions. Fortran reaches them through mpi_f08 alone (MPI 4.1
/// §19.2: the `mpi` module and mpif.h have no large counts), where the generic `MPI_Send` picks
/// `MPI_Send_c` for an INTEGER(KIND=MPI_COUNT_KIND) count.
pub fn is_large_count_form(name: &str) -> bool {
    name.ends_with("_c") && !name.ends_with("_f2c")
}

/// One parameter of a C prototype.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    pub name: String,
    /// The type name without `const` and pointers (`int`, `MPI_Comm`, `void`, `char`).
    pub base: String,
    /// Pointer levels plus array brackets.
    pub indirection: usize,
    /// Array brackets alone: an array, as opposed to a pointer to a result.
    pub brackets: usize,
    /// The fixed inner dimensions of an array (`int ranges[][3]` gives ["3"]).
    pub inner_dims: Vec<String>,
    pub is_const: bool,
}

/// One C prototype.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    pub name: String,
    pub returns: String,
    pub params: Vec<Param>,
    pub variadic: bool,
}

/// How one C parameter travels from Fortran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A C scalar passed by value (`int`, a handle, MPI_Aint, MPI_Offset, MPI_Count): Fortran
    /// passes its address.
    Value(Scalar),
    /// A C pointer or array of integers, handles or addresses, passed on as it is.
    Pointer(Scalar),
    /// The index of a completed request (MPI_Waitany, MPI_Testany): 1-based in Fortran.
    IndexOut,
    /// The indices of completed requests (MPI_Waitsome, MPI_Testsome), as many as `outcount`.
    IndicesOut,
    /// An `int *` LOGICAL result: passed on, then made exactly 0 or 1 (gfortran's .FALSE., .TRUE.).
    LogicalOut,
    /// A choice buffer: MPI_BOTTOM and MPI_IN_PLACE are recognised by address.
    Choice,
    Status,
    /// A status the function reads (MPI_Get_count): passed on as it is.
    StatusIn,
    Statuses,
    Errcodes,
    Weights,
    StringIn,
    StringOut,
    /// The value of an attribute to store: an INTEGER(KIND=MPI_ADDRESS_KIND), stored as the value.
    AttributeIn,
    /// Where an attribute's value goes: the predefined attributes' values are made values.
    AttributeOut,
    /// An INTEGER(KIND=MPI_ADDRESS_KIND) receiving an address (MPI_Alloc_mem's baseptr).
    AddressOut,
    Callback,
    /// MPI_Buffer_detach's buffer: the C address it returns has no Fortran meaning.
    DetachedBuffer,
}

/// The scalar types of C parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scalar {
    Int,
    Logical,
    Aint,
    Offset,
    Count,
}

impl Scalar {
    fn rust(self) -> &'static str {
        match self {
            Scalar::Int | Scalar::Logical => "MPI_Fint",
            Scalar::Aint => "MPI_Aint",
            Scalar::Offset => "MPI_Offset",
            Scalar::Count => "MPI_Count",
        }
    }

    fn fortran(self) -> &'static str {
        match self {
            Scalar::Int => "INTEGER",
            Scalar::Logical => "LOGICAL",
            Scalar::Aint => "INTEGER(KIND=MPI_ADDRESS_KIND)",
            Scalar::Offset => "INTEGER(KIND=MPI_OFFSET_KIND)",
            Scalar::Count => "INTEGER(KIND=MPI_COUNT_KIND)",
        }
    }
}

/// Parameters that are LOGICAL in Fortran (MPI 3.1 §17.1 and the routine definitions).
const LOGICAL_NAMES: &[&str] = &["flag", "periods", "reorder", "remain_dims", "high", "commute", "weighted"];

/// C handle types: ints in Braid, INTEGER in Fortran.
pub const HANDLE_TYPES: &[&str] = &["MPI_Comm", "MPI_Datatype", "MPI_Op", "MPI_Group", "MPI_Request", "MPI_Errhandler", "MPI_Info", "MPI_Win", "MPI_File", "MPI_Message", "MPI_Session", "MPI_Fint"];

/// Why a parameter has no automatic binding, or its kind.
pub fn classify(function: &str, param: &Param) -> Result<Kind, String> {
    let name = param.name.as_str();
    let base = param.base.as_str();
    let logical = LOGICAL_NAMES.contains(&name);
    let scalar = match base {
        "int" if logical => Some(Scalar::Logical),
        "int" => Some(Scalar::Int),
        "MPI_Aint" => Some(Scalar::Aint),
        "MPI_Offset" => Some(Scalar::Offset),
        "MPI_Count" => Some(Scalar::Count),
        b if HANDLE_TYPES.contains(&b) => Some(Scalar::Int),
        _ => None,
    };
    if let Some(scalar) = scalar {
        return Ok(match param.indirection {
            0 => Kind::Value(scalar),
            1 if name == "array_of_errcodes" => Kind::Errcodes,
            1 if name == "index" && param.brackets == 0 => Kind::IndexOut,
            1 if name == "array_of_indices" => Kind::IndicesOut,
            1 if name.ends_with("weights") => Kind::Weights,
            1 if logical && param.brackets == 0 => Kind::LogicalOut,
            1 => Kind::Pointer(scalar),
            2 if !param.inner_dims.is_empty() => Kind::Pointer(scalar),
            _ => return Err(format!("{function}: {name} has {} levels of indirection", param.indirection)),
        });
    }
    match (base, param.indirection) {
        ("MPI_Status", 1) if name.starts_with("array_of") => Ok(Kind::Statuses),
        ("MPI_Status", 1) if param.is_const => Ok(Kind::StatusIn),
        ("MPI_Status", 1) => Ok(Kind::Status),
        ("char", 1) if param.is_const => Ok(Kind::StringIn),
        ("char", 1) => Ok(Kind::StringOut),
        ("void", 1) if name == "attribute_val" && (function.ends_with("_set_attr") || function == "MPI_Attr_put") => Ok(Kind::AttributeIn),
        ("void", 1) if name == "attribute_val" => Ok(Kind::AttributeOut),
        ("void", 1) if name == "baseptr" => Ok(Kind::AddressOut),
        ("void", 1) if name == "buffer_addr" => Ok(Kind::DetachedBuffer),
        ("void", 1) if name == "extra_state" || name == "obj_handle" => Err(format!("{function}: {name} needs a handwritten binding")),
        ("void", 1) => Ok(Kind::Choice),
        (b, 1) if b.ends_with("_function") || b.ends_with("_function_c") || b.ends_with("_fn") => Ok(Kind::Callback),
        _ => Err(format!("{function}: parameter {name} of type {base} with {} levels of indirection has no Fortran mapping", param.indirection)),
    }
}

/// The prototypes of mpi.h's MPI_ functions (before the generated PMPI_ block), in header order.
pub fn functions(header: &str) -> Vec<Function> {
    let before_pmpi = header.split("BEGIN PMPI PROTOTYPES").next().unwrap_or(header);
    let code: String = strip_comments(before_pmpi).lines().filter(|line| !line.trim_start().starts_with('#')).collect::<Vec<_>>().join("\n");
    let mut found: Vec<Function> = Vec::new();
    for statement in code.split(';') {
        let statement = statement.rsplit(['{', '}']).next().unwrap_or("");
        let text = statement.split_whitespace().collect::<Vec<_>>().join(" ");
        if text.is_empty() || text.starts_with("typedef") {
            continue;
        }
        let (Some(open), Some(close)) = (text.find('('), text.rfind(')')) else { continue };
        let head = text[..open].trim();
        let Some(name) = head.split([' ', '*']).next_back() else { continue };
        if !name.starts_with("MPI_") || !name.chars().any(|c| c.is_ascii_lowercase()) || found.iter().any(|f| f.name == name) {
            continue;
        }
        let returns = head[..head.len() - name.len()].trim().to_string();
        let mut params = Vec::new();
        let mut variadic = false;
        for part in text[open + 1..close].split(',').map(str::trim) {
            match part {
                "void" | "" => {}
                "..." => variadic = true,
                _ => params.push(parse_param(part)),
            }
        }
        found.push(Function { name: name.to_string(), returns, params, variadic });
    }
    found
}

fn parse_param(text: &str) -> Param {
    let (declarator, brackets) = match text.find('[') {
        Some(at) => (&text[..at], &text[at..]),
        None => (text, ""),
    };
    let dims: Vec<String> = brackets.split('[').skip(1).map(|d| d.trim_end_matches(']').trim().to_string()).collect();
    let pointers = declarator.matches('*').count();
    let words: Vec<&str> = declarator.split(|c: char| c == '*' || c.is_whitespace()).filter(|w| !w.is_empty()).collect();
    let is_const = words.contains(&"const");
    let words: Vec<&str> = words.into_iter().filter(|w| *w != "const").collect();
    let name = words.last().copied().unwrap_or("").to_string();
    let base = words[..words.len().saturating_sub(1)].join(" ");
    let inner_dims = dims.iter().skip(1).cloned().collect();
    Param { name, base, indirection: pointers + dims.len(), brackets: dims.len(), inner_dims, is_const }
}

/// `text` without /* */ and // comments.
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("/*") {
        out.push_str(&rest[..start]);
        out.push(' ');
        rest = rest[start + 2..].split_once("*/").map_or("", |(_, after)| after);
    }
    out.push_str(rest);
    out
}

/// What [`bindings`] makes of one function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Binding {
    Generated(Vec<Kind>),
    Handwritten,
    COnly,
    /// No binding: why (a parameter kind the generator does not know).
    Missing(String),
}

pub fn binding(function: &Function) -> Binding {
    if c_only(&function.name) {
        return Binding::COnly;
    }
    if HANDWRITTEN.contains(&function.name.as_str()) {
        return Binding::Handwritten;
    }
    if function.variadic {
        return Binding::Missing(format!("{} is variadic", function.name));
    }
    if !matches!(function.returns.as_str(), "int" | "double" | "MPI_Aint") {
        return Binding::Missing(format!("{} returns {}", function.name, function.returns));
    }
    match function.params.iter().map(|p| classify(&function.name, p)).collect::<Result<Vec<_>, _>>() {
        Ok(kinds) => Binding::Generated(kinds),
        Err(why) => Binding::Missing(why),
    }
}

/// The Fortran symbol names of an MPI function, the profiling one last: gfortran's (lower case
/// and one underscore), with two underscores (-fsecond-underscore, g77), none
/// (-fno-underscoring, IBM XL) and upper case (-fcase-upper and older compilers).
pub fn symbols(name: &str) -> [String; 5] {
    let lower = name.to_ascii_lowercase();
    [format!("{lower}_"), format!("{lower}__"), lower.clone(), name.to_ascii_uppercase(), format!("p{lower}_")]
}

fn rust_name(name: &str) -> String {
    const KEYWORDS: &[&str] = &["type", "fn", "in", "ref", "match", "loop", "move", "mod", "use", "where", "impl", "self", "box", "crate", "function"];
    if KEYWORDS.contains(&name) {
        format!("{name}_")
    } else {
        name.to_string()
    }
}

fn c_param_type(kind: Kind) -> &'static str {
    match kind {
        Kind::Value(s) => match s {
            Scalar::Int | Scalar::Logical => "c_int",
            Scalar::Aint => "MPI_Aint",
            Scalar::Offset => "MPI_Offset",
            Scalar::Count => "MPI_Count",
        },
        _ => "*mut c_void",
    }
}

pub fn c_return_type(returns: &str) -> &'static str {
    match returns {
        "double" => "f64",
        "MPI_Aint" => "MPI_Aint",
        _ => "c_int",
    }
}

/// The Rust source of every generated entry point (included by src/fortran_binding/generated.rs).
pub fn rust_bindings(header: &str) -> String {
    let functions = functions(header);
    let mut out = String::from("// Generated by build.rs from include/mpi.h (build_support/fortran.rs): do not edit.\n\n");
    out.push_str("mod c {\n    use super::*;\n    extern \"C\" {\n");
    let generated: Vec<(&Function, Vec<Kind>)> = functions
        .iter()
        .filter_map(|f| match binding(f) {
            Binding::Generated(kinds) => Some((f, kinds)),
            _ => None,
        })
        .collect();
    for (function, kinds) in &generated {
        let params: Vec<String> = function.params.iter().zip(kinds).map(|(p, k)| format!("{}: {}", rust_name(&p.name), c_param_type(*k))).collect();
        for prefix in ["", "P"] {
            let _ = writeln!(out, "        pub fn {prefix}{}({}) -> {};", function.name, params.join(", "), c_return_type(&function.returns));
        }
    }
    out.push_str("    }\n}\n\n");
    for (function, kinds) in &generated {
        out.push_str(&rust_binding(function, kinds));
    }
    out
}

fn rust_binding(function: &Function, kinds: &[Kind]) -> String {
    let returns = c_return_type(&function.returns);
    let is_function = returns != "c_int";
    let mut fortran_params: Vec<String> = Vec::new();
    let mut lengths: Vec<String> = Vec::new();
    let mut before = String::new();
    let mut args: Vec<String> = Vec::new();
    let mut after = String::new();
    let keyval = function.params.iter().find(|p| p.name.ends_with("keyval")).map(|p| rust_name(&p.name));
    for (param, kind) in function.params.iter().zip(kinds) {
        let name = rust_name(&param.name);
        let (rust_type, arg) = match kind {
            Kind::Value(s) => (format!("*const {}", s.rust()), format!("{name}.read()")),
            Kind::Pointer(_) | Kind::StatusIn | Kind::AddressOut | Kind::Callback => ("*mut c_void".to_string(), name.clone()),
            Kind::IndexOut => {
                let _ = writeln!(after, "        if rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS {{ indices_to_fortran({name}, 1) }}");
                ("*mut MPI_Fint".to_string(), format!("{name}.cast()"))
            }
            Kind::IndicesOut => {
                let _ = writeln!(after, "        if rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS {{ indices_to_fortran({name}, outcount.cast::<MPI_Fint>().read()) }}");
                ("*mut MPI_Fint".to_string(), format!("{name}.cast()"))
            }
            Kind::LogicalOut => {
                let _ = writeln!(after, "        if rc == MPI_SUCCESS {{ logical_result({name}) }}");
                ("*mut MPI_Fint".to_string(), format!("{name}.cast()"))
            }
            Kind::Choice => ("*mut c_void".to_string(), format!("sentinels.buffer({name})")),
            Kind::Status => ("*mut c_void".to_string(), format!("sentinels.status({name})")),
            Kind::Statuses => ("*mut c_void".to_string(), format!("sentinels.statuses({name})")),
            Kind::Errcodes => ("*mut c_void".to_string(), format!("sentinels.errcodes({name})")),
            Kind::Weights => ("*mut c_void".to_string(), format!("sentinels.weights({name})")),
            Kind::StringIn => {
                lengths.push(format!("{name}_len: usize"));
                let _ = writeln!(before, "        let {name}_c = string_in({name}, {name}_len);");
                ("*const c_char".to_string(), format!("{name}_c.as_ptr().cast_mut().cast()"))
            }
            Kind::StringOut => {
                lengths.push(format!("{name}_len: usize"));
                let _ = writeln!(before, "        let mut {name}_c = StringOut::new({name}_len);");
                let _ = writeln!(after, "        if rc == MPI_SUCCESS {{ {name}_c.copy_to({name}, {name}_len) }}");
                ("*mut c_char".to_string(), format!("{name}_c.as_mut_ptr().cast()"))
            }
            Kind::AttributeIn => ("*const MPI_Aint".to_string(), format!("{name}.read() as *mut c_void")),
            Kind::AttributeOut => {
                let keyval = keyval.clone().unwrap_or_else(|| panic!("{}: an attribute without a keyval", function.name));
                let flag = function.params.iter().find(|p| p.name == "flag").map(|p| rust_name(&p.name)).unwrap_or_else(|| panic!("{}: an attribute without a flag", function.name));
                let _ = writeln!(after, "        if rc == MPI_SUCCESS && {flag}.cast::<MPI_Fint>().read() != 0 {{ attribute_to_fortran({keyval}.read(), {name}) }}");
                ("*mut MPI_Aint".to_string(), format!("{name}.cast()"))
            }
            Kind::DetachedBuffer => {
                let _ = writeln!(before, "        let _ = {name};\n        let mut detached: *mut c_void = std::ptr::null_mut();");
                ("*mut c_void".to_string(), "(&raw mut detached).cast()".to_string())
            }
        };
        fortran_params.push(format!("{name}: {rust_type}"));
        args.push(arg);
    }
    let uses_sentinels = kinds.iter().any(|k| matches!(k, Kind::Choice | Kind::Status | Kind::Statuses | Kind::Errcodes | Kind::Weights));
    let mut all_params = fortran_params.clone();
    if !is_function {
        all_params.push("ierror: *mut MPI_Fint".to_string());
    }
    all_params.extend(lengths.iter().cloned());
    let c_params: Vec<String> = function.params.iter().zip(kinds).map(|(_, k)| c_param_type(*k).to_string()).collect();
    let c_type = format!("unsafe extern \"C\" fn({}) -> {returns}", c_params.join(", "));
    let body_name = format!("fortran_{}", function.name.to_ascii_lowercase());
    let mut out = String::new();
    let _ = writeln!(out, "/// The Fortran binding of {}.", function.name);
    let result = if is_function { format!(" -> {returns}") } else { String::new() };
    let _ = writeln!(out, "unsafe fn {body_name}(c_function: {c_type}, {}){result} {{", all_params.join(", "));
    if uses_sentinels {
        out.push_str("    let sentinels = Sentinels::get();\n");
    }
    out.push_str("    // SAFETY: Fortran passes every argument by reference and CHARACTER lengths by value; the\n    // C function checks what MPI requires of the values.\n    unsafe {\n");
    out.push_str(&before);
    if is_function {
        let _ = writeln!(out, "        c_function({})", args.join(", "));
    } else {
        let _ = writeln!(out, "        let rc = c_function({});", args.join(", "));
        out.push_str(&after);
        out.push_str("        if !ierror.is_null() { ierror.write(rc) }\n");
    }
    out.push_str("    }\n}\n");
    let mut symbol_names = vec![function.name.clone()];
    if returns_address(kinds) {
        symbol_names.push(format!("{}_cptr", function.name));
    }
    for symbol_name in symbol_names {
        let [lower, second, bare, upper, profiling] = symbols(&symbol_name);
        let _ = writeln!(out, "fortran_symbols!({body_name}({}){result}; c::{name} => {lower}, {second}, {bare}, {upper}; c::P{name} => {profiling});\n", all_params.join(", "), name = function.name,);
    }
    out
}

/// Whether a routine returns an address in `baseptr` (MPI_Alloc_mem, MPI_Win_allocate,
/// MPI_Win_allocate_shared, MPI_Win_shared_query): the modules give it a second form taking a
/// TYPE(C_PTR), whose entry point is the same function under the name with `_cptr` (MPI 3.1
/// §8.2): both are a pointer-sized value the C function writes the address into.
pub fn returns_address(kinds: &[Kind]) -> bool {
    kinds.contains(&Kind::AddressOut)
}

/// The specific routines of a generic for a routine that returns an address: `interface`, its
/// interface body with an INTEGER(KIND=MPI_ADDRESS_KIND) `baseptr`, and the same body renamed
/// `<name>_cptr` with a TYPE(C_PTR) `baseptr`.
pub fn address_forms(name: &str, interface: &str) -> String {
    let cptr = interface
        .replacen(&format!("SUBROUTINE {name}("), &format!("SUBROUTINE {name}_cptr("), 1)
        .replacen(&format!("END SUBROUTINE {name}\n"), &format!("END SUBROUTINE {name}_cptr\n"), 1)
        .replacen("      IMPORT\n", "      USE, INTRINSIC :: ISO_C_BINDING, ONLY : C_PTR\n      IMPORT\n", 1)
        .replacen("INTEGER(KIND=MPI_ADDRESS_KIND) :: baseptr\n", "TYPE(C_PTR) :: baseptr\n", 1);
    assert!(cptr.contains("TYPE(C_PTR) :: baseptr") && cptr.contains(&format!("END SUBROUTINE {name}_cptr")), "{name}: no baseptr to give a TYPE(C_PTR) form");
    format!("{interface}{cptr}")
}

/// An integer constant of mpi.h: its name and value.
pub fn integer_constants(header: &str) -> Vec<(String, i64)> {
    let mut constants = Vec::new();
    for line in strip_comments(header).lines() {
        let Some(rest) = line.trim().strip_prefix("#define ") else { continue };
        let Some((name, value)) = rest.trim().split_once(char::is_whitespace) else { continue };
        if !name.starts_with("MPI_") || name.starts_with("MPI_T_") || name.starts_with("MPI_F_") {
            continue;
        }
        if let Some(value) = integer_value(value.trim()) {
            constants.push((name.to_string(), value));
        }
    }
    constants
}

/// The value of `1`, `(-2)` or `((MPI_Comm)1)`; None for pointers and anything else.
fn integer_value(text: &str) -> Option<i64> {
    let mut text = text.trim();
    while let Some(inner) = text.strip_prefix('(').and_then(|t| t.strip_suffix(')')) {
        text = inner.trim();
    }
    if let Some(after_cast) = text.strip_prefix('(') {
        let (cast, value) = after_cast.split_once(')')?;
        if cast.contains('*') {
            return None;
        }
        return integer_value(value);
    }
    text.parse().ok()
}

/// The constants that Fortran has and C has not, or has with another value or type.
pub fn fortran_only_constants(header: &str) -> Vec<(String, String, String)> {
    let value = |name: &str| integer_constants_with_f(header).into_iter().find(|(n, _)| n == name).map(|(_, v)| v).unwrap_or_else(|| panic!("mpi.h lacks {name}"));
    let size = value("MPI_F_STATUS_SIZE");
    vec![
        ("INTEGER".into(), "MPI_STATUS_SIZE".into(), size.to_string()),
        ("INTEGER".into(), "MPI_SOURCE".into(), (value("MPI_F_SOURCE") + 1).to_string()),
        ("INTEGER".into(), "MPI_TAG".into(), (value("MPI_F_TAG") + 1).to_string()),
        ("INTEGER".into(), "MPI_ERROR".into(), (value("MPI_F_ERROR") + 1).to_string()),
        ("INTEGER".into(), "MPI_ADDRESS_KIND".into(), "8".into()),
        ("INTEGER".into(), "MPI_OFFSET_KIND".into(), "8".into()),
        ("INTEGER".into(), "MPI_COUNT_KIND".into(), "8".into()),
        ("INTEGER".into(), "MPI_INTEGER_KIND".into(), "4".into()),
        ("LOGICAL".into(), "MPI_SUBARRAYS_SUPPORTED".into(), ".FALSE.".into()),
        ("LOGICAL".into(), "MPI_ASYNC_PROTECTS_NONBLOCKING".into(), ".FALSE.".into()),
    ]
}

fn integer_constants_with_f(header: &str) -> Vec<(String, i64)> {
    let mut constants = Vec::new();
    for line in strip_comments(header).lines() {
        let Some(rest) = line.trim().strip_prefix("#define ") else { continue };
        let Some((name, value)) = rest.trim().split_once(char::is_whitespace) else { continue };
        if let Some(value) = integer_value(value.trim()) {
            constants.push((name.to_string(), value));
        }
    }
    constants
}

/// Constants whose Fortran type is not INTEGER.
pub fn fortran_type_of(name: &str) -> &'static str {
    match name {
        "MPI_DISPLACEMENT_CURRENT" => "INTEGER(KIND=MPI_OFFSET_KIND)",
        _ => "INTEGER",
    }
}

/// The sentinel variables, one common block each (the library finds their addresses through the
/// dynamic linker, src/fortran_binding/sentinels.rs): name, type, dimensions, block.
pub const SENTINELS: &[(&str, &str, &str, &str)] = &[
    ("MPI_BOTTOM", "INTEGER", "", "BRAID_FORTRAN_BOTTOM"),
    ("MPI_IN_PLACE", "INTEGER", "", "BRAID_FORTRAN_IN_PLACE"),
    ("MPI_BUFFER_AUTOMATIC", "INTEGER", "", "BRAID_FORTRAN_BUFFER_AUTOMATIC"),
    ("MPI_STATUS_IGNORE", "INTEGER", "(MPI_STATUS_SIZE)", "BRAID_FORTRAN_STATUS_IGNORE"),
    ("MPI_STATUSES_IGNORE", "INTEGER", "(MPI_STATUS_SIZE,1)", "BRAID_FORTRAN_STATUSES_IGNORE"),
    ("MPI_ERRCODES_IGNORE", "INTEGER", "(1)", "BRAID_FORTRAN_ERRCODES_IGNORE"),
    ("MPI_UNWEIGHTED", "INTEGER", "", "BRAID_FORTRAN_UNWEIGHTED"),
    ("MPI_WEIGHTS_EMPTY", "INTEGER", "", "BRAID_FORTRAN_WEIGHTS_EMPTY"),
    ("MPI_ARGV_NULL", "CHARACTER*1", "(1)", "BRAID_FORTRAN_ARGV_NULL"),
    ("MPI_ARGVS_NULL", "CHARACTER*1", "(1,1)", "BRAID_FORTRAN_ARGVS_NULL"),
];

/// The predefined callbacks Fortran programs pass by name (src/fortran_binding/callbacks.rs
/// defines them with Fortran's signatures).
pub const PREDEFINED_CALLBACKS: &[&str] = &[
    "MPI_COMM_NULL_COPY_FN",
    "MPI_COMM_NULL_DELETE_FN",
    "MPI_COMM_DUP_FN",
    "MPI_TYPE_NULL_COPY_FN",
    "MPI_TYPE_NULL_DELETE_FN",
    "MPI_TYPE_DUP_FN",
    "MPI_WIN_NULL_COPY_FN",
    "MPI_WIN_NULL_DELETE_FN",
    "MPI_WIN_DUP_FN",
    "MPI_NULL_COPY_FN",
    "MPI_NULL_DELETE_FN",
    "MPI_DUP_FN",
    "MPI_CONVERSION_FN_NULL",
    "MPI_CONVERSION_FN_NULL_C",
];

/// The declarations of constants and sentinels, as fixed-form lines (also valid free form):
/// `      INTEGER X` / `      PARAMETER (X=1)`.
fn declarations(header: &str) -> String {
    let mut out = String::new();
    for (fortran_type, name, value) in fortran_only_constants(header) {
        let _ = writeln!(out, "      {fortran_type} {name}\n      PARAMETER ({name}={value})");
    }
    for (name, value) in integer_constants(header) {
        let fortran_type = fortran_type_of(&name);
        let _ = writeln!(out, "      {fortran_type} {name}\n      PARAMETER ({name}={value})");
    }
    for (name, fortran_type, dims, block) in SENTINELS {
        let _ = writeln!(out, "      {fortran_type} {name}{dims}\n      COMMON /{block}/ {name}\n      SAVE /{block}/");
    }
    out
}

/// mpif.h: every constant, the sentinels, the predefined callbacks and the functions' types.
pub fn mpif_h(header: &str) -> String {
    let mut out = String::from(
        "! Braid: the MPI Fortran include file (generated from include/mpi.h at build time by\n\
         ! crates/mpi/build_support/fortran.rs: do not edit). Valid fixed and free form.\n",
    );
    out.push_str(&declarations(header));
    for chunk in PREDEFINED_CALLBACKS.chunks(2) {
        let _ = writeln!(out, "      EXTERNAL {}", chunk.join(", "));
    }
    out.push_str("      EXTERNAL MPI_WTIME, MPI_WTICK, PMPI_WTIME, PMPI_WTICK\n");
    out.push_str("      DOUBLE PRECISION MPI_WTIME, MPI_WTICK, PMPI_WTIME, PMPI_WTICK\n");
    for line in out.lines() {
        assert!(line.len() <= 72 || line.starts_with('!'), "mpif.h line longer than 72 columns: {line}");
    }
    out
}

/// The Fortran declaration of one parameter in an interface body.
pub fn fortran_declaration(param: &Param, kind: Kind) -> Vec<String> {
    let name = fortran_name(&param.name);
    let dims = |array: bool| -> String {
        if !param.inner_dims.is_empty() {
            format!("({},*)", param.inner_dims.join(","))
        } else if array {
            "(*)".to_string()
        } else {
            String::new()
        }
    };
    let array = param.brackets > 0;
    match kind {
        Kind::Value(s) => vec![format!("{} :: {name}", s.fortran())],
        Kind::Pointer(s) => vec![format!("{} :: {name}{}", s.fortran(), dims(array))],
        Kind::LogicalOut => vec![format!("LOGICAL :: {name}")],
        Kind::IndexOut => vec![format!("INTEGER :: {name}")],
        Kind::IndicesOut => vec![format!("INTEGER :: {name}(*)")],
        Kind::Choice | Kind::DetachedBuffer => vec![format!("!GCC$ ATTRIBUTES NO_ARG_CHECK :: {name}"), format!("TYPE(*), DIMENSION(*) :: {name}")],
        Kind::Status | Kind::StatusIn => vec![format!("INTEGER :: {name}(MPI_STATUS_SIZE)")],
        Kind::Statuses => vec![format!("INTEGER :: {name}(MPI_STATUS_SIZE,*)")],
        Kind::Errcodes | Kind::Weights => vec![format!("INTEGER :: {name}(*)")],
        Kind::StringIn | Kind::StringOut => vec![format!("CHARACTER(LEN=*) :: {name}")],
        Kind::AttributeIn | Kind::AttributeOut | Kind::AddressOut => vec![format!("INTEGER(KIND=MPI_ADDRESS_KIND) :: {name}")],
        Kind::Callback => vec![format!("EXTERNAL :: {name}")],
    }
}

pub fn fortran_name(name: &str) -> String {
    match name {
        "function" => "handler_fn".to_string(),
        other => other.to_string(),
    }
}

/// Wraps a Fortran free-form statement at 100 columns with `&` continuations.
pub fn wrap(indent: &str, statement: &str) -> String {
    let mut out = String::new();
    let mut line = String::from(indent);
    for (i, word) in statement.split(' ').enumerate() {
        if line.len() + word.len() > 100 && i > 0 {
            out.push_str(&line);
            out.push_str(" &\n");
            line = format!("{indent}    ");
        } else if i > 0 {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
    out
}

/// The interface body of one generated function for the `mpi` module.
fn interface(function: &Function, kinds: &[Kind]) -> String {
    interface_body(function, kinds, |index, kind| fortran_declaration(&function.params[index], kind), "INTEGER :: ierror")
}

/// The interface body of one generated function: `declare` gives the lines declaring parameter
/// `index` of kind `kind`, `ierror` the declaration of the trailing error argument.
pub fn interface_body(function: &Function, kinds: &[Kind], declare: impl Fn(usize, Kind) -> Vec<String>, ierror: &str) -> String {
    let names: Vec<String> = function.params.iter().map(|p| fortran_name(&p.name)).collect();
    let returns = c_return_type(&function.returns);
    let mut out = String::new();
    let mut arguments = names.clone();
    let head = if returns == "c_int" {
        arguments.push("ierror".into());
        format!("SUBROUTINE {}({})", function.name, arguments.join(", "))
    } else {
        format!("FUNCTION {}({})", function.name, arguments.join(", "))
    };
    out.push_str(&wrap("    ", &head));
    out.push_str("      IMPORT\n      IMPLICIT NONE\n");
    for (index, kind) in kinds.iter().enumerate() {
        for line in declare(index, *kind) {
            let _ = writeln!(out, "      {line}");
        }
    }
    match returns {
        "c_int" => {
            let _ = writeln!(out, "      {ierror}");
        }
        "f64" => {
            let _ = writeln!(out, "      DOUBLE PRECISION :: {}", function.name);
        }
        _ => {
            let _ = writeln!(out, "      INTEGER(KIND=MPI_ADDRESS_KIND) :: {}", function.name);
        }
    }
    let _ = writeln!(out, "    END {} {}", if returns == "c_int" { "SUBROUTINE" } else { "FUNCTION" }, function.name);
    out
}

/// The interfaces of the handwritten MPI_Init and MPI_Init_thread, with `ierror` declared as given.
fn init_interfaces(ierror: &str) -> String {
    format!(
        "    SUBROUTINE MPI_Init(ierror)\n      IMPLICIT NONE\n      {ierror}\n    END SUBROUTINE MPI_Init\n    \
         SUBROUTINE MPI_Init_thread(required, provided, ierror)\n      IMPLICIT NONE\n      INTEGER :: required, provided\n      {ierror}\n    END SUBROUTINE MPI_Init_thread\n"
    )
}

/// What the `mpi` and `mpi_f08` modules share, in `module`'s forms: the INTERFACE block (the
/// handwritten MPI_Init pair with `ierror` declared as given, the other handwritten interfaces, and
/// `interface` for each generated routine), the generics of the routines returning an address,
/// MPI_Sizeof's generic, then CONTAINS and MPI_Sizeof's procedures.
pub fn interfaces_and_sizeof(header: &str, module: Module, ierror: &str, interface: fn(&Function, &[Kind]) -> String) -> String {
    let mut out = String::from("  INTERFACE\n");
    out.push_str(&init_interfaces(ierror));
    out.push_str(&handwritten_interfaces(module));
    let generated: Vec<(Function, Vec<Kind>)> = functions(header)
        .into_iter()
        .filter_map(|function| match binding(&function) {
            Binding::Generated(kinds) => Some((function, kinds)),
            _ => None,
        })
        .collect();
    let large_count_pair = |name: &str| {
        let large = generated.iter().find(|(f, _)| f.name == format!("{name}_c"))?;
        let base = generated.iter().find(|(f, _)| f.name == name)?;
        distinguishable(&base.0, &base.1, &large.0, &large.1).then_some(large)
    };
    // A routine's specific forms: itself, and the TYPE(C_PTR) form of one returning an address.
    let forms = |function: &Function, kinds: &[Kind]| {
        let body = interface(function, kinds);
        if returns_address(kinds) {
            address_forms(&function.name, &body)
        } else {
            body
        }
    };
    let mut generics = String::new();
    for (function, kinds) in &generated {
        let large = large_count_pair(&function.name).filter(|_| module == Module::F08);
        if is_large_count_form(&function.name) {
            // The large-count forms exist in mpi_f08 alone: in the generic of their base name
            // where a compiler can tell them apart, by their own name where it cannot
            // (MPI_Op_create_c: the two differ only in the callback's interface).
            if module == Module::Mpi || large_count_pair(&function.name[..function.name.len() - 2]).is_some() {
                continue;
            }
            out.push_str(&interface(function, kinds));
        } else if returns_address(kinds) || large.is_some() {
            let large_forms = large.map(|(f, k)| forms(f, k)).unwrap_or_default();
            let _ = write!(generics, "  INTERFACE {}\n{}{large_forms}  END INTERFACE\n", function.name, forms(function, kinds));
        } else {
            out.push_str(&interface(function, kinds));
        }
    }
    out.push_str("  END INTERFACE\n");
    out.push_str(&generics);
    out.push_str(&sizeof_generic());
    out.push_str("CONTAINS\n");
    out.push_str(&sizeof_procedures(module));
    out
}

/// How a Fortran compiler resolving a generic sees one argument: its type, kind and rank, the
/// integer kinds of 8 bytes (MPI_ADDRESS_KIND, MPI_OFFSET_KIND, MPI_COUNT_KIND) being one.
/// `None` for a choice buffer, which matches anything.
fn resolution_key(param: &Param, kind: Kind) -> Option<String> {
    if matches!(kind, Kind::Choice | Kind::DetachedBuffer) {
        return None;
    }
    let declaration = fortran_declaration(param, kind).pop().unwrap_or_default();
    let (declared_type, name) = declaration.split_once(" :: ").unwrap_or((&declaration, ""));
    let eight_bytes = ["KIND=MPI_ADDRESS_KIND", "KIND=MPI_OFFSET_KIND", "KIND=MPI_COUNT_KIND"];
    let declared_type = eight_bytes.iter().fold(declared_type.to_string(), |t, k| t.replace(k, "KIND=8"));
    let rank = name.matches(',').count() + usize::from(name.contains('('));
    Some(format!("{declared_type}/{rank}"))
}

/// Whether two routines can share a generic name: they differ in their number of arguments or in
/// the type, kind or rank of one at the same position (the arguments keep their names between a
/// function and its large-count form, so position and name agree).
pub fn distinguishable(a: &Function, a_kinds: &[Kind], b: &Function, b_kinds: &[Kind]) -> bool {
    if a.params.len() != b.params.len() {
        return true;
    }
    let keys = |f: &Function, kinds: &[Kind]| -> Vec<Option<String>> { f.params.iter().zip(kinds).map(|(p, k)| resolution_key(p, *k)).collect() };
    keys(a, a_kinds).iter().zip(keys(b, b_kinds)).any(|(x, y)| matches!((x, y), (Some(x), Some(y)) if *x != y))
}

/// The source of the `mpi` module: the constants of mpif.h and an explicit interface for every
/// routine (choice buffers take any type, kind and rank through gfortran's NO_ARG_CHECK), a
/// generic with a TYPE(C_PTR) form for those returning an address, and MPI_Sizeof.
pub fn mpi_module(header: &str) -> String {
    let mut out = String::from("! Braid: the `mpi` module (generated from include/mpi.h at build time: do not edit).\nMODULE mpi\n  IMPLICIT NONE\n");
    for line in declarations(header).lines() {
        let _ = writeln!(out, "  {}", line.trim_start());
    }
    for chunk in PREDEFINED_CALLBACKS.chunks(4) {
        let _ = writeln!(out, "  EXTERNAL {}", chunk.join(", "));
    }
    out.push_str(&interfaces_and_sizeof(header, Module::Mpi, "INTEGER :: ierror", interface));
    out.push_str("END MODULE mpi\n");
    out
}
