//! Generates the source of the `mpi_f08` module (see fortran.rs).

pub fn mpi_f08_module(_header: &str) -> String {
    String::from("! Braid: the `mpi_f08` module (generated at build time: do not edit).\nMODULE mpi_f08\n  IMPLICIT NONE\nEND MODULE mpi_f08\n")
}
