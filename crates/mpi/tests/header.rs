//! include/mpi.h compiles warning-free as strict C89, C99, C11 and C++; every constant it
//! defines agrees with consts.rs (and the other way round); its PMPI_ block mirrors its MPI_
//! prototypes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use braid::consts::*;

mod support;
use support::c_header::{declared_callbacks, mpi_h_path, pmpi_block, prototypes, strip_comments, PMPI_BEGIN, PMPI_END};

fn include_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../include")
}

/// A scratch directory removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("braid-header-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Compiles and runs `source` with `compiler` and the strict flags; returns its stdout.
fn compile_and_run(compiler: &str, flags: &[&str], file_name: &str, source: &str) -> String {
    let program = compile(compiler, flags, file_name, source, false);
    let run = Command::new(&program.1).output().unwrap();
    assert!(run.status.success());
    String::from_utf8(run.stdout).unwrap()
}

/// Compiles `source` with the strict flags (only to an object file when `object_only`); returns the
/// scratch directory (kept alive) and the output path.
fn compile(compiler: &str, flags: &[&str], file_name: &str, source: &str, object_only: bool) -> (Scratch, PathBuf) {
    let scratch = Scratch::new(&format!("{compiler}{}-{file_name}", flags.concat()));
    let source_path = scratch.0.join(file_name);
    let program = scratch.0.join("program");
    std::fs::write(&source_path, source).unwrap();
    let output = Command::new(compiler)
        .args(flags)
        .args(["-Wall", "-Wextra", "-Werror", "-pedantic", "-I"])
        .arg(include_dir())
        .args(if object_only { &["-c"][..] } else { &[] })
        .arg(&source_path)
        .arg("-o")
        .arg(&program)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {compiler}: {e}"));
    assert!(output.status.success(), "{compiler} rejected mpi.h:\n{}", String::from_utf8_lossy(&output.stderr));
    (scratch, program)
}

macro_rules! constant_table {
    ($($name:ident),* $(,)?) => {
        (
            vec![$(concat!("    printf(\"%s %lld\\n\", \"", stringify!($name), "\", (long long)(", stringify!($name), "));\n")),*].concat(),
            vec![$((stringify!($name), $name as i64)),*],
        )
    };
}

