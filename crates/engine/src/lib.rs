//! The engine: progress over the transports, MPI matching (context, source, tag, wildcards,
//! non-overtaking order), the unexpected queue, eager and rendezvous protocols, requests, waiting.
//!
//! This file is the contract the MPI layer codes against. Buffers are `'static` slices: the C ABI
//! builds them from user pointers, and MPI's rules guarantee they stay valid until the request
//! completes.
//!
//! # The path of one message
//!
//! 1. **`isend`** takes a request slot from the slab (no allocation once warm), asks the
//!    [`Router`] which transport carries traffic to the destination (self for the own rank, shared
//!    memory for the node) and asks the [`ProtocolPolicy`] for the protocol: eager up to
//!    `min(eager_max, max_payload - header)`, rendezvous above.
//! 2. **Eager**: the engine encodes a header (`EAGER`, or `EAGER_SYNC` for MPI_Ssend: context,
//!    tag, and the sender's request for the ACK) and hands header and data to
//!    `Transport::try_send`, which copies them into the ring or a pool buffer. A standard send is
//!    complete right then. If the transport answers `WouldBlock`, or earlier frames to that peer
//!    are still queued, the frame joins the peer's backlog (order is kept) and `progress` retries.
//! 3. **Receiver**: `progress` polls every transport; each frame is decoded and matched against
//!    the context's posted receives in posting order. A match copies the payload straight from
//!    the ring into the user's buffer (truncating if it is too small) and completes the receive;
//!    otherwise the payload is copied into an owned buffer on the unexpected queue, where a later
//!    `irecv` finds it (wildcards take the earliest arrival). `EAGER_SYNC` sends an `ACK` on match.
//! 4. **Rendezvous**: the sender posts `RTS` with a description of its buffer (pid, address,
//!    length). When the receive matches, the receiver either reads the buffer itself with
//!    `remote_read` (CMA, `cma_chunk` bytes per progress step, so other traffic keeps moving) and
//!    sends `FIN`, which completes the send; or, when CMA is off, unavailable, or refused by the
//!    kernel for that peer (remembered), sends `CTS`: the sender then streams `DATA` chunks as
//!    large as a pool buffer whenever the pool has room; the receiver copies each into place.
//! 5. **Waiting**: `wait` spins on `progress`; after `spin_count` idle polls (at once when the
//!    node is oversubscribed, always with `BRAID_WAIT=block`) it arms the shared-memory doorbell,
//!    polls once more, and sleeps on the futex until a frame arrives or `block_timeout_ms` passes.

mod agents;
mod counters;
mod frame;
mod matching;
mod rails;
mod node;
mod offload;
mod requests;
pub mod sampling;

use std::collections::VecDeque;
use std::fmt;
use std::io::IoSlice;
use std::time::{Duration, Instant};

use braid_config::{Config, WaitMode};
use braid_pmi::Bootstrap;
use braid_strategy::{Protocol, ProtocolPolicy, RendezvousPath, Route, Router};
use braid_transport::selfloop::SelfTransport;
use braid_transport::shm::ShmTransport;
use braid_transport::{Capabilities, Incoming, Payload, PeerId, RemoteRegion, SendOutcome, Transport, TransportError};

pub use agents::ProgressAgent;
pub use counters::{CounterValues, PeerTraffic, TransportTraffic};
use counters::Counters;
use frame::{batch_entries, CancelOutcome, Frame, Header, NetFrame, DATA_HEADER, EAGER_HEADER_MAX};
use matching::{Body, Matching, Posted, Probed, Unexpected};
use rails::{Arrival, Network};
use requests::{Operation, Requests};

/// A request handle: an index into the engine's request table (never 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RequestId(pub u32);

/// A message matched by [`Engine::improbe`], out of every receive's and probe's reach until
/// [`Engine::imrecv`] receives it (never 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MessageId(pub u32);

/// Which sender a receive accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Any,
    Rank(u32),
}

/// Which tag a receive accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TagSelector {
    Any,
    Tag(i32),
}

/// MPI's send modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendMode {
    /// MPI_Send: eager below the threshold, rendezvous above.
    Standard,
    /// MPI_Ssend: completes only once the receive has matched.
    Synchronous,
    /// MPI_Rsend: the receive is known to be posted (sent as Standard).
    Ready,
    /// MPI_Bsend: the MPI layer has copied the message into the attached buffer (sent as
    /// Standard).
    Buffered,
}

/// What a completed request reports. `source` is a job (world) rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status {
    pub source: u32,
    pub tag: i32,
    /// Bytes received (for a send: bytes sent).
    pub count: usize,
    pub cancelled: bool,
    /// The message was longer than the receive buffer (MPI_ERR_TRUNCATE); `count` is what fit.
    pub truncated: bool,
}

/// An engine failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineError {
    /// A rank this job cannot reach with any transport, with the reason.
    Unreachable { rank: u32, reason: String },
    /// Start-up failed (bootstrap, shared memory, configuration).
    Init(String),
    /// A transport failed while moving data.
    Transport(String),
    /// An unknown or already freed request.
    BadRequest,
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineError::Unreachable { rank, reason } => write!(f, "rank {rank} is unreachable: {reason}"),
            EngineError::Init(reason) => write!(f, "initialisation failed: {reason}"),
            EngineError::Transport(reason) => write!(f, "transport failure: {reason}"),
            EngineError::BadRequest => write!(f, "invalid request"),
        }
    }
}

impl std::error::Error for EngineError {}

/// Unexpected-message buffers kept for reuse; a burst beyond this is returned to the allocator.
const SPARE_PAYLOADS: usize = 64;

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

/// A two-copy rendezvous being streamed by the sender.
#[derive(Clone, Copy)]
struct Stream {
    request: u32,
    peer: PeerId,
    transport: usize,
    receiver: u32,
    data: &'static [u8],
    offset: usize,
    chunk: usize,
    /// Whether the last chunk completes the send (false for the rest of a shared copy, whose
    /// send completes on the receiver's FIN).
    completes: bool,
}

/// The sender's share of a shared single copy, written into the receiver's buffer once the
/// sender has claimed the receiver's offer.
#[derive(Clone, Copy)]
struct Write {
    request: u32,
    peer: PeerId,
    transport: usize,
    receiver: u32,
    token: u64,
    /// The send data up to the end of this share.
    data: &'static [u8],
    /// The receive buffer (its first `data.len()` bytes).
    region: RemoteRegion,
    start: usize,
    offset: usize,
    chunk: usize,
}

/// The receiver's side of a shared copy.
#[derive(Clone, Copy)]
struct Share {
    /// Bytes of the whole receive (the read covers `[0, end)` of them).
    wanted: usize,
    /// The transport's offer token, once offered.
    token: Option<u64>,
}

/// A single-copy rendezvous being read by the receiver.
#[derive(Clone, Copy)]
struct Read {
    request: u32,
    peer: PeerId,
    transport: usize,
    sender: u32,
    region: RemoteRegion,
    offset: usize,
    end: usize,
    chunk: usize,
    /// A copy offered to be shared: the sender may write the bytes past `end`.
    share: Option<Share>,
}

struct WaitPolicy {
    mode: WaitMode,
    spin_count: u32,
    /// Oversubscribed node: how long a waiter yields its core before it sleeps.
    yield_window: Duration,
    timeout: Duration,
    oversubscribed: bool,
    /// The one transport whose doorbell every peer rings; `None`: keep polling.
    sleeper: Option<usize>,
}

/// What a waiter does after an unsuccessful poll.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Idle {
    Spin,
    Yield,
    Block,
}

impl WaitPolicy {
    /// `idle_polls` unsuccessful polls so far, `idle_for` since the first of them.
    fn after_idle_poll(&self, idle_polls: u32, idle_for: impl FnOnce() -> Duration) -> Idle {
        match self.mode {
            WaitMode::Poll => Idle::Spin,
            WaitMode::Block => Idle::Block,
            // Sleeping at once would make every hop wake an idle core (tens of microseconds on
            // this VM); yielding hands the core to the rank that holds the work, and the sleep
            // that follows keeps a long wait from burning CPU.
            WaitMode::Auto if self.oversubscribed => {
                if idle_for() < self.yield_window { Idle::Yield } else { Idle::Block }
            }
            WaitMode::Auto => {
                if idle_polls < self.spin_count { Idle::Spin } else { Idle::Block }
            }
        }
    }
}

