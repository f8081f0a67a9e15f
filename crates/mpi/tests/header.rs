//! include/mpi.h compiles warning-free as C99 and C++, and its constants agree with consts.rs.

use std::path::{Path, PathBuf};
use std::process::Command;

use braid::consts::*;

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
    let scratch = Scratch::new(&format!("{compiler}-{file_name}"));
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
        MPI_VERSION, MPI_SUBVERSION, MPI_COMM_NULL, MPI_COMM_WORLD, MPI_COMM_SELF, MPI_GROUP_EMPTY,
        MPI_ERRORS_ARE_FATAL, MPI_ERRORS_RETURN, MPI_INFO_ENV, MPI_REQUEST_NULL, MPI_DATATYPE_NULL,
        MPI_CHAR, MPI_BYTE, MPI_INT, MPI_LONG_LONG, MPI_DOUBLE, MPI_LONG_DOUBLE, MPI_C_BOOL, MPI_UINT64_T,
        MPI_C_LONG_DOUBLE_COMPLEX, MPI_PACKED, MPI_2INT, MPI_LONG_DOUBLE_INT, MPI_CHARACTER, MPI_2DOUBLE_PRECISION,
        MPI_REAL16, MPI_COMPLEX32, MPI_CXX_BOOL, MPI_CXX_LONG_DOUBLE_COMPLEX, MPI_LB, MPI_UB, BRAID_PREDEFINED_DATATYPE_LAST,
        MPI_ORDER_FORTRAN, MPI_COMBINER_DARRAY, MPI_COMBINER_RESIZED, MPI_COMBINER_F90_INTEGER, MPI_DISTRIBUTE_CYCLIC,
        MPI_DISTRIBUTE_NONE, MPI_DISTRIBUTE_DFLT_DARG, MPI_TYPECLASS_REAL, MPI_TYPECLASS_COMPLEX,
        BRAID_FIRST_DERIVED_DATATYPE, MPI_MAX, MPI_SUM, MPI_MAXLOC, MPI_NO_OP, BRAID_FIRST_USER_OP,
        MPI_ANY_SOURCE, MPI_PROC_NULL, MPI_ROOT, MPI_ANY_TAG, MPI_UNDEFINED, MPI_MAX_PROCESSOR_NAME,
        MPI_MAX_ERROR_STRING, MPI_MAX_OBJECT_NAME, MPI_MAX_LIBRARY_VERSION_STRING, MPI_IDENT, MPI_UNEQUAL,
        MPI_THREAD_SERIALIZED, MPI_THREAD_MULTIPLE, MPI_CART, MPI_GRAPH, MPI_DIST_GRAPH, MPI_COMM_TYPE_SHARED,
        MPI_KEYVAL_INVALID, MPI_TAG_UB, MPI_APPNUM, MPI_LASTUSEDCODE, MPI_WIN_BASE, MPI_WIN_MODEL, MPI_WIN_FLAVOR_SHARED,
        MPI_WIN_UNIFIED, MPI_ERRHANDLER_NULL, MPI_FILE_NULL, MPI_WIN_NULL, MPI_ERR_TOPOLOGY, MPI_ERR_DIMS, MPI_ERR_FILE, MPI_ERR_WIN,
        MPI_SUCCESS, MPI_ERR_BUFFER, MPI_ERR_RANK, MPI_ERR_TRUNCATE, MPI_ERR_OTHER, MPI_ERR_IN_STATUS,
        MPI_ERR_REQUEST, MPI_ERR_UNSUPPORTED_OPERATION, MPI_ERR_KEYVAL, MPI_ERR_LASTCODE,
        MPI_MESSAGE_NULL, MPI_MESSAGE_NO_PROC, MPI_BSEND_OVERHEAD,
        MPI_T_ENUM_NULL, MPI_T_PVAR_ALL_HANDLES, MPI_T_PVAR_SESSION_NULL, MPI_T_VERBOSITY_USER_BASIC,
        MPI_T_VERBOSITY_MPIDEV_ALL, MPI_T_BIND_NO_OBJECT, MPI_T_BIND_MPI_INFO, MPI_T_SCOPE_CONSTANT, MPI_T_SCOPE_ALL_EQ,
        MPI_T_PVAR_CLASS_STATE, MPI_T_PVAR_CLASS_HIGHWATERMARK, MPI_T_PVAR_CLASS_COUNTER, MPI_T_PVAR_CLASS_TIMER,
        MPI_T_PVAR_CLASS_GENERIC, MPI_T_ERR_MEMORY, MPI_T_ERR_INVALID_INDEX, MPI_T_ERR_CVAR_SET_NEVER,
        MPI_T_ERR_PVAR_NO_WRITE, MPI_T_ERR_INVALID_NAME, MPI_T_ERR_INVALID,
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
