//! Ports (MPI_Open_port): a listening TCP socket, named `braid-port:` and where it is reached
//! from this node and others (see `reachable.rs`).

use std::collections::HashMap;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use super::reachable::Reachable;
use crate::consts::*;
use crate::error::{error, MpiResult};
use crate::runtime;

const PREFIX: &str = "braid-port:";

/// The ports this process has open, by name.
static PORTS: Mutex<Option<HashMap<String, Arc<TcpListener>>>> = Mutex::new(None);

fn with_ports<R>(f: impl FnOnce(&mut HashMap<String, Arc<TcpListener>>) -> R) -> R {
    let mut ports = PORTS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    f(ports.get_or_insert_with(HashMap::new))
}

/// Opens a port; returns its name.
pub(crate) fn open() -> MpiResult<String> {
    let rails = runtime::with(|rt| Ok(rt.config.rails.clone()))?;
    let (listener, reachable) = Reachable::listen(&rails).map_err(|failure| error(MPI_COMM_WORLD, MPI_ERR_OTHER, format!("cannot open a port: {failure}")))?;
    let name = format!("{PREFIX}{reachable}");
    with_ports(|ports| ports.insert(name.clone(), Arc::new(listener)));
    Ok(name)
}

/// Closes port `name` (opened by this process).
pub(crate) fn close(name: &str) -> MpiResult<()> {
    match with_ports(|ports| ports.remove(name)) {
        Some(_) => Ok(()),
        None => Err(error(MPI_COMM_WORLD, MPI_ERR_PORT, format!("{name:?} is not a port this process has open"))),
    }
}

/// The listening socket of port `name`, opened by this process.
pub(crate) fn listener(comm: MPI_Comm, name: &str) -> MpiResult<Arc<TcpListener>> {
    with_ports(|ports| ports.get(name).cloned()).ok_or_else(|| error(comm, MPI_ERR_PORT, format!("{name:?} is not a port this process has open (MPI_Open_port)")))
}

/// Where port `name` listens.
pub(crate) fn address(comm: MPI_Comm, name: &str) -> MpiResult<Reachable> {
    name.strip_prefix(PREFIX)
        .and_then(Reachable::parse)
        .ok_or_else(|| error(comm, MPI_ERR_PORT, format!("{name:?} is not a port name (MPI_Open_port gives names of the form {PREFIX}<node>:<port>:<addresses>)")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_name_must_say_where_it_listens() {
        assert!(address(MPI_COMM_WORLD, "braid-port:0123456789abcdef:4000:").is_ok());
        for bad in ["tcp://nowhere", "braid-port:127.0.0.1:4000", "0123456789abcdef:4000:"] {
            assert_eq!(address(MPI_COMM_WORLD, bad).unwrap_err().class, MPI_ERR_PORT, "{bad}");
        }
        assert_eq!(listener(MPI_COMM_WORLD, "braid-port:0123456789abcdef:4000:").unwrap_err().class, MPI_ERR_PORT);
        assert_eq!(close("braid-port:0123456789abcdef:4000:").unwrap_err().class, MPI_ERR_PORT);
    }
}
