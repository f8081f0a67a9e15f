//! build.rs's search for MPI_ entry points (build_support/entry_points.rs), which decides which
//! PMPI_ trampolines exist.

#[path = "../build_support/entry_points.rs"]
mod entry_points;

use entry_points::{entry_points, type_names};

#[test]
fn finds_functions_and_entry_point_macros() {
    let source = r#"
#[no_mangle]
pub unsafe extern "C" fn MPI_Send(buf: *const c_void) -> c_int { 0 }
#[no_mangle]
pub extern "C" fn MPI_Wtime() -> f64 { 0.0 }
collective! {
    /// A doc comment inside the invocation.
    MPI_Bcast(buffer: *mut c_void, count: c_int) { Ok(()) }
}
collective!(#[allow(unused)] MPI_Allreduce(sendbuf: *const c_void) => run());
collective!(MPI_Bcast_blocking / MPI_Ibcast(buffer: *mut c_void, count: c_int) => bcast);
to_fortran!(MPI_Comm_c2f(MPI_Comm));
extent_query!(MPI_Type_get_extent(lb, extent): MPI_Aint = identity);
unsupported!(
    MPI_Win_create(base: *mut c_void) on comm,
    WINDOWS
);
"#;
    assert_eq!(entry_points(source), ["MPI_Send", "MPI_Wtime", "MPI_Bcast", "MPI_Allreduce", "MPI_Bcast_blocking", "MPI_Ibcast", "MPI_Comm_c2f", "MPI_Type_get_extent", "MPI_Win_create"]);
}

#[test]
fn ignores_declarations_comments_strings_and_other_calls() {
    let source = r##"
extern "C" {
    fn MPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int;
}
// fn MPI_Commented_out() {}
/* unsupported!(MPI_Block_commented(x: c_int) on MPI_COMM_WORLD, WHY); */
/// Calls `fn MPI_Documented() {}` in a doc comment.
const TEXT: &str = "fn MPI_In_a_string() {}";
const RAW: &str = r#"collective!(MPI_In_a_raw_string(x: c_int) => run())"#;
const QUOTE: char = '"';
fn helper<'a>(name: &'a str) -> &'a str { finish("MPI_Send", name) }
let detail = format!("MPI_Recv({rank})");
assert!(MPI_SUCCESS == 0);
"##;
    assert!(entry_points(source).is_empty(), "{:?}", entry_points(source));
}

#[test]
fn predefined_callbacks_are_not_entry_points() {
    let source = r#"
#[no_mangle]
pub unsafe extern "C" fn MPI_COMM_DUP_FN(comm: MPI_Comm) -> c_int { 0 }
#[no_mangle]
pub unsafe extern "C" fn MPI_T_init_thread(required: c_int, provided: *mut c_int) -> c_int { 0 }
"#;
    assert_eq!(entry_points(source), ["MPI_T_init_thread"]);
}

#[test]
fn types_are_told_apart() {
    let source = r#"
pub type MPI_Comm = c_int;
#[repr(C)]
pub struct MPI_Status { pub MPI_SOURCE: c_int }
pub fn status_to_fortran(status: &MPI_Status) -> [MPI_Fint; 5] { todo() }
"#;
    assert_eq!(type_names(source), ["MPI_Comm", "MPI_Status"]);
}

#[test]
fn a_quote_character_does_not_hide_the_code_after_it() {
    let source = r#"
const QUOTE: char = '"';
const ESCAPED: char = '\'';
#[no_mangle]
pub unsafe extern "C" fn MPI_Barrier(comm: MPI_Comm) -> c_int { 0 }
"#;
    assert_eq!(entry_points(source), ["MPI_Barrier"]);
}

/// The library's own sources: every entry point the C header tests rely on is found.
#[test]
fn finds_the_entry_points_of_this_crate() {
    let source_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let read = |relative: &str| std::fs::read_to_string(source_dir.join(relative)).unwrap();
    let p2p = entry_points(&read("p2p.rs"));
    assert!(p2p.contains(&"MPI_Send".to_string()) && p2p.contains(&"MPI_Recv".to_string()), "{p2p:?}");
    let collectives = entry_points(&read("coll/abi.rs"));
    for name in ["MPI_Barrier", "MPI_Bcast", "MPI_Ibcast", "MPI_Allreduce", "MPI_Iallreduce", "MPI_Alltoallv"] {
        assert!(collectives.contains(&name.to_string()), "{name} missing from {collectives:?}");
    }
    let datatypes = entry_points(&read("datatype/abi.rs"));
    assert!(datatypes.contains(&"MPI_Type_get_true_extent_x".to_string()), "{datatypes:?}");
}
