//! Endpoints: every peer is one [`Endpoint`], indexed by job rank, holding its lanes and the
//! protocol state kept per peer.
//!
//! * Its **control lane** carries frames to the peer in order: a direct transport (self, shared
//!   memory, or whatever ordered, reliable transport the engine was given), or the rail set's
//!   sequenced control channel (`rails/control.rs`: sequence numbers, acknowledgements,
//!   re-sending after a failover, aggregation).
//! * Its **bulk path** moves rendezvous payloads ([`Endpoint::bulk_path`]): single copy or a
//!   pipeline of DATA frames on a direct transport, or a split over the rails.
//!
//! The protocols send through the control lane only: [`Engine::post_frame`] sends at once when
//! it can, [`Core::queue_frame`] (all a poll callback can do, the transports being busy) queues
//! behind the frames waiting there. A direct lane's waiting frames are the endpoint's backlog, in
//! posting order; the rails keep theirs in the control channel.

use std::collections::VecDeque;

use braid_lane::{Capabilities, PeerId};
use braid_strategy::{ProtocolPolicy, RendezvousPath};
use braid_transport::SendOutcome;

use crate::frame::{Frame, Header};
use crate::{gather, transport_error, Core, Engine, EngineError};

/// How frames reach a peer, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ControlLane {
    /// Every frame through this transport (an index into the engine's transport list).
    Direct(usize),
    /// The rail set's sequenced control channel.
    Rails,
}

/// How a matched rendezvous moves its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BulkPath {
    /// The receiver reads the sender's buffer through this direct transport, `chunk` bytes per
    /// read (and may share the copy with the sender).
    SingleCopy { transport: usize, chunk: usize },
    /// The sender streams DATA frames on the direct lane; the receiver copies them into place.
    Pipeline,
    /// The sender splits the bytes over the rails (the multirail strategy decides how); the
    /// receiver places each chunk by offset and answers FIN once it has them all.
    Split,
}

/// What the small-message paths need of a peer, read in one load.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lane {
    pub(crate) control: ControlLane,
    /// Largest message sent eagerly ([`ProtocolPolicy`], per lane).
    pub(crate) eager_limit: usize,
    /// Frames wait in the backlog: a new frame must queue behind them.
    pub(crate) queued: bool,
}

/// A frame waiting for room in the transport, kept in its peer's backlog in posting order.
#[derive(Clone, Copy)]
struct Outgoing {
    header: Header,
    payload: &'static [u8],
    /// The send request this frame completes once handed over (0: none).
    completes: u32,
}

impl Outgoing {
    /// Whether this is the message of our send request `request` (eager, synchronous eager or
    /// rendezvous announcement); other frames name requests of the peer.
    fn carries_send(&self, request: u32) -> bool {
        match Frame::decode(self.header.as_bytes()) {
            Some(Frame::Eager { .. }) => self.completes == request,
            Some(Frame::EagerSync { sender, .. } | Frame::Rts { sender, .. }) => sender == request,
            _ => false,
        }
    }
}

/// One peer: its lanes and the protocol state kept for it.
pub(crate) struct Endpoint {
    pub(crate) lane: Lane,
    /// Frames for a direct lane that its transport has not taken yet, in posting order.
    backlog: VecDeque<Outgoing>,
    /// The kernel would not let us read this peer's memory: its rendezvous use the pipeline.
    pub(crate) remote_read_refused: bool,
    /// A remote read has reached this peer's memory: shared copies start there.
    pub(crate) remote_read_confirmed: bool,
    /// The kernel would not let us write this peer's memory: its offers are left unclaimed.
    pub(crate) remote_write_refused: bool,
    /// A shared-copy offer to this peer is not settled yet (a transport keeps one offer per
    /// peer; further shared receives from it wait, see `offer_shares`).
    pub(crate) share_open: bool,
    /// Rendezvous sends to this peer not yet complete: a peer that is itself receiving from us
    /// has no idle core to lend, so copies from it are not shared.
    pub(crate) rendezvous_out: u32,
}

