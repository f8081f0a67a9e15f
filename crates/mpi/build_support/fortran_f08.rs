//! Generates the source of the `mpi_f08` module from include/mpi.h (see fortran.rs): handles are
//! derived types holding the C handle (TYPE(MPI_Comm) :: comm; comm%MPI_VAL), MPI_Status is a
//! BIND(C) type with MPI_Status's layout, and `ierror` is optional. The routines are the same
//! entry points as those of mpif.h and the `mpi` module: a handle type's only component is the
//! INTEGER handle, passed by reference, and an absent `ierror` arrives as a null pointer.
//! Choice buffers use gfortran's NO_ARG_CHECK (assumed-size), not TYPE(*), DIMENSION(..): array
//! sections are copied to contiguous temporaries, so MPI_SUBARRAYS_SUPPORTED is .FALSE.

use std::fmt::Write as _;

use crate::fortran::{
    fortran_declaration, fortran_name, fortran_only_constants, fortran_type_of, integer_constants, interface_body, interfaces_and_sizeof, Function, Kind, HANDLE_TYPES, PREDEFINED_CALLBACKS,
};
use crate::fortran_interfaces::Module;

/// The Fortran handle types: every C handle type but MPI_Fint.
fn handle_types() -> impl Iterator<Item = &'static str> {
    HANDLE_TYPES.iter().copied().filter(|t| *t != "MPI_Fint")
}

/// The handle type of a constant's cast in mpi.h (`#define MPI_COMM_WORLD ((MPI_Comm)1)`).
fn cast_type(header: &str, name: &str) -> Option<&'static str> {
    let line = header.lines().find(|l| l.trim().strip_prefix("#define ").is_some_and(|rest| rest.split_whitespace().next() == Some(name)))?;
    handle_types().find(|t| line.contains(&format!("(({t})")))
}

fn declaration(function: &Function, index: usize, kind: Kind) -> Vec<String> {
    let param = &function.params[index];
    let name = fortran_name(&param.name);
    match kind {
        Kind::Status | Kind::StatusIn => return vec![format!("TYPE(MPI_Status) :: {name}")],
        Kind::Statuses => return vec![format!("TYPE(MPI_Status) :: {name}(*)")],
        _ => {}
    }
    let lines = fortran_declaration(param, kind);
    if handle_types().any(|t| t == param.base) {
        lines.into_iter().map(|line| line.replacen("INTEGER", &format!("TYPE({})", param.base), 1)).collect()
    } else {
        lines
    }
}

fn interface(function: &Function, kinds: &[Kind]) -> String {
    interface_body(function, kinds, |index, kind| declaration(function, index, kind), "INTEGER, OPTIONAL :: ierror")
}

pub fn mpi_f08_module(header: &str) -> String {
    let mut out = String::from(
        "! Braid: the `mpi_f08` module (generated from include/mpi.h at build time: do not edit).\nMODULE mpi_f08\n  IMPLICIT NONE\n  PRIVATE :: braid_handles_equal, braid_handles_differ\n",
    );
    for t in handle_types() {
        let _ = writeln!(out, "  TYPE, BIND(C) :: {t}\n    INTEGER :: MPI_VAL\n  END TYPE {t}");
    }
    out.push_str("  TYPE, BIND(C) :: MPI_Status\n    INTEGER :: count_lo, count_hi_and_cancelled, MPI_SOURCE, MPI_TAG, MPI_ERROR\n  END TYPE MPI_Status\n");
    for (fortran_type, name, value) in fortran_only_constants(header) {
        let _ = writeln!(out, "  {fortran_type}, PARAMETER :: {name} = {value}");
    }
    for (name, value) in integer_constants(header) {
        match cast_type(header, &name) {
            Some(t) => {
                let _ = writeln!(out, "  TYPE({t}), PARAMETER :: {name} = {t}({value})");
            }
            None => {
                let _ = writeln!(out, "  {}, PARAMETER :: {name} = {value}", fortran_type_of(&name));
            }
        }
    }
    let sentinels: &[(&str, &str, &str)] = &[
        ("INTEGER :: MPI_BOTTOM", "BRAID_FORTRAN_BOTTOM", "MPI_BOTTOM"),
        ("INTEGER :: MPI_IN_PLACE", "BRAID_FORTRAN_IN_PLACE", "MPI_IN_PLACE"),
        ("INTEGER :: MPI_BUFFER_AUTOMATIC", "BRAID_FORTRAN_BUFFER_AUTOMATIC", "MPI_BUFFER_AUTOMATIC"),
        ("TYPE(MPI_Status) :: MPI_STATUS_IGNORE", "BRAID_FORTRAN_STATUS_IGNORE", "MPI_STATUS_IGNORE"),
        ("TYPE(MPI_Status) :: MPI_STATUSES_IGNORE(1)", "BRAID_FORTRAN_STATUSES_IGNORE", "MPI_STATUSES_IGNORE"),
        ("INTEGER :: MPI_ERRCODES_IGNORE(1)", "BRAID_FORTRAN_ERRCODES_IGNORE", "MPI_ERRCODES_IGNORE"),
        ("INTEGER :: MPI_UNWEIGHTED", "BRAID_FORTRAN_UNWEIGHTED", "MPI_UNWEIGHTED"),
        ("INTEGER :: MPI_WEIGHTS_EMPTY", "BRAID_FORTRAN_WEIGHTS_EMPTY", "MPI_WEIGHTS_EMPTY"),
        ("CHARACTER(LEN=1) :: MPI_ARGV_NULL(1)", "BRAID_FORTRAN_ARGV_NULL", "MPI_ARGV_NULL"),
        ("CHARACTER(LEN=1) :: MPI_ARGVS_NULL(1,1)", "BRAID_FORTRAN_ARGVS_NULL", "MPI_ARGVS_NULL"),
    ];
    for (declaration, block, name) in sentinels {
        let _ = writeln!(out, "  {declaration}\n  COMMON /{block}/ {name}\n  SAVE /{block}/");
    }
    for chunk in PREDEFINED_CALLBACKS.chunks(4) {
        let _ = writeln!(out, "  EXTERNAL {}", chunk.join(", "));
    }
    let types: Vec<&str> = handle_types().collect();
    for (operator, suffix) in [("==", "eq"), ("/=", "ne")] {
        let _ = writeln!(out, "  INTERFACE OPERATOR({operator})");
        for t in &types {
            let _ = writeln!(out, "    MODULE PROCEDURE braid_{}_{suffix}", t[4..].to_ascii_lowercase());
        }
        out.push_str("  END INTERFACE\n");
    }
    out.push_str(&interfaces_and_sizeof(header, Module::F08, "INTEGER, OPTIONAL :: ierror", interface));
    for t in &types {
        let short = t[4..].to_ascii_lowercase();
        let _ = writeln!(
            out,
            "  ELEMENTAL LOGICAL FUNCTION braid_{short}_eq(a, b)\n    TYPE({t}), INTENT(IN) :: a, b\n    braid_{short}_eq = a%MPI_VAL == b%MPI_VAL\n  END FUNCTION\n  \
             ELEMENTAL LOGICAL FUNCTION braid_{short}_ne(a, b)\n    TYPE({t}), INTENT(IN) :: a, b\n    braid_{short}_ne = a%MPI_VAL /= b%MPI_VAL\n  END FUNCTION"
        );
    }
    out.push_str("END MODULE mpi_f08\n");
    out.replace("  PRIVATE :: braid_handles_equal, braid_handles_differ\n", "")
}
