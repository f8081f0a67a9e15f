//! Dynamic process management (MPI 3.1 chapter 10) not supported yet: spawning and name
//! publishing. Ports, connecting and joining are in src/dynamic/.

use std::ffi::{c_char, c_int};

use crate::consts::*;

const DYNAMIC: &str = "spawning processes and publishing names are not supported: every process is started by the launcher (ports, MPI_Comm_connect/accept and MPI_Comm_join are)";

unsupported!(
    MPI_Comm_spawn(
        command: *const c_char,
        argv: *mut *mut c_char,
        maxprocs: c_int,
        info: MPI_Info,
        root: c_int,
        comm: MPI_Comm,
        intercomm: *mut MPI_Comm,
        array_of_errcodes: *mut c_int,
    ) on comm,
    DYNAMIC
);

unsupported!(
    MPI_Comm_spawn_multiple(
        count: c_int,
        array_of_commands: *mut *mut c_char,
        array_of_argv: *mut *mut *mut c_char,
        array_of_maxprocs: *const c_int,
        array_of_info: *const MPI_Info,
        root: c_int,
        comm: MPI_Comm,
        intercomm: *mut MPI_Comm,
        array_of_errcodes: *mut c_int,
    ) on comm,
    DYNAMIC
);

unsupported!(
    MPI_Publish_name(service_name: *const c_char, info: MPI_Info, port_name: *const c_char) on MPI_COMM_WORLD,
    DYNAMIC
);

unsupported!(
    MPI_Unpublish_name(service_name: *const c_char, info: MPI_Info, port_name: *const c_char) on MPI_COMM_WORLD,
    DYNAMIC
);

unsupported!(
    MPI_Lookup_name(service_name: *const c_char, info: MPI_Info, port_name: *mut c_char) on MPI_COMM_WORLD,
    DYNAMIC
);