impl Endpoint {
    pub(crate) fn new(control: ControlLane, eager_limit: usize) -> Endpoint {
        Endpoint {
            lane: Lane { control, eager_limit, queued: false },
            backlog: VecDeque::new(),
            remote_read_refused: false,
            remote_read_confirmed: false,
            remote_write_refused: false,
            share_open: false,
            rendezvous_out: 0,
        }
    }

    /// How a rendezvous of `len` bytes from this peer, once matched, moves its bytes (`caps`: of
    /// the direct transports).
    pub(crate) fn bulk_path(&self, policy: &ProtocolPolicy, caps: &[Capabilities], len: usize) -> BulkPath {
        match self.lane.control {
            ControlLane::Direct(transport) => match policy.rendezvous_path(&caps[transport], self.remote_read_refused, len) {
                RendezvousPath::SingleCopy { chunk } => BulkPath::SingleCopy { transport, chunk },
                RendezvousPath::Pipeline => BulkPath::Pipeline,
            },
            ControlLane::Rails => BulkPath::Split,
        }
    }

    /// Forgets the frames still queued for this peer (it is gone); returns how many there were.
    pub(crate) fn drop_backlog(&mut self) -> usize {
        self.lane.queued = false;
        let dropped = self.backlog.len();
        self.backlog.clear();
        dropped
    }

    /// A rendezvous send to this peer has completed (or was withdrawn).
    pub(crate) fn rendezvous_ended(&mut self) {
        self.rendezvous_out = self.rendezvous_out.saturating_sub(1);
    }

    fn push(&mut self, outgoing: Outgoing) {
        self.backlog.push_back(outgoing);
        self.lane.queued = true;
    }

    fn pop_front(&mut self) {
        self.backlog.pop_front();
        self.lane.queued = !self.backlog.is_empty();
    }

    /// Takes send `request`'s frame back out of the backlog, if it is still there (and so has not
    /// left this rank); returns whether it was a rendezvous announcement.
    fn unqueue_send(&mut self, request: u32) -> Option<bool> {
        let index = self.backlog.iter().position(|outgoing| outgoing.carries_send(request))?;
        let outgoing = self.backlog.remove(index).expect("position is in range");
        self.lane.queued = !self.backlog.is_empty();
        Some(matches!(Frame::decode(outgoing.header.as_bytes()), Some(Frame::Rts { .. })))
    }
}

impl Core {
    /// Queues a frame on `peer`'s control lane behind those waiting there; it leaves at the next
    /// flush. `completes`: the send request that is done once the frame leaves (0: none).
    pub(crate) fn queue_frame(&mut self, peer: PeerId, frame: Frame, payload: &'static [u8], completes: u32) {
        let endpoint = &mut self.endpoints[peer as usize];
        match endpoint.lane.control {
            ControlLane::Direct(_) => {
                endpoint.push(Outgoing { header: frame.encode(), payload, completes });
                self.backlog_len += 1;
            }
            ControlLane::Rails => {
                self.net.queue_control(peer, frame, payload, (completes != 0).then_some(completes));
            }
        }
    }

    /// Takes send `request`'s frame back out of `peer`'s backlog, if it has not left this rank;
    /// true if it was there. (The rails number a frame when it is queued, so theirs stay.)
    pub(crate) fn unqueue_send(&mut self, peer: PeerId, request: u32) -> bool {
        let endpoint = &mut self.endpoints[peer as usize];
        let Some(rendezvous) = endpoint.unqueue_send(request) else { return false };
        self.backlog_len -= 1;
        if rendezvous {
            endpoint.rendezvous_ended();
        }
        true
    }

    /// Hands `peer`'s queued control frames to its control rail and completes the sends that left.
    pub(crate) fn flush_control(&mut self, peer: PeerId) -> Result<bool, EngineError> {
        let flushed = self.net.flush_control(peer);
        self.complete_sent_controls();
        flushed
    }

