//! libbraid.so exports, as MPI_ and as PMPI_, every function include/mpi.h declares, except the
//! ones listed in not_exported_yet.txt, and nothing MPI-named that mpi.h does not declare. The
//! predefined callbacks (MPI_COMM_DUP_FN, ...) that mpi.h declares as functions are exported
//! under their own name only.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

mod support;
use support::c_header::{declared_callbacks, is_callback_name, mpi_h_path, prototypes};

/// The libbraid.so that `cargo test` builds along with this test, next to it in
/// target/<profile>/deps (`cargo build` copies it up to target/<profile>, `cargo test` does not).
fn library() -> PathBuf {
    let test = std::env::current_exe().unwrap();
    test.parent().expect("the test binary is in a directory").join("libbraid.so")
}

/// The functions and other symbols the library defines for the dynamic linker.
fn exported_symbols() -> BTreeSet<String> {
    let library = library();
    let output = Command::new("nm").args(["--dynamic", "--defined-only", "--format=posix"]).arg(&library).output().unwrap_or_else(|e| panic!("cannot run nm (binutils) on {}: {e}", library.display()));
    assert!(output.status.success(), "nm failed on {}: {}", library.display(), String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap().lines().filter_map(|line| line.split_whitespace().next()).map(str::to_string).collect()
}

fn not_exported_yet() -> BTreeSet<String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/not_exported_yet.txt");
    std::fs::read_to_string(path).unwrap().lines().map(str::trim).filter(|line| !line.is_empty() && !line.starts_with('#')).map(str::to_string).collect()
}

#[test]
fn every_declared_function_is_exported_as_mpi_and_pmpi() {
    let header = std::fs::read_to_string(mpi_h_path()).unwrap();
    let declared: BTreeSet<String> = prototypes(&header, "MPI_").into_iter().map(|p| p.name).collect();
    let exported = exported_symbols();
    let pending = not_exported_yet();

    let callbacks_missing: Vec<String> = declared_callbacks(&header).into_iter().filter(|name| !exported.contains(name)).collect();
    assert!(callbacks_missing.is_empty(), "predefined callbacks declared in mpi.h but not exported: {callbacks_missing:?}");

    let missing: Vec<String> = declared.iter().filter(|name| !pending.contains(*name)).flat_map(|name| [name.clone(), format!("P{name}")]).filter(|symbol| !exported.contains(symbol)).collect();
    assert!(missing.is_empty(), "declared in mpi.h but not exported by {}: {missing:?}", library().display());

    let landed: Vec<&String> = pending.iter().filter(|name| exported.contains(*name) || exported.contains(&format!("P{name}"))).collect();
    assert!(landed.is_empty(), "exported now: remove from tests/not_exported_yet.txt: {landed:?}");

    let undeclared: Vec<&String> = pending.iter().filter(|name| !declared.contains(*name)).collect();
    assert!(undeclared.is_empty(), "tests/not_exported_yet.txt lists names mpi.h does not declare: {undeclared:?}");
}

#[test]
fn every_exported_function_is_declared_and_has_its_twin() {
    let header = std::fs::read_to_string(mpi_h_path()).unwrap();
    let mut declared: BTreeSet<String> = prototypes(&header, "MPI_").into_iter().map(|p| p.name).collect();
    declared.extend(declared_callbacks(&header));
    let exported = exported_symbols();
    let mpi: BTreeSet<&String> = exported.iter().filter(|s| s.starts_with("MPI_")).collect();
    let pmpi: BTreeSet<&String> = exported.iter().filter(|s| s.starts_with("PMPI_")).collect();
    assert!(!mpi.is_empty(), "{} exports no MPI_ function", library().display());

    // The Fortran binding's upper-case symbols (MPI_SEND) are MPI functions' names in capitals,
    // the TYPE(C_PTR) forms of those returning an address (MPI_ALLOC_MEM_CPTR), and the
    // Fortran-only MPI_F_SYNC_REG.
    let fortran: BTreeSet<String> = declared.iter().map(|name| name.to_ascii_uppercase()).collect();
    let fortran_only = |name: &str| fortran.contains(name) || name.strip_suffix("_CPTR").is_some_and(|base| fortran.contains(base)) || name == "MPI_F_SYNC_REG";
    let undeclared: Vec<&&String> = mpi.iter().filter(|name| !declared.contains(**name) && !fortran_only(name)).collect();
    assert!(undeclared.is_empty(), "exported but not declared in mpi.h: {undeclared:?}");
    let without_pmpi: Vec<&&String> = mpi.iter().filter(|name| !is_callback_name(name) && !exported.contains(&format!("P{name}"))).collect();
    assert!(without_pmpi.is_empty(), "exported without a PMPI_ twin: {without_pmpi:?}");
    let without_mpi: Vec<&&String> = pmpi.iter().filter(|name| !exported.contains(&name[1..])).collect();
    assert!(without_mpi.is_empty(), "PMPI_ symbols without their MPI_ function: {without_mpi:?}");
}
