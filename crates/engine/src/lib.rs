//! The engine: progress over the transports, MPI matching (context, source, tag, wildcards,
//! non-overtaking order), the unexpected queue, eager and rendezvous protocols, requests, waiting.
//!
//! This file is the contract the MPI layer codes against. Buffers are `'static` slices: the C ABI
//! builds them from user pointers, and MPI's rules guarantee they stay valid until the request
//! completes.
//!
//! # Modules
//!
//! * `startup.rs`: connecting the transports, one endpoint per peer, the rail set.
//! * `endpoint.rs`: endpoints and their lanes; a frame sent or queued on a peer's control lane.
//! * `protocol/`: the eager and rendezvous protocols, written once against the endpoints
//!   (`dispatch.rs`, `eager.rs`, `rendezvous.rs`, `single_copy.rs`, `pipeline.rs`, `cancel.rs`).
//! * `progress.rs`: the progress step, the wait loop and its `WaitPolicy`.
//! * `rails/`: the rail set (`control.rs`: the sequenced control channel; `transfer.rs`: split
//!   transfers; `horizon.rs`: how far ahead chunks are queued; `rates.rs`: drain rates;
//!   `doorbell.rs`: sleeping on every rail at once).
//! * `matching.rs`, `requests.rs`, `counters.rs`, `frame.rs` (the wire format), `agents.rs`,
//!   `offload.rs`, `node.rs`, `sampling.rs`.
//!
//! # The path of one message
//!
//! 1. **`isend`** takes a request slot from the slab (no allocation once warm) and looks up the
//!    destination's endpoint: its control lane (self, shared memory, or the rails) and its eager
//!    limit, decided per lane at start-up by the [`ProtocolPolicy`]. [`Engine::try_send_now`]
//!    is the same eager send with no request, for the MPI layer's fast path.
//! 2. **Eager**: the header is `EAGER` (context, tag) or `EAGER_SYNC` for MPI_Ssend (with the
//!    sender's request for the ACK); `Engine::post_frame` (`endpoint.rs`) hands header and data to the
//!    control lane: a direct transport's `try_send` copies them into the ring or a pool buffer,
//!    the rails' control channel numbers the frame and writes it to the peer's control rail. A
//!    standard send is complete once the frame has left. A frame the lane cannot take yet waits
//!    behind the earlier ones (order is kept) and `progress` retries.
//! 3. **Receiver**: `progress` polls every transport and rail; each frame is decoded (a rail's
//!    after its control envelope) and matched against the context's posted receives in posting
//!    order. A match copies the payload straight from the transport into the user's buffer
//!    (truncating if it is too small); otherwise it goes to the unexpected queue, where a later
//!    `irecv` finds it (wildcards take the earliest arrival). `EAGER_SYNC` answers `ACK`.
//! 4. **Rendezvous**: the sender posts `RTS` with a description of its buffer. Once matched,
//!    the endpoint's bulk path moves the bytes: the receiver reads them itself (CMA, a chunk per
//!    progress step) and sends `FIN`; or it sends `CTS`, and the sender streams `DATA` frames on
//!    the direct transport (completing when the last has left) or splits them over the rails
//!    (completing on the receiver's `FIN`).
//! 5. **Waiting**: `wait` spins on `progress`; after `spin_count` idle polls (at once when the
//!    node is oversubscribed, always with `BRAID_WAIT=block`) it arms the shared-memory doorbell,
//!    polls once more, and sleeps on the futex until a frame arrives or `block_timeout_ms` passes.
//!    A rank with network peers spins for at most `rail_spin_us` (and, having just sent a control
//!    frame over the rails, yields until `rail_reply_spin_us` after it), then sleeps on every rail's doorbell at
//!    once instead, no longer than its rails allow (and at most 100 us when it has shared-memory
//!    peers too).

#[macro_use]
mod debug;
mod agents;
mod counters;
mod endpoint;
pub mod events;
mod frame;
mod joining;
mod links;
mod matching;
mod node;
mod offload;
mod parking;
mod peer_watch;
mod progress;
mod protocol;
mod rails;
mod requests;
pub mod sampling;
mod startup;
mod wake_up;

use std::fmt;
use std::io::IoSlice;

use braid_lane::{Capabilities, PeerId};
use braid_pmi::Bootstrap;
use braid_strategy::ProtocolPolicy;
use braid_transport::{Transport, TransportError};

pub use agents::ProgressAgent;
use counters::Counters;
pub use counters::{size_bucket, CounterValues, PeerTraffic, TransportTraffic, SIZE_BUCKETS};
use endpoint::{ControlLane, Endpoint};
use frame::Frame;
pub use links::LinkProfiles;
use matching::{Matching, Posted, Probed};
pub use parking::{Parking, Waker};
use progress::WaitPolicy;
use protocol::{Read, Stream, Write};
use rails::Network;
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

/// Where the self transport (messages to the own rank) sits among the direct transports.
const SELF_TRANSPORT: usize = 0;

