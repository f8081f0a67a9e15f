//! Safe wrappers over the system calls Braid needs. All `unsafe` for syscalls lives here.

pub mod affinity;
pub mod cma;
pub mod event;
pub mod executable;
pub mod fd;
pub mod file;
pub mod futex;
pub mod memory_map;
pub mod net;
pub mod netns;
pub mod network_cores;
pub mod pmix;
pub mod process;
pub mod shm;
pub mod signal;
pub mod topology;