fn constant_program() -> (String, Vec<(&'static str, i64)>) {
    let (prints, expected) = constant_table!(
        MPI_VERSION,
        MPI_SUBVERSION,
        MPI_COMM_NULL,
        MPI_COMM_WORLD,
        MPI_COMM_SELF,
        MPI_GROUP_EMPTY,
        MPI_ERRORS_ARE_FATAL,
        MPI_ERRORS_RETURN,
        MPI_INFO_ENV,
        MPI_REQUEST_NULL,
        MPI_DATATYPE_NULL,
        MPI_CHAR,
        MPI_BYTE,
        MPI_INT,
        MPI_LONG_LONG,
        MPI_DOUBLE,
        MPI_LONG_DOUBLE,
        MPI_C_BOOL,
        MPI_UINT64_T,
        MPI_C_LONG_DOUBLE_COMPLEX,
        MPI_PACKED,
        MPI_2INT,
        MPI_LONG_DOUBLE_INT,
        MPI_CHARACTER,
        MPI_2DOUBLE_PRECISION,
        MPI_REAL16,
        MPI_COMPLEX32,
        MPI_CXX_BOOL,
        MPI_CXX_LONG_DOUBLE_COMPLEX,
        MPI_LB,
        MPI_UB,
        BRAID_PREDEFINED_DATATYPE_LAST,
        MPI_ORDER_FORTRAN,
        MPI_COMBINER_DARRAY,
        MPI_COMBINER_RESIZED,
        MPI_COMBINER_F90_INTEGER,
        MPI_DISTRIBUTE_CYCLIC,
        MPI_DISTRIBUTE_NONE,
        MPI_DISTRIBUTE_DFLT_DARG,
        MPI_TYPECLASS_REAL,
        MPI_TYPECLASS_COMPLEX,
        BRAID_FIRST_DERIVED_DATATYPE,
        MPI_MAX,
        MPI_SUM,
        MPI_MAXLOC,
        MPI_NO_OP,
        BRAID_FIRST_USER_OP,
        MPI_ANY_SOURCE,
        MPI_PROC_NULL,
        MPI_ROOT,
        MPI_ANY_TAG,
        MPI_UNDEFINED,
        MPI_MAX_PROCESSOR_NAME,
        MPI_MAX_ERROR_STRING,
        MPI_MAX_OBJECT_NAME,
        MPI_MAX_LIBRARY_VERSION_STRING,
        MPI_IDENT,
        MPI_UNEQUAL,
        MPI_THREAD_SERIALIZED,
        MPI_THREAD_MULTIPLE,
        MPI_CART,
        MPI_GRAPH,
        MPI_DIST_GRAPH,
        MPI_COMM_TYPE_SHARED,
        MPI_KEYVAL_INVALID,
        MPI_TAG_UB,
        MPI_APPNUM,
        MPI_LASTUSEDCODE,
        MPI_WIN_BASE,
        MPI_WIN_MODEL,
        MPI_WIN_FLAVOR_SHARED,
        MPI_WIN_UNIFIED,
        MPI_ERRHANDLER_NULL,
        MPI_FILE_NULL,
        MPI_WIN_NULL,
        MPI_ERR_TOPOLOGY,
        MPI_ERR_DIMS,
        MPI_ERR_FILE,
        MPI_ERR_WIN,
        MPI_SUCCESS,
        MPI_ERR_BUFFER,
        MPI_ERR_RANK,
        MPI_ERR_TRUNCATE,
        MPI_ERR_OTHER,
        MPI_ERR_IN_STATUS,
        MPI_ERR_REQUEST,
        MPI_ERR_UNSUPPORTED_OPERATION,
        MPI_ERR_KEYVAL,
        MPI_ERR_LASTCODE,
        MPI_MESSAGE_NULL,
        MPI_MESSAGE_NO_PROC,
        MPI_BSEND_OVERHEAD,
        MPI_T_ENUM_NULL,
        MPI_T_PVAR_ALL_HANDLES,
        MPI_T_PVAR_SESSION_NULL,
        MPI_T_VERBOSITY_USER_BASIC,
        MPI_T_VERBOSITY_MPIDEV_ALL,
        MPI_T_BIND_NO_OBJECT,
        MPI_T_BIND_MPI_INFO,
        MPI_T_SCOPE_CONSTANT,
        MPI_T_SCOPE_ALL_EQ,
        MPI_T_PVAR_CLASS_STATE,
        MPI_T_PVAR_CLASS_HIGHWATERMARK,
        MPI_T_PVAR_CLASS_COUNTER,
        MPI_T_PVAR_CLASS_TIMER,
        MPI_T_PVAR_CLASS_GENERIC,
        MPI_T_ERR_MEMORY,
        MPI_T_ERR_INVALID_INDEX,
        MPI_T_ERR_CVAR_SET_NEVER,
        MPI_T_ERR_PVAR_NO_WRITE,
        MPI_T_ERR_INVALID_NAME,
        MPI_T_ERR_INVALID,
    );
    let source = format!(
        "#include <mpi.h>\n#include <stdio.h>\n\nint main(void) {{\n{prints}    printf(\"sizeof_status %lld\\n\", (long long)sizeof(MPI_Status));\n    printf(\"sizeof_aint %lld\\n\", (long long)sizeof(MPI_Aint));\n    printf(\"in_place %lld\\n\", (long long)(intptr_t)MPI_IN_PLACE);\n    printf(\"status_ignore %lld\\n\", (long long)(intptr_t)MPI_STATUS_IGNORE);\n    printf(\"unweighted %lld\\n\", (long long)(intptr_t)MPI_UNWEIGHTED);\n    printf(\"weights_empty %lld\\n\", (long long)(intptr_t)MPI_WEIGHTS_EMPTY);\n    return 0;\n}}\n"
    );
    let mut expected = expected;
    expected.push(("sizeof_status", std::mem::size_of::<MPI_Status>() as i64));
    expected.push(("sizeof_aint", std::mem::size_of::<MPI_Aint>() as i64));
    expected.push(("in_place", MPI_IN_PLACE as isize as i64));
    expected.push(("status_ignore", MPI_STATUS_IGNORE as isize as i64));
    expected.push(("unweighted", MPI_UNWEIGHTED as isize as i64));
    expected.push(("weights_empty", MPI_WEIGHTS_EMPTY as isize as i64));
    (source, expected)
}

fn check_values(printed: &str, expected: &[(&str, i64)]) {
    let lines: Vec<&str> = printed.lines().collect();
    assert_eq!(lines.len(), expected.len());
    for (line, (name, value)) in lines.iter().zip(expected) {
        assert_eq!(*line, format!("{name} {value}"), "mpi.h and consts.rs disagree");
    }
}

#[test]
fn header_compiles_as_c99_and_matches_consts() {
    let (source, expected) = constant_program();
    let printed = compile_and_run("cc", &["-std=c99"], "constants.c", &source);
    check_values(&printed, &expected);
}

#[test]
fn header_compiles_as_cxx_and_matches_consts() {
    let (source, expected) = constant_program();
    let printed = compile_and_run("c++", &[], "constants.cpp", &source);
    check_values(&printed, &expected);
}

/// Calls as applications write them, with the special pointer values where GCC's object-size
/// checks (-O2) would flag a mistyped parameter.
const TYPICAL_CALLS: &str = r#"#include <mpi.h>

int exchange(int *data, int n) {
    MPI_Request requests[2];
    MPI_Status status;
    int total = 0, flag = 0, count = 0;
    MPI_Irecv(data, n, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &requests[0]);
    MPI_Isend(data, n, MPI_INT, 0, 0, MPI_COMM_WORLD, &requests[1]);
    MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
    MPI_Testall(2, requests, &flag, MPI_STATUSES_IGNORE);
    MPI_Recv(data, n, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Probe(0, 0, MPI_COMM_WORLD, &status);
    MPI_Get_count(&status, MPI_INT, &count);
    MPI_Allreduce(MPI_IN_PLACE, data, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Reduce(data, &total, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    return total + count + flag;
}

static void handler(MPI_Comm *comm, int *code, ...) {
    (void)comm;
    (void)code;
}

int topology(int rank, int size) {
    MPI_Comm graph;
    MPI_Errhandler errhandler;
    int left = (rank + size - 1) % size, right = (rank + 1) % size, indegree, outdegree, weighted;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &left, MPI_UNWEIGHTED, 1, &right, MPI_UNWEIGHTED,
                                   MPI_INFO_NULL, 0, &graph);
    MPI_Dist_graph_neighbors(graph, 1, &left, MPI_UNWEIGHTED, 1, &right, MPI_UNWEIGHTED);
    MPI_Comm_free(&graph);
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 0, NULL, MPI_WEIGHTS_EMPTY, 0, NULL, MPI_WEIGHTS_EMPTY,
                                   MPI_INFO_NULL, 0, &graph);
    MPI_Dist_graph_create(MPI_COMM_WORLD, 0, NULL, NULL, NULL, MPI_WEIGHTS_EMPTY, MPI_INFO_NULL, 0, &graph);
    MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &rank, &size, &right, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &graph);
    MPI_Dist_graph_neighbors_count(graph, &indegree, &outdegree, &weighted);
    MPI_Comm_create_errhandler(handler, &errhandler);
    MPI_Comm_set_errhandler(graph, errhandler);
    MPI_Errhandler_free(&errhandler);
    return indegree + outdegree + weighted;
}
"#;

#[test]
fn typical_calls_compile_warning_free_when_optimised() {
    compile("cc", &["-std=c99", "-O2"], "typical.c", TYPICAL_CALLS, true);
    compile("c++", &["-O2"], "typical.cpp", TYPICAL_CALLS, true);
}

/// Every `#define NAME value` of mpi.h that names a value (not the include guard).
fn header_constants(header: &str) -> Vec<String> {
    strip_comments(header)
        .lines()
        .filter_map(|line| line.trim().strip_prefix("#define "))
        .filter_map(|rest| rest.split_whitespace().next())
        .filter(|name| (name.starts_with("MPI_") || name.starts_with("BRAID")) && *name != "BRAID_MPI_H")
        .map(str::to_string)
        .collect()
}

/// Every `pub const NAME: TYPE = VALUE;` of consts.rs, with VALUE as the integer (or address)
/// that C sees.
fn rust_constants() -> BTreeMap<String, i64> {
    let source = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/consts.rs")).unwrap();
    let mut constants = BTreeMap::new();
    for line in source.lines() {
        let Some(rest) = line.trim().strip_prefix("pub const ") else { continue };
        let (name, rest) = rest.split_once(':').expect("pub const NAME: TYPE = VALUE;");
        let value = rest.split_once('=').expect("a value").1.trim().trim_end_matches(';');
        let literal = value.split(" as ").next().unwrap().trim();
        let number = if literal.contains("null") {
            0
        } else if literal == "usize::MAX" {
            -1
        } else {
            literal.trim_end_matches("usize").parse::<i64>().unwrap_or_else(|_| panic!("cannot read the value of {name}: {value}"))
        };
        constants.insert(name.to_string(), number);
    }
    constants
}

/// A C program printing `NAME value` for each of `names`, valid C89 and C++98.
fn printing_program(names: &[String]) -> String {
    let prints: String = names.iter().map(|name| format!("    printf(\"{name} %ld\\n\", (long)(intptr_t)({name}));\n")).collect();
    format!("#include <mpi.h>\n#include <stdio.h>\n\nint main(void)\n{{\n{prints}    return 0;\n}}\n")
}

fn check_every_constant(compiler: &str, flags: &[&str], file_name: &str) {
    let header = std::fs::read_to_string(mpi_h_path()).unwrap();
    let names = header_constants(&header);
    let rust = rust_constants();
    let missing_in_rust: Vec<&String> = names.iter().filter(|name| !rust.contains_key(*name)).collect();
    assert!(missing_in_rust.is_empty(), "mpi.h defines constants that consts.rs lacks: {missing_in_rust:?}");
    let missing_in_c: Vec<&String> = rust.keys().filter(|name| !names.contains(name)).collect();
    assert!(missing_in_c.is_empty(), "consts.rs defines constants that mpi.h lacks: {missing_in_c:?}");
    let printed = compile_and_run(compiler, flags, file_name, &printing_program(&names));
    for line in printed.lines() {
        let (name, value) = line.split_once(' ').unwrap();
        assert_eq!(value.parse::<i64>().unwrap(), rust[name], "{name}: mpi.h and consts.rs disagree");
    }
    assert_eq!(printed.lines().count(), names.len());
}

#[test]
fn every_constant_agrees_with_consts_in_c89() {
    check_every_constant("cc", &["-std=c89"], "every_constant.c");
}

#[test]
fn every_constant_agrees_with_consts_in_c11() {
    check_every_constant("cc", &["-std=c11"], "every_constant.c");
}

#[test]
fn every_constant_agrees_with_consts_in_cxx98() {
    check_every_constant("c++", &["-std=c++98"], "every_constant.cpp");
}

/// A translation unit that takes the address of every function mpi.h declares, MPI_ and PMPI_.
fn every_function_program() -> String {
    let header = std::fs::read_to_string(mpi_h_path()).unwrap();
    let mut functions: Vec<String> = prototypes(&header, "MPI_").into_iter().map(|p| p.name).collect();
    functions.extend(prototypes(&header, "PMPI_").into_iter().map(|p| p.name));
    functions.extend(declared_callbacks(&header));
    let entries: String = functions.iter().map(|name| format!("    (void (*)(void)){name},\n")).collect();
    format!("#include <mpi.h>\n\ntypedef void (*any_function)(void);\nextern const any_function every_function[];\nconst any_function every_function[] = {{\n{entries}}};\n")
}

#[test]
fn every_declaration_compiles_in_strict_c_and_cxx() {
    let program = every_function_program();
    for standard in ["-std=c89", "-std=c99", "-std=c11"] {
        compile("cc", &[standard], "every_function.c", &program, true);
    }
    for standard in ["-std=c++98", "-std=c++11", "-std=c++17"] {
        compile("c++", &[standard], "every_function.cpp", &program, true);
    }
}

/// The PMPI_ block (between PMPI_BEGIN and PMPI_END) is `pmpi_block` of the MPI_ prototypes
/// above it. With BRAID_UPDATE_HEADER=1 the test rewrites the block instead of failing.
#[test]
fn pmpi_block_mirrors_the_mpi_prototypes() {
    let path = mpi_h_path();
    let header = std::fs::read_to_string(&path).unwrap();
    let expected = pmpi_block(&header);
    let (before, rest) = header.split_once(PMPI_BEGIN).expect("mpi.h has the PMPI block's opening line");
    let (current, after) = rest.split_once(PMPI_END).expect("mpi.h has the PMPI block's closing line");
    let current = current.trim_start_matches('\n');
    if current == expected {
        return;
    }
    if std::env::var_os("BRAID_UPDATE_HEADER").is_some_and(|v| v == "1") {
        std::fs::write(&path, format!("{before}{PMPI_BEGIN}\n{expected}{PMPI_END}{after}")).unwrap();
        return;
    }
    let names = |text: &str| -> Vec<String> { prototypes(text, "PMPI_").into_iter().map(|p| p.name).collect() };
    let (want, have) = (names(&expected), names(current));
    let missing: Vec<&String> = want.iter().filter(|n| !have.contains(n)).collect();
    let stale: Vec<&String> = have.iter().filter(|n| !want.contains(n)).collect();
    panic!(
        "mpi.h's PMPI block is out of date (missing {missing:?}, no longer declared {stale:?}, or a changed \
         prototype): run `BRAID_UPDATE_HEADER=1 cargo test --release -p braid-mpi --test header pmpi`"
    );
}

/// The prototype reader understands every form the header uses.
#[test]
fn prototype_reader_reads_each_form_of_declaration() {
    let header = r#"
#ifndef GUARD
#define MPI_CONSTANT 3 /* a comment; with a semicolon */
#ifdef __cplusplus
extern "C" {
#endif
typedef struct MPI_Status { int MPI_SOURCE; int MPI_TAG; } MPI_Status;
typedef int MPI_Copy_function(int oldcomm, int keyval, void *extra_state);
MPI_Copy_function MPI_DUP_FN;
/* int MPI_Commented(void); */
int MPI_Send(const void *buf, int count,
             int dest); // a C++ comment
double MPI_Wtime(void);
MPI_Aint MPI_Aint_add(MPI_Aint base, MPI_Aint disp);
int MPI_Send(const void *buf, int count, int dest);
int PMPI_Send(const void *buf, int count, int dest);
#ifdef __cplusplus
}
#endif
#endif
"#;
    let texts: Vec<String> = prototypes(header, "MPI_").into_iter().map(|p| format!("{} = {}", p.name, p.text)).collect();
    assert_eq!(
        texts,
        ["MPI_Send = int MPI_Send(const void *buf, int count, int dest);", "MPI_Wtime = double MPI_Wtime(void);", "MPI_Aint_add = MPI_Aint MPI_Aint_add(MPI_Aint base, MPI_Aint disp);",]
    );
    assert_eq!(declared_callbacks(header), ["MPI_DUP_FN"]);
    assert_eq!(pmpi_block(header), "int PMPI_Send(const void *buf, int count, int dest);\ndouble PMPI_Wtime(void);\nMPI_Aint PMPI_Aint_add(MPI_Aint base, MPI_Aint disp);\n");
}