/// Everything but the transports, so a transport's `poll` callback can update it.
struct Core {
    rank: u32,
    size: u32,
    router: Router,
    caps: Vec<Capabilities>,
    policy: ProtocolPolicy,
    requests: Requests,
    matching: Matching,
    backlog: Vec<VecDeque<Outgoing>>,
    backlog_len: usize,
    streams: Vec<Stream>,
    reads: Vec<Read>,
    writes: Vec<Write>,
    remote_read_refused: Vec<bool>,
    /// Peers whose memory the kernel would not let us write: their offers are left unclaimed.
    remote_write_refused: Vec<bool>,
    /// Peers whose memory a remote read has already reached: shared copies start there.
    remote_read_confirmed: Vec<bool>,
    /// Rendezvous sends to each peer (direct routes) not yet complete: a peer that is itself
    /// receiving from us has no idle core to lend, so copies from it are not shared.
    rendezvous_out: Vec<u32>,
    /// Peers with a shared-copy offer not yet settled (a transport keeps one offer per peer;
    /// further shared receives from that peer wait for it, see `offer_shares`).
    share_open: Vec<bool>,
    /// Buffers of received unexpected messages, kept for the next ones.
    spare_payloads: Vec<Vec<u8>>,
    /// Messages taken out of matching by a matched probe, waiting for their receives.
    probed: Probed,
    /// Peers routed over the network rails.
    net: Network,
    /// The first failure met inside a poll callback, reported when the poll returns.
    failure: Option<EngineError>,
    debug: bool,
    counters: Counters,
}

#[cold]
fn protocol_error(peer: PeerId, what: &str) -> EngineError {
    EngineError::Transport(format!("protocol error from rank {peer}: {what}"))
}

#[cold]
fn transport_error(transport: &dyn Transport, peer: PeerId, error: TransportError) -> EngineError {
    EngineError::Transport(format!("{} transport, rank {peer}: {error}", transport.name()))
}

#[inline]
fn gather(payload: &[u8]) -> [IoSlice<'_>; 1] {
    [IoSlice::new(payload)]
}

impl Core {
    fn has_local_work(&self) -> bool {
        self.backlog_len > 0 || !self.streams.is_empty() || !self.reads.is_empty() || self.net.has_work()
    }

    /// Queues a frame behind those waiting for `peer` (a network peer's goes on its control rail).
    fn queue(&mut self, peer: PeerId, frame: Frame, payload: &'static [u8], completes: u32) {
        if self.router.route(peer) == Route::Rails {
            self.net.queue_control(peer, frame, payload, None);
            return;
        }
        self.backlog[peer as usize].push_back(Outgoing { header: frame.encode(), payload, completes });
        self.backlog_len += 1;
    }

    /// Hands `peer`'s queued control frames to its rail and completes the sends that left.
    fn flush_control(&mut self, peer: PeerId) -> Result<bool, EngineError> {
        let flushed = self.net.flush_control(peer);
        self.complete_sent_controls();
        flushed
    }

    /// Completes the standard eager sends whose frames have left over the rails.
    #[inline]
    fn complete_sent_controls(&mut self) {
        for request in self.net.take_sent() {
            self.requests.finish(request);
        }
    }

    fn complete_send(&mut self, peer: PeerId, request: u32) -> Result<(), EngineError> {
        match self.requests.get(request) {
            Some(slot) if matches!(slot.operation, Operation::Send { .. }) && !slot.done => {
                self.requests.finish(request);
                Ok(())
            }
            _ => Err(protocol_error(peer, "completion for an unknown send")),
        }
    }

    /// Polls every rail once; a rail's frames are counted per rail (the others per peer, by the
    /// frame handlers).
    #[inline(never)]
    fn poll_rails(&mut self) -> usize {
        let mut links = self.net.lend_links();
        let mut delivered = 0;
        for (rail, link) in links.iter_mut().enumerate() {
            delivered += link.poll(&mut |incoming| {
                self.counters.rail_frame_received(rail, incoming.payload.len());
                self.on_frame(incoming)
            });
        }
        self.net.return_links(links);
        delivered
    }

    /// Whether any protocol needs a progress step beyond polling for frames.
    #[inline]
    fn has_protocol_work(&self) -> bool {
        !self.reads.is_empty() || !self.writes.is_empty() || self.backlog_len != 0 || !self.streams.is_empty() || self.net.active()
    }

    /// Inlined into the poll callback: a plain eager message from a peer reached directly, the
    /// commonest frame, is matched and delivered without the general decoder and dispatch.
    #[inline(always)]
    fn on_frame(&mut self, incoming: Incoming<'_>) {
        if let Some((context, tag)) = Frame::eager_fields(incoming.header) {
            if self.router.route(incoming.peer) != Route::Rails {
                self.counters.eager_received(incoming.peer, incoming.payload.len());
                if let Err(error) = self.arrive_eager(incoming.peer, context, tag, incoming.payload, None) {
                    self.failure.get_or_insert(error);
                }
                return;
            }
        }
        self.on_any_frame(incoming);
    }

    #[inline(never)]
    fn on_any_frame(&mut self, incoming: Incoming<'_>) {
        self.counters.frame_received(incoming.peer, incoming.payload.len());
        let result = if NetFrame::is_network(incoming.header) {
            self.handle_network(incoming.peer, incoming.header, incoming.payload.whole())
        } else {
            self.handle(incoming.peer, incoming.header, incoming.payload)
        };
        if let Err(error) = result {
            self.failure.get_or_insert(error);
        }
    }

    #[inline]
    fn handle(&mut self, peer: PeerId, header: &[u8], payload: Payload<'_>) -> Result<(), EngineError> {
        let frame = Frame::decode(header).ok_or_else(|| protocol_error(peer, "malformed header"))?;
        if self.router.route(peer) == Route::Rails {
            return Err(protocol_error(peer, "a frame without sequence number from a network peer"));
        }
        self.dispatch(peer, frame, payload)
    }

    /// A frame from a peer routed over the rails.
    fn handle_network(&mut self, peer: PeerId, header: &[u8], payload: &[u8]) -> Result<(), EngineError> {
        if self.router.route(peer) != Route::Rails {
            return Err(protocol_error(peer, "a network frame from a peer not routed over the rails"));
        }
        match NetFrame::decode(header).ok_or_else(|| protocol_error(peer, "malformed network header"))? {
            NetFrame::Control { seq, ack, inner } => {
                let frame = Frame::decode(inner).ok_or_else(|| protocol_error(peer, "malformed header"))?;
                if !self.net.accept_control(peer, seq, ack)? {
                    return Ok(());
                }
                match frame {
                    Frame::Cts { sender, receiver, len } => self.start_transfer(peer, sender, receiver, len, seq),
                    Frame::Fin { sender } => {
                        self.net.finish_transfer(peer, sender);
                        self.complete_send(peer, sender)
                    }
                    frame => self.dispatch(peer, frame, Payload::Complete(payload)),
                }
            }
            NetFrame::Ack { ack } => self.net.acknowledged(peer, ack),
            NetFrame::Data { receiver, offset, transfer } => self.arrive_network_data(peer, receiver, offset, transfer, payload),
            NetFrame::Batch => {
                for entry in batch_entries(payload) {
                    let (header, payload) = entry.map_err(|()| protocol_error(peer, "malformed batch"))?;
                    if !matches!(NetFrame::decode(header), Some(NetFrame::Control { .. })) {
                        return Err(protocol_error(peer, "a batch may carry only control frames"));
                    }
                    self.handle_network(peer, header, payload)?;
                }
                Ok(())
            }
        }
    }

    #[inline]
    fn dispatch(&mut self, peer: PeerId, frame: Frame, payload: Payload<'_>) -> Result<(), EngineError> {
        match frame {
            Frame::Eager { context, tag } => {
                self.counters.message_received(peer, payload.len());
                self.arrive_eager(peer, context, tag, payload, None)
            }
            Frame::EagerSync { context, tag, sender } => {
                self.counters.message_received(peer, payload.len());
                self.arrive_eager(peer, context, tag, payload, Some(sender))
            }
            Frame::Rts { context, tag, len, sender, pid, address } => {
                let region = RemoteRegion { pid, address, len };
                self.counters.message_received(peer, usize::try_from(len).unwrap_or(usize::MAX));
                match self.matching.take_posted(context, peer, tag) {
                    Some(request) => self.start_rendezvous_receive(request, peer, tag, sender, region),
                    None => {
                        self.counters.unexpected_stored();
                        self.matching.add_unexpected(context, Unexpected { source: peer, tag, body: Body::Rendezvous { sender, region } });
                        Ok(())
                    }
                }
            }
            Frame::Cts { sender, receiver, len } => self.start_stream(peer, sender, receiver, len),
            Frame::Data { receiver, offset } => self.arrive_data(peer, receiver, offset as usize, payload),
            Frame::Fin { sender } => {
                self.rendezvous_out[peer as usize] = self.rendezvous_out[peer as usize].saturating_sub(1);
                self.complete_send(peer, sender)
            }
            Frame::Ack { sender } => self.complete_send(peer, sender),
            Frame::Put { sender, receiver, offset, end, pid, address, token } => self.start_put(peer, sender, receiver, (offset, end), (pid, address), token),
            Frame::PutDone { receiver, len, .. } => self.add_received(peer, receiver, usize::try_from(len).unwrap_or(usize::MAX)),
            Frame::Cancel { context, sender } => {
                self.answer_cancel(peer, context, sender);
                Ok(())
            }
            Frame::Cancelled { sender, outcome } => self.settle_cancel(peer, sender, outcome),
        }
    }