    /// Completes the standard eager sends whose frames have left over the rails.
    #[inline]
    pub(crate) fn complete_sent_controls(&mut self) {
        for request in self.net.take_sent() {
            self.requests.finish(request);
        }
    }
}

impl Engine {
    /// Sends a frame on `peer`'s control lane: at once if nothing waits there and the transport
    /// takes it, else behind the frames waiting. `completes` as for [`Core::queue_frame`].
    pub(crate) fn post_frame(&mut self, peer: PeerId, frame: Frame, payload: &'static [u8], completes: u32) -> Result<(), EngineError> {
        let lane = self.core.endpoints[peer as usize].lane;
        match lane.control {
            ControlLane::Direct(transport) if !lane.queued => {
                let header = frame.encode();
                let transport = &mut self.transports[transport];
                match transport.try_send(peer, header.as_bytes(), &gather(payload)) {
                    Ok(SendOutcome::Sent) => {
                        self.core.counters.frame_sent(peer, payload.len());
                        if completes != 0 {
                            self.core.complete_send(peer, completes)?;
                        }
                        return Ok(());
                    }
                    Ok(SendOutcome::WouldBlock) => {}
                    Err(error) => return Err(transport_error(transport.as_ref(), peer, error)),
                }
                self.core.queue_frame(peer, frame, payload, completes);
                Ok(())
            }
            ControlLane::Direct(_) => {
                self.core.queue_frame(peer, frame, payload, completes);
                Ok(())
            }
            ControlLane::Rails => {
                let eager = matches!(frame, Frame::Eager { .. });
                self.core.queue_frame(peer, frame, payload, completes);
                // A standard eager frame may wait for its busy control rail, to leave aggregated.
                if eager && self.core.net.holds_eager(peer, payload.len()) {
                    return Ok(());
                }
                self.core.flush_control(peer).map(|_| ())
            }
        }
    }

    /// Hands the frames waiting on `peer`'s control lane to it, as far as it takes them.
    pub(crate) fn flush_endpoint(&mut self, peer: PeerId) -> Result<bool, EngineError> {
        match self.core.endpoints[peer as usize].lane.control {
            ControlLane::Direct(transport) => self.flush_backlog(peer, transport),
            ControlLane::Rails => self.core.flush_control(peer),
        }
    }

    /// Sends queued frames, in order per peer, while the direct transports take them.
    pub(crate) fn flush_backlogs(&mut self) -> Result<bool, EngineError> {
        if self.core.backlog_len == 0 {
            return Ok(false);
        }
        let mut moved = false;
        for peer in 0..self.core.endpoints.len() as PeerId {
            let lane = self.core.endpoints[peer as usize].lane;
            if let (ControlLane::Direct(transport), true) = (lane.control, lane.queued) {
                moved |= self.flush_backlog(peer, transport)?;
            }
        }
        Ok(moved)
    }

    /// Sends `peer`'s backlog while `transport`, its direct lane's, takes the frames.
    fn flush_backlog(&mut self, peer: PeerId, transport: usize) -> Result<bool, EngineError> {
        let mut moved = false;
        let transport = &mut self.transports[transport];
        while let Some(&outgoing) = self.core.endpoints[peer as usize].backlog.front() {
            match transport.try_send(peer, outgoing.header.as_bytes(), &gather(outgoing.payload)) {
                Ok(SendOutcome::Sent) => {
                    self.core.counters.frame_sent(peer, outgoing.payload.len());
                    self.core.endpoints[peer as usize].pop_front();
                    self.core.backlog_len -= 1;
                    moved = true;
                    if outgoing.completes != 0 {
                        self.core.complete_send(peer, outgoing.completes)?;
                    }
                }
                Ok(SendOutcome::WouldBlock) => break,
                Err(error) => return Err(transport_error(transport.as_ref(), peer, error)),
            }
        }
        Ok(moved)
    }
}
