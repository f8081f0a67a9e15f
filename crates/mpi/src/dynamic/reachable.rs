//! Where the processes of another job reach a listening socket of this one (a port, a group's
//! key-value space), on this node or another: the socket listens on every address when this node
//! has network rails (`BRAID_RAILS`), on the loopback otherwise, and its name carries this
//! node's key, the port number and the rails' addresses. A process on the same node connects
//! over the loopback, one on another node over the rails' addresses in turn.
//!
//! Written `<node key>:<port>:<address>,<address>...` (no address: loopback only).

use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

use braid_config::Rails;

/// Most rail addresses a name lists (MPI_MAX_PORT_NAME bounds a port's name).
const ADDRESSES_MAX: usize = 8;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reachable {
    /// A hash of this node's identity (see [`node_key`]).
    node: String,
    port: u16,
    /// The node's rail addresses, in `BRAID_RAILS` order.
    addresses: Vec<Ipv4Addr>,
}

/// FNV-1a of the node's identity, in hex: short, and the same in every build.
fn node_key() -> std::io::Result<String> {
    let identity = braid_sys::process::node_identity()?;
    let hash = identity.bytes().fold(0xcbf2_9ce4_8422_2325u64, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3));
    Ok(format!("{hash:016x}"))
}

impl Reachable {
    /// Opens a listening socket that processes of other jobs reach as the returned name says.
    pub(crate) fn listen(rails: &Rails) -> std::io::Result<(TcpListener, Reachable)> {
        let addresses: Vec<Ipv4Addr> = braid_transport::tcp::rails(rails).unwrap_or_default().into_iter().map(|rail| rail.address).take(ADDRESSES_MAX).collect();
        let bind = if addresses.is_empty() { Ipv4Addr::LOCALHOST } else { Ipv4Addr::UNSPECIFIED };
        let listener = TcpListener::bind((bind, 0))?;
        let port = listener.local_addr()?.port();
        Ok((listener, Reachable { node: node_key()?, port, addresses }))
    }

    pub(crate) fn parse(text: &str) -> Option<Reachable> {
        let mut fields = text.splitn(3, ':');
        let node = fields.next().filter(|node| node.len() == 16 && node.bytes().all(|b| b.is_ascii_hexdigit()))?.to_string();
        let port = fields.next()?.parse().ok()?;
        let addresses = match fields.next()? {
            "" => Vec::new(),
            list => list.split(',').map(|address| address.parse().ok()).collect::<Option<Vec<Ipv4Addr>>>()?,
        };
        Some(Reachable { node, port, addresses })
    }

    /// Where to try to connect from this process, in order: the loopback on the same node (then
    /// the rails, should it be refused), only the rails from another node.
    fn candidates(&self) -> Vec<SocketAddr> {
        let same_node = node_key().is_ok_and(|key| key == self.node);
        let loopback = same_node.then_some(Ipv4Addr::LOCALHOST);
        loopback.into_iter().chain(self.addresses.iter().copied()).map(|address| SocketAddr::from((address, self.port))).collect()
    }

    /// Connects to the socket, trying each candidate address for up to `timeout`.
    pub(crate) fn connect(&self, timeout: Duration) -> Result<TcpStream, String> {
        self.first_answering(|address| TcpStream::connect_timeout(&address, timeout))
    }

    /// The outcome of `attempt` at the first candidate address where it succeeds (for a client
    /// that connects by itself), or why it failed at each.
    pub(crate) fn first_answering<T, E: std::fmt::Display>(&self, mut attempt: impl FnMut(SocketAddr) -> Result<T, E>) -> Result<T, String> {
        let mut failures = Vec::new();
        for address in self.candidates() {
            match attempt(address) {
                Ok(found) => return Ok(found),
                Err(failure) => failures.push(format!("{address}: {failure}")),
            }
        }
        Err(match failures.is_empty() {
            true => "it is on another node, and this one has no network rail (BRAID_RAILS) to reach it over".to_string(),
            false => failures.join("; "),
        })
    }
}

impl std::fmt::Display for Reachable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let addresses: Vec<String> = self.addresses.iter().map(|address| address.to_string()).collect();
        write!(f, "{}:{}:{}", self.node, self.port, addresses.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_round_trips_and_a_bad_one_is_refused() {
        let reachable = Reachable { node: "0123456789abcdef".into(), port: 4000, addresses: vec![Ipv4Addr::new(10, 1, 0, 2), Ipv4Addr::new(10, 2, 0, 2)] };
        assert_eq!(reachable.to_string(), "0123456789abcdef:4000:10.1.0.2,10.2.0.2");
        assert_eq!(Reachable::parse(&reachable.to_string()), Some(reachable));
        assert!(Reachable::parse("0123456789abcdef:4000:").is_some_and(|r| r.addresses.is_empty()));
        for bad in ["", "127.0.0.1:4000", "0123456789abcdef:port:", "0123456789abcdef:4000:10.1.0", "xyz:1:"] {
            assert_eq!(Reachable::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn on_this_node_the_loopback_is_tried_first_and_elsewhere_only_the_rails() {
        let (listener, here) = Reachable::listen(&Rails::None).unwrap();
        assert_eq!(here.candidates(), vec![SocketAddr::from((Ipv4Addr::LOCALHOST, here.port))]);
        let stream = here.connect(Duration::from_secs(5)).unwrap();
        assert_eq!(stream.peer_addr().unwrap(), listener.local_addr().unwrap());
        let elsewhere = Reachable { node: "0000000000000000".into(), ..here.clone() };
        assert!(elsewhere.candidates().is_empty());
        assert!(elsewhere.connect(Duration::from_secs(1)).unwrap_err().contains("another node"));
    }
}