    /// A CANCEL from `peer`: withdraws its message if no receive or probe has matched it yet,
    /// and answers either way (in order behind any ACK, CTS or FIN of that message).
    #[cold]
    fn answer_cancel(&mut self, peer: PeerId, context: u32, sender: u32) {
        let outcome = match self.matching.withdraw(context, peer, sender) {
            None => CancelOutcome::Matched,
            Some(Unexpected { body: Body::Eager { payload, .. }, .. }) => {
                if self.spare_payloads.len() < SPARE_PAYLOADS {
                    self.spare_payloads.push(payload);
                }
                CancelOutcome::WithdrawnEager
            }
            Some(Unexpected { body: Body::Rendezvous { .. }, .. }) => CancelOutcome::WithdrawnRendezvous,
        };
        self.queue(peer, Frame::Cancelled { sender, outcome }, &[], 0);
    }

    /// The receiver's answer to our CANCEL of send `request`. A withdrawn message completes the
    /// send as cancelled (nothing else will ever refer to it); otherwise it completes as usual.
    #[cold]
    fn settle_cancel(&mut self, peer: PeerId, request: u32, outcome: CancelOutcome) -> Result<(), EngineError> {
        if outcome == CancelOutcome::Matched {
            // The send may have completed and its number been reused since: nothing to do.
            return Ok(());
        }
        let status = match self.requests.get(request) {
            Some(slot) if matches!(slot.operation, Operation::Send { dest, .. } if dest == peer) && !slot.done => slot.status,
            _ => return Err(protocol_error(peer, "cancellation of an unknown send")),
        };
        if outcome == CancelOutcome::WithdrawnRendezvous && self.router.route(peer) != Route::Rails {
            let out = &mut self.rendezvous_out[peer as usize];
            *out = out.saturating_sub(1);
        }
        self.requests.complete(request, Status { count: 0, cancelled: true, ..status });
        Ok(())
    }

    /// Takes send `request`'s frame back out of `peer`'s backlog, if it is still there (and so
    /// has not left this rank); true if it was.
    #[cold]
    fn unqueue_send(&mut self, peer: PeerId, request: u32) -> bool {
        let backlog = &mut self.backlog[peer as usize];
        let Some(index) = backlog.iter().position(|outgoing| outgoing.carries_send(request)) else { return false };
        let outgoing = backlog.remove(index).expect("position is in range");
        self.backlog_len -= 1;
        if matches!(Frame::decode(outgoing.header.as_bytes()), Some(Frame::Rts { .. })) {
            let out = &mut self.rendezvous_out[peer as usize];
            *out = out.saturating_sub(1);
        }
        true
    }

    #[inline(always)]
    fn arrive_eager(&mut self, peer: PeerId, context: u32, tag: i32, payload: Payload<'_>, ack_to: Option<u32>) -> Result<(), EngineError> {
        match self.matching.take_posted(context, peer, tag) {
            Some(request) => {
                self.deliver(request, peer, tag, payload)?;
                if let Some(sender) = ack_to {
                    self.queue(peer, Frame::Ack { sender }, &[], 0);
                }
            }
            None => self.store_unexpected(peer, context, tag, payload, ack_to),
        }
        Ok(())
    }

    #[cold]
    fn store_unexpected(&mut self, peer: PeerId, context: u32, tag: i32, payload: Payload<'_>, ack_to: Option<u32>) {
        self.counters.unexpected_stored();
        let mut copy = self.spare_payloads.pop().unwrap_or_default();
        copy.clear();
        payload.append_to(&mut copy);
        self.matching.add_unexpected(context, Unexpected { source: peer, tag, body: Body::Eager { payload: copy, ack_to } });
    }

    /// Copies a whole message into receive `request` and completes it.
    #[inline(always)]
    fn deliver(&mut self, request: u32, peer: PeerId, tag: i32, payload: Payload<'_>) -> Result<(), EngineError> {
        let Some(Operation::Recv { buffer, .. }) = self.requests.get_mut(request).map(|slot| &mut slot.operation) else {
            return Err(protocol_error(peer, "matched a receive that does not exist"));
        };
        let count = payload.len().min(buffer.len());
        payload.copy_front_to(&mut buffer[..count]);
        let truncated = payload.len() > count;
        self.requests.complete(request, Status { source: peer, tag, count, cancelled: false, truncated });
        Ok(())
    }

    /// Receive `request` has matched an RTS: read the sender's buffer, or ask for the pipeline.
    fn start_rendezvous_receive(&mut self, request: u32, peer: PeerId, tag: i32, sender: u32, region: RemoteRegion) -> Result<(), EngineError> {
        let Some(slot) = self.requests.get_mut(request) else {
            return Err(protocol_error(peer, "matched a receive that does not exist"));
        };
        let Operation::Recv { buffer, expected, received, .. } = &mut slot.operation else {
            return Err(protocol_error(peer, "matched a send request"));
        };
        let message_len = usize::try_from(region.len).unwrap_or(usize::MAX);
        let wanted = message_len.min(buffer.len());
        *expected = wanted;
        *received = 0;
        slot.status = Status { source: peer, tag, count: wanted, cancelled: false, truncated: message_len > wanted };
        if wanted == 0 {
            self.requests.finish(request);
            self.queue(peer, Frame::Fin { sender }, &[], 0);
            return Ok(());
        }
        let transport = match self.router.route(peer) {
            Route::Direct(transport) => transport,
            Route::Rails => {
                let transfer = self.net.queue_control(peer, Frame::Cts { sender, receiver: request, len: wanted as u64 }, &[], None);
                self.net.expect(peer, request, sender, transfer, wanted);
                return Ok(());
            }
        };
        let path = self.policy.rendezvous_path(&self.caps[transport], self.remote_read_refused[peer as usize]);
        if self.debug {
            eprintln!("braid: rank {}: {wanted}-byte rendezvous from rank {peer}: {path:?}", self.rank);
        }
        match path {
            // A rank reading its own send has no second core to share the copy with.
            RendezvousPath::SingleCopy { chunk } => match self.policy.shared_copy_split(wanted, peer != self.rank && self.remote_read_confirmed[peer as usize]) {
                Some(split) => {
                    let share = Share { wanted, token: None };
                    self.reads.push(Read { request, peer, transport, sender, region, offset: 0, end: split, chunk, share: Some(share) });
                }
                None => self.reads.push(Read { request, peer, transport, sender, region, offset: 0, end: wanted, chunk, share: None }),
            },
            RendezvousPath::Pipeline => self.queue(peer, Frame::Cts { sender, receiver: request, len: wanted as u64 }, &[], 0),
        }
        Ok(())
    }

    /// The receiver asked for `len` bytes of send `request` through the pipeline.
    fn start_stream(&mut self, peer: PeerId, request: u32, receiver: u32, len: u64) -> Result<(), EngineError> {
        let data = self.send_data(peer, request)?;
        let wanted = usize::try_from(len).unwrap_or(usize::MAX).min(data.len());
        if wanted == 0 {
            return self.complete_send(peer, request);
        }
        let Route::Direct(transport) = self.router.route(peer) else {
            return Err(protocol_error(peer, "CTS without sequence number from a network peer"));
        };
        let chunk = self.policy.pipeline_chunk(&self.caps[transport], DATA_HEADER);
        self.streams.push(Stream { request, peer, transport, receiver, data: &data[..wanted], offset: 0, chunk, completes: true });
        Ok(())
    }

