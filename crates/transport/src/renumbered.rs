//! A transport connected among a group of processes other than the job (the processes of two
//! jobs that MPI's dynamic process calls have joined), seen by the engine under the engine's own
//! peer numbers: the group's rank `r` is peer `peer_of[r]` to the engine.

use std::io::IoSlice;
use std::os::fd::BorrowedFd;
use std::sync::Arc;

use braid_lane::{Capabilities, PeerId, Profile};
use braid_pmi::Bootstrap;

use crate::{FrameWriter, Incoming, PathTiming, RemoteRegion, SendOutcome, SharedDoorbell, Sink, Transport, TransportError};

const NOT_IN_GROUP: u32 = u32::MAX;

/// A connected transport whose peers are renumbered (see the module documentation).
pub struct Renumbered {
    inner: Box<dyn Transport>,
    /// Indexed by group rank: the engine's peer number.
    peer_of: Vec<PeerId>,
    /// Indexed by engine peer number: the group rank, or `NOT_IN_GROUP`.
    rank_of: Vec<u32>,
}

impl Renumbered {
    /// Wraps `inner`, already connected over the group's bootstrap, whose rank `r` is the
    /// engine's peer `peer_of[r]` (distinct numbers).
    pub fn new(inner: Box<dyn Transport>, peer_of: Vec<PeerId>) -> Renumbered {
        let len = peer_of.iter().map(|&peer| peer as usize + 1).max().unwrap_or(0);
        let mut rank_of = vec![NOT_IN_GROUP; len];
        for (rank, &peer) in peer_of.iter().enumerate() {
            assert_eq!(rank_of[peer as usize], NOT_IN_GROUP, "peer {peer} named twice in a group");
            rank_of[peer as usize] = rank as u32;
        }
        Renumbered { inner, peer_of, rank_of }
    }

    #[inline]
    fn rank(&self, peer: PeerId) -> Result<PeerId, TransportError> {
        match self.rank_of.get(peer as usize) {
            Some(&rank) if rank != NOT_IN_GROUP => Ok(rank),
            _ => Err(TransportError::Unreachable(peer)),
        }
    }

    fn renumber<'a>(peer_of: &[PeerId], incoming: Incoming<'a>) -> Incoming<'a> {
        Incoming { peer: peer_of[incoming.peer as usize], ..incoming }
    }
}

/// Hands frames on with their senders renumbered.
struct RenumberingSink<'s> {
    peer_of: &'s [PeerId],
    sink: &'s mut dyn Sink,
}

impl Sink for RenumberingSink<'_> {
    fn deliver(&mut self, incoming: Incoming<'_>) {
        self.sink.deliver(Renumbered::renumber(self.peer_of, incoming))
    }

    fn place(&mut self, peer: PeerId, header: &[u8], len: usize) -> Option<&mut [u8]> {
        self.sink.place(self.peer_of[peer as usize], header, len)
    }

    fn placed(&mut self, peer: PeerId, header: &[u8], len: usize) {
        self.sink.placed(self.peer_of[peer as usize], header, len)
    }
}

impl Transport for Renumbered {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    fn profile(&self) -> &Profile {
        self.inner.profile()
    }

    fn connect(&mut self, _bootstrap: &mut dyn Bootstrap) -> Result<(), TransportError> {
        Err(TransportError::Unsupported("connecting a group's transport twice"))
    }

    fn reaches(&self, peer: PeerId) -> bool {
        self.rank(peer).is_ok_and(|rank| self.inner.reaches(rank))
    }

    #[cold]
    fn down_reason(&self, peer: PeerId) -> Option<String> {
        self.inner.down_reason(self.rank(peer).ok()?)
    }

