//! Spawning (MPI_Comm_spawn, MPI_Comm_spawn_multiple) and the parent of a spawned job.
//!
//! The spawning side's root opens a port and asks the launcher, through PMI's spawn command,
//! to start the processes as a new job with the port's name in its key-value space (under
//! MPICH's key, `PARENT_ROOT_PORT_NAME`); then it accepts on that port as MPI_Comm_accept does,
//! while the new job's processes, in MPI_Init, find the name and connect as MPI_Comm_connect
//! does. The intercommunicator both sides get is the children's parent communicator.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, CStr};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use braid_pmi::spawn::{SpawnCommand, SpawnRequest, PARENT_PORT_KEY};

use super::connection::{connect_sides, this_side, Side};
use super::ports;
use super::roots::{accept_at_root, connect_at_root};
use crate::consts::*;
use crate::error::{error, finish, raise, MpiError, MpiResult};
use crate::group::store;
use crate::runtime;

/// The parent communicator of a spawned job's process (MPI_COMM_NULL otherwise, and once freed
/// or disconnected).
static PARENT: AtomicI32 = AtomicI32::new(MPI_COMM_NULL);

/// MPI_COMM_NULL unless this process's job was spawned and the parent communicator is not freed.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_parent(parent: *mut MPI_Comm) -> c_int {
    if parent.is_null() {
        return raise(MPI_COMM_WORLD, "MPI_Comm_get_parent", MPI_ERR_ARG, "parent must not be NULL");
    }
    // SAFETY: checked non-null; the caller's output variable.
    unsafe { *parent = PARENT.load(Ordering::Acquire) };
    MPI_SUCCESS
}

/// Called when communicator `comm` is freed: the parent communicator, once freed, is no more.
pub(crate) fn forget_parent(comm: MPI_Comm) {
    let _ = PARENT.compare_exchange(comm, MPI_COMM_NULL, Ordering::AcqRel, Ordering::Acquire);
}