    /// The receiver shares the copy of send `request`: write `[offset, end)` into its buffer.
    fn start_put(&mut self, peer: PeerId, request: u32, receiver: u32, range: (u64, u64), target: (i32, u64), token: u64) -> Result<(), EngineError> {
        let data = self.send_data(peer, request)?;
        let (Ok(start), Ok(end)) = (usize::try_from(range.0), usize::try_from(range.1)) else {
            return Err(protocol_error(peer, "PUT range out of bounds"));
        };
        if start >= end || end > data.len() {
            return Err(protocol_error(peer, "PUT range out of bounds"));
        }
        let Route::Direct(transport) = self.router.route(peer) else {
            return Err(protocol_error(peer, "PUT from a network peer"));
        };
        let region = RemoteRegion { pid: target.0, address: target.1, len: end as u64 };
        let chunk = self.policy.remote_write_chunk();
        self.writes.push(Write { request, peer, transport, receiver, token, data: &data[..end], region, start, offset: start, chunk });
        Ok(())
    }

    /// `bytes` more of receive `request` are in place; completes it (and tells a sharing
    /// sender) when all are.
    fn add_received(&mut self, peer: PeerId, request: u32, bytes: usize) -> Result<(), EngineError> {
        let Some(Operation::Recv { expected, received, fin_to, .. }) = self.requests.get_mut(request).map(|slot| &mut slot.operation) else {
            return Err(protocol_error(peer, "data for an unknown receive"));
        };
        *received += bytes;
        if *received > *expected {
            return Err(protocol_error(peer, "more data than the receive expects"));
        }
        if *received == *expected {
            let fin_to = *fin_to;
            self.requests.finish(request);
            if let Some(sender) = fin_to {
                // A shared copy is settled: the next one with this peer may be offered.
                self.share_open[peer as usize] = false;
                self.queue(peer, Frame::Fin { sender }, &[], 0);
            }
        }
        Ok(())
    }

    /// The sending side of a send request, for a CTS.
    fn send_data(&self, peer: PeerId, request: u32) -> Result<&'static [u8], EngineError> {
        match self.requests.get(request) {
            Some(slot) if !slot.done => match slot.operation {
                Operation::Send { data, .. } => Ok(data),
                _ => Err(protocol_error(peer, "CTS for a receive request")),
            },
            _ => Err(protocol_error(peer, "CTS for an unknown send")),
        }
    }

    /// A network peer's CTS (sequence number `transfer`) asks for `len` bytes of send `request`.
    fn start_transfer(&mut self, peer: PeerId, request: u32, receiver: u32, len: u64, transfer: u64) -> Result<(), EngineError> {
        let data = self.send_data(peer, request)?;
        let wanted = usize::try_from(len).unwrap_or(usize::MAX).min(data.len());
        if wanted == 0 {
            return self.complete_send(peer, request);
        }
        self.net.start_transfer(peer, request, receiver, transfer, &data[..wanted]);
        Ok(())
    }

    /// A rendezvous chunk from a network peer; stale ones (an earlier transfer's re-sent chunk)
    /// are dropped.
    fn arrive_network_data(&mut self, peer: PeerId, receiver: u32, offset: u64, transfer: u64, payload: &[u8]) -> Result<(), EngineError> {
        let offset = usize::try_from(offset).map_err(|_| protocol_error(peer, "DATA offset out of range"))?;
        let requests = &mut self.requests;
        let copy = |request: u32| match requests.get_mut(request).map(|slot| &mut slot.operation) {
            Some(Operation::Recv { buffer, .. }) => {
                buffer[offset..offset + payload.len()].copy_from_slice(payload);
                Ok(())
            }
            _ => Err(protocol_error(peer, "DATA for a request that is not a receive")),
        };
        match self.net.arrive_data(peer, receiver, offset, transfer, payload.len(), copy)? {
            Arrival::Pending => Ok(()),
            Arrival::Complete { request, sender } => {
                self.requests.finish(request);
                self.net.queue_control(peer, Frame::Fin { sender }, &[], None);
                Ok(())
            }
        }
    }

    fn arrive_data(&mut self, peer: PeerId, request: u32, offset: usize, payload: Payload<'_>) -> Result<(), EngineError> {
        let Some(slot) = self.requests.get_mut(request) else {
            return Err(protocol_error(peer, "DATA for an unknown receive"));
        };
        let Operation::Recv { buffer, expected, .. } = &mut slot.operation else {
            return Err(protocol_error(peer, "DATA for a send request"));
        };
        let end = offset.checked_add(payload.len()).filter(|&end| end <= *expected);
        let Some(end) = end else {
            return Err(protocol_error(peer, "DATA beyond the expected length"));
        };
        payload.copy_front_to(&mut buffer[offset..end]);
        self.add_received(peer, request, payload.len())
    }
}

/// Where the rails' profiles come from at start-up.
enum RailProfiles {
    /// Each rail transport's own profile (tests, callers that measured them).
    FromTransports,
    /// The profile cache, else a short sample shared through the bootstrap.
    CachedOrSampled(Vec<sampling::RailCache>),
}

/// One process's communication engine.
pub struct Engine {
    /// Dropped first: its offload workers give their lent writers back before the transports close.
    core: Core,
    transports: Vec<Box<dyn Transport>>,
    /// The transports `progress` polls: self, and those that carry traffic to some peer.
    polled: Vec<usize>,
    /// Whether some peer is reached over the rails, so that `progress` polls them.
    polls_rails: bool,
    bootstrap: Box<dyn Bootstrap>,
    wait: WaitPolicy,
    node_ranks: Vec<u32>,
    /// Work above the engine that every progress step advances.
    agents: Vec<Box<dyn ProgressAgent>>,
}

impl Engine {
    /// Wires up every transport through `bootstrap` (collective over the job): self, shared
    /// memory (unless `BRAID_SHM=off`) and one TCP transport per network rail. Rail profiles come
    /// from the profile cache, or from a short sample at start-up.
    pub fn new(config: &Config, bootstrap: Box<dyn Bootstrap>) -> Result<Engine, EngineError> {
        let mut direct: Vec<Box<dyn Transport>> = Vec::new();
        if config.shm {
            let shm = ShmTransport::new(config).map_err(|error| EngineError::Init(format!("shared-memory transport: {error}")))?;
            direct.push(Box::new(shm));
        }
        let (rails, caches) = sampling::tcp_rails(config)?;
        Engine::build(config, bootstrap, Box::new(SelfTransport::new()), direct, rails, RailProfiles::CachedOrSampled(caches))
    }

    /// Builds an engine over the given transports: `self_transport` carries messages to the own
    /// rank, every other rank goes to the first of `transports` that reaches it. Connects them all
    /// in order (collective).
    pub fn with_transports(
        config: &Config,
        bootstrap: Box<dyn Bootstrap>,
        self_transport: Box<dyn Transport>,
        transports: Vec<Box<dyn Transport>>,
    ) -> Result<Engine, EngineError> {
        Engine::build(config, bootstrap, self_transport, transports, Vec::new(), RailProfiles::FromTransports)
    }

    /// Like [`Engine::with_transports`], plus network `rails`: a rank that none of `transports`
    /// reaches but a rail does is served by the rail set, with each rail's own
    /// [`Transport::profile`] (no sampling).
    pub fn with_rails(
        config: &Config,
        bootstrap: Box<dyn Bootstrap>,
        self_transport: Box<dyn Transport>,
        transports: Vec<Box<dyn Transport>>,
        rails: Vec<Box<dyn Transport>>,
    ) -> Result<Engine, EngineError> {
        Engine::build(config, bootstrap, self_transport, transports, rails, RailProfiles::FromTransports)
    }

