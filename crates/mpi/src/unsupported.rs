//! Declared in mpi.h but not implemented yet: MPI-IO (io.rs). Each call raises
//! MPI_ERR_UNSUPPORTED_OPERATION, naming itself, through the applicable error handler.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::c_int;

use crate::consts::*;
use crate::error::class_text;
use crate::error::report::{apply, Target};

/// Defines an entry point that ignores its arguments and raises MPI_ERR_UNSUPPORTED_OPERATION,
/// naming itself, on `$comm` (its communicator argument, or MPI_COMM_WORLD when it has none), or
/// `on files`: on the error handler of files.
macro_rules! unsupported {
    ($name:ident($($arg:ident: $ty:ty),* $(,)?) on files, $detail:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> std::ffi::c_int {
            let _ = ($($arg,)*);
            crate::unsupported::raise_on_files(stringify!($name), $detail)
        }
    };
    ($name:ident($($arg:ident: $ty:ty),* $(,)?) on $comm:expr, $detail:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> std::ffi::c_int {
            let _ = ($($arg,)*);
            crate::error::raise($comm, stringify!($name), crate::consts::MPI_ERR_UNSUPPORTED_OPERATION, $detail)
        }
    };
}

mod io;

/// Raises an unsupported I/O call on the error handler of MPI_FILE_NULL, which covers files: no
/// file can be opened, so no other handle is valid. That handler is MPI_ERRORS_RETURN unless the
/// program sets another (MPI 3.1 §13.7).
fn raise_on_files(function: &str, detail: &str) -> c_int {
    let class = MPI_ERR_UNSUPPORTED_OPERATION;
    apply(Target::File(MPI_FILE_NULL), class, || format!("Braid: {function}: {}: {detail}", class_text(class)))
}