/// In MPI_Init of a spawned job's process: connects to the parents (collective over the job).
pub(crate) fn connect_to_parents() -> MpiResult<()> {
    let found = runtime::with(|rt| {
        let bootstrap = rt.engine.bootstrap();
        if !bootstrap.spawned() {
            return Ok(None);
        }
        let port = bootstrap.get(PARENT_PORT_KEY).map_err(|failure| error(MPI_COMM_WORLD, MPI_ERR_SPAWN, format!("this job was spawned, but the launcher has no parent port for it: {failure}")))?;
        Ok(Some((port, rt.comms.job_rank(), rt.engine.size(), Duration::from_secs(rt.config.connect_timeout_s.into()))))
    })?;
    let Some((port, rank, size, timeout)) = found else { return Ok(()) };
    let at_root = (rank == 0).then(|| connect_at_root(MPI_COMM_WORLD, &port, size, timeout));
    let parent = connect_sides(MPI_COMM_WORLD, 0, Side::Connecting, at_root)?;
    PARENT.store(parent, Ordering::Release);
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_spawn(
    command: *const c_char,
    argv: *mut *mut c_char,
    maxprocs: c_int,
    info: MPI_Info,
    root: c_int,
    comm: MPI_Comm,
    intercomm: *mut MPI_Comm,
    array_of_errcodes: *mut c_int,
) -> c_int {
    // SAFETY: per MPI: significant on the root only, where they are valid.
    let result = unsafe { spawn(comm, root, intercomm, array_of_errcodes, || Ok(vec![read_command(comm, command, argv, maxprocs, info)?])) };
    finish("MPI_Comm_spawn", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_spawn_multiple(
    count: c_int,
    array_of_commands: *mut *mut c_char,
    array_of_argv: *mut *mut *mut c_char,
    array_of_maxprocs: *const c_int,
    array_of_info: *const MPI_Info,
    root: c_int,
    comm: MPI_Comm,
    intercomm: *mut MPI_Comm,
    array_of_errcodes: *mut c_int,
) -> c_int {
    let commands = || {
        if count <= 0 {
            return Err(error(comm, MPI_ERR_ARG, format!("count {count} must be positive")));
        }
        if array_of_commands.is_null() || array_of_maxprocs.is_null() || array_of_info.is_null() {
            return Err(error(comm, MPI_ERR_ARG, "array_of_commands, array_of_maxprocs and array_of_info must not be NULL"));
        }
        (0..count as usize)
            .map(|index| {
                // SAFETY: `count` entries each, per MPI (array_of_argv may be MPI_ARGVS_NULL).
                unsafe {
                    let argv = if array_of_argv.is_null() { MPI_ARGV_NULL } else { *array_of_argv.add(index) };
                    read_command(comm, *array_of_commands.add(index), argv, *array_of_maxprocs.add(index), *array_of_info.add(index))
                }
            })
            .collect()
    };
    // SAFETY: as for MPI_Comm_spawn.
    let result = unsafe { spawn(comm, root, intercomm, array_of_errcodes, commands) };
    finish("MPI_Comm_spawn_multiple", result)
}

/// One command of a spawn, read from its C arguments.
///
/// # Safety
/// `command` is NUL-terminated; `argv` is MPI_ARGV_NULL or a NULL-terminated array of them.
unsafe fn read_command(comm: MPI_Comm, command: *const c_char, argv: *mut *mut c_char, maxprocs: c_int, info: MPI_Info) -> MpiResult<SpawnCommand> {
    if command.is_null() {
        return Err(error(comm, MPI_ERR_ARG, "command must not be NULL"));
    }
    if maxprocs <= 0 {
        return Err(error(comm, MPI_ERR_ARG, format!("maxprocs {maxprocs} must be positive")));
    }
    // SAFETY: per the caller.
    let execname = unsafe { CStr::from_ptr(command) }.to_string_lossy().into_owned();
    let mut args = Vec::new();
    if !argv.is_null() {
        for index in 0.. {
            // SAFETY: NULL-terminated, per the caller.
            let arg = unsafe { *argv.add(index) };
            if arg.is_null() {
                break;
            }
            // SAFETY: NUL-terminated, per MPI.
            args.push(unsafe { CStr::from_ptr(arg) }.to_string_lossy().into_owned());
        }
    }
    let info = crate::info::entries(info).map_err(|failure| MpiError { comm, ..failure })?;
    Ok(SpawnCommand { execname, nprocs: maxprocs as u32, args, info })
}

/// Both spawn calls: the root starts the processes (`commands` is read there only) and accepts
/// them; every member gets the intercommunicator and, unless MPI_ERRCODES_IGNORE, one
/// MPI_SUCCESS per spawned process (on failure, the root the error's class per process asked for).
///
/// # Safety
/// `intercomm` is writable; `errcodes` is MPI_ERRCODES_IGNORE or has room for every process.
unsafe fn spawn(comm: MPI_Comm, root: c_int, intercomm: *mut MPI_Comm, errcodes: *mut c_int, commands: impl FnOnce() -> MpiResult<Vec<SpawnCommand>>) -> MpiResult<()> {
    if intercomm.is_null() {
        return Err(error(comm, MPI_ERR_ARG, "intercomm must not be NULL"));
    }
    let (rank, size, timeout) = this_side(comm, root, "processes are spawned")?;
    // The root knows how many processes were asked for: on failure, each gets the error's class.
    let mut asked = 0;
    let at_root = (rank == root as u32).then(|| {
        let commands = commands()?;
        asked = commands.iter().map(|command| command.nprocs as usize).sum();
        start_children(comm, size, timeout, commands)
    });
    let made = match connect_sides(comm, root, Side::Accepting, at_root) {
        Ok(made) => made,
        Err(failure) => {
            // SAFETY: room for every process asked for, per MPI.
            unsafe { fill(errcodes, asked, failure.class) };
            return Err(failure);
        }
    };
    let children = runtime::with(|rt| Ok(rt.comms.get(made)?.shared.peers.len()))?;
    // SAFETY: as above.
    unsafe { fill(errcodes, children, MPI_SUCCESS) };
    // SAFETY: checked non-null above.
    unsafe { store(intercomm, made, "intercomm") }
}

/// Writes `code` into the first `count` entries of `errcodes` (none for MPI_ERRCODES_IGNORE).
///
/// # Safety
/// `errcodes` is MPI_ERRCODES_IGNORE or has room for `count` ints.
unsafe fn fill(errcodes: *mut c_int, count: usize, code: c_int) {
    if errcodes.is_null() {
        return;
    }
    for index in 0..count {
        // SAFETY: per the caller.
        unsafe { *errcodes.add(index) = code };
    }
}

/// The root: asks the launcher for the processes, with the name of a port they connect to, and
/// accepts them there. A program that is nowhere to be found fails here, whatever the launcher
/// (Hydra would accept the spawn and fail to start the process).
fn start_children(comm: MPI_Comm, parents: u32, timeout: Duration, commands: Vec<SpawnCommand>) -> MpiResult<super::rendezvous::Meeting> {
    if let Some(missing) = commands.iter().find(|command| command.program().is_none()) {
        return Err(error(comm, MPI_ERR_SPAWN, format!("cannot spawn {:?}: no such executable", missing.execname)));
    }
    let port = ports::open()?;
    let request = SpawnRequest { commands, preput: vec![(PARENT_PORT_KEY.to_string(), port.clone())] };
    let started = runtime::with(|rt| rt.engine.bootstrap().spawn(&request).map_err(|failure| error(comm, MPI_ERR_SPAWN, failure.reason)));
    let meeting = started.and_then(|()| {
        accept_at_root(comm, &port, parents, timeout, Some(Instant::now() + timeout))
            .map_err(|failure| error(comm, MPI_ERR_SPAWN, format!("the spawned processes did not connect: {}", failure.detail)))
    });
    let _ = ports::close(&port);
    meeting
}