/// Everything but the direct transports, so a transport's `poll` callback can update it.
struct Core {
    rank: u32,
    size: u32,
    /// One per job rank: its lanes and the protocol state kept per peer.
    endpoints: Vec<Endpoint>,
    /// Of the direct transports, indexed like them.
    caps: Vec<Capabilities>,
    policy: ProtocolPolicy,
    requests: Requests,
    matching: Matching,
    /// Frames waiting in the endpoints' backlogs, all together.
    backlog_len: usize,
    streams: Vec<Stream>,
    reads: Vec<Read>,
    writes: Vec<Write>,
    /// Buffers of received unexpected messages, kept for the next ones.
    spare_payloads: Vec<Vec<u8>>,
    /// Messages taken out of matching by a matched probe, waiting for their receives.
    probed: Probed,
    /// The rail set, which carries the peers whose control lane is the rails.
    net: Network,
    /// The first failure met inside a poll callback, reported when the poll returns.
    failure: Option<EngineError>,
    debug: bool,
    /// With `debug`: what each rail brought toward the rails receives since the last completed.
    rail_arrivals: debug::RailArrivals,
    counters: Counters,
    /// What tools may want to hear of (MPI_T events).
    events: events::EventLog,
    /// When the unexpected queue's growth becomes an event.
    unexpected_marks: events::GrowthMarks,
}

impl Core {
    /// A message joined the unexpected queue: counted, and an event when the queue reaches a
    /// growth mark.
    #[inline]
    pub(crate) fn unexpected_stored(&mut self) {
        let level = self.counters.unexpected_stored();
        if let Some(mark) = self.unexpected_marks.reached(level) {
            self.events.record(events::EventKind::UnexpectedQueueGrew { level: mark });
            events::set_pending(true);
        }
    }
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

/// One process's communication engine.
pub struct Engine {
    /// Dropped first: its offload workers give their lent writers back before the rail transports
    /// (which it owns) and the direct transports close.
    core: Core,
    /// Self, then the direct transports (shared memory, or those given by the caller).
    transports: Vec<Box<dyn Transport>>,
    /// The transports `progress` polls: self, and those that carry traffic to some peer.
    polled: Vec<usize>,
    /// Whether some peer is reached over the rails, so that `progress` polls them.
    polls_rails: bool,
    bootstrap: Box<dyn Bootstrap>,
    wait: WaitPolicy,
    /// Which ranks share this node, their CPUs, and the node of every job rank.
    node: node::NodeInfo,
    links: LinkProfiles,
    /// Work above the engine that every progress step advances.
    agents: Vec<Box<dyn ProgressAgent>>,
    /// Progress steps that moved something (see [`Engine::moved_steps`]).
    moved_steps: u64,
    /// The processes of other jobs joined so far.
    joined: joining::Joined,
    /// The direct transports reaching joined processes whose doorbells a waiter sleeps on too.
    joined_doorbells: Vec<usize>,
    /// The network transports reaching joined processes on other nodes, whose descriptors a
    /// waiter polls.
    joined_sockets: Vec<usize>,
    /// Whether the processes of this node's other ranks still run (checked while waiting).
    peer_watch: peer_watch::PeerWatch,
}

impl Engine {
    /// This process's job rank.
    pub fn rank(&self) -> u32 {
        self.core.rank
    }

    /// Number of ranks in the job.
    pub fn size(&self) -> u32 {
        self.core.size
    }

    /// Starts a send of `data` to job rank `dest`. Small messages complete at once; a standard
    /// eager send on the rails may wait a progress step to leave aggregated.
    pub fn isend(&mut self, data: &'static [u8], dest: u32, tag: i32, context: u32, mode: SendMode) -> Result<RequestId, EngineError> {
        let Some(lane) = self.core.endpoints.get(dest as usize).map(|endpoint| endpoint.lane) else {
            return Err(self.out_of_range(dest));
        };
        let status = Status { source: self.core.rank, tag, count: data.len(), cancelled: false, truncated: false };
        let request = self.core.requests.allocate(Operation::Send { data, dest, context }, status);
        let rendezvous = data.len() > lane.eager_limit;
        let (frame, payload, completes) = match (rendezvous, mode) {
            (false, SendMode::Synchronous) => (Frame::EagerSync { context, tag, sender: request }, data, 0),
            (false, SendMode::Standard | SendMode::Ready | SendMode::Buffered) => (Frame::Eager { context, tag }, data, request),
            (true, _) => (Frame::rts(context, tag, request, self.expose(lane.control, data)), &[][..], 0),
        };
        match self.post_frame(dest, frame, payload, completes) {
            Ok(()) => {
                if rendezvous {
                    self.core.endpoints[dest as usize].rendezvous_out += 1;
                }
                self.core.counters.message_sent(dest, data.len(), rendezvous);
                Ok(RequestId(request))
            }
            Err(error) => {
                self.core.requests.free(request);
                Err(error)
            }
        }
    }

