//! Name publishing (MPI_Publish_name, MPI_Unpublish_name, MPI_Lookup_name) through the
//! launcher's name service (PMI's `publish_name`, `unpublish_name` and `lookup_name`): under
//! `braid run` the names are shared by the job and the jobs it spawns; under Hydra, by what its
//! name server serves.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int};

use crate::consts::*;
use crate::error::{error, finish, write_c_string, MpiResult};
use crate::info::abi::c_text;
use crate::runtime;

/// A name fit for the launcher's wire (one word).
fn word(text: &str, what: &str, class: c_int) -> MpiResult<()> {
    if text.is_empty() || text.contains([' ', '=', '\n', '\r']) {
        return Err(error(MPI_COMM_WORLD, class, format!("{what} {text:?} cannot be published: it must be non-empty, without spaces, '=' or newlines")));
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Publish_name(service_name: *const c_char, _info: MPI_Info, port_name: *const c_char) -> c_int {
    let result = (|| {
        // SAFETY: NUL-terminated, per MPI.
        let (service, port) = unsafe { (c_text(service_name, "service_name")?, c_text(port_name, "port_name")?) };
        word(&service, "service name", MPI_ERR_SERVICE)?;
        word(&port, "port name", MPI_ERR_PORT)?;
        runtime::with(|rt| rt.engine.bootstrap().publish_name(&service, &port).map_err(|failure| error(MPI_COMM_WORLD, MPI_ERR_SERVICE, format!("cannot publish {service:?}: {}", failure.reason))))
    })();
    finish("MPI_Publish_name", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Unpublish_name(service_name: *const c_char, _info: MPI_Info, port_name: *const c_char) -> c_int {
    let result = (|| {
        // SAFETY: NUL-terminated, per MPI (the port name is checked but not needed).
        let service = unsafe { c_text(service_name, "service_name")? };
        // SAFETY: as above.
        unsafe { c_text(port_name, "port_name")? };
        word(&service, "service name", MPI_ERR_SERVICE)?;
        runtime::with(|rt| rt.engine.bootstrap().unpublish_name(&service).map_err(|failure| error(MPI_COMM_WORLD, MPI_ERR_SERVICE, format!("cannot unpublish {service:?}: {}", failure.reason))))
    })();
    finish("MPI_Unpublish_name", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Lookup_name(service_name: *const c_char, _info: MPI_Info, port_name: *mut c_char) -> c_int {
    let result = (|| {
        // SAFETY: NUL-terminated, per MPI.
        let service = unsafe { c_text(service_name, "service_name")? };
        if port_name.is_null() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "port_name must not be NULL"));
        }
        word(&service, "service name", MPI_ERR_NAME)?;
        let port =
            runtime::with(|rt| rt.engine.bootstrap().lookup_name(&service).map_err(|failure| error(MPI_COMM_WORLD, MPI_ERR_NAME, format!("no port is published as {service:?}: {}", failure.reason))))?;
        // SAFETY: the caller's buffer of MPI_MAX_PORT_NAME characters.
        unsafe { write_c_string(&port, port_name, MPI_MAX_PORT_NAME as usize) };
        Ok(())
    })();
    finish("MPI_Lookup_name", result)
}
