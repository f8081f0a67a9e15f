//! What the rail set's core asks of its rails, and what they answer: the one boundary between
//! the protocol state ([`super::RailMachine`]) and the rail transports. The core hands each
//! frame it wants written to [`RailIo::transmit`] (header and payload slices borrowed from its
//! own queues) and takes the rail's answer (accepted, no room, rail failed) as an input; it reads
//! what a rail reports of its queues (backlog, room, reachability) the same way. The driver
//! ([`super::Network`]) answers from its transports; the tests' simulated network answers from
//! its model of rails with rates, latencies and buffers.

use std::io::IoSlice;
use std::time::Instant;

use braid_lane::PeerId;
use braid_transport::{FrameWriter, PathTiming, SendOutcome, Transport, TransportError};

/// The rails, as the rail set's core sees them.
pub(crate) trait RailIo {
    /// The time now: the driver's clock, the simulation's virtual one. The core asks for it
    /// only where it needs it (a clock read costs about 60 ns on a VM, as much as the rest of a
    /// small message's path through the core), never to keep.
    fn now(&self) -> Instant;

    /// The rail's name, for messages.
    fn name(&self, rail: usize) -> &str;

    /// Whether `rail` still reaches `peer`; false once it has failed.
    fn reaches(&self, rail: usize, peer: PeerId) -> bool;

    /// Writes one frame, `header` then `payload`, on `rail` to `peer`: `Sent` once the rail has
    /// taken it (the slices may be reused), `WouldBlock` when it has no room now, or the error
    /// that ends the rail (`Unreachable`) or the job.
    fn transmit(&mut self, rail: usize, peer: PeerId, header: &[u8], payload: &[IoSlice<'_>]) -> Result<SendOutcome, TransportError>;

    /// Bytes taken for `peer` on `rail` that have not left this host yet.
    fn backlog(&self, rail: usize, peer: PeerId) -> u64;

    /// False while `rail`'s connection to `peer` waits for room after a short write.
    fn has_room(&self, rail: usize, peer: PeerId) -> bool;

    /// A writer for `peer` on `rail` that an offload worker may use (`None`: none to lend).
    fn lend_writer(&mut self, rail: usize, peer: PeerId) -> Option<Box<dyn FrameWriter>>;

    /// The round trips `rail`'s path to `peer` shows now, where its transport measures them
    /// (a system call on TCP: asked only when a control rail is chosen again).
    fn path_timing(&self, rail: usize, peer: PeerId) -> Option<PathTiming>;

    /// Why `rail` stopped reaching `peer`, where its transport knows (for messages).
    fn down_reason(&self, rail: usize, peer: PeerId) -> Option<String> {
        let _ = (rail, peer);
        None
    }
}

/// The driver's rails: its transports, in rail order.
impl RailIo for Vec<Box<dyn Transport>> {
    #[inline]
    fn now(&self) -> Instant {
        Instant::now()
    }

    #[inline]
    fn name(&self, rail: usize) -> &str {
        self[rail].name()
    }

    #[inline]
    fn reaches(&self, rail: usize, peer: PeerId) -> bool {
        self[rail].reaches(peer)
    }

    #[inline]
    fn transmit(&mut self, rail: usize, peer: PeerId, header: &[u8], payload: &[IoSlice<'_>]) -> Result<SendOutcome, TransportError> {
        self[rail].try_send(peer, header, payload)
    }

    #[inline]
    fn backlog(&self, rail: usize, peer: PeerId) -> u64 {
        self[rail].backlog(peer)
    }

    #[inline]
    fn has_room(&self, rail: usize, peer: PeerId) -> bool {
        self[rail].has_room(peer)
    }

    fn lend_writer(&mut self, rail: usize, peer: PeerId) -> Option<Box<dyn FrameWriter>> {
        self[rail].lend_writer(peer)
    }

    fn path_timing(&self, rail: usize, peer: PeerId) -> Option<PathTiming> {
        self[rail].path_timing(peer)
    }

    fn down_reason(&self, rail: usize, peer: PeerId) -> Option<String> {
        self[rail].down_reason(peer)
    }
}
