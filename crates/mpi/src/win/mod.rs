//! One-sided communication (MPI 3.1 chapter 11): windows, RMA operations and their
//! synchronisation. The design (access paths, the wire, where the target's progress is needed)
//! is in docs/architecture.md, "One-sided communication".
//!
//! State modules (`table`, `state`, `sync`, `ops`, `atomics`, `wire`, `lockword`, `regions`,
//! `single_copy`, `agent`, `assist`) never enter the runtime; `abi` holds the MPI_* entry points.

pub mod abi;
pub mod agent;
pub mod assist;
pub mod atomics;
pub mod lockword;
pub mod ops;
pub mod regions;
pub mod single_copy;
pub mod state;
pub mod sync;
pub mod table;
pub mod wire;

pub use table::WinTable;