    fn build(
        config: &Config,
        mut bootstrap: Box<dyn Bootstrap>,
        self_transport: Box<dyn Transport>,
        transports: Vec<Box<dyn Transport>>,
        rails: Vec<Box<dyn Transport>>,
        profiles: RailProfiles,
    ) -> Result<Engine, EngineError> {
        let rank = bootstrap.rank();
        let size = bootstrap.size();
        let node = node::exchange(bootstrap.as_mut())?;
        // A real job that lives on one node with shared memory needs no network: no listening
        // socket. Every rank sees the same node list, so all decide alike. (In-process test jobs
        // share one node identity while emulating several nodes, so they keep their rails.)
        let single_node = node.ranks.len() == size as usize;
        let (rails, profiles) = match (config.shm && single_node, profiles) {
            (true, RailProfiles::CachedOrSampled(_)) => (Vec::new(), RailProfiles::FromTransports),
            (_, profiles) => (rails, profiles),
        };
        let rail_base = 1 + transports.len();
        let mut all = Vec::with_capacity(rail_base + rails.len());
        all.push(self_transport);
        all.extend(transports);
        all.extend(rails);
        for transport in &mut all {
            transport
                .connect(bootstrap.as_mut())
                .map_err(|error| EngineError::Init(format!("{} transport: {error}", transport.name())))?;
        }
        let router = Router::with_rails(rank, size, 0, 1..rail_base, rail_base..all.len(), |transport, peer| all[transport].reaches(peer))
            .map_err(|unroutable| EngineError::Unreachable {
                rank: unroutable.rank,
                reason: "no shared memory with it and no network rail reaches it (see BRAID_RAILS and BRAID_SHM)".into(),
            })?;
        let rail_peers: Vec<PeerId> = router.rail_peers().collect();
        let mut links = all.split_off(rail_base);
        let rail_profiles = match profiles {
            RailProfiles::FromTransports => links.iter().map(|rail| rail.profile().clone()).collect(),
            RailProfiles::CachedOrSampled(caches) => {
                let leader = node.ranks.first() == Some(&rank);
                sampling::startup_profiles(config, bootstrap.as_mut(), &mut links, &caches, &rail_peers, leader)?
            }
        };
        let polls_rails = !rail_peers.is_empty();
        let rail_count = links.len();
        let net = Network::new(config, rank, rail_profiles, links, rail_peers, &node);
        let caps: Vec<Capabilities> = all.iter().map(|transport| transport.capabilities()).collect();
        let carriers: Vec<usize> = (0..rail_base).filter(|&t| router.peers_of(t).any(|peer| peer != rank)).collect();
        // Only a single direct transport's doorbell is rung by every peer; the rails have none.
        let sleeper = match carriers.as_slice() {
            [only] if !polls_rails && caps[*only].wakes_receiver => Some(*only),
            _ => None,
        };
        let wait = WaitPolicy {
            mode: config.wait,
            spin_count: config.spin_count,
            yield_window: Duration::from_micros(config.yield_us.into()),
            timeout: Duration::from_millis(config.block_timeout_ms.into()),
            oversubscribed: node.oversubscribed,
            sleeper,
        };
        if config.debug {
            let names: Vec<&str> = (0..size)
                .map(|peer| match router.route(peer) {
                    Route::Direct(transport) => all[transport].name(),
                    Route::Rails => "rails",
                })
                .collect();
            eprintln!(
                "braid: rank {rank}: routes {names:?}, node ranks {:?}, oversubscribed {}, wait {:?}, sleeps on {:?}, {}",
                node.ranks,
                node.oversubscribed,
                config.wait,
                sleeper.map(|t| all[t].name()),
                net.describe()
            );
        }
        let core = Core {
            rank,
            size,
            router,
            caps,
            policy: ProtocolPolicy::from_config(config),
            requests: Requests::default(),
            matching: Matching::default(),
            backlog: (0..size).map(|_| VecDeque::new()).collect(),
            backlog_len: 0,
            streams: Vec::new(),
            reads: Vec::new(),
            remote_read_refused: vec![false; size as usize],
            remote_read_confirmed: vec![false; size as usize],
            remote_write_refused: vec![false; size as usize],
            share_open: vec![false; size as usize],
            rendezvous_out: vec![0; size as usize],
            writes: Vec::new(),
            spare_payloads: Vec::new(),
            probed: Probed::default(),
            net,
            failure: None,
            debug: config.debug,
            counters: Counters::new(size as usize, rail_base, rail_count),
        };
        let polled = std::iter::once(0).chain(carriers.iter().copied().filter(|&t| t != 0)).collect();
        Ok(Engine { transports: all, polled, polls_rails, core, bootstrap, wait, node_ranks: node.ranks, agents: Vec::new() })
    }

    /// This process's job rank.
    pub fn rank(&self) -> u32 {
        self.core.rank
    }

    /// Number of ranks in the job.
    pub fn size(&self) -> u32 {
        self.core.size
    }

    /// Starts a send of `data` to job rank `dest`. Small messages complete at once.
    pub fn isend(&mut self, data: &'static [u8], dest: u32, tag: i32, context: u32, mode: SendMode) -> Result<RequestId, EngineError> {
        if dest >= self.core.size {
            return Err(self.out_of_range(dest));
        }
        let Route::Direct(transport) = self.core.router.route(dest) else {
            return self.isend_network(data, dest, tag, context, mode);
        };
        let status = Status { source: self.core.rank, tag, count: data.len(), cancelled: false, truncated: false };
        let request = self.core.requests.allocate(Operation::Send { data, dest, context }, status);
        let protocol = self.core.policy.choose(data.len(), &self.core.caps[transport], EAGER_HEADER_MAX);
        let result = match (protocol, mode) {
            (Protocol::Eager, SendMode::Synchronous) => {
                self.send_or_queue(transport, dest, Frame::EagerSync { context, tag, sender: request }, data, 0)
            }
            (Protocol::Eager, SendMode::Standard | SendMode::Ready | SendMode::Buffered) => {
                self.send_or_queue(transport, dest, Frame::Eager { context, tag }, data, request)
            }
            (Protocol::Rendezvous, _) => {
                let region = self.transports[transport].expose(data);
                let sent = self.send_or_queue(transport, dest, Frame::rts(context, tag, request, region), &[], 0);
                if sent.is_ok() {
                    self.core.rendezvous_out[dest as usize] += 1;
                }
                sent
            }
        };
        match result {
            Ok(()) => {
                self.core.counters.message_sent(dest, data.len(), protocol == Protocol::Rendezvous);
                Ok(RequestId(request))
            }
            Err(error) => {
                self.core.requests.free(request);
                Err(error)
            }
        }
    }

    /// A send to a peer routed over the rails: eager frames are copied (a standard send is
    /// complete at once); larger messages announce themselves with RTS and complete on FIN.
    fn isend_network(&mut self, data: &'static [u8], dest: u32, tag: i32, context: u32, mode: SendMode) -> Result<RequestId, EngineError> {
        let status = Status { source: self.core.rank, tag, count: data.len(), cancelled: false, truncated: false };
        let request = self.core.requests.allocate(Operation::Send { data, dest, context }, status);
        self.core.counters.message_sent(dest, data.len(), data.len() > self.core.net.eager_limit);
        let net = &mut self.core.net;
        if data.len() <= net.eager_limit {
            if mode == SendMode::Synchronous {
                net.queue_control(dest, Frame::EagerSync { context, tag, sender: request }, data, None);
            } else {
                net.queue_control(dest, Frame::Eager { context, tag }, data, Some(request));
                if net.holds_eager(dest, data.len()) {
                    return Ok(RequestId(request));
                }
            }
        } else {
            let region = RemoteRegion { pid: 0, address: 0, len: data.len() as u64 };
            net.queue_control(dest, Frame::rts(context, tag, request, region), &[], None);
        }
        match self.core.flush_control(dest) {
            Ok(_) => Ok(RequestId(request)),
            Err(error) => {
                self.core.requests.free(request);
                Err(error)
            }
        }
    }

    /// A standard-mode send that finishes at once, with no request: the message is small enough
    /// to go eagerly, nothing is queued to `dest`, and its transport takes the frame now.
    /// `Ok(false)`: nothing was sent; the caller uses [`Engine::isend`]. Always inlined: it is
    /// most of the small-message send path, and a call would cost that path a tenth more.
    #[inline(always)]
    pub fn try_send_now(&mut self, data: &[u8], dest: u32, tag: i32, context: u32) -> Result<bool, EngineError> {
        if dest >= self.core.size || !self.core.backlog[dest as usize].is_empty() {
            return Ok(false);
        }
        let Route::Direct(route) = self.core.router.route(dest) else {
            return Ok(false);
        };
        if self.core.policy.choose(data.len(), &self.core.caps[route], EAGER_HEADER_MAX) != Protocol::Eager {
            return Ok(false);
        }
        let header = Frame::eager_bytes(context, tag);
        let transport = &mut self.transports[route];
        match transport.try_send(dest, &header, &gather(data)) {
            Ok(SendOutcome::Sent) => {
                self.core.counters.eager_sent_now(dest, data.len());
                Ok(true)
            }
            Ok(SendOutcome::WouldBlock) => Ok(false),
            Err(error) => Err(transport_error(transport.as_ref(), dest, error)),
        }
    }