    #[inline]
    fn try_send(&mut self, peer: PeerId, header: &[u8], payload: &[IoSlice<'_>]) -> Result<SendOutcome, TransportError> {
        let rank = self.rank(peer)?;
        self.inner.try_send(rank, header, payload).map_err(|error| self.outer_error(error))
    }

    fn poll(&mut self, deliver: &mut dyn FnMut(Incoming<'_>)) -> usize {
        let peer_of = &self.peer_of;
        self.inner.poll(&mut |incoming| deliver(Renumbered::renumber(peer_of, incoming)))
    }

    fn poll_placing(&mut self, sink: &mut dyn Sink) -> usize {
        self.inner.poll_placing(&mut RenumberingSink { peer_of: &self.peer_of, sink })
    }

    fn lend_writer(&mut self, peer: PeerId) -> Option<Box<dyn FrameWriter>> {
        let rank = self.rank(peer).ok()?;
        self.inner.lend_writer(rank)
    }

    fn expose(&self, buf: &[u8]) -> RemoteRegion {
        self.inner.expose(buf)
    }

    fn remote_read(&mut self, peer: PeerId, remote: RemoteRegion, offset: u64, local: &mut [u8]) -> Result<(), TransportError> {
        let rank = self.rank(peer)?;
        self.inner.remote_read(rank, remote, offset, local).map_err(|error| self.outer_error(error))
    }

    fn remote_write(&mut self, peer: PeerId, remote: RemoteRegion, offset: u64, local: &[u8]) -> Result<(), TransportError> {
        let rank = self.rank(peer)?;
        self.inner.remote_write(rank, remote, offset, local).map_err(|error| self.outer_error(error))
    }

    fn offer_share(&mut self, peer: PeerId) -> Option<u64> {
        let rank = self.rank(peer).ok()?;
        self.inner.offer_share(rank)
    }

    fn claim_share(&mut self, peer: PeerId, token: u64) -> bool {
        self.rank(peer).is_ok_and(|rank| self.inner.claim_share(rank, token))
    }

    fn revoke_share(&mut self, peer: PeerId, token: u64) -> bool {
        self.rank(peer).map_or(true, |rank| self.inner.revoke_share(rank, token))
    }

    fn prepare_sleep(&mut self) -> Option<u32> {
        self.inner.prepare_sleep()
    }

    fn sleep(&mut self, token: u32, timeout: std::time::Duration) {
        self.inner.sleep(token, timeout)
    }

    fn finish_sleep(&mut self) {
        self.inner.finish_sleep()
    }

    fn shared_doorbell(&self) -> Option<Arc<dyn SharedDoorbell>> {
        self.inner.shared_doorbell()
    }

    fn ring_own_doorbell(&self) {
        self.inner.ring_own_doorbell()
    }

    fn ring_peer(&self, peer: PeerId) {
        if let Ok(rank) = self.rank(peer) {
            self.inner.ring_peer(rank)
        }
    }

    fn peer_asleep(&self, peer: PeerId) -> bool {
        self.rank(peer).is_ok_and(|rank| self.inner.peer_asleep(rank))
    }

    fn doorbell(&self) -> Option<BorrowedFd<'_>> {
        self.inner.doorbell()
    }

    fn has_room(&self, peer: PeerId) -> bool {
        self.rank(peer).map_or(true, |rank| self.inner.has_room(rank))
    }

    fn backlog(&self, peer: PeerId) -> u64 {
        self.rank(peer).map_or(0, |rank| self.inner.backlog(rank))
    }

    fn path_timing(&self, peer: PeerId) -> Option<PathTiming> {
        self.inner.path_timing(self.rank(peer).ok()?)
    }
}

impl Renumbered {
    /// The inner transport's error, naming the engine's peer where it names one.
    #[cold]
    fn outer_error(&self, error: TransportError) -> TransportError {
        match error {
            TransportError::Unreachable(rank) => TransportError::Unreachable(self.peer_of.get(rank as usize).copied().unwrap_or(rank)),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selfloop::SelfTransport;

    #[test]
    fn frames_travel_under_the_engines_peer_numbers() {
        // A group of one: the process itself, which the engine knows as peer 5.
        let mut inner = SelfTransport::new();
        let mut bootstrap = braid_pmi::threads::ThreadBootstrap::job("renumbered", 1).remove(0);
        inner.connect(&mut bootstrap).unwrap();
        let mut transport = Renumbered::new(Box::new(inner), vec![5]);
        assert!(transport.reaches(5));
        assert!(!transport.reaches(0));
        assert_eq!(transport.try_send(0, b"h", &[]), Err(TransportError::Unreachable(0)));
        assert_eq!(transport.try_send(5, b"head", &[IoSlice::new(b"body")]), Ok(SendOutcome::Sent));
        let mut seen = Vec::new();
        transport.poll(&mut |incoming| seen.push((incoming.peer, incoming.header.to_vec(), incoming.payload.whole().to_vec())));
        assert_eq!(seen, vec![(5, b"head".to_vec(), b"body".to_vec())]);
    }
}
