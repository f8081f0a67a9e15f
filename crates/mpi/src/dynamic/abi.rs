//! The entry points of ports and connections: MPI_Open_port, MPI_Close_port, MPI_Comm_accept,
//! MPI_Comm_connect and MPI_Comm_join.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int};
use std::net::TcpStream;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::connection::{connect_sides, this_side, Side};
use super::roots::{accept_at_root, connect_at_root, serve};
use super::{ports, rendezvous};
use crate::consts::*;
use crate::error::{error, finish, write_c_string, MpiError, MpiResult};
use crate::group::store;
use crate::info::abi::c_text;
use crate::runtime;

#[no_mangle]
pub unsafe extern "C" fn MPI_Open_port(_info: MPI_Info, port_name: *mut c_char) -> c_int {
    let result = (|| {
        if port_name.is_null() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "port_name must not be NULL"));
        }
        let name = ports::open()?;
        // SAFETY: the caller's buffer of MPI_MAX_PORT_NAME characters.
        unsafe { write_c_string(&name, port_name, MPI_MAX_PORT_NAME as usize) };
        Ok(())
    })();
    finish("MPI_Open_port", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Close_port(port_name: *const c_char) -> c_int {
    // SAFETY: NULL or NUL-terminated, per MPI.
    let result = unsafe { c_text(port_name, "port_name") }.and_then(|name| ports::close(&name));
    finish("MPI_Close_port", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_accept(port_name: *const c_char, _info: MPI_Info, root: c_int, comm: MPI_Comm, newcomm: *mut MPI_Comm) -> c_int {
    // SAFETY: per MPI (the port name is read on the root only).
    let result = unsafe { connect_or_accept(port_name, root, comm, newcomm, Side::Accepting) };
    finish("MPI_Comm_accept", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_connect(port_name: *const c_char, _info: MPI_Info, root: c_int, comm: MPI_Comm, newcomm: *mut MPI_Comm) -> c_int {
    // SAFETY: per MPI (the port name is read on the root only).
    let result = unsafe { connect_or_accept(port_name, root, comm, newcomm, Side::Connecting) };
    finish("MPI_Comm_connect", result)
}

/// Both sides of accept and connect: the root meets the other side's root, then all connect.
///
/// # Safety
/// `port_name` is NUL-terminated on the root; `newcomm` is writable.
unsafe fn connect_or_accept(port_name: *const c_char, root: c_int, comm: MPI_Comm, newcomm: *mut MPI_Comm, side: Side) -> MpiResult<()> {
    if newcomm.is_null() {
        return Err(error(comm, MPI_ERR_ARG, "newcomm must not be NULL"));
    }
    let (rank, size, timeout) = this_side(comm, root, "connections are made")?;
    let at_root = (rank == root as u32).then(|| {
        // SAFETY: significant (and so valid) on the root, per MPI.
        let name = unsafe { c_text(port_name, "port_name") }.map_err(|failure| MpiError { comm, ..failure })?;
        match side {
            Side::Accepting => accept_at_root(comm, &name, size, timeout, None),
            Side::Connecting => connect_at_root(comm, &name, size, timeout),
        }
    });
    let made = connect_sides(comm, root, side, at_root)?;
    // SAFETY: checked non-null above.
    unsafe { store(newcomm, made, "newcomm") }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_join(fd: c_int, intercomm: *mut MPI_Comm) -> c_int {
    let result = (|| {
        if intercomm.is_null() {
            return Err(error(MPI_COMM_SELF, MPI_ERR_ARG, "intercomm must not be NULL"));
        }
        let (name, timeout) = runtime::with(|rt| Ok((rt.engine.process_name(), Duration::from_secs(rt.config.connect_timeout_s.into()))))?;
        let owned = braid_sys::fd::duplicate_inherited(fd).map_err(|failure| error(MPI_COMM_SELF, MPI_ERR_ARG, format!("fd {fd} is not an open socket: {failure}")))?;
        let mut stream = TcpStream::from(owned);
        let failed = |detail: String| error(MPI_COMM_SELF, MPI_ERR_PORT, format!("MPI_Comm_join over fd {fd}: {detail}"));
        let nonce = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_nanos() as u64) ^ u64::from(std::process::id());
        rendezvous::send(&mut stream, &braid_pmi::wire::Message::new("braid-join").with("name", &name).with("nonce", nonce)).map_err(&failed)?;
        let theirs = rendezvous::receive(&stream, "braid-join", Some(timeout)).map_err(&failed)?;
        let their_key = (theirs.get("name").unwrap_or("").to_string(), theirs.get("nonce").and_then(|text| text.parse::<u64>().ok()).unwrap_or(0));
        if their_key == (name.clone(), nonce) {
            return Err(failed("both ends of the socket are this process".into()));
        }
        // The process with the larger name (and nonce) accepts.
        let (side, meeting) = if (name, nonce) > their_key {
            let meeting = serve(MPI_COMM_SELF, 1, 1, timeout)?;
            rendezvous::send(&mut stream, &rendezvous::welcome(&meeting)).map_err(&failed)?;
            (Side::Accepting, meeting)
        } else {
            let welcome = rendezvous::receive(&stream, "braid-accept", Some(timeout)).map_err(&failed)?;
            (Side::Connecting, rendezvous::meeting_of(&welcome).map_err(&failed)?)
        };
        let made = connect_sides(MPI_COMM_SELF, 0, side, Some(Ok(meeting)))?;
        // SAFETY: checked non-null above.
        unsafe { store(intercomm, made, "intercomm") }
    })();
    finish("MPI_Comm_join", result)
}
