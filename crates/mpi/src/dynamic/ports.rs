//! Ports (MPI_Open_port): a listening TCP socket on this host's loopback, named
//! `braid-port:127.0.0.1:<port>`. The processes of two jobs connect on one node (see
//! `braid_engine::Engine::join`), so the loopback is where both find it; on a node of the virtual
//! cluster (a network namespace) it is that node's own loopback.

use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};

use crate::consts::*;
use crate::error::{error, MpiResult};

const PREFIX: &str = "braid-port:";

/// The ports this process has open, by name.
static PORTS: Mutex<Option<HashMap<String, Arc<TcpListener>>>> = Mutex::new(None);

fn with_ports<R>(f: impl FnOnce(&mut HashMap<String, Arc<TcpListener>>) -> R) -> R {
    let mut ports = PORTS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    f(ports.get_or_insert_with(HashMap::new))
}

/// Opens a port; returns its name.
pub(crate) fn open() -> MpiResult<String> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).map_err(|failure| error(MPI_COMM_WORLD, MPI_ERR_OTHER, format!("cannot open a port: {failure}")))?;
    let address = listener.local_addr().map_err(|failure| error(MPI_COMM_WORLD, MPI_ERR_OTHER, format!("cannot open a port: {failure}")))?;
    let name = format!("{PREFIX}{address}");
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
pub(crate) fn address(comm: MPI_Comm, name: &str) -> MpiResult<SocketAddr> {
    name.strip_prefix(PREFIX)
        .and_then(|address| address.parse().ok())
        .ok_or_else(|| error(comm, MPI_ERR_PORT, format!("{name:?} is not a port name (MPI_Open_port gives names of the form {PREFIX}<address>:<port>)")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_open_port_is_named_by_its_address_until_closed() {
        let name = open().unwrap();
        let address = address(MPI_COMM_WORLD, &name).unwrap();
        assert_eq!(listener(MPI_COMM_WORLD, &name).unwrap().local_addr().unwrap(), address);
        close(&name).unwrap();
        assert_eq!(listener(MPI_COMM_WORLD, &name).unwrap_err().class, MPI_ERR_PORT);
        assert_eq!(close(&name).unwrap_err().class, MPI_ERR_PORT);
        assert_eq!(super::address(MPI_COMM_WORLD, "tcp://nowhere").unwrap_err().class, MPI_ERR_PORT);
    }
}