    /// Starts a receive into `buffer`.
    pub fn irecv(&mut self, buffer: &'static mut [u8], source: Source, tag: TagSelector, context: u32) -> Result<RequestId, EngineError> {
        if let Source::Rank(rank) = source {
            if rank >= self.core.size {
                return Err(self.out_of_range(rank));
            }
        }
        let status = Status { source: 0, tag: 0, count: 0, cancelled: false, truncated: false };
        let request = self.core.requests.allocate(Operation::Recv { buffer, context, expected: 0, received: 0, fin_to: None }, status);
        if let Some(message) = self.core.matching.take_unexpected_or_post(context, Posted { request, source, tag }) {
            self.receive_unexpected(request, message)?;
        }
        Ok(RequestId(request))
    }

    #[cold]
    fn receive_unexpected(&mut self, request: u32, message: Unexpected) -> Result<(), EngineError> {
        self.core.counters.unexpected_taken();
        let Unexpected { source, tag, body } = message;
        match body {
            Body::Eager { payload, ack_to } => {
                self.core.deliver(request, source, tag, Payload::Complete(&payload))?;
                if self.core.spare_payloads.len() < SPARE_PAYLOADS {
                    self.core.spare_payloads.push(payload);
                }
                if let Some(sender) = ack_to {
                    self.core.queue(source, Frame::Ack { sender }, &[], 0);
                }
            }
            Body::Rendezvous { sender, region } => self.core.start_rendezvous_receive(request, source, tag, sender, region)?,
        }
        if self.core.router.route(source) == Route::Rails {
            return self.core.flush_control(source).map(|_| ());
        }
        self.flush_backlogs().map(|_| ())
    }

    #[cold]
    fn out_of_range(&self, rank: u32) -> EngineError {
        EngineError::Unreachable { rank, reason: format!("the job has {} ranks", self.core.size) }
    }

    /// Hands a frame to `transport` (the peer's), or queues it behind earlier frames still waiting.
    #[inline]
    fn send_or_queue(&mut self, transport: usize, peer: PeerId, frame: Frame, payload: &'static [u8], completes: u32) -> Result<(), EngineError> {
        if self.core.backlog[peer as usize].is_empty() {
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
        }
        self.core.queue(peer, frame, payload, completes);
        Ok(())
    }