    /// Starts a receive into `buffer`.
    pub fn irecv(&mut self, buffer: &'static mut [u8], source: Source, tag: TagSelector, context: u32) -> Result<RequestId, EngineError> {
        if let Source::Rank(rank) = source {
            if rank as usize >= self.core.endpoints.len() {
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
    fn out_of_range(&self, rank: u32) -> EngineError {
        EngineError::Unreachable { rank, reason: format!("the job has {} ranks and {} processes of other jobs joined", self.core.size, self.core.endpoints.len() as u32 - self.core.size) }
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

    /// MPI_Iprobe: the status of the first matching message not yet received, if any.
    pub fn iprobe(&mut self, source: Source, tag: TagSelector, context: u32) -> Result<Option<Status>, EngineError> {
        self.progress()?;
        Ok(self.core.matching.peek_unexpected(context, source, tag).map(|message| Status { source: message.source, tag: message.tag, count: message.len(), cancelled: false, truncated: false }))
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
        &self.node.ranks
    }

    /// The node of every job rank: equal numbers share a node (and its shared memory).
    pub fn node_of(&self) -> &[u32] {
        &self.node.node_of
    }

    /// Whether `peer` is a process of another job (see [`Engine::join`]): where it runs is not
    /// part of this job's node layout, and the other job's processes see that layout differently,
    /// so what they decide together (a collective's algorithm, a reordering) must not use it.
    pub fn is_joined(&self, peer: u32) -> bool {
        peer >= self.core.size
    }

    /// The node of `peer`, as [`Engine::node_of`] numbers them; a process of another job (see
    /// [`Engine::join`]) counts as a node of its own, so that nothing puts node-level shared
    /// memory between it and the job's ranks.
    pub fn node_id(&self, peer: u32) -> u32 {
        self.node.node_of.get(peer as usize).copied().unwrap_or(u32::MAX - peer)
    }

    /// Rings the doorbell of `peer`, a rank of this node, after changing memory the two share
    /// that it may be asleep waiting on (a collective's flag): costs a fence and a load unless
    /// it sleeps.
    #[inline]
    pub fn ring_node_peer(&self, peer: u32) {
        if let Some(ControlLane::Direct(transport)) = self.core.endpoints.get(peer as usize).map(|endpoint| endpoint.lane.control) {
            self.transports[transport].ring_peer(peer);
        }
    }

    /// Whether the ranks on this machine outnumber the CPUs they may run on (every rank of the
    /// machine sees the same answer: it comes from all their CPU sets).
    pub fn oversubscribed(&self) -> bool {
        self.node.oversubscribed
    }

    /// Whether this rank's waits end as soon as a rank of its node rings it
    /// ([`Engine::ring_node_peer`]): they sleep on the shared-memory doorbell, or never sleep.
    /// Otherwise (they sleep on the network rails) a ring ends a sleep only at its time-out.
    pub fn wakes_on_ring(&self) -> bool {
        matches!(self.wait.doorbell, progress::Doorbell::Direct(_) | progress::Doorbell::None)
    }

    /// CPUs where a helper thread of this rank (a copy assistant) could work now without taking
    /// one from a running rank: the node's spare CPUs, or else those of `peer` while it sleeps in
    /// a blocking call on this node's shared memory. None on an oversubscribed machine, or when
    /// neither applies. A hint: the sleeper may wake at any moment and then shares its CPU.
    pub fn idle_cpus_beside(&self, peer: u32) -> Option<&[usize]> {
        let asleep = || match self.core.endpoints.get(peer as usize).map(|endpoint| endpoint.lane.control) {
            Some(ControlLane::Direct(transport)) => self.transports[transport].peer_asleep(peer),
            _ => false,
        };
        self.node.idle_cpus(self.core.rank, peer, asleep)
    }

    /// The links within and between nodes, for the collectives' cost model.
    pub fn links(&self) -> &LinkProfiles {
        &self.links
    }

    /// A copy of every traffic counter (what is counted: [`CounterValues`]).
    /// The events since the last take, in order, and how many could not be kept.
    #[cold]
    pub fn take_events(&mut self) -> (Vec<events::Event>, u64) {
        events::set_pending(false);
        for (peer, rail) in self.core.net.take_failovers() {
            self.core.events.record(events::EventKind::RailFailedOver { peer, rail: rail as u32 });
        }
        self.core.events.take()
    }

    /// The engine's clock, as events are stamped: nanoseconds since the engine started.
    pub fn event_clock_ns(&self) -> u64 {
        self.core.events.now_ns()
    }

    pub fn counter_values(&self) -> CounterValues {
        let names = self.transports.iter().map(|transport| transport.name()).chain(self.core.net.link_names()).map(str::to_string).collect();
        let direct_route = |peer: PeerId| match self.core.endpoints[peer as usize].lane.control {
            ControlLane::Direct(transport) => Some(transport),
            ControlLane::Rails => None,
        };
        self.core.counters.values(direct_route, self.core.net.traffic(), names)
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
