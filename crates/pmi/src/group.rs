//! A key-value space for a group of processes that belong to different jobs (MPI's dynamic
//! processes join two jobs): one of them serves it from a thread, over TCP on a listening
//! socket it opens, and every member (the server's own process too) is a PMI-1 client of it
//! ([`join_group`]) with its group rank as `pmiid`.

use std::io;
use std::net::TcpListener;
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use crate::client::PmiClient;
use crate::server::{PmiServer, ServerEvent};
use crate::BootstrapError;

/// Serves the key-value space of a group of `size` members named `kvsname` from a new thread,
/// on `listener`, where members connect. The thread ends once every member has come and gone,
/// or when `timeout` passes before all have come (the members that did then fail in their next
/// fence, as they would with a lost launcher).
pub fn serve_group(listener: TcpListener, kvsname: &str, size: u32, timeout: Duration) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    let server = PmiServer::new(kvsname, size);
    std::thread::Builder::new().name("braid-group-kvs".into()).spawn(move || run(listener, server, size, Instant::now() + timeout))?;
    Ok(())
}

fn run(listener: TcpListener, mut server: PmiServer, size: u32, deadline: Instant) {
    let (mut attached, mut gone) = (0u32, 0u32);
    while gone < size {
        let waiting = attached < size;
        let left = deadline.saturating_duration_since(Instant::now());
        if waiting && left.is_zero() {
            return;
        }
        let (ranks, ready) = {
            let descriptors = server.descriptors();
            let mut fds: Vec<_> = descriptors.iter().map(|(_, fd)| *fd).collect();
            fds.push(listener.as_fd());
            let Ok(ready) = braid_sys::fd::poll_readable(&fds, waiting.then_some(left)) else { return };
            (descriptors.iter().map(|(rank, _)| *rank).collect::<Vec<u32>>(), ready)
        };
        if ready.last().is_some_and(|readiness| readiness.any()) {
            while let Ok((stream, _)) = listener.accept() {
                // A stranger or a late duplicate is refused; the members carry on.
                if server.accept_network(stream).is_ok() {
                    attached += 1;
                }
            }
        }
        for (rank, readiness) in ranks.into_iter().zip(ready) {
            if readiness.any() {
                gone += server.service(rank).iter().filter(|event| matches!(event, ServerEvent::Closed { .. })).count() as u32;
            }
        }
    }
}

/// Joins the group served at `address` (by [`serve_group`]) as member `rank`.
pub fn join_group(address: &str, rank: u32) -> Result<PmiClient, BootstrapError> {
    let rank = rank.to_string();
    let client = PmiClient::from_lookup(|name| match name {
        "PMI_PORT" => Some(address.to_string()),
        "PMI_ID" => Some(rank.clone()),
        _ => None,
    })?;
    client.ok_or_else(|| BootstrapError { operation: "connect", reason: "no group address".into() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Bootstrap;

    #[test]
    fn members_share_values_across_a_fence_and_the_server_ends_when_they_leave() {
        let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let address = listener.local_addr().unwrap().to_string();
        serve_group(listener, "group-test", 3, Duration::from_secs(20)).unwrap();
        let members: Vec<_> = (0..3)
            .map(|rank| {
                let address = address.clone();
                std::thread::spawn(move || {
                    let mut member = join_group(&address, rank).unwrap();
                    assert_eq!((member.rank(), member.size(), member.job_id()), (rank, 3, "group-test"));
                    member.put(&format!("k{rank}"), &format!("v{rank}")).unwrap();
                    member.fence().unwrap();
                    (0..3).map(|other| member.get(&format!("k{other}")).unwrap()).collect::<Vec<_>>()
                })
            })
            .collect();
        for member in members {
            assert_eq!(member.join().unwrap(), ["v0", "v1", "v2"]);
        }
    }

    #[test]
    fn a_member_that_never_comes_leaves_the_others_failing_not_hanging() {
        let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let address = listener.local_addr().unwrap().to_string();
        serve_group(listener, "group-late", 2, Duration::from_millis(300)).unwrap();
        let mut member = join_group(&address, 0).unwrap();
        member.put("k", "v").unwrap();
        assert!(member.fence().is_err(), "the fence must fail once the server gives up");
    }
}