    /// Sends queued frames, in order per peer, while the transports take them.
    fn flush_backlogs(&mut self) -> Result<bool, EngineError> {
        if self.core.backlog_len == 0 {
            return Ok(false);
        }
        let mut moved = false;
        for peer in 0..self.core.size {
            if self.core.backlog[peer as usize].is_empty() {
                continue;
            }
            let Route::Direct(transport) = self.core.router.route(peer) else { continue };
            let transport = &mut self.transports[transport];
            while let Some(&outgoing) = self.core.backlog[peer as usize].front() {
                match transport.try_send(peer, outgoing.header.as_bytes(), &gather(outgoing.payload)) {
                    Ok(SendOutcome::Sent) => {
                        self.core.counters.frame_sent(peer, outgoing.payload.len());
                        self.core.backlog[peer as usize].pop_front();
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
        }
        Ok(moved)
    }

    /// Streams pipeline chunks while the transports have room.
    fn advance_streams(&mut self) -> Result<bool, EngineError> {
        let mut moved = false;
        let mut index = 0;
        while index < self.core.streams.len() {
            let mut stream = self.core.streams[index];
            let transport = &mut self.transports[stream.transport];
            // Frames already queued to this peer (a FIN, an ACK) go first.
            while stream.offset < stream.data.len() && self.core.backlog[stream.peer as usize].is_empty() {
                let end = stream.offset + stream.chunk.min(stream.data.len() - stream.offset);
                let header = Frame::Data { receiver: stream.receiver, offset: stream.offset as u64 }.encode();
                match transport.try_send(stream.peer, header.as_bytes(), &gather(&stream.data[stream.offset..end])) {
                    Ok(SendOutcome::Sent) => {
                        self.core.counters.frame_sent(stream.peer, end - stream.offset);
                        stream.offset = end;
                        moved = true;
                    }
                    Ok(SendOutcome::WouldBlock) => break,
                    Err(error) => return Err(transport_error(transport.as_ref(), stream.peer, error)),
                }
            }
            if stream.offset == stream.data.len() {
                self.core.streams.swap_remove(index);
                if stream.completes {
                    let out = &mut self.core.rendezvous_out[stream.peer as usize];
                    *out = out.saturating_sub(1);
                    self.core.complete_send(stream.peer, stream.request)?;
                }
            } else {
                self.core.streams[index] = stream;
                index += 1;
            }
        }
        Ok(moved)
    }

    /// Reads one chunk of every single-copy rendezvous in progress.
    fn advance_reads(&mut self) -> Result<bool, EngineError> {
        let mut moved = false;
        let mut index = 0;
        while index < self.core.reads.len() {
            let mut read = self.core.reads[index];
            if matches!(read.share, Some(Share { token: None, .. })) {
                index += 1;
                continue;
            }
            let transport = &mut self.transports[read.transport];
            let Some(Operation::Recv { buffer, .. }) = self.core.requests.get_mut(read.request).map(|slot| &mut slot.operation) else {
                return Err(protocol_error(read.peer, "single-copy read into a vanished receive"));
            };
            let end = read.offset + read.chunk.min(read.end - read.offset);
            match transport.remote_read(read.peer, read.region, read.offset as u64, &mut buffer[read.offset..end]) {
                Ok(()) => {
                    self.core.counters.copied_in(read.peer, end - read.offset);
                    read.offset = end;
                    moved = true;
                    self.core.remote_read_confirmed[read.peer as usize] = true;
                    let unclaimed = match read.share {
                        Some(Share { wanted, token: Some(token) }) if read.offset == read.end => {
                            transport.revoke_share(read.peer, token).then_some(wanted)
                        }
                        _ => None,
                    };
                    if let Some(wanted) = unclaimed {
                        if self.core.debug {
                            eprintln!("braid: rank {}: rank {} did not claim its part of a shared copy; reading it all", self.core.rank, read.peer);
                        }
                        self.core.share_open[read.peer as usize] = false;
                        // The sender has not taken its part (it is busy outside MPI): read it too.
                        read.end = wanted;
                        read.share = None;
                        self.core.reads[index] = read;
                        index += 1;
                    } else if read.offset == read.end {
                        self.core.reads.swap_remove(index);
                        if read.share.is_some() {
                            self.core.add_received(read.peer, read.request, read.end)?;
                        } else {
                            self.core.requests.finish(read.request);
                            self.core.queue(read.peer, Frame::Fin { sender: read.sender }, &[], 0);
                        }
                    } else {
                        self.core.reads[index] = read;
                        index += 1;
                    }
                }
                Err(TransportError::RemoteAccessRefused | TransportError::Unsupported(_)) if read.share.is_none() => {
                    self.fall_back_to_pipeline(index);
                    moved = true;
                }
                Err(error) => return Err(transport_error(transport.as_ref(), read.peer, error)),
            }
        }
        Ok(moved)
    }

    /// Offers the sender its part of the next shared copy with each peer that has none open
    /// (PUT); true if any was offered. Shared copies with one peer thus run one after another,
    /// each on both cores, and a read waiting for its offer is not started alone.
    fn offer_shares(&mut self) -> bool {
        let mut offered = false;
        for index in 0..self.core.reads.len() {
            let mut read = self.core.reads[index];
            let Some(Share { wanted, token: None }) = read.share else { continue };
            if self.core.rendezvous_out[read.peer as usize] > 0 {
                // Traffic both ways: the peer's core is busy reading ours.
                read.end = wanted;
                read.share = None;
                self.core.reads[index] = read;
                continue;
            }
            if self.core.share_open[read.peer as usize] {
                continue;
            }
            let Some(Operation::Recv { buffer, fin_to, .. }) = self.core.requests.get_mut(read.request).map(|slot| &mut slot.operation) else { continue };
            let own = RemoteRegion::of_own(&buffer[..wanted]);
            match self.transports[read.transport].offer_share(read.peer) {
                Some(token) => {
                    // Only an offered copy completes through `add_received`, which then tells the
                    // sender and settles the pair's offer.
                    *fin_to = Some(read.sender);
                    self.core.share_open[read.peer as usize] = true;
                    read.share = Some(Share { wanted, token: Some(token) });
                    let put = Frame::Put { sender: read.sender, receiver: read.request, offset: read.end as u64, end: wanted as u64, pid: own.pid, address: own.address, token };
                    self.core.queue(read.peer, put, &[], 0);
                    offered = true;
                }
                None => {
                    read.end = wanted;
                    read.share = None;
                }
            }
            self.core.reads[index] = read;
        }
        offered
    }

    /// Writes the sender's part of every shared copy whose offer it can claim.
    fn advance_writes(&mut self) -> Result<bool, EngineError> {
        let moved = !self.core.writes.is_empty();
        while let Some(mut write) = self.core.writes.pop() {
            let transport = &mut self.transports[write.transport];
            if self.core.remote_write_refused[write.peer as usize] || !transport.claim_share(write.peer, write.token) {
                // Unclaimed (or revoked): the receiver copies it all.
                continue;
            }
            // Claimed: the whole part is written now, so the receiver never waits for this rank
            // to come back into MPI.
            while write.offset < write.data.len() {
                let end = write.offset + write.chunk.min(write.data.len() - write.offset);
                match transport.remote_write(write.peer, write.region, write.offset as u64, &write.data[write.offset..end]) {
                    Ok(()) => write.offset = end,
                    Err(TransportError::RemoteAccessRefused | TransportError::Unsupported(_)) => break,
                    Err(error) => return Err(transport_error(transport.as_ref(), write.peer, error)),
                }
            }
            self.core.counters.copied_out(write.peer, write.offset - write.start);
            if write.offset < write.data.len() {
                self.stream_instead_of_writing(write);
                continue;
            }
            let done = Frame::PutDone { sender: write.request, receiver: write.receiver, len: (write.offset - write.start) as u64 };
            self.core.queue(write.peer, done, &[], 0);
        }
        Ok(moved)
    }

    /// The kernel refused to let us write into that peer: what is written is reported, the rest
    /// of the share goes through the pipeline (the send still completes on the receiver's FIN),
    /// and later offers from that peer are left to the receiver.
    #[cold]
    fn stream_instead_of_writing(&mut self, write: Write) {
        self.core.remote_write_refused[write.peer as usize] = true;
        if self.core.debug {
            eprintln!("braid: rank {}: remote write into rank {} refused; streaming the rest of the share", self.core.rank, write.peer);
        }
        if write.offset > write.start {
            let done = Frame::PutDone { sender: write.request, receiver: write.receiver, len: (write.offset - write.start) as u64 };
            self.core.queue(write.peer, done, &[], 0);
        }
        let chunk = self.core.policy.pipeline_chunk(&self.core.caps[write.transport], DATA_HEADER);
        let stream = Stream { request: write.request, peer: write.peer, transport: write.transport, receiver: write.receiver, data: write.data, offset: write.offset, chunk, completes: false };
        self.core.streams.push(stream);
    }

    /// The kernel refused to let us read that peer: ask it to stream instead, now and from now on.
    #[cold]
    fn fall_back_to_pipeline(&mut self, index: usize) {
        let read = self.core.reads.swap_remove(index);
        self.core.remote_read_refused[read.peer as usize] = true;
        if self.core.debug {
            eprintln!("braid: rank {}: remote read from rank {} refused; using the two-copy pipeline", self.core.rank, read.peer);
        }
        if let Some(Operation::Recv { received, .. }) = self.core.requests.get_mut(read.request).map(|slot| &mut slot.operation) {
            *received = 0;
        }
        self.core.queue(read.peer, Frame::Cts { sender: read.sender, receiver: read.request, len: read.end as u64 }, &[], 0);
    }

    /// Makes progress once; if `request` is complete, frees it and returns its status.
    pub fn test(&mut self, request: RequestId) -> Result<Option<Status>, EngineError> {
        if self.core.requests.get(request.0).is_none() {
            return Err(EngineError::BadRequest);
        }
        self.progress()?;
        Ok(self.take_if_complete(request))
    }

    /// If `request` is complete, frees it and returns its status (no progress is made).
    #[inline]
    pub fn take_if_complete(&mut self, request: RequestId) -> Option<Status> {
        let slot = self.core.requests.get(request.0)?;
        if !slot.done {
            return None;
        }
        let status = slot.status;
        self.core.requests.free(request.0);
        Some(status)
    }

    /// Waits (spinning, then blocking per the wait policy) until `request` completes; frees it.
    #[inline]
    pub fn wait(&mut self, request: RequestId) -> Result<Status, EngineError> {
        // Requests that completed during an earlier progress step (most of a Waitall) need no
        // wait at all, unless frames held for aggregation must leave first (any wait sends them).
        if !self.core.net.has_unsent() {
            if let Some(status) = self.take_if_complete(request) {
                return Ok(status);
            }
        }
        self.wait_incomplete(request)
    }

    #[inline(never)]
    fn wait_incomplete(&mut self, request: RequestId) -> Result<Status, EngineError> {
        if self.core.requests.get(request.0).is_none() {
            return Err(EngineError::BadRequest);
        }
        self.wait_until(|engine| engine.is_complete(request))?;
        // A match, not `ok_or`: that would build (and drop) the error on every call.
        match self.take_if_complete(request) {
            Some(status) => Ok(status),
            None => Err(EngineError::BadRequest),
        }
    }

    /// Like [`Engine::wait`] for a receive, and hands its buffer back: a safe way for Rust callers
    /// (and tests) to read what arrived.
    pub fn wait_receive(&mut self, request: RequestId) -> Result<(Status, &'static mut [u8]), EngineError> {
        match self.core.requests.get(request.0) {
            Some(slot) if matches!(slot.operation, Operation::Recv { .. }) => {}
            _ => return Err(EngineError::BadRequest),
        }
        self.wait_until(|engine| engine.is_complete(request))?;
        let status = self.core.requests.get(request.0).map(|slot| slot.status).ok_or(EngineError::BadRequest)?;
        match self.core.requests.take(request.0) {
            Some(Operation::Recv { buffer, .. }) => Ok((status, buffer)),
            _ => Err(EngineError::BadRequest),
        }
    }

    /// Whether `request` has completed (no progress is made).
    #[inline]
    pub fn is_complete(&self, request: RequestId) -> bool {
        self.core.requests.get(request.0).is_some_and(|slot| slot.done)
    }

    /// Makes progress until `done(self)` is true, waiting per the wait policy between polls.
    pub fn wait_until(&mut self, mut done: impl FnMut(&mut Engine) -> bool) -> Result<(), EngineError> {
        // Frames waiting to be aggregated leave now: nothing more joins them while we wait.
        if self.core.net.has_unsent() {
            let flushed = self.core.net.flush_unsent();
            self.core.complete_sent_controls();
            flushed?;
        }
        let mut idle_polls: u32 = 0;
        let mut idle_since: Option<Instant> = None;
        loop {
            if done(self) {
                return Ok(());
            }
            if self.progress()? {
                idle_polls = 0;
                idle_since = None;
                continue;
            }
            idle_polls = idle_polls.saturating_add(1);
            match self.wait.after_idle_poll(idle_polls, || idle_since.get_or_insert_with(Instant::now).elapsed()) {
                Idle::Spin => continue,
                Idle::Yield => {
                    self.core.counters.time_blocked(std::thread::yield_now);
                    continue;
                }
                Idle::Block => {}
            }
            let sleeper = self.wait.sleeper.filter(|_| !self.core.has_local_work());
            let Some((sleeper, token)) = sleeper.and_then(|t| self.transports[t].prepare_sleep().map(|token| (t, token))) else {
                self.core.counters.time_blocked(std::thread::yield_now);
                continue;
            };
            // The doorbell is armed: anything arriving from now on wakes us, so one more look
            // closes the window between the last poll and the sleep.
            let polled = self.progress();
            if matches!(polled, Ok(false)) && !done(self) {
                self.core.counters.time_asleep(|| self.transports[sleeper].sleep(token, self.wait.timeout));
            }
            self.transports[sleeper].finish_sleep();
            polled?;
        }
    }

    /// Makes progress, waiting per the wait policy, until `poll` finds what it looks for (a probed
    /// message, for one) or fails.
    pub fn wait_for<T>(&mut self, mut poll: impl FnMut(&mut Engine) -> Result<Option<T>, EngineError>) -> Result<T, EngineError> {
        let mut outcome = None;
        self.wait_until(|engine| {
            outcome = poll(engine).transpose();
            outcome.is_some()
        })?;
        outcome.expect("the wait ends once the poll has an answer")
    }

    /// Polls every transport once and advances protocols; true if anything happened.
    pub fn progress(&mut self) -> Result<bool, EngineError> {
        let mut delivered = 0;
        let core = &mut self.core;
        for &index in &self.polled {
            delivered += self.transports[index].poll(&mut |incoming| core.on_frame(incoming));
        }
        if self.polls_rails {
            delivered += core.poll_rails();
        }
        if self.core.failure.is_some() {
            return Err(self.take_failure());
        }
        let mut moved = delivered > 0;
        if self.core.has_protocol_work() {
            moved = self.advance_protocols(moved)?;
        }
        if !self.agents.is_empty() {
            return self.advance_agents(moved);
        }
        Ok(moved)
    }

    /// Advances the protocols that run over many progress steps (copies, backlogs, pipelines,
    /// the rails); kept out of [`Engine::progress`] so that a step with nothing of the kind stays
    /// short.
    #[inline(never)]
    fn advance_protocols(&mut self, mut moved: bool) -> Result<bool, EngineError> {
        if !self.core.reads.is_empty() {
            // Offers leave before the first read, so that the sender's part runs alongside.
            if self.offer_shares() {
                moved |= self.flush_backlogs()?;
            }
            moved |= self.advance_reads()?;
        }
        if !self.core.writes.is_empty() {
            moved |= self.advance_writes()?;
        }
        if self.core.backlog_len != 0 {
            moved |= self.flush_backlogs()?;
        }
        if !self.core.streams.is_empty() {
            moved |= self.advance_streams()?;
        }
        if self.core.net.active() {
            let advanced = self.core.net.advance(!moved);
            self.core.complete_sent_controls();
            moved |= advanced?;
        }
        Ok(moved)
    }

    #[cold]
    fn take_failure(&mut self) -> EngineError {
        self.core.failure.take().unwrap_or(EngineError::BadRequest)
    }

    /// MPI_Iprobe: the status of the first matching message not yet received, if any.
    pub fn iprobe(&mut self, source: Source, tag: TagSelector, context: u32) -> Result<Option<Status>, EngineError> {
        self.progress()?;
        Ok(self.core.matching.peek_unexpected(context, source, tag).map(|message| Status {
            source: message.source,
            tag: message.tag,
            count: message.len(),
            cancelled: false,
            truncated: false,
        }))
    }

    /// MPI_Improbe: the first matching message not yet received, taken out of matching (no
    /// receive or probe can match it any more) and kept for [`Engine::imrecv`].
    pub fn improbe(&mut self, source: Source, tag: TagSelector, context: u32) -> Result<Option<(MessageId, Status)>, EngineError> {
        self.progress()?;
        let Some(message) = self.core.matching.take_unexpected(context, source, tag) else { return Ok(None) };
        let status = Status { source: message.source, tag: message.tag, count: message.len(), cancelled: false, truncated: false };
        Ok(Some((MessageId(self.core.probed.insert(context, message)), status)))
    }

    /// MPI_Imrecv: receives the message matched by [`Engine::improbe`] into `buffer`, by
    /// whichever protocol it came (an eager payload is copied at once; a rendezvous proceeds).
    pub fn imrecv(&mut self, message: MessageId, buffer: &'static mut [u8]) -> Result<RequestId, EngineError> {
        let (context, message) = self.core.probed.take(message.0).ok_or(EngineError::BadRequest)?;
        let status = Status { source: 0, tag: 0, count: 0, cancelled: false, truncated: false };
        let request = self.core.requests.allocate(Operation::Recv { buffer, context, expected: 0, received: 0, fin_to: None }, status);
        self.receive_unexpected(request, message)?;
        Ok(RequestId(request))
    }

    /// MPI_Cancel. A receive that has not matched is cancelled at once (true). A send whose
    /// message has not left this rank is taken back at once (true). For a synchronous or
    /// rendezvous send the receiver is asked (CANCEL) to withdraw the message if nothing has
    /// matched it; its answer arrives in a later progress step and the send then completes,
    /// cancelled or not. A standard eager send that has left is complete and stays so, as are
    /// requests that are complete already (false).
    pub fn cancel(&mut self, request: RequestId) -> bool {
        let (context, dest) = match self.core.requests.get(request.0) {
            Some(slot) if !slot.done => match slot.operation {
                Operation::Recv { context, .. } => (context, None),
                Operation::Send { dest, context, .. } => (context, Some(dest)),
                Operation::Free => return false,
            },
            _ => return false,
        };
        if let Some(dest) = dest {
            return self.cancel_send(request.0, dest, context);
        }
        if !self.core.matching.remove_posted(context, request.0) {
            return false;
        }
        self.core.requests.complete(request.0, Status { source: 0, tag: 0, count: 0, cancelled: true, truncated: false });
        true
    }

    #[cold]
    fn cancel_send(&mut self, request: u32, dest: u32, context: u32) -> bool {
        // A network peer's frames carry sequence numbers from the moment they are queued, so
        // only a direct route's backlog can give one back.
        if self.core.router.route(dest) != Route::Rails && self.core.unqueue_send(dest, request) {
            let status = self.core.requests.get(request).map(|slot| slot.status);
            if let Some(status) = status {
                self.core.requests.complete(request, Status { count: 0, cancelled: true, ..status });
            }
            return true;
        }
        self.core.queue(dest, Frame::Cancel { context, sender: request }, &[], 0);
        false
    }

    /// MPI_Request_free: the request completes on its own and is then released.
    pub fn release(&mut self, request: RequestId) {
        let Some(slot) = self.core.requests.get_mut(request.0) else { return };
        if slot.done {
            self.core.requests.free(request.0);
        } else {
            slot.released = true;
        }
    }

    /// Job ranks on this node, this one included, in rank order.
    pub fn node_ranks(&self) -> &[u32] {
        &self.node_ranks
    }

    /// A copy of every traffic counter (what is counted: [`CounterValues`]).
    pub fn counter_values(&self) -> CounterValues {
        let names = self.transports.iter().map(|transport| transport.name()).chain(self.core.net.link_names()).map(str::to_string).collect();
        let direct_route = |peer| match self.core.router.route(peer) {
            Route::Direct(transport) => Some(transport),
            Route::Rails => None,
        };
        self.core.counters.values(direct_route, &self.core.net.traffic, names)
    }

    /// Starts a new interval of the unexpected queue's high watermark, at its current level.
    pub fn restart_unexpected_high_watermark(&mut self) {
        self.core.counters.restart_unexpected_high_watermark();
    }

    /// Ends the job: tells the launcher, which kills every rank with `code`.
    pub fn abort(&mut self, code: i32, message: &str) -> ! {
        if let Err(error) = self.bootstrap.abort(code, message) {
            eprintln!("braid: rank {} aborted with code {code}: {message} ({error})", self.core.rank);
        }
        std::process::exit(code)
    }

    /// Completes outstanding traffic, synchronises with the other ranks and detaches.
    pub fn finalize(mut self) -> Result<(), EngineError> {
        self.wait_until(|engine| !engine.core.has_local_work() && !engine.core.requests.released_pending())?;
        let bootstrap_error = |error: braid_pmi::BootstrapError| EngineError::Transport(error.to_string());
        self.bootstrap.fence().map_err(bootstrap_error)?;
        self.bootstrap.finalize().map_err(bootstrap_error)
    }
}

#[cfg(test)]
mod wait_policy_tests {
    use super::*;

    fn policy(mode: WaitMode, oversubscribed: bool) -> WaitPolicy {
        WaitPolicy {
            mode,
            spin_count: 3,
            yield_window: Duration::from_micros(100),
            timeout: Duration::from_millis(1),
            oversubscribed,
            sleeper: Some(1),
        }
    }

    #[test]
    fn a_dedicated_core_spins_then_blocks() {
        let auto = policy(WaitMode::Auto, false);
        assert_eq!(auto.after_idle_poll(2, || Duration::ZERO), Idle::Spin);
        assert_eq!(auto.after_idle_poll(3, || Duration::ZERO), Idle::Block);
    }

    #[test]
    fn an_oversubscribed_node_yields_for_the_window_then_blocks() {
        let auto = policy(WaitMode::Auto, true);
        assert_eq!(auto.after_idle_poll(1_000_000, || Duration::from_micros(99)), Idle::Yield);
        assert_eq!(auto.after_idle_poll(1, || Duration::from_micros(100)), Idle::Block);
        let no_window = WaitPolicy { yield_window: Duration::ZERO, ..policy(WaitMode::Auto, true) };
        assert_eq!(no_window.after_idle_poll(1, || Duration::ZERO), Idle::Block);
    }

    #[test]
    fn forced_modes_ignore_the_node() {
        assert_eq!(policy(WaitMode::Poll, true).after_idle_poll(u32::MAX, || Duration::MAX), Idle::Spin);
        assert_eq!(policy(WaitMode::Block, false).after_idle_poll(1, || Duration::ZERO), Idle::Block);
    }
}
