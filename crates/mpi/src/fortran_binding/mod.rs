//! The Fortran binding (mpif.h, the `mpi` and `mpi_f08` modules): entry points with the calling
//! convention of gfortran over the C functions. Most are generated from include/mpi.h by build.rs
//! (build_support/fortran.rs); the rest are in manual.rs. Handles are the C handles and a Fortran
//! status has the layout of MPI_Status, so both pass through; what needs conversion is the
//! sentinels (sentinels.rs), CHARACTER arguments (strings.rs), attribute values (attributes.rs)
//! and callbacks with Fortran signatures (callbacks.rs).

mod attributes;
mod callbacks;
mod generated;
mod manual;
mod sentinels;
mod strings;

/// Defines the Fortran symbols of one binding: gfortran's, the other usual manglings, and the
/// profiling one, each a call of `$body` with the C function (or its PMPI_ twin).
macro_rules! fortran_symbols {
    ($body:ident $args:tt $(-> $ret:ty)?; $c:path => $($symbol:ident),+; $profiling_c:path => $profiling:ident) => {
        fortran_symbols!(@each [$(-> $ret)?] $body $args; $c => $($symbol),+; $profiling_c => $profiling);
    };
    (@each $ret:tt $body:ident $args:tt; $c:path => $($symbol:ident),+; $profiling_c:path => $profiling:ident) => {
        $( fortran_symbols!(@one $symbol = $body $args $ret; $c); )+
        fortran_symbols!(@one $profiling = $body $args $ret; $profiling_c);
    };
    (@one $symbol:ident = $body:ident ($($arg:ident: $type:ty),*) [$($ret:tt)*]; $c:path) => {
        #[no_mangle]
        pub unsafe extern "C" fn $symbol($($arg: $type),*) $($ret)* {
            // SAFETY: the caller is a Fortran program passing the arguments the binding expects.
            unsafe { $body($c, $($arg),*) }
        }
    };
}
use fortran_symbols;
