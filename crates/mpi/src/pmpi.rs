//! The profiling interface (MPI 3.1 §14.2): every MPI_ function is also exported as PMPI_.
//!
//! A tool defines MPI_Send, does its work and calls PMPI_Send, which must reach the library's own
//! MPI_Send although the tool's definition now stands in front of it. Each PMPI_ symbol is a
//! one-instruction trampoline, a tail jump to the MPI_ function of the same name: the caller's
//! arguments are still in place, so one trampoline fits every signature, variadic ones included.
//! build.rs lists the entry points it finds in src/ (so new ones are covered without any edit
//! here) and links the library with -Bsymbolic-functions, which binds the jump to the library's
//! own definition instead of whatever the dynamic loader found first. The MPI_ path is untouched.
//!
//! MPI_Pcontrol, the profiling control call, is here too.

// The trampolines are called from C with the arguments of their MPI_ function; they have no
// Rust-visible parameters and Rust code never calls them.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::c_int;

use crate::consts::MPI_SUCCESS;

/// `int MPI_Pcontrol(const int level, ...)`: meant for profiling tools (a tool's MPI_Pcontrol
/// sees the level); the library itself does nothing (MPI 3.1 §14.2). Declared without the
/// variadic part, which Rust cannot define: on the C ABIs of x86_64 and aarch64 the named
/// argument arrives where a non-variadic function expects it, and the rest is never read.
#[no_mangle]
pub extern "C" fn MPI_Pcontrol(level: c_int) -> c_int {
    let _ = level;
    MPI_SUCCESS
}

/// The jump to `$target` in this target's assembly.
#[cfg(target_arch = "x86_64")]
macro_rules! tail_jump {
    ($target:literal) => {
        concat!("jmp ", $target)
    };
}

/// The jump to `$target` in this target's assembly.
#[cfg(target_arch = "aarch64")]
macro_rules! tail_jump {
    ($target:literal) => {
        concat!("b ", $target)
    };
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
compile_error!("the PMPI_ trampolines (src/pmpi.rs) know x86_64 and aarch64 only");

/// Defines each `$pmpi` as a tail jump to the symbol `$mpi`.
macro_rules! trampolines {
    ($($pmpi:ident => $mpi:literal),* $(,)?) => {
        $(
            #[doc(hidden)]
            #[no_mangle]
            #[unsafe(naked)]
            pub unsafe extern "C" fn $pmpi() {
                core::arch::naked_asm!(tail_jump!($mpi))
            }
        )*
    };
}

include!(concat!(env!("OUT_DIR"), "/pmpi_entry_points.rs"));
