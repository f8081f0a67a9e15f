//! Dynamic process management (MPI 3.1 chapter 10): spawning, ports, connecting and name
//! publishing. Every process of a job is started by the launcher; MPI_Comm_get_parent, which
//! works, is in src/dynamic.rs.

use std::ffi::{c_char, c_int};

use crate::consts::*;

const DYNAMIC: &str = "dynamic process management (spawn, ports, connect/accept, join, name publishing) is not supported: every process is started by the launcher";

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

unsupported!(MPI_Open_port(info: MPI_Info, port_name: *mut c_char) on MPI_COMM_WORLD, DYNAMIC);

unsupported!(MPI_Close_port(port_name: *const c_char) on MPI_COMM_WORLD, DYNAMIC);

unsupported!(
    MPI_Comm_accept(
        port_name: *const c_char,
        info: MPI_Info,
        root: c_int,
        comm: MPI_Comm,
        newcomm: *mut MPI_Comm,
    ) on comm,
    DYNAMIC
);

unsupported!(
    MPI_Comm_connect(
        port_name: *const c_char,
        info: MPI_Info,
        root: c_int,
        comm: MPI_Comm,
        newcomm: *mut MPI_Comm,
    ) on comm,
    DYNAMIC
);

unsupported!(MPI_Comm_join(fd: c_int, intercomm: *mut MPI_Comm) on MPI_COMM_WORLD, DYNAMIC);

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
