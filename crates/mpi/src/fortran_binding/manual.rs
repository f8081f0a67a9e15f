//! The Fortran bindings that are not generated: MPI_INIT (no argc/argv in Fortran), MPI_PCONTROL
//! (no ierror), process spawning (CHARACTER argv arrays), keyvals and generalized requests
//! (callbacks with Fortran signatures), MPI-1's attribute and datatype calls (INTEGER rather than
//! address-sized values), MPI_REGISTER_DATAREP (extra state by reference), mpi_f08's status
//! conversions and the Fortran-only MPI_F_SYNC_REG.

// The symbols are Fortran's names; the argument lists are MPI's.
#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

use std::ffi::{c_char, c_int, c_void, CString};

use super::attributes::{attribute_to_fortran, logical_result};
use super::callbacks::{
    copy_trampoline, delete_trampoline, grequest_cancel_trampoline, grequest_free_trampoline, grequest_query_trampoline, FortranCopy, FortranDelete, FortranGrequest, FortranKeyval,
};
use super::fortran_symbols;
use super::sentinels::Sentinels;
use super::strings::string_in;
use crate::consts::*;

type CopyFn = unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
type DeleteFn = unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void) -> c_int;

mod c {
    use super::*;
    extern "C" {
        pub fn MPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int;
        pub fn PMPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int;
        pub fn MPI_Init_thread(argc: *mut c_int, argv: *mut *mut *mut c_char, required: c_int, provided: *mut c_int) -> c_int;
        pub fn PMPI_Init_thread(argc: *mut c_int, argv: *mut *mut *mut c_char, required: c_int, provided: *mut c_int) -> c_int;
        pub fn MPI_Info_create_env(argc: c_int, argv: *mut *mut c_char, info: *mut MPI_Info) -> c_int;
        pub fn PMPI_Info_create_env(argc: c_int, argv: *mut *mut c_char, info: *mut MPI_Info) -> c_int;
        pub fn MPI_Pcontrol(level: c_int, ...) -> c_int;
        pub fn PMPI_Pcontrol(level: c_int, ...) -> c_int;
        pub fn MPI_Comm_spawn(command: *const c_char, argv: *mut *mut c_char, maxprocs: c_int, info: MPI_Info, root: c_int, comm: MPI_Comm, intercomm: *mut MPI_Comm, errcodes: *mut c_int) -> c_int;
        pub fn PMPI_Comm_spawn(command: *const c_char, argv: *mut *mut c_char, maxprocs: c_int, info: MPI_Info, root: c_int, comm: MPI_Comm, intercomm: *mut MPI_Comm, errcodes: *mut c_int) -> c_int;
        pub fn MPI_Comm_spawn_multiple(
            count: c_int,
            commands: *mut *mut c_char,
            argvs: *mut *mut *mut c_char,
            maxprocs: *const c_int,
            infos: *const MPI_Info,
            root: c_int,
            comm: MPI_Comm,
            intercomm: *mut MPI_Comm,
            errcodes: *mut c_int,
        ) -> c_int;
        pub fn PMPI_Comm_spawn_multiple(
            count: c_int,
            commands: *mut *mut c_char,
            argvs: *mut *mut *mut c_char,
            maxprocs: *const c_int,
            infos: *const MPI_Info,
            root: c_int,
            comm: MPI_Comm,
            intercomm: *mut MPI_Comm,
            errcodes: *mut c_int,
        ) -> c_int;
        pub fn MPI_Comm_create_keyval(copy: CopyFn, delete: DeleteFn, keyval: *mut c_int, extra_state: *mut c_void) -> c_int;
        pub fn PMPI_Comm_create_keyval(copy: CopyFn, delete: DeleteFn, keyval: *mut c_int, extra_state: *mut c_void) -> c_int;
        pub fn MPI_Type_create_keyval(copy: CopyFn, delete: DeleteFn, keyval: *mut c_int, extra_state: *mut c_void) -> c_int;
        pub fn PMPI_Type_create_keyval(copy: CopyFn, delete: DeleteFn, keyval: *mut c_int, extra_state: *mut c_void) -> c_int;
        pub fn MPI_Win_create_keyval(copy: CopyFn, delete: DeleteFn, keyval: *mut c_int, extra_state: *mut c_void) -> c_int;
        pub fn PMPI_Win_create_keyval(copy: CopyFn, delete: DeleteFn, keyval: *mut c_int, extra_state: *mut c_void) -> c_int;
        pub fn MPI_Keyval_create(copy: CopyFn, delete: DeleteFn, keyval: *mut c_int, extra_state: *mut c_void) -> c_int;
        pub fn PMPI_Keyval_create(copy: CopyFn, delete: DeleteFn, keyval: *mut c_int, extra_state: *mut c_void) -> c_int;
        pub fn MPI_Grequest_start(
            query: MPI_Grequest_query_function,
            free: MPI_Grequest_free_function,
            cancel: MPI_Grequest_cancel_function,
            extra_state: *mut c_void,
            request: *mut MPI_Request,
        ) -> c_int;
        pub fn PMPI_Grequest_start(
            query: MPI_Grequest_query_function,
            free: MPI_Grequest_free_function,
            cancel: MPI_Grequest_cancel_function,
            extra_state: *mut c_void,
            request: *mut MPI_Request,
        ) -> c_int;
        pub fn MPI_Attr_put(comm: MPI_Comm, keyval: c_int, value: *mut c_void) -> c_int;
        pub fn PMPI_Attr_put(comm: MPI_Comm, keyval: c_int, value: *mut c_void) -> c_int;
        pub fn MPI_Attr_get(comm: MPI_Comm, keyval: c_int, value: *mut c_void, flag: *mut c_int) -> c_int;
        pub fn PMPI_Attr_get(comm: MPI_Comm, keyval: c_int, value: *mut c_void, flag: *mut c_int) -> c_int;
        pub fn MPI_Type_hvector(count: c_int, blocklength: c_int, stride: MPI_Aint, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int;
        pub fn PMPI_Type_hvector(count: c_int, blocklength: c_int, stride: MPI_Aint, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int;
        pub fn MPI_Type_hindexed(count: c_int, blocklengths: *const c_int, displacements: *const MPI_Aint, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int;
        pub fn PMPI_Type_hindexed(count: c_int, blocklengths: *const c_int, displacements: *const MPI_Aint, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int;
        pub fn MPI_Type_struct(count: c_int, blocklengths: *const c_int, displacements: *const MPI_Aint, types: *const MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int;
        pub fn PMPI_Type_struct(count: c_int, blocklengths: *const c_int, displacements: *const MPI_Aint, types: *const MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int;
        pub fn MPI_Type_extent(datatype: MPI_Datatype, extent: *mut MPI_Aint) -> c_int;
        pub fn PMPI_Type_extent(datatype: MPI_Datatype, extent: *mut MPI_Aint) -> c_int;
        pub fn MPI_Type_lb(datatype: MPI_Datatype, lb: *mut MPI_Aint) -> c_int;
        pub fn PMPI_Type_lb(datatype: MPI_Datatype, lb: *mut MPI_Aint) -> c_int;
        pub fn MPI_Type_ub(datatype: MPI_Datatype, ub: *mut MPI_Aint) -> c_int;
        pub fn PMPI_Type_ub(datatype: MPI_Datatype, ub: *mut MPI_Aint) -> c_int;
        pub fn MPI_Address(location: *const c_void, address: *mut MPI_Aint) -> c_int;
        pub fn PMPI_Address(location: *const c_void, address: *mut MPI_Aint) -> c_int;
        pub fn MPI_Register_datarep(datarep: *const c_char, read: *mut c_void, write: *mut c_void, extent: *mut c_void, extra_state: *mut c_void) -> c_int;
        pub fn PMPI_Register_datarep(datarep: *const c_char, read: *mut c_void, write: *mut c_void, extent: *mut c_void, extra_state: *mut c_void) -> c_int;
        pub fn MPI_Register_datarep_c(datarep: *const c_char, read: *mut c_void, write: *mut c_void, extent: *mut c_void, extra_state: *mut c_void) -> c_int;
        pub fn PMPI_Register_datarep_c(datarep: *const c_char, read: *mut c_void, write: *mut c_void, extent: *mut c_void, extra_state: *mut c_void) -> c_int;
        pub fn MPI_Status_f2f08(f_status: *const MPI_Fint, f08_status: *mut MPI_Status) -> c_int;
        pub fn PMPI_Status_f2f08(f_status: *const MPI_Fint, f08_status: *mut MPI_Status) -> c_int;
        pub fn MPI_Status_f082f(f08_status: *const MPI_Status, f_status: *mut MPI_Fint) -> c_int;
        pub fn PMPI_Status_f082f(f08_status: *const MPI_Status, f_status: *mut MPI_Fint) -> c_int;
    }
}

/// Stores `rc` in the optional `ierror` (absent `ierror` of mpi_f08 is a null pointer).
unsafe fn set_ierror(ierror: *mut MPI_Fint, rc: c_int) {
    if !ierror.is_null() {
        // SAFETY: the caller's `ierror`, checked non-null.
        unsafe { ierror.write(rc) }
    }
}

unsafe fn init(c_function: unsafe extern "C" fn(*mut c_int, *mut *mut *mut c_char) -> c_int, ierror: *mut MPI_Fint) {
    // SAFETY: MPI_Init accepts null argc and argv.
    unsafe { set_ierror(ierror, c_function(std::ptr::null_mut(), std::ptr::null_mut())) }
}
fortran_symbols!(init(ierror: *mut MPI_Fint); c::MPI_Init => mpi_init_, mpi_init__, mpi_init, MPI_INIT; c::PMPI_Init => pmpi_init_);

unsafe fn init_thread(c_function: unsafe extern "C" fn(*mut c_int, *mut *mut *mut c_char, c_int, *mut c_int) -> c_int, required: *const MPI_Fint, provided: *mut MPI_Fint, ierror: *mut MPI_Fint) {
    // SAFETY: Fortran passes `required` and `provided`.
    unsafe { set_ierror(ierror, c_function(std::ptr::null_mut(), std::ptr::null_mut(), required.read(), provided)) }
}
fortran_symbols!(init_thread(required: *const MPI_Fint, provided: *mut MPI_Fint, ierror: *mut MPI_Fint); c::MPI_Init_thread => mpi_init_thread_, mpi_init_thread__, mpi_init_thread, MPI_INIT_THREAD; c::PMPI_Init_thread => pmpi_init_thread_);

/// MPI_INFO_CREATE_ENV(INFO, IERROR): Fortran has no argc/argv; the process's own are used.
unsafe fn info_create_env(c_function: unsafe extern "C" fn(c_int, *mut *mut c_char, *mut c_int) -> c_int, info: *mut MPI_Fint, ierror: *mut MPI_Fint) {
    // SAFETY: MPI_Info_create_env accepts a null argv; Fortran passes `info`.
    unsafe { set_ierror(ierror, c_function(0, std::ptr::null_mut(), info)) }
}
fortran_symbols!(info_create_env(info: *mut MPI_Fint, ierror: *mut MPI_Fint); c::MPI_Info_create_env => mpi_info_create_env_, mpi_info_create_env__, mpi_info_create_env, MPI_INFO_CREATE_ENV; c::PMPI_Info_create_env => pmpi_info_create_env_);

/// MPI_PCONTROL(LEVEL) has no ierror in Fortran.
unsafe fn pcontrol(c_function: unsafe extern "C" fn(c_int, ...) -> c_int, level: *const MPI_Fint) {
    // SAFETY: Fortran passes `level`.
    unsafe { c_function(level.read()) };
}
fortran_symbols!(pcontrol(level: *const MPI_Fint); c::MPI_Pcontrol => mpi_pcontrol_, mpi_pcontrol__, mpi_pcontrol, MPI_PCONTROL; c::PMPI_Pcontrol => pmpi_pcontrol_);

/// MPI_F_SYNC_REG(BUF), a Fortran-only routine that does nothing: its call tells the compiler
/// that BUF may be read or changed there, so that no value of it stays in a register across the
/// calls that access it behind the compiler's back (a window's fence, MPI_WAIT of a nonblocking
/// receive; MPI 3.1 §17.1.17).
macro_rules! sync_reg_symbols {
    ($($symbol:ident),+) => {
        $(
            #[no_mangle]
            pub extern "C" fn $symbol(buf: *mut c_void) {
                std::hint::black_box(buf);
            }
        )+
    };
}
sync_reg_symbols!(mpi_f_sync_reg_, mpi_f_sync_reg__, mpi_f_sync_reg, MPI_F_SYNC_REG, pmpi_f_sync_reg_);

/// The C argv of a Fortran one: CHARACTER elements of `len` characters `stride` elements apart,
/// up to the first blank one. The strings own the text; the pointers end in NULL.
unsafe fn argv_of(first: *const c_char, len: usize, stride: usize) -> (Vec<CString>, Vec<*mut c_char>) {
    let mut strings = Vec::new();
    loop {
        // SAFETY: the caller's array holds elements up to a blank one.
        let argument = unsafe { string_in(first.add(strings.len() * stride * len), len) };
        if argument.as_bytes().is_empty() {
            break;
        }
        strings.push(argument);
    }
    let mut pointers: Vec<*mut c_char> = strings.iter().map(|s| s.as_ptr().cast_mut()).collect();
    pointers.push(std::ptr::null_mut());
    (strings, pointers)
}

type SpawnFn = unsafe extern "C" fn(*const c_char, *mut *mut c_char, c_int, MPI_Info, c_int, MPI_Comm, *mut MPI_Comm, *mut c_int) -> c_int;
unsafe fn spawn(
    c_function: SpawnFn,
    command: *const c_char,
    argv: *const c_char,
    maxprocs: *const MPI_Fint,
    info: *const MPI_Fint,
    root: *const MPI_Fint,
    comm: *const MPI_Fint,
    intercomm: *mut MPI_Fint,
    errcodes: *mut MPI_Fint,
    ierror: *mut MPI_Fint,
    command_len: usize,
    argv_len: usize,
) {
    let sentinels = Sentinels::get();
    // SAFETY: Fortran's arguments: CHARACTER command and argv with their lengths, the rest by reference.
    unsafe {
        let command = string_in(command, command_len);
        let mut argv = if sentinels.is_argv_null(argv) { None } else { Some(argv_of(argv, argv_len, 1)) };
        let argv_pointer = argv.as_mut().map_or(MPI_ARGV_NULL, |(_, pointers)| pointers.as_mut_ptr());
        let rc = c_function(command.as_ptr(), argv_pointer, maxprocs.read(), info.read(), root.read(), comm.read(), intercomm, sentinels.errcodes(errcodes.cast()).cast());
        set_ierror(ierror, rc);
    }
}
fortran_symbols!(spawn(command: *const c_char, argv: *const c_char, maxprocs: *const MPI_Fint, info: *const MPI_Fint, root: *const MPI_Fint, comm: *const MPI_Fint, intercomm: *mut MPI_Fint, errcodes: *mut MPI_Fint, ierror: *mut MPI_Fint, command_len: usize, argv_len: usize);
    c::MPI_Comm_spawn => mpi_comm_spawn_, mpi_comm_spawn__, mpi_comm_spawn, MPI_COMM_SPAWN; c::PMPI_Comm_spawn => pmpi_comm_spawn_);

type SpawnMultipleFn = unsafe extern "C" fn(c_int, *mut *mut c_char, *mut *mut *mut c_char, *const c_int, *const MPI_Info, c_int, MPI_Comm, *mut MPI_Comm, *mut c_int) -> c_int;
unsafe fn spawn_multiple(
    c_function: SpawnMultipleFn,
    count: *const MPI_Fint,
    commands: *const c_char,
    argvs: *const c_char,
    maxprocs: *const MPI_Fint,
    infos: *const MPI_Fint,
    root: *const MPI_Fint,
    comm: *const MPI_Fint,
    intercomm: *mut MPI_Fint,
    errcodes: *mut MPI_Fint,
    ierror: *mut MPI_Fint,
    commands_len: usize,
    argvs_len: usize,
) {
    let sentinels = Sentinels::get();
    // SAFETY: Fortran's arguments: `count` commands, ARRAY_OF_ARGV(COUNT, *), the rest by reference.
    unsafe {
        let count = count.read();
        let n = usize::try_from(count).unwrap_or(0);
        let command_strings: Vec<CString> = (0..n).map(|i| string_in(commands.add(i * commands_len), commands_len)).collect();
        let mut command_pointers: Vec<*mut c_char> = command_strings.iter().map(|s| s.as_ptr().cast_mut()).collect();
        let mut argvs_owned: Vec<(Vec<CString>, Vec<*mut c_char>)> = if sentinels.is_argv_null(argvs) { Vec::new() } else { (0..n).map(|i| argv_of(argvs.add(i * argvs_len), argvs_len, n)).collect() };
        let mut argv_pointers: Vec<*mut *mut c_char> = argvs_owned.iter_mut().map(|(_, pointers)| pointers.as_mut_ptr()).collect();
        let argvs_pointer = if argv_pointers.is_empty() { MPI_ARGVS_NULL } else { argv_pointers.as_mut_ptr() };
        let rc = c_function(count, command_pointers.as_mut_ptr(), argvs_pointer, maxprocs, infos, root.read(), comm.read(), intercomm, sentinels.errcodes(errcodes.cast()).cast());
        set_ierror(ierror, rc);
    }
}
fortran_symbols!(spawn_multiple(count: *const MPI_Fint, commands: *const c_char, argvs: *const c_char, maxprocs: *const MPI_Fint, infos: *const MPI_Fint, root: *const MPI_Fint, comm: *const MPI_Fint, intercomm: *mut MPI_Fint, errcodes: *mut MPI_Fint, ierror: *mut MPI_Fint, commands_len: usize, argvs_len: usize);
    c::MPI_Comm_spawn_multiple => mpi_comm_spawn_multiple_, mpi_comm_spawn_multiple__, mpi_comm_spawn_multiple, MPI_COMM_SPAWN_MULTIPLE; c::PMPI_Comm_spawn_multiple => pmpi_comm_spawn_multiple_);

type CreateKeyvalFn = unsafe extern "C" fn(CopyFn, DeleteFn, *mut c_int, *mut c_void) -> c_int;

/// Registers `keyval` (boxed, the C keyval's extra state) with the C trampolines.
unsafe fn create_keyval(c_function: CreateKeyvalFn, record: FortranKeyval, keyval: *mut MPI_Fint, ierror: *mut MPI_Fint) {
    let record = Box::into_raw(Box::new(record));
    // SAFETY: the trampolines read the record, which lives as long as the keyval (for ever).
    let rc = unsafe { c_function(copy_trampoline, delete_trampoline, keyval, record.cast()) };
    if rc != MPI_SUCCESS {
        // SAFETY: the library refused the keyval, so nothing refers to the record.
        drop(unsafe { Box::from_raw(record) });
    }
    // SAFETY: the caller's ierror.
    unsafe { set_ierror(ierror, rc) }
}

unsafe fn create_address_keyval(c_function: CreateKeyvalFn, copy: FortranCopy<MPI_Aint>, delete: FortranDelete<MPI_Aint>, keyval: *mut MPI_Fint, extra_state: *const MPI_Aint, ierror: *mut MPI_Fint) {
    // SAFETY: Fortran passes every argument by reference.
    unsafe { create_keyval(c_function, FortranKeyval::Address { copy, delete, extra_state: extra_state.read() }, keyval, ierror) }
}
fortran_symbols!(create_address_keyval(copy: FortranCopy<MPI_Aint>, delete: FortranDelete<MPI_Aint>, keyval: *mut MPI_Fint, extra_state: *const MPI_Aint, ierror: *mut MPI_Fint);
    c::MPI_Comm_create_keyval => mpi_comm_create_keyval_, mpi_comm_create_keyval__, mpi_comm_create_keyval, MPI_COMM_CREATE_KEYVAL; c::PMPI_Comm_create_keyval => pmpi_comm_create_keyval_);
fortran_symbols!(create_address_keyval(copy: FortranCopy<MPI_Aint>, delete: FortranDelete<MPI_Aint>, keyval: *mut MPI_Fint, extra_state: *const MPI_Aint, ierror: *mut MPI_Fint);
    c::MPI_Type_create_keyval => mpi_type_create_keyval_, mpi_type_create_keyval__, mpi_type_create_keyval, MPI_TYPE_CREATE_KEYVAL; c::PMPI_Type_create_keyval => pmpi_type_create_keyval_);
fortran_symbols!(create_address_keyval(copy: FortranCopy<MPI_Aint>, delete: FortranDelete<MPI_Aint>, keyval: *mut MPI_Fint, extra_state: *const MPI_Aint, ierror: *mut MPI_Fint);
    c::MPI_Win_create_keyval => mpi_win_create_keyval_, mpi_win_create_keyval__, mpi_win_create_keyval, MPI_WIN_CREATE_KEYVAL; c::PMPI_Win_create_keyval => pmpi_win_create_keyval_);

unsafe fn keyval_create(c_function: CreateKeyvalFn, copy: FortranCopy<MPI_Fint>, delete: FortranDelete<MPI_Fint>, keyval: *mut MPI_Fint, extra_state: *const MPI_Fint, ierror: *mut MPI_Fint) {
    // SAFETY: Fortran passes every argument by reference.
    unsafe { create_keyval(c_function, FortranKeyval::Integer { copy, delete, extra_state: extra_state.read() }, keyval, ierror) }
}
fortran_symbols!(keyval_create(copy: FortranCopy<MPI_Fint>, delete: FortranDelete<MPI_Fint>, keyval: *mut MPI_Fint, extra_state: *const MPI_Fint, ierror: *mut MPI_Fint);
    c::MPI_Keyval_create => mpi_keyval_create_, mpi_keyval_create__, mpi_keyval_create, MPI_KEYVAL_CREATE; c::PMPI_Keyval_create => pmpi_keyval_create_);

type GrequestStartFn = unsafe extern "C" fn(MPI_Grequest_query_function, MPI_Grequest_free_function, MPI_Grequest_cancel_function, *mut c_void, *mut MPI_Request) -> c_int;
unsafe fn grequest_start(
    c_function: GrequestStartFn,
    query: unsafe extern "C" fn(*const MPI_Aint, *mut MPI_Fint, *mut MPI_Fint),
    free: unsafe extern "C" fn(*const MPI_Aint, *mut MPI_Fint),
    cancel: unsafe extern "C" fn(*const MPI_Aint, *const MPI_Fint, *mut MPI_Fint),
    extra_state: *const MPI_Aint,
    request: *mut MPI_Fint,
    ierror: *mut MPI_Fint,
) {
    // SAFETY: Fortran passes every argument by reference.
    let record = Box::into_raw(Box::new(FortranGrequest { query, free, cancel, extra_state: unsafe { extra_state.read() } }));
    // SAFETY: the trampolines read the record until the free trampoline frees it.
    let rc = unsafe { c_function(grequest_query_trampoline, grequest_free_trampoline, grequest_cancel_trampoline, record.cast(), request) };
    if rc != MPI_SUCCESS {
        // SAFETY: no request refers to the record.
        drop(unsafe { Box::from_raw(record) });
    }
    // SAFETY: the caller's ierror.
    unsafe { set_ierror(ierror, rc) }
}
fortran_symbols!(grequest_start(query: unsafe extern "C" fn(*const MPI_Aint, *mut MPI_Fint, *mut MPI_Fint), free: unsafe extern "C" fn(*const MPI_Aint, *mut MPI_Fint), cancel: unsafe extern "C" fn(*const MPI_Aint, *const MPI_Fint, *mut MPI_Fint), extra_state: *const MPI_Aint, request: *mut MPI_Fint, ierror: *mut MPI_Fint);
    c::MPI_Grequest_start => mpi_grequest_start_, mpi_grequest_start__, mpi_grequest_start, MPI_GREQUEST_START; c::PMPI_Grequest_start => pmpi_grequest_start_);

/// MPI-1's MPI_ATTR_PUT: the value is a default INTEGER.
unsafe fn attr_put(c_function: unsafe extern "C" fn(MPI_Comm, c_int, *mut c_void) -> c_int, comm: *const MPI_Fint, keyval: *const MPI_Fint, value: *const MPI_Fint, ierror: *mut MPI_Fint) {
    // SAFETY: Fortran passes every argument by reference.
    unsafe { set_ierror(ierror, c_function(comm.read(), keyval.read(), value.read() as MPI_Aint as *mut c_void)) }
}
fortran_symbols!(attr_put(comm: *const MPI_Fint, keyval: *const MPI_Fint, value: *const MPI_Fint, ierror: *mut MPI_Fint); c::MPI_Attr_put => mpi_attr_put_, mpi_attr_put__, mpi_attr_put, MPI_ATTR_PUT; c::PMPI_Attr_put => pmpi_attr_put_);

/// MPI-1's MPI_ATTR_GET: the value is a default INTEGER.
unsafe fn attr_get(
    c_function: unsafe extern "C" fn(MPI_Comm, c_int, *mut c_void, *mut c_int) -> c_int,
    comm: *const MPI_Fint,
    keyval: *const MPI_Fint,
    value: *mut MPI_Fint,
    flag: *mut MPI_Fint,
    ierror: *mut MPI_Fint,
) {
    let mut stored: MPI_Aint = 0;
    // SAFETY: Fortran passes every argument by reference; `stored` receives the C value.
    unsafe {
        let rc = c_function(comm.read(), keyval.read(), (&raw mut stored).cast(), flag);
        if rc == MPI_SUCCESS {
            logical_result(flag);
            if flag.read() != 0 {
                attribute_to_fortran(keyval.read(), &mut stored);
                value.write(stored as MPI_Fint);
            }
        }
        set_ierror(ierror, rc);
    }
}
fortran_symbols!(attr_get(comm: *const MPI_Fint, keyval: *const MPI_Fint, value: *mut MPI_Fint, flag: *mut MPI_Fint, ierror: *mut MPI_Fint); c::MPI_Attr_get => mpi_attr_get_, mpi_attr_get__, mpi_attr_get, MPI_ATTR_GET; c::PMPI_Attr_get => pmpi_attr_get_);

/// MPI-1's MPI_TYPE_HVECTOR: the stride is a default INTEGER.
unsafe fn type_hvector(
    c_function: unsafe extern "C" fn(c_int, c_int, MPI_Aint, MPI_Datatype, *mut MPI_Datatype) -> c_int,
    count: *const MPI_Fint,
    blocklength: *const MPI_Fint,
    stride: *const MPI_Fint,
    oldtype: *const MPI_Fint,
    newtype: *mut MPI_Fint,
    ierror: *mut MPI_Fint,
) {
    // SAFETY: Fortran passes every argument by reference.
    unsafe { set_ierror(ierror, c_function(count.read(), blocklength.read(), stride.read() as MPI_Aint, oldtype.read(), newtype)) }
}
fortran_symbols!(type_hvector(count: *const MPI_Fint, blocklength: *const MPI_Fint, stride: *const MPI_Fint, oldtype: *const MPI_Fint, newtype: *mut MPI_Fint, ierror: *mut MPI_Fint);
    c::MPI_Type_hvector => mpi_type_hvector_, mpi_type_hvector__, mpi_type_hvector, MPI_TYPE_HVECTOR; c::PMPI_Type_hvector => pmpi_type_hvector_);

/// `count` INTEGER displacements as addresses (none for a negative count, which the C function
/// reports).
unsafe fn displacements(count: c_int, displacements: *const MPI_Fint) -> Vec<MPI_Aint> {
    let n = usize::try_from(count).unwrap_or(0);
    if n == 0 || displacements.is_null() {
        return Vec::new();
    }
    // SAFETY: the caller's array has `count` elements.
    unsafe { std::slice::from_raw_parts(displacements, n) }.iter().map(|&d| d as MPI_Aint).collect()
}

/// MPI-1's MPI_TYPE_HINDEXED: the displacements are default INTEGERs.
unsafe fn type_hindexed(
    c_function: unsafe extern "C" fn(c_int, *const c_int, *const MPI_Aint, MPI_Datatype, *mut MPI_Datatype) -> c_int,
    count: *const MPI_Fint,
    blocklengths: *const MPI_Fint,
    displs: *const MPI_Fint,
    oldtype: *const MPI_Fint,
    newtype: *mut MPI_Fint,
    ierror: *mut MPI_Fint,
) {
    // SAFETY: Fortran passes every argument by reference, arrays of `count` elements.
    unsafe {
        let widened = displacements(count.read(), displs);
        set_ierror(ierror, c_function(count.read(), blocklengths, widened.as_ptr(), oldtype.read(), newtype));
    }
}
fortran_symbols!(type_hindexed(count: *const MPI_Fint, blocklengths: *const MPI_Fint, displs: *const MPI_Fint, oldtype: *const MPI_Fint, newtype: *mut MPI_Fint, ierror: *mut MPI_Fint);
    c::MPI_Type_hindexed => mpi_type_hindexed_, mpi_type_hindexed__, mpi_type_hindexed, MPI_TYPE_HINDEXED; c::PMPI_Type_hindexed => pmpi_type_hindexed_);

/// MPI-1's MPI_TYPE_STRUCT: the displacements are default INTEGERs.
unsafe fn type_struct(
    c_function: unsafe extern "C" fn(c_int, *const c_int, *const MPI_Aint, *const MPI_Datatype, *mut MPI_Datatype) -> c_int,
    count: *const MPI_Fint,
    blocklengths: *const MPI_Fint,
    displs: *const MPI_Fint,
    types: *const MPI_Fint,
    newtype: *mut MPI_Fint,
    ierror: *mut MPI_Fint,
) {
    // SAFETY: Fortran passes every argument by reference, arrays of `count` elements.
    unsafe {
        let widened = displacements(count.read(), displs);
        set_ierror(ierror, c_function(count.read(), blocklengths, widened.as_ptr(), types, newtype));
    }
}
fortran_symbols!(type_struct(count: *const MPI_Fint, blocklengths: *const MPI_Fint, displs: *const MPI_Fint, types: *const MPI_Fint, newtype: *mut MPI_Fint, ierror: *mut MPI_Fint);
    c::MPI_Type_struct => mpi_type_struct_, mpi_type_struct__, mpi_type_struct, MPI_TYPE_STRUCT; c::PMPI_Type_struct => pmpi_type_struct_);

/// MPI-1's address-valued results (MPI_TYPE_EXTENT, _LB, _UB) in a default INTEGER.
unsafe fn integer_address(c_function: unsafe extern "C" fn(MPI_Datatype, *mut MPI_Aint) -> c_int, datatype: *const MPI_Fint, result: *mut MPI_Fint, ierror: *mut MPI_Fint) {
    let mut value: MPI_Aint = 0;
    // SAFETY: Fortran passes every argument by reference.
    unsafe {
        let rc = c_function(datatype.read(), &mut value);
        if rc == MPI_SUCCESS {
            result.write(value as MPI_Fint);
        }
        set_ierror(ierror, rc);
    }
}
fortran_symbols!(integer_address(datatype: *const MPI_Fint, result: *mut MPI_Fint, ierror: *mut MPI_Fint); c::MPI_Type_extent => mpi_type_extent_, mpi_type_extent__, mpi_type_extent, MPI_TYPE_EXTENT; c::PMPI_Type_extent => pmpi_type_extent_);
fortran_symbols!(integer_address(datatype: *const MPI_Fint, result: *mut MPI_Fint, ierror: *mut MPI_Fint); c::MPI_Type_lb => mpi_type_lb_, mpi_type_lb__, mpi_type_lb, MPI_TYPE_LB; c::PMPI_Type_lb => pmpi_type_lb_);
fortran_symbols!(integer_address(datatype: *const MPI_Fint, result: *mut MPI_Fint, ierror: *mut MPI_Fint); c::MPI_Type_ub => mpi_type_ub_, mpi_type_ub__, mpi_type_ub, MPI_TYPE_UB; c::PMPI_Type_ub => pmpi_type_ub_);

/// MPI-1's MPI_ADDRESS: the address in a default INTEGER, kept to its low 32 bits as in other
/// implementations; differences of such addresses are right while they fit in an INTEGER.
unsafe fn address(c_function: unsafe extern "C" fn(*const c_void, *mut MPI_Aint) -> c_int, location: *mut c_void, result: *mut MPI_Fint, ierror: *mut MPI_Fint) {
    let mut value: MPI_Aint = 0;
    // SAFETY: Fortran passes every argument by reference.
    unsafe {
        let rc = c_function(Sentinels::get().buffer(location), &mut value);
        if rc == MPI_SUCCESS {
            result.write(value as MPI_Fint);
        }
        set_ierror(ierror, rc);
    }
}
fortran_symbols!(address(location: *mut c_void, result: *mut MPI_Fint, ierror: *mut MPI_Fint); c::MPI_Address => mpi_address_, mpi_address__, mpi_address, MPI_ADDRESS; c::PMPI_Address => pmpi_address_);

/// MPI_REGISTER_DATAREP and its large-count form: the extra state is an
/// INTEGER(KIND=MPI_ADDRESS_KIND) passed by reference. The C function registers the name; files
/// do not convert through user representations yet, so no callback runs.
unsafe fn register_datarep(
    c_function: unsafe extern "C" fn(*const c_char, *mut c_void, *mut c_void, *mut c_void, *mut c_void) -> c_int,
    datarep: *const c_char,
    read: *mut c_void,
    write: *mut c_void,
    extent: *mut c_void,
    extra_state: *const MPI_Aint,
    ierror: *mut MPI_Fint,
    datarep_len: usize,
) {
    // SAFETY: Fortran passes every argument by reference and the CHARACTER length.
    unsafe {
        let datarep = string_in(datarep, datarep_len);
        set_ierror(ierror, c_function(datarep.as_ptr(), read, write, extent, extra_state.read() as *mut c_void));
    }
}
fortran_symbols!(register_datarep(datarep: *const c_char, read: *mut c_void, write: *mut c_void, extent: *mut c_void, extra_state: *const MPI_Aint, ierror: *mut MPI_Fint, datarep_len: usize);
    c::MPI_Register_datarep => mpi_register_datarep_, mpi_register_datarep__, mpi_register_datarep, MPI_REGISTER_DATAREP; c::PMPI_Register_datarep => pmpi_register_datarep_);
fortran_symbols!(register_datarep(datarep: *const c_char, read: *mut c_void, write: *mut c_void, extent: *mut c_void, extra_state: *const MPI_Aint, ierror: *mut MPI_Fint, datarep_len: usize);
    c::MPI_Register_datarep_c => mpi_register_datarep_c_, mpi_register_datarep_c__, mpi_register_datarep_c, MPI_REGISTER_DATAREP_C; c::PMPI_Register_datarep_c => pmpi_register_datarep_c_);

/// MPI_STATUS_F2F08(F_STATUS, F08_STATUS, IERROR) of mpi_f08: both statuses arrive by reference,
/// as the C function takes them.
unsafe fn status_f2f08(c_function: unsafe extern "C" fn(*const MPI_Fint, *mut MPI_Status) -> c_int, f_status: *const MPI_Fint, f08_status: *mut MPI_Status, ierror: *mut MPI_Fint) {
    // SAFETY: Fortran passes both statuses; the C function checks neither is a null pointer.
    unsafe { set_ierror(ierror, c_function(f_status, f08_status)) }
}
fortran_symbols!(status_f2f08(f_status: *const MPI_Fint, f08_status: *mut MPI_Status, ierror: *mut MPI_Fint);
    c::MPI_Status_f2f08 => mpi_status_f2f08_, mpi_status_f2f08__, mpi_status_f2f08, MPI_STATUS_F2F08; c::PMPI_Status_f2f08 => pmpi_status_f2f08_);

/// MPI_STATUS_F082F(F08_STATUS, F_STATUS, IERROR) of mpi_f08.
unsafe fn status_f082f(c_function: unsafe extern "C" fn(*const MPI_Status, *mut MPI_Fint) -> c_int, f08_status: *const MPI_Status, f_status: *mut MPI_Fint, ierror: *mut MPI_Fint) {
    // SAFETY: as for status_f2f08.
    unsafe { set_ierror(ierror, c_function(f08_status, f_status)) }
}
fortran_symbols!(status_f082f(f08_status: *const MPI_Status, f_status: *mut MPI_Fint, ierror: *mut MPI_Fint);
    c::MPI_Status_f082f => mpi_status_f082f_, mpi_status_f082f__, mpi_status_f082f, MPI_STATUS_F082F; c::PMPI_Status_f082f => pmpi_status_f082f_);
