//! What the root of each side of a connection does: the accepting root waits on its port and
//! serves the group's key-value space, the connecting root reaches the port (see
//! `rendezvous.rs` for what they say).

use std::os::fd::AsFd;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::ports;
use super::reachable::Reachable;
use super::rendezvous::{self, Meeting};
use crate::consts::*;
use crate::error::{error, MpiError, MpiResult};
use crate::runtime;

fn port_error(comm: MPI_Comm, port: &str) -> impl Fn(String) -> MpiError + '_ {
    move |detail| error(comm, MPI_ERR_PORT, format!("port {port}: {detail}"))
}

/// The accepting root: waits for a connecting root on the port (for ever, as MPI_Comm_accept
/// may, or until `deadline`), then serves the group.
pub(crate) fn accept_at_root(comm: MPI_Comm, port: &str, accepting: u32, timeout: Duration, deadline: Option<Instant>) -> MpiResult<Meeting> {
    let listener = ports::listener(comm, port)?;
    loop {
        // Sleeps in the kernel (no CPU) until a process connects.
        let left = deadline.map(|deadline| deadline.saturating_duration_since(Instant::now()));
        let ready = braid_sys::fd::poll_readable(&[listener.as_fd()], left).map_err(|failure| error(comm, MPI_ERR_PORT, format!("port {port}: {failure}")))?;
        if !ready[0].any() {
            return Err(error(comm, MPI_ERR_PORT, format!("port {port}: nobody connected within {} s (BRAID_CONNECT_TIMEOUT_S)", timeout.as_secs())));
        }
        let (mut stream, _) = listener.accept().map_err(|failure| error(comm, MPI_ERR_PORT, format!("port {port}: {failure}")))?;
        // Something that is not a connecting root (a port scanner, a process that gave up) is
        // dropped, and the port waits for the next.
        let Ok(connecting) = rendezvous::receive(&stream, "braid-connect", Some(timeout)).and_then(|hello| rendezvous::size_of(&hello, "size")) else { continue };
        let meeting = serve(comm, accepting, connecting, timeout)?;
        if rendezvous::send(&mut stream, &rendezvous::welcome(&meeting)).is_ok() {
            return Ok(meeting);
        }
    }
}

/// Serves the key-value space of a group of the two sides; returns the meeting to announce.
pub(crate) fn serve(comm: MPI_Comm, accepting: u32, connecting: u32, timeout: Duration) -> MpiResult<Meeting> {
    static GROUPS: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.subsec_nanos());
    let kvsname = format!("braid-join-{}-{}-{nanos}", std::process::id(), GROUPS.fetch_add(1, Ordering::Relaxed));
    let total = accepting.checked_add(connecting).ok_or_else(|| error(comm, MPI_ERR_PORT, "the two sides have too many processes together"))?;
    let failed = |failure: std::io::Error| error(comm, MPI_ERR_OTHER, format!("cannot serve the connection's key-value space: {failure}"));
    let rails = runtime::with(|rt| Ok(rt.config.rails.clone()))?;
    let (listener, reachable) = Reachable::listen(&rails).map_err(failed)?;
    braid_pmi::group::serve_group(listener, &kvsname, total, timeout).map_err(failed)?;
    Ok(Meeting { address: reachable.to_string(), accepting, connecting })
}

/// The connecting root: reaches the port's owner and learns where the group meets.
pub(crate) fn connect_at_root(comm: MPI_Comm, port: &str, connecting: u32, timeout: Duration) -> MpiResult<Meeting> {
    let address = ports::address(comm, port)?;
    let failed = port_error(comm, port);
    let mut stream = address.connect(timeout).map_err(|failure| failed(format!("nobody listens there ({failure})")))?;
    rendezvous::send(&mut stream, &rendezvous::hello(connecting)).map_err(&failed)?;
    let welcome = rendezvous::receive(&stream, "braid-accept", Some(timeout)).map_err(|detail| failed(format!("no MPI_Comm_accept answered: {detail}")))?;
    let meeting = rendezvous::meeting_of(&welcome).map_err(&failed)?;
    if meeting.connecting != connecting {
        return Err(failed(format!("the accepting side expects {} connecting processes, not {connecting}", meeting.connecting)));
    }
    Ok(meeting)
}
