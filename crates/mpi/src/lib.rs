//! Braid's MPI C interface: `libbraid.so` with `include/mpi.h`.
//!
//! This crate is the C ABI layer: it turns C handles and pointers into engine calls. Everything
//! that dereferences a user pointer lives here, each `unsafe` block with its `// SAFETY:` reason.

pub mod attr;
pub mod bsend;
pub mod coll;
pub mod comm;
pub mod consts;
pub mod datatype;
pub mod dynamic;
pub mod error;
pub mod fortran;
mod fortran_binding;
pub mod grequest;
pub mod group;
pub mod info;
pub mod io;
pub mod large_count;
pub mod message;
pub mod misc;
pub mod op;
pub mod p2p;
pub mod partitioned;
pub mod pmpi;
pub mod progress_thread;
pub mod request;
pub mod runtime;
pub mod session;
pub mod status;
pub mod threaded;
pub mod tools;
pub mod topo;
pub mod win;
