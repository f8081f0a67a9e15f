//! Peers reached only over the network rails (seed 004).
//!
//! * **Control frames** (EAGER, EAGER_SYNC, RTS, CTS, FIN, ACK) to one peer travel on one control
//!   rail, the strategy's eager rail for an eager-sized message, so they arrive in order (MPI's
//!   non-overtaking rule). It is chosen again, at most every 2 ms, only while no control frame
//!   to that peer is in flight. Each carries a per-peer sequence number and a cumulative
//!   acknowledgement; the sender keeps what is not acknowledged (eager payloads are copied, so
//!   a standard send completes at once) and re-sends it on a new control rail when the old one
//!   fails; the receiver drops what it has already seen.
//! * **Rendezvous**: the receiver's CTS names the transfer by its own sequence number; the sender
//!   asks the strategy to split the payload over the rails that are up and posts NET_DATA chunks
//!   (cut to each rail's frame size); the receiver records the ranges that arrived and sends FIN
//!   once it has them all. The send completes on FIN, so the chunks of a rail that fails before
//!   then are split again over the remaining rails. A strategy with a queue horizon (`hetero`)
//!   has its chunks handed over a few milliseconds at a time, and a rail that runs dry takes over
//!   the end of another's remainder; otherwise the split's pieces may go to offload workers.
//! * **Aggregation** (strategies whose `aggregates_eager` says so, `hetero`): an eager frame
//!   posted while its control rail is busy, i.e. after another frame to the same peer left in
//!   the same progress step, waits; the waiting frames leave together in one NET_BATCH frame
//!   (one write) at the next progress step, or at once when they fill an eager message. A
//!   waiting send completes when its frame leaves.
//! * **Rates**: while a rail stays busy, its drain rate (bytes posted minus the change of its
//!   backlog, over the engine's clock) corrects its profile online.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use braid_config::{Config, OffloadMode};
use braid_lane::{PeerId, Profile};
use braid_strategy::multirail::{self, Aggregator, Chunk, Decision, MultirailStrategy, RailView, RateEstimator, SplitSettings};
use braid_transport::{SendOutcome, Transport, TransportError};

use crate::counters::TransportTraffic;
use crate::frame::{push_batch_entry, Frame, Header, BATCH_ENTRY_OVERHEAD, CONTROL_OVERHEAD, EAGER_HEADER_MAX, NET_DATA_HEADER};
use crate::node::{NodeInfo, SpareCpus};
use crate::offload::{Offload, OffloadJob};
use crate::{gather, protocol_error, transport_error, EngineError};

/// A receiver acknowledges at least every this many control frames without waiting to be idle:
/// it bounds the copies a streaming sender keeps for re-sending.
const ACK_EVERY: u64 = 32;

/// A control frame with its own copy of the payload, kept until the peer acknowledges it.
struct Control {
    seq: u64,
    header: Header,
    payload: Vec<u8>,
    /// The send request that completes when this frame leaves (a standard eager send).
    completes: Option<u32>,
}

/// Control-frame state toward one peer routed over the rails.
struct Peer {
    control_rail: usize,
    /// When the control rail was last chosen.
    control_chosen: Instant,
    rail_up: Vec<bool>,
    next_seq: u64,
    unsent: VecDeque<Control>,
    unacked: VecDeque<Control>,
    /// Highest sequence number received from the peer (all below it were received too).
    received: u64,
    /// Highest sequence number we have acknowledged to the peer.
    acknowledged: u64,
    /// Eager frames waiting for the control rail (see the module comment).
    aggregator: Aggregator,
    /// The progress step in which a frame to this peer last left.
    sent_in_step: u64,
}

/// A piece of a rendezvous payload assigned to one rail; `posted` is the next byte to post.
/// An offloaded piece is posted by a worker thread (`job`), which reports how far it got.
#[derive(Debug, Clone)]
struct Piece {
    rail: usize,
    start: usize,
    posted: usize,
    end: usize,
    job: Option<Arc<OffloadJob>>,
    /// `[start, unhedged_end)` is what no other rail has been asked to send again (see
    /// [`hedge`]); a hedge itself is never hedged.
    unhedged_end: usize,
    /// The transfer's `posted_on[rail]` when this piece's last byte was posted. What the rail
    /// took after that sits behind this piece's undelivered tail in its backlog.
    posted_mark: Option<u64>,
}

impl Piece {
    fn new(rail: usize, start: usize, end: usize) -> Piece {
        Piece { rail, start, posted: start, end, job: None, unhedged_end: end, posted_mark: None }
    }

    /// A copy of `[start, end)`, sent again on `rail`.
    fn hedge(rail: usize, start: usize, end: usize) -> Piece {
        Piece { unhedged_end: start, ..Piece::new(rail, start, end) }
    }
}

/// Waits until the worker posting `piece` (if any) is done with its bytes: their buffer may be
/// given back to the application once the piece is dropped. A worker ends promptly once its
/// frames are written or its connection is shut down.
fn settle(piece: &Piece) {
    if let Some(job) = &piece.job {
        while !job.finished() {
            std::thread::yield_now();
        }
    }
}

/// A rendezvous send whose receiver sent CTS; it lives until FIN.
struct Transfer {
    request: u32,
    peer: PeerId,
    receiver: u32,
    transfer: u64,
    data: &'static [u8],
    pieces: Vec<Piece>,
    /// Byte ranges not assigned to a rail yet (all of it at first, a failed rail's later).
    unassigned: Vec<(usize, usize)>,
    /// Bytes of this transfer each rail has taken so far.
    posted_on: Vec<u64>,
}

/// A rendezvous receive being filled by NET_DATA chunks.
struct Receive {
    request: u32,
    peer: PeerId,
    sender: u32,
    transfer: u64,
    expected: usize,
    /// Disjoint, sorted byte ranges that have arrived.
    ranges: Vec<(usize, usize)>,
}

/// One rail's state shared by every peer.
struct Rail {
    profile: Profile,
    rate: RateEstimator,
    /// Largest NET_DATA payload.
    chunk_max: usize,
    /// Drain observation: bytes posted since `observed_at`, the backlog then, and the peers the
    /// rail has carried chunks to since it was last seen idle (empty: not being observed).
    posted: u64,
    backlog: u64,
    observed_at: Instant,
    peers: Vec<PeerId>,
    /// The current observation is the first stretch since the rail was seen idle. A shaped
    /// link lets a burst through at once after idling, so that stretch would overstate the
    /// sustained rate; it only starts the next one.
    first_stretch: bool,
}

/// Largest NET_DATA frame when the strategy limits what a rail holds: the unit in which a
/// rail's queue is topped up, small enough that the cap is kept to within a frame.
const QUEUED_FRAME_MAX: usize = 64 << 10;

/// How often, at most, a peer's control rail is chosen again (from the rails' backlogs), so
/// that control frames stop queueing behind chunks piled on one rail.
const CONTROL_RAIL_RECHECK: Duration = Duration::from_millis(2);

/// Shortest stretch of a busy rail taken as one drain observation: acknowledgements arrive in
/// bursts, so shorter stretches measure the bursts rather than the rail.
const DRAIN_OBSERVATION_MIN: Duration = Duration::from_micros(500);

/// What the receiver of a NET_DATA frame has to do.
pub(crate) enum Arrival {
    /// Nothing (more chunks to come, or a stale duplicate).
    Pending,
    /// The receive is complete: send FIN for `sender`.
    Complete { request: u32, sender: u32 },
}

pub(crate) struct Network {
    /// Index of the first rail in the engine's transport list.
    pub(crate) rail_base: usize,
    rails: Vec<Rail>,
    peers: Vec<Option<Peer>>,
    /// Largest eager message to a network peer.
    pub(crate) eager_limit: usize,
    strategy: Box<dyn MultirailStrategy>,
    /// Smallest drain worth a rate observation (BRAID_SPLIT_MIN).
    observe_min: u64,
    transfers: Vec<Transfer>,
    receives: Vec<Receive>,
    spare: Vec<Vec<u8>>,
    unsent: usize,
    unacked: usize,
    ack_due: bool,
    debug: bool,
    /// BRAID_RAIL_HEDGE: see [`hedge`].
    hedging: bool,
    rank: u32,
    /// Workers that submit the chunks of a split when that pays (BRAID_OFFLOAD); dropped before
    /// the transports, so no writer is still out when they close.
    offload: Option<Offload>,
    /// How long this rank recently went between two progress steps with chunks to post.
    gaps: ProgressGaps,
    /// `post_chunks`' room left per (rail, peer), kept for its capacity.
    rooms: Vec<(usize, PeerId, u64)>,
    /// Whether eager frames wait for a busy control rail (the strategy's choice).
    aggregates: bool,
    /// Progress steps so far: a frame that left in the current one makes its rail busy.
    step: u64,
    /// Payload of the NET_BATCH frame being built, kept for its capacity.
    batch: Vec<u8>,
    /// Most payload bytes in one NET_BATCH frame.
    batch_max: usize,
    /// Send requests whose frames left; the engine completes them (`take_sent`).
    sent: Vec<u32>,
    /// What this rank sent on each rail (the engine counts what arrives).
    pub(crate) traffic: Vec<TransportTraffic>,
}

/// A rail's queue must outlast the rank's absences: a rank descheduled (or computing) for a
/// while posts nothing meanwhile, and a rail whose queue ran out stays idle until it returns.
/// The longest recent gap between two progress steps with chunks outstanding is kept, and
/// halved every [`GAP_HALF_LIFE`] that brings no longer one; the strategy's queue horizon is
/// raised to [`GAP_COVER`] times it, at most to [`GAP_HORIZON_MAX`].
#[derive(Debug, Default)]
struct ProgressGaps {
    last_step: Option<Instant>,
    longest: Duration,
    longest_at: Option<Instant>,
}

const GAP_HALF_LIFE: Duration = Duration::from_millis(200);
const GAP_COVER: u32 = 2;
const GAP_HORIZON_MAX: Duration = Duration::from_millis(50);

impl ProgressGaps {
    /// A progress step at `now` with chunks outstanding.
    fn step(&mut self, now: Instant) {
        if let Some(last) = self.last_step.replace(now) {
            let gap = now.saturating_duration_since(last);
            let since_longest = self.longest_at.map_or(Duration::MAX, |at| now.saturating_duration_since(at));
            if gap >= self.longest {
                self.longest = gap;
                self.longest_at = Some(now);
            } else if since_longest >= GAP_HALF_LIFE {
                self.longest /= 2;
                self.longest_at = Some(now);
            }
        }
    }

    /// Nothing outstanding: the time until the next chunk is not an absence.
    fn idle(&mut self) {
        self.last_step = None;
    }

    /// `horizon_ns`, raised to cover the recent gaps.
    fn horizon_ns(&self, horizon_ns: f64) -> f64 {
        let cover = (self.longest * GAP_COVER).min(GAP_HORIZON_MAX);
        horizon_ns.max(cover.as_nanos() as f64)
    }
}

/// Payload buffers kept for reuse.
const SPARE_BUFFERS: usize = 64;

/// What the strategy sees of each rail toward `peer`. A rail's backlog is what its transport
/// still holds for the peer plus `waiting[rail]`, the chunk bytes assigned to it that it has not
/// taken yet: once a socket buffer is full the transport's count stops growing, and a rail
/// judged by it alone would look ever less busy than it is.
fn views<'a>(rails: &'a [Rail], transports: &[Box<dyn Transport>], peer: PeerId, up: &[bool], waiting: &[u64]) -> Vec<RailView<'a>> {
    rails
        .iter()
        .zip(transports)
        .zip(up)
        .zip(waiting)
        .map(|(((rail, transport), &up), &waiting)| RailView {
            profile: &rail.profile,
            backlog_bytes: transport.backlog(peer) + waiting,
            rate_factor: rail.rate.factor(),
            up,
        })
        .collect()
}

/// Offload workers for `rails` rails (BRAID_OFFLOAD): one per rail beyond the first, as many
/// as the node has spare CPUs; none on an oversubscribed node, where a worker would take a
/// rank's CPU.
fn start_offload(config: &Config, rails: usize, spare: &SpareCpus, oversubscribed: bool) -> Option<Offload> {
    if config.offload == OffloadMode::Off || oversubscribed || rails < 2 {
        return None;
    }
    Offload::start((rails - 1).min(spare.count), &spare.cpus, config.offload_cost_ns)
}

/// Hands the pieces of a fresh split (`transfer.pieces[first..]`) to offload workers when
/// seed 004's equation 1 says that submitting them in parallel beats submitting them one after
/// another, each piece's submission costing a copy of its bytes and each piece's duration
/// being its predicted finish on its rail. The piece on the peer's
/// control rail stays with this thread (control frames must not wait behind a worker), and so
/// does any whose rail cannot lend a writer. Returns how many pieces went to workers.
#[cold]
fn offload_split(
    offload: &Offload,
    rails: &[Rail],
    transports: &mut [Box<dyn Transport>],
    transfer: &mut Transfer,
    first: usize,
    control_rail: usize,
    views: &[RailView<'_>],
) -> usize {
    let fresh = &transfer.pieces[first..];
    if fresh.len() < 2 {
        return 0;
    }
    // The views count the fresh pieces in their rails' backlogs already; each piece's finish is
    // predicted as the strategy predicted it, from the backlog without them.
    let fresh_on = |rail: usize| fresh.iter().filter(|piece| piece.rail == rail).map(|piece| (piece.end - piece.start) as u64).sum::<u64>();
    let times: Vec<f64> = fresh
        .iter()
        .map(|piece| {
            let view = &views[piece.rail];
            let before = RailView { backlog_bytes: view.backlog_bytes.saturating_sub(fresh_on(piece.rail)), ..*view };
            multirail::predicted_finish(&before, piece.end - piece.start)
        })
        .collect();
    let mean_len = fresh.iter().map(|piece| piece.end - piece.start).sum::<usize>() / fresh.len();
    if !multirail::offload_pays(&times, offload.cost_ns(), offload.copy_time_ns(mean_len)) {
        return 0;
    }
    let mut offloaded = 0;
    for piece in &mut transfer.pieces[first..] {
        if piece.rail == control_rail || piece.posted > piece.start {
            continue;
        }
        let Some(writer) = transports[piece.rail].lend_writer(transfer.peer) else { continue };
        let frame_max = rails[piece.rail].chunk_max;
        let frames: Vec<(Vec<u8>, &'static [u8])> = (piece.start..piece.end)
            .step_by(frame_max)
            .map(|offset| {
                let header = Header::net_data(transfer.receiver, offset as u64, transfer.transfer);
                (header.as_bytes().to_vec(), &transfer.data[offset..piece.end.min(offset + frame_max)])
            })
            .collect();
        piece.job = Some(offload.submit(writer, frames));
        offloaded += 1;
    }
    offloaded
}

/// Chunk bytes assigned to each rail and not yet handed to it, over every transfer.
fn waiting_bytes(transfers: &[Transfer], rails: usize) -> Vec<u64> {
    let mut waiting = vec![0u64; rails];
    for piece in transfers.iter().flat_map(|transfer| &transfer.pieces) {
        waiting[piece.rail] += (piece.end - piece.posted) as u64;
    }
    waiting
}

impl Network {
    /// Sets up the rails `transports` (already connected, at `rail_base` in the engine's list)
    /// with their `profiles`, for the `rail_peers`; `node` says what CPUs offload may use.
    pub(crate) fn new(
        config: &Config,
        rank: u32,
        rail_base: usize,
        profiles: Vec<Profile>,
        transports: &[Box<dyn Transport>],
        rail_peers: Vec<PeerId>,
        node: &NodeInfo,
    ) -> Network {
        let now = Instant::now();
        let settings = SplitSettings::from_config(config);
        let rails: Vec<Rail> = profiles
            .into_iter()
            .zip(transports)
            .map(|(profile, transport)| Rail {
                profile,
                rate: settings.rate_estimator(),
                chunk_max: transport.capabilities().max_payload.saturating_sub(NET_DATA_HEADER).max(1),
                posted: 0,
                backlog: 0,
                observed_at: now,
                peers: Vec::new(),
                first_stretch: false,
            })
            .collect();
        let frame_room = transports
            .iter()
            .map(|transport| transport.capabilities().max_payload.saturating_sub(CONTROL_OVERHEAD + EAGER_HEADER_MAX))
            .min()
            .unwrap_or(0);
        let all_up = vec![true; rails.len()];
        let eager_limit = if rails.is_empty() {
            0
        } else {
            let views: Vec<RailView<'_>> = rails.iter().zip(&all_up).map(|(rail, &up)| RailView { profile: &rail.profile, backlog_bytes: 0, rate_factor: 1.0, up }).collect();
            multirail::rendezvous_threshold(&views, CONTROL_OVERHEAD + EAGER_HEADER_MAX).min(frame_room)
        };
        let mut strategy = multirail::build(config.strategy, settings);
        let size = rail_peers.iter().max().map_or(0, |&peer| peer as usize + 1);
        let mut peers: Vec<Option<Peer>> = (0..size).map(|_| None).collect();
        // A strategy that holds chunks back hands them over in small frames, where equation 1
        // never pays: no workers, and no start-up measurement of their cost.
        let offload = match strategy.queue_horizon_ns() {
            None => start_offload(config, transports.len(), &node.spare, node.oversubscribed),
            Some(_) => None,
        };
        let nothing_waiting = vec![0; rails.len()];
        let strategy_aggregates = strategy.aggregates_eager();
        for peer in rail_peers {
            let up: Vec<bool> = transports.iter().map(|transport| transport.reaches(peer)).collect();
            // Control frames share their rail with eager messages up to the limit: the rail
            // that delivers such a message soonest, not merely the one with the least latency.
            let control_rail = strategy.eager_rail(eager_limit, &views(&rails, transports, peer, &up, &nothing_waiting));
            peers[peer as usize] = Some(Peer {
                control_rail,
                control_chosen: now,
                rail_up: up,
                next_seq: 1,
                unsent: VecDeque::new(),
                unacked: VecDeque::new(),
                received: 0,
                acknowledged: 0,
                aggregator: settings.aggregator(),
                sent_in_step: 0,
            });
        }
        Network {
            rail_base,
            rails,
            peers,
            eager_limit,
            strategy,
            observe_min: config.split_min as u64,
            transfers: Vec::new(),
            receives: Vec::new(),
            spare: Vec::new(),
            unsent: 0,
            unacked: 0,
            ack_due: false,
            debug: config.debug,
            hedging: config.rail_hedge,
            rank,
            offload,
            gaps: ProgressGaps::default(),
            rooms: Vec::new(),
            aggregates: strategy_aggregates,
            step: 1,
            batch: Vec::new(),
            batch_max: settings.aggregate_max.min(frame_room),
            sent: Vec::new(),
            traffic: vec![TransportTraffic::default(); transports.len()],
        }
    }

    /// The strategy's name and each peer's control rail, for the debug line.
    pub(crate) fn describe(&self) -> String {
        let controls: Vec<(usize, usize)> =
            self.peers.iter().enumerate().filter_map(|(rank, peer)| peer.as_ref().map(|peer| (rank, peer.control_rail))).collect();
        let offload = match &self.offload {
            Some(offload) => format!("offload cost {:.1} us", offload.cost_ns() / 1e3),
            None => "no offload".to_string(),
        };
        format!("strategy {}, eager up to {} bytes, control rails (rank, rail) {controls:?}, {offload}", self.strategy.name(), self.eager_limit)
    }

    /// Something to send, re-send or acknowledge: the engine runs [`Network::advance`].
    #[inline]
    pub(crate) fn active(&self) -> bool {
        self.unsent > 0 || self.unacked > 0 || self.ack_due || !self.transfers.is_empty()
    }

    /// Frames or chunks not yet handed to a rail (finalize waits for them).
    pub(crate) fn has_work(&self) -> bool {
        self.unsent > 0 || self.transfers.iter().any(|transfer| !transfer.unassigned.is_empty() || transfer.pieces.iter().any(|piece| piece.posted < piece.end))
    }

    fn peer(&mut self, peer: PeerId) -> Result<&mut Peer, EngineError> {
        self.peers.get_mut(peer as usize).and_then(Option::as_mut).ok_or_else(|| protocol_error(peer, "network frame from a peer not routed over the rails"))
    }

    /// Queues a control frame (payload copied) to `peer`; returns its sequence number. When it
    /// leaves, send request `completes` is done (collected by [`Network::take_sent`]).
    pub(crate) fn queue_control(&mut self, peer: PeerId, frame: Frame, payload: &[u8], completes: Option<u32>) -> u64 {
        let mut copy = self.spare.pop().unwrap_or_default();
        copy.clear();
        copy.extend_from_slice(payload);
        let Some(state) = self.peers.get_mut(peer as usize).and_then(Option::as_mut) else {
            unreachable!("the router sends only rail peers here")
        };
        let seq = state.next_seq;
        state.next_seq += 1;
        state.unsent.push_back(Control { seq, header: frame.encode(), payload: copy, completes });
        self.unsent += 1;
        seq
    }

    /// Whether the eager frame just queued to `peer` (`len` payload bytes) should wait
    /// for the busy control rail instead of being flushed now.
    #[inline]
    pub(crate) fn holds_eager(&mut self, peer: PeerId, len: usize) -> bool {
        if !self.aggregates {
            return false;
        }
        let step = self.step;
        let Some(state) = self.peers.get_mut(peer as usize).and_then(Option::as_mut) else { return false };
        let idle = state.sent_in_step != step;
        state.aggregator.push(len + EAGER_HEADER_MAX + CONTROL_OVERHEAD + BATCH_ENTRY_OVERHEAD, idle) == Decision::Hold
    }

    /// Send requests whose frames have left since the last call.
    pub(crate) fn take_sent(&mut self) -> impl Iterator<Item = u32> + '_ {
        self.sent.drain(..)
    }

    /// A CONTROL envelope arrived: drops acknowledged copies; true if the frame is new (to be
    /// handled), false for a duplicate of one already handled.
    pub(crate) fn accept_control(&mut self, peer: PeerId, seq: u64, ack: u64) -> Result<bool, EngineError> {
        self.acknowledged(peer, ack)?;
        let state = self.peer(peer)?;
        if seq <= state.received {
            return Ok(false);
        }
        if seq != state.received + 1 {
            return Err(protocol_error(peer, "control frame out of sequence"));
        }
        state.received = seq;
        self.ack_due = true;
        Ok(true)
    }

    /// The peer has every control frame up to `ack`.
    pub(crate) fn acknowledged(&mut self, peer: PeerId, ack: u64) -> Result<(), EngineError> {
        let state = self.peers.get_mut(peer as usize).and_then(Option::as_mut).ok_or_else(|| protocol_error(peer, "acknowledgement from a peer not routed over the rails"))?;
        while state.unacked.front().is_some_and(|control| control.seq <= ack) {
            let control = state.unacked.pop_front().expect("front checked");
            self.unacked -= 1;
            if self.spare.len() < SPARE_BUFFERS {
                self.spare.push(control.payload);
            }
        }
        Ok(())
    }

    /// CTS `transfer` from `peer`: send `len` bytes of `data` to its request `receiver`.
    pub(crate) fn start_transfer(&mut self, peer: PeerId, request: u32, receiver: u32, transfer: u64, data: &'static [u8]) {
        self.transfers.push(Transfer { request, peer, receiver, transfer, data, pieces: Vec::new(), unassigned: vec![(0, data.len())], posted_on: vec![0; self.rails.len()] });
    }

    /// FIN for send `request`: its chunks need no re-sending any more. Once no transfer is left
    /// the rails stop being observed: nothing polls them until the next one, so the time their
    /// backlogs take to empty would be unknown.
    pub(crate) fn finish_transfer(&mut self, peer: PeerId, request: u32) {
        for transfer in self.transfers.iter().filter(|transfer| transfer.peer == peer && transfer.request == request) {
            transfer.pieces.iter().for_each(settle);
        }
        self.transfers.retain(|transfer| !(transfer.peer == peer && transfer.request == request));
        if self.transfers.is_empty() {
            for rail in &mut self.rails {
                rail.peers.clear();
            }
        }
    }

    /// Receive `request` sent CTS `transfer` for `expected` bytes of `peer`'s send `sender`.
    pub(crate) fn expect(&mut self, peer: PeerId, request: u32, sender: u32, transfer: u64, expected: usize) {
        self.receives.push(Receive { request, peer, sender, transfer, expected, ranges: Vec::new() });
    }

    /// A NET_DATA chunk arrived: where to copy it (`None`: stale, drop it) and whether the receive
    /// is then complete. `copy` writes the payload into the receive's buffer.
    pub(crate) fn arrive_data(
        &mut self,
        peer: PeerId,
        receiver: u32,
        offset: usize,
        transfer: u64,
        len: usize,
        copy: impl FnOnce(u32) -> Result<(), EngineError>,
    ) -> Result<Arrival, EngineError> {
        let Some(index) = self.receives.iter().position(|r| r.peer == peer && r.request == receiver && r.transfer == transfer) else {
            return Ok(Arrival::Pending);
        };
        let receive = &mut self.receives[index];
        let end = offset.checked_add(len).filter(|&end| end <= receive.expected).ok_or_else(|| protocol_error(peer, "DATA beyond the expected length"))?;
        copy(receive.request)?;
        add_range(&mut receive.ranges, offset, end);
        if receive.ranges.as_slice() == [(0, receive.expected)] {
            let receive = self.receives.swap_remove(index);
            return Ok(Arrival::Complete { request: receive.request, sender: receive.sender });
        }
        Ok(Arrival::Pending)
    }

    /// Hands queued control frames of `peer` to its control rail: one by one, or, where the
    /// strategy aggregates and several wait, as NET_BATCH frames of up to `batch_max` bytes.
    pub(crate) fn flush_control(&mut self, peer: PeerId, transports: &mut [Box<dyn Transport>]) -> Result<bool, EngineError> {
        self.recheck_control_rail(peer, transports);
        let mut moved = false;
        loop {
            let Some(state) = self.peers.get_mut(peer as usize).and_then(Option::as_mut) else { return Ok(moved) };
            if state.unsent.is_empty() {
                state.aggregator.flush();
                return Ok(moved);
            }
            let rail = state.control_rail;
            let transport = &mut transports[rail];
            let frames = match self.aggregates && state.unsent.len() > 1 {
                true => fill_batch(&mut self.batch, &state.unsent, state.received, self.batch_max),
                false => 1,
            };
            let outcome = match frames {
                1 => send_one(transport.as_mut(), peer, &state.unsent[0], state.received),
                _ => transport.try_send(peer, Header::net_batch().as_bytes(), &[std::io::IoSlice::new(&self.batch)]),
            };
            match outcome {
                Ok(SendOutcome::Sent) => {
                    self.traffic[rail].sent(1, if frames == 1 { state.unsent[0].payload.len() } else { self.batch.len() } as u64);
                    state.acknowledged = state.received;
                    state.sent_in_step = self.step;
                    for mut control in state.unsent.drain(..frames) {
                        // Taken, not copied: a frame sent again after a failover completes nothing.
                        self.sent.extend(control.completes.take());
                        state.unacked.push_back(control);
                    }
                    self.unsent -= frames;
                    self.unacked += frames;
                    moved = true;
                }
                Ok(SendOutcome::WouldBlock) => return Ok(moved),
                Err(TransportError::Unreachable(_)) => {
                    self.fail_rail(peer, rail, transports)?;
                    moved = true;
                }
                Err(error) => return Err(transport_error(transport.as_ref(), peer, error)),
            }
        }
    }

    /// Chooses `peer`'s control rail again when the last choice is [`CONTROL_RAIL_RECHECK`] old
    /// and no control frame is in flight: frames on the old rail have all arrived, so those on
    /// the new one cannot overtake them.
    fn recheck_control_rail(&mut self, peer: PeerId, transports: &[Box<dyn Transport>]) {
        let Some(state) = self.peers.get(peer as usize).and_then(Option::as_ref) else { return };
        if !state.unacked.is_empty() || state.unsent.is_empty() || state.control_chosen.elapsed() < CONTROL_RAIL_RECHECK {
            return;
        }
        let waiting = waiting_bytes(&self.transfers, self.rails.len());
        let chosen = self.strategy.eager_rail(self.eager_limit, &views(&self.rails, transports, peer, &state.rail_up, &waiting));
        let Some(state) = self.peers.get_mut(peer as usize).and_then(Option::as_mut) else { return };
        state.control_chosen = Instant::now();
        if chosen != state.control_rail && state.rail_up.get(chosen) == Some(&true) {
            if self.debug {
                eprintln!("braid: rank {}: control rail to rank {peer} moves from {} to {chosen}", self.rank, state.control_rail);
            }
            state.control_rail = chosen;
        }
    }

    /// Sends bare acknowledgements: to every peer owed one when `idle`, else only where
    /// [`ACK_EVERY`] frames are waiting.
    fn send_acks(&mut self, idle: bool, transports: &mut [Box<dyn Transport>]) -> Result<bool, EngineError> {
        if !self.ack_due {
            return Ok(false);
        }
        let mut moved = false;
        let mut still_due = false;
        for peer in 0..self.peers.len() as PeerId {
            let Some(state) = self.peers[peer as usize].as_mut() else { continue };
            let owed = state.received - state.acknowledged;
            if owed == 0 {
                continue;
            }
            if !idle && owed < ACK_EVERY {
                still_due = true;
                continue;
            }
            let rail = state.control_rail;
            let header = Header::net_ack(state.received);
            match transports[rail].try_send(peer, header.as_bytes(), &[]) {
                Ok(SendOutcome::Sent) => {
                    self.traffic[rail].sent(1, 0);
                    state.acknowledged = state.received;
                    moved = true;
                }
                Ok(SendOutcome::WouldBlock) => still_due = true,
                Err(TransportError::Unreachable(_)) => {
                    still_due = true;
                    self.fail_rail(peer, rail, transports)?;
                }
                Err(error) => return Err(transport_error(transports[rail].as_ref(), peer, error)),
            }
        }
        self.ack_due = still_due;
        Ok(moved)
    }

    /// `rail` no longer reaches `peer`: move its control frames and chunks to the other rails.
    #[cold]
    fn fail_rail(&mut self, peer: PeerId, rail: usize, transports: &[Box<dyn Transport>]) -> Result<(), EngineError> {
        let Some(state) = self.peers.get_mut(peer as usize).and_then(Option::as_mut) else { return Ok(()) };
        let newly_failed = std::mem::replace(&mut state.rail_up[rail], false);
        if newly_failed && self.debug {
            eprintln!("braid: rank {}: rail {} to rank {peer} failed", self.rank, transports[rail].name());
        }
        if !state.rail_up.iter().any(|&up| up) {
            return Err(EngineError::Unreachable { rank: peer, reason: "every network rail to it has failed".into() });
        }
        if !newly_failed {
            return Ok(());
        }
        if state.control_rail == rail {
            let up = state.rail_up.clone();
            let waiting = waiting_bytes(&self.transfers, self.rails.len());
            state.control_rail = self.strategy.eager_rail(self.eager_limit, &views(&self.rails, transports, peer, &up, &waiting));
            if !up[state.control_rail] {
                state.control_rail = up.iter().position(|&up| up).expect("a rail is up");
            }
            // Everything not acknowledged may have died with the rail: re-send it, in order.
            self.unacked -= state.unacked.len();
            self.unsent += state.unacked.len();
            while let Some(control) = state.unacked.pop_back() {
                state.unsent.push_front(control);
            }
        }
        for transfer in self.transfers.iter_mut().filter(|transfer| transfer.peer == peer) {
            for piece in transfer.pieces.iter().filter(|piece| piece.rail == rail) {
                settle(piece);
                transfer.unassigned.push((piece.start, piece.end));
            }
            transfer.pieces.retain(|piece| piece.rail != rail);
        }
        Ok(())
    }

    /// Checks the rails of every peer with something outstanding, splits new transfers, posts
    /// chunks, sends acknowledgements and observes drain rates. `idle`: nothing else happened in
    /// this progress step.
    pub(crate) fn advance(&mut self, transports: &mut [Box<dyn Transport>], idle: bool) -> Result<bool, EngineError> {
        let mut moved = false;
        // A new step: the control rails are free again for whatever waits for them.
        self.step += 1;
        self.detect_failures(transports)?;
        moved |= self.flush_unsent(transports)?;
        if self.transfers.is_empty() {
            self.gaps.idle();
        } else {
            let now = Instant::now();
            self.gaps.step(now);
            // Observed before posting: a rail that ran dry must be seen empty, not refilled.
            self.observe_rates(transports, now);
            moved |= self.post_chunks(transports)?;
        }
        moved |= self.send_acks(idle && !moved, transports)?;
        Ok(moved)
    }

    /// Whether control frames wait to be handed to a rail (some may be held for aggregation).
    #[inline]
    pub(crate) fn has_unsent(&self) -> bool {
        self.unsent > 0
    }

    /// Hands every peer's queued control frames (waiting ones included) to its control rail.
    pub(crate) fn flush_unsent(&mut self, transports: &mut [Box<dyn Transport>]) -> Result<bool, EngineError> {
        let mut moved = false;
        if self.unsent > 0 {
            for peer in 0..self.peers.len() as PeerId {
                if self.peers[peer as usize].as_ref().is_some_and(|state| !state.unsent.is_empty()) {
                    moved |= self.flush_control(peer, transports)?;
                }
            }
        }
        Ok(moved)
    }

    /// A rail that stopped reaching a peer with frames or chunks outstanding is failed over.
    fn detect_failures(&mut self, transports: &[Box<dyn Transport>]) -> Result<(), EngineError> {
        if self.unacked == 0 && self.unsent == 0 && self.transfers.is_empty() {
            return Ok(());
        }
        for peer in 0..self.peers.len() as PeerId {
            let Some(state) = self.peers[peer as usize].as_ref() else { continue };
            let busy = !state.unacked.is_empty() || !state.unsent.is_empty() || self.transfers.iter().any(|transfer| transfer.peer == peer);
            if !busy {
                continue;
            }
            let dead: Vec<usize> = (0..self.rails.len()).filter(|&rail| state.rail_up[rail] && !transports[rail].reaches(peer)).collect();
            for rail in dead {
                self.fail_rail(peer, rail, transports)?;
            }
        }
        Ok(())
    }

    /// Splits unassigned ranges and posts chunks while the rails take them.
    fn post_chunks(&mut self, transports: &mut [Box<dyn Transport>]) -> Result<bool, EngineError> {
        let mut moved = false;
        let mut failed: Option<(PeerId, usize)> = None;
        let mut chunks: Vec<Chunk> = Vec::new();
        let horizon = self.strategy.queue_horizon_ns().map(|horizon| self.gaps.horizon_ns(horizon));
        // Room left under each (rail, peer) cap: the backlog is read once per call, then
        // counted down, however many pieces share the rail. The list is kept between calls so
        // that a progress step allocates nothing.
        let mut rooms = std::mem::take(&mut self.rooms);
        rooms.clear();
        let mut waiting = if self.transfers.iter().any(|transfer| !transfer.unassigned.is_empty()) {
            waiting_bytes(&self.transfers, self.rails.len())
        } else {
            Vec::new()
        };
        for transfer in &mut self.transfers {
            if !transfer.unassigned.is_empty() {
                let Some(state) = self.peers.get(transfer.peer as usize).and_then(Option::as_ref) else { continue };
                let up = &state.rail_up;
                let first_new = transfer.pieces.len();
                for (start, end) in transfer.unassigned.drain(..) {
                    chunks.clear();
                    self.strategy.split(end - start, &views(&self.rails, transports, transfer.peer, up, &waiting), &mut chunks);
                    for chunk in &chunks {
                        // A strategy that picked a failed rail is overruled: the first rail up takes it.
                        let rail = if up[chunk.rail] { chunk.rail } else { up.iter().position(|&up| up).unwrap_or(chunk.rail) };
                        let offset = start + chunk.offset;
                        transfer.pieces.push(Piece::new(rail, offset, offset + chunk.len));
                        waiting[rail] += chunk.len as u64;
                    }
                }
                if let (Some(offload), None) = (&self.offload, horizon) {
                    let views = views(&self.rails, transports, transfer.peer, up, &waiting);
                    let offloaded = offload_split(offload, &self.rails, transports, transfer, first_new, state.control_rail, &views);
                    if offloaded > 0 && self.debug {
                        eprintln!("braid: rank {}: {offloaded} pieces of {} bytes to rank {} offloaded", self.rank, transfer.data.len(), transfer.peer);
                    }
                }
                if self.debug {
                    let split: Vec<(usize, usize)> = transfer.pieces.iter().map(|piece| (piece.rail, piece.end - piece.posted)).collect();
                    let rails: Vec<(u64, f64)> = views(&self.rails, transports, transfer.peer, up, &waiting).iter().map(|view| (view.backlog_bytes, view.rate_factor)).collect();
                    eprintln!("braid: rank {}: {} bytes to rank {} split (rail, bytes) {split:?}; rails then (backlog, rate factor) {rails:?}", self.rank, transfer.data.len(), transfer.peer);
                }
            }
            for piece in &mut transfer.pieces {
                let rail = &mut self.rails[piece.rail];
                if piece.posted < piece.end && !rail.peers.contains(&transfer.peer) {
                    rail.watch(transfer.peer, transports[piece.rail].as_ref());
                }
                if let Some(job) = &piece.job {
                    let posted = piece.start + job.posted();
                    if posted > piece.posted {
                        self.traffic[piece.rail].sent((posted - piece.posted).div_ceil(rail.chunk_max) as u64, (posted - piece.posted) as u64);
                        rail.posted += (posted - piece.posted) as u64;
                        transfer.posted_on[piece.rail] += (posted - piece.posted) as u64;
                        piece.posted = posted;
                        moved = true;
                    }
                    if job.failed() {
                        failed.get_or_insert((transfer.peer, piece.rail));
                    } else if job.finished() {
                        piece.job = None;
                    }
                    continue;
                }
                if piece.posted == piece.end {
                    // Ended by a takeover's cut rather than by a post: its last byte left earlier.
                    piece.posted_mark.get_or_insert(transfer.posted_on[piece.rail]);
                    continue;
                }
                let slot = horizon.map(|horizon| {
                    rooms.iter().position(|&(r, peer, _)| r == piece.rail && peer == transfer.peer).unwrap_or_else(|| {
                        let cap = rail.queue_cap(horizon);
                        rooms.push((piece.rail, transfer.peer, cap.saturating_sub(transports[piece.rail].backlog(transfer.peer))));
                        rooms.len() - 1
                    })
                });
                let (frame_max, mut room) = match slot {
                    Some(slot) => (rail.chunk_max.min(QUEUED_FRAME_MAX), rooms[slot].2),
                    None => (rail.chunk_max, u64::MAX),
                };
                while piece.posted < piece.end && room > 0 {
                    let end = piece.end.min(piece.posted + frame_max);
                    room = room.saturating_sub((end - piece.posted) as u64);
                    let header = Header::net_data(transfer.receiver, piece.posted as u64, transfer.transfer);
                    let transport = &mut transports[piece.rail];
                    match transport.try_send(transfer.peer, header.as_bytes(), &gather(&transfer.data[piece.posted..end])) {
                        Ok(SendOutcome::Sent) => {
                            self.traffic[piece.rail].sent(1, (end - piece.posted) as u64);
                            rail.posted += (end - piece.posted) as u64;
                            transfer.posted_on[piece.rail] += (end - piece.posted) as u64;
                            piece.posted = end;
                            if end == piece.end {
                                piece.posted_mark = Some(transfer.posted_on[piece.rail]);
                            }
                            moved = true;
                        }
                        Ok(SendOutcome::WouldBlock) => {
                            room = 0;
                            break;
                        }
                        Err(TransportError::Unreachable(_)) => {
                            failed.get_or_insert((transfer.peer, piece.rail));
                            break;
                        }
                        Err(error) => return Err(transport_error(transport.as_ref(), transfer.peer, error)),
                    }
                }
                if let Some(slot) = slot {
                    rooms[slot].2 = room;
                }
            }
        }
        self.rooms = rooms;
        if let Some((peer, rail)) = failed {
            self.fail_rail(peer, rail, transports)?;
            moved = true;
        }
        if horizon.is_some() {
            moved |= self.rebalance(transports);
        }
        Ok(moved)
    }

    /// Lets every rail that has no chunk bytes left to send, and is about to run dry, take over
    /// the end of the largest remainder another rail still holds for the same transfer, as
    /// much as the strategy says ends both together. Waiting until the thief runs dry keeps
    /// two rails from trading the same bytes back and forth on noisy rate estimates. When no
    /// rail holds a remainder, the dry rail may send again what a slower rail has posted but
    /// not yet delivered (see [`hedge`]).
    fn rebalance(&mut self, transports: &[Box<dyn Transport>]) -> bool {
        let mut waiting = waiting_bytes(&self.transfers, self.rails.len());
        let mut moved = false;
        // A rail's backlog holds one transfer's bytes only when one transfer is in flight.
        let hedging = self.hedging && self.transfers.len() == 1;
        for transfer in &mut self.transfers {
            let Some(state) = self.peers.get(transfer.peer as usize).and_then(Option::as_ref) else { continue };
            for thief in 0..self.rails.len() {
                if !state.rail_up[thief] || waiting[thief] > 0 {
                    continue;
                }
                let dry = self.rails[thief].chunk_max.min(QUEUED_FRAME_MAX) as u64;
                let remainder = |piece: &Piece| piece.end - piece.posted;
                let Some(victim) = (0..transfer.pieces.len())
                    .filter(|&index| {
                        let piece = &transfer.pieces[index];
                        piece.rail != thief && piece.job.is_none() && remainder(piece) > 0
                    })
                    .max_by_key(|&index| remainder(&transfer.pieces[index]))
                else {
                    if hedging && transports[thief].backlog(transfer.peer) <= dry {
                        let views = views(&self.rails, transports, transfer.peer, &state.rail_up, &waiting);
                        if let Some(hedged) = hedge(self.strategy.as_mut(), transfer, thief, transports, &views) {
                            waiting[thief] += hedged as u64;
                            moved = true;
                            if self.debug {
                                eprintln!("braid: rank {}: rail {thief} sends again the last {hedged} undelivered bytes of a slower rail to rank {}", self.rank, transfer.peer);
                            }
                        }
                    }
                    continue;
                };
                let piece = transfer.pieces[victim].clone();
                if transports[thief].backlog(transfer.peer) > dry {
                    continue;
                }
                let views = views(&self.rails, transports, transfer.peer, &state.rail_up, &waiting);
                let taken = self.strategy.takeover(thief, piece.rail, remainder(&piece), &views);
                if taken == 0 {
                    continue;
                }
                let cut = piece.end - taken;
                transfer.pieces[victim].end = cut;
                transfer.pieces[victim].unhedged_end = transfer.pieces[victim].unhedged_end.min(cut);
                transfer.pieces.push(Piece::new(thief, cut, piece.end));
                waiting[piece.rail] -= taken as u64;
                waiting[thief] += taken as u64;
                moved = true;
                if self.debug {
                    eprintln!("braid: rank {}: rail {thief} takes over {taken} bytes of rail {} to rank {}", self.rank, piece.rail, transfer.peer);
                }
            }
        }
        moved
    }

    /// Feeds each rail's rate estimator with what drained since the last observation. Only
    /// stretches during which the rail stayed busy count (an idle stretch would pass for a slow
    /// rail, and a backlog found empty emptied at some unknown moment), and only once
    /// `split_min` bytes drained over at least [`DRAIN_OBSERVATION_MIN`], and not the first such
    /// stretch after the rail was idle.
    fn observe_rates(&mut self, transports: &[Box<dyn Transport>], now: Instant) {
        for (index, rail) in self.rails.iter_mut().enumerate() {
            if rail.peers.is_empty() {
                continue;
            }
            let backlog: u64 = rail.peers.iter().map(|&peer| transports[index].backlog(peer)).sum();
            if backlog == 0 {
                rail.peers.clear();
                continue;
            }
            let drained = (rail.backlog + rail.posted).saturating_sub(backlog);
            let elapsed = now.duration_since(rail.observed_at);
            if drained < self.observe_min || elapsed < DRAIN_OBSERVATION_MIN {
                continue;
            }
            if !std::mem::replace(&mut rail.first_stretch, false) {
                rail.rate.observe(drained, elapsed.as_nanos() as u64, &rail.profile);
            }
            rail.posted = 0;
            rail.backlog = backlog;
            rail.observed_at = now;
        }
    }
}

impl Rail {
    /// Most bytes kept queued on this rail: `horizon_ns` of its corrected sustained rate, and
    /// at least two frames so that it never runs dry between two progress steps.
    fn queue_cap(&self, horizon_ns: f64) -> u64 {
        let rate = self.profile.bandwidth() * multirail::usable_factor(self.rate.factor());
        let floor = 2 * self.chunk_max.min(QUEUED_FRAME_MAX) as u64;
        let cap = horizon_ns * rate / 1e9;
        if cap.is_finite() { (cap as u64).max(floor) } else { u64::MAX }
    }

    /// Starts counting `peer`'s backlog in this rail's drain observations; a rail seen idle
    /// starts a fresh observation now.
    #[cold]
    fn watch(&mut self, peer: PeerId, transport: &dyn Transport) {
        if self.peers.is_empty() {
            self.posted = 0;
            self.backlog = 0;
            self.observed_at = Instant::now();
            self.first_stretch = true;
        }
        self.backlog += transport.backlog(peer);
        self.peers.push(peer);
    }
}

/// Posts one control frame, acknowledging everything up to `received`.
fn send_one(transport: &mut dyn Transport, peer: PeerId, control: &Control, received: u64) -> Result<SendOutcome, TransportError> {
    let header = Header::control(control.seq, received, &control.header);
    transport.try_send(peer, header.as_bytes(), &gather(&control.payload))
}

/// Fills `batch` with the first of `unsent` (at least one) that fit in `max` bytes; returns how
/// many it holds.
fn fill_batch(batch: &mut Vec<u8>, unsent: &VecDeque<Control>, received: u64, max: usize) -> usize {
    batch.clear();
    let mut frames = 0;
    for control in unsent {
        let header = Header::control(control.seq, received, &control.header);
        let entry = BATCH_ENTRY_OVERHEAD + header.as_bytes().len() + control.payload.len();
        if frames > 0 && batch.len() + entry > max {
            break;
        }
        push_batch_entry(batch, header.as_bytes(), &control.payload);
        frames += 1;
    }
    frames
}

/// Hedging, after multipath TCP's opportunistic retransmission: every byte of `transfer` is
/// posted, `thief` has run dry, and another rail still holds posted bytes it has not delivered
/// (its backlog: the tail of its piece, as it holds no other transfer). The thief sends again as
/// much of that tail's end as the strategy's takeover says ends both together; the receiver
/// keeps whichever copy lands first and ignores the other, so a rail slowed after the split
/// no longer holds the message up. The copy left on the slow rail costs that rail its time,
/// which its backlog shows the next split. Returns the bytes hedged.
fn hedge(strategy: &mut dyn MultirailStrategy, transfer: &mut Transfer, thief: usize, transports: &[Box<dyn Transport>], views: &[RailView<'_>]) -> Option<usize> {
    let undelivered = |piece: &Piece, mark: u64| {
        let behind = transfer.posted_on[piece.rail] - mark;
        let own = transports[piece.rail].backlog(transfer.peer).saturating_sub(behind);
        let first = piece.end.saturating_sub(usize::try_from(own).unwrap_or(usize::MAX)).max(piece.start);
        piece.unhedged_end.saturating_sub(first)
    };
    let victim = (0..transfer.pieces.len())
        .filter_map(|index| {
            let piece = &transfer.pieces[index];
            let mark = piece.posted_mark.filter(|_| piece.rail != thief && piece.job.is_none() && piece.unhedged_end > piece.start)?;
            Some((index, undelivered(piece, mark)))
        })
        .max_by_key(|&(_, bytes)| bytes)?;
    let (index, bytes) = victim;
    let hedged = strategy.takeover(thief, transfer.pieces[index].rail, bytes, views);
    if hedged == 0 {
        return None;
    }
    let end = transfer.pieces[index].unhedged_end;
    transfer.pieces[index].unhedged_end = end - hedged;
    transfer.pieces.push(Piece::hedge(thief, end - hedged, end));
    Some(hedged)
}

/// Adds `[start, end)` to disjoint sorted `ranges`, merging what touches or overlaps.
fn add_range(ranges: &mut Vec<(usize, usize)>, start: usize, end: usize) {
    if start == end {
        return;
    }
    let first = ranges.partition_point(|&(_, e)| e < start);
    let mut merged = (start, end);
    let mut last = first;
    while last < ranges.len() && ranges[last].0 <= merged.1 {
        merged = (merged.0.min(ranges[last].0), merged.1.max(ranges[last].1));
        last += 1;
    }
    ranges.splice(first..last, [merged]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_horizon_covers_recent_absences_and_forgets_them() {
        let base = 5e6;
        let mut gaps = ProgressGaps::default();
        let mut now = Instant::now();
        gaps.step(now);
        assert_eq!(gaps.horizon_ns(base), base);
        now += Duration::from_millis(12);
        gaps.step(now);
        assert_eq!(gaps.horizon_ns(base), 24e6);
        // Steps close together: the 12 ms absence is halved every half-life.
        for _ in 0..(GAP_HALF_LIFE.as_millis() + 1) {
            now += Duration::from_millis(1);
            gaps.step(now);
        }
        assert_eq!(gaps.horizon_ns(base), 12e6);
        for _ in 0..(4 * GAP_HALF_LIFE.as_millis()) {
            now += Duration::from_millis(1);
            gaps.step(now);
        }
        assert_eq!(gaps.horizon_ns(base), base);
        // Time with nothing outstanding is not an absence; a very long one is capped.
        gaps.idle();
        now += Duration::from_secs(1);
        gaps.step(now);
        assert_eq!(gaps.horizon_ns(base), base);
        now += Duration::from_secs(1);
        gaps.step(now);
        assert_eq!(gaps.horizon_ns(base), GAP_HORIZON_MAX.as_nanos() as f64);
    }

    #[test]
    fn no_offload_when_off_oversubscribed_or_on_one_rail() {
        let spare = SpareCpus { count: 4, cpus: Vec::new() };
        let config = Config { offload_cost_ns: Some(1000), ..Config::default() };
        assert!(start_offload(&Config { offload: OffloadMode::Off, ..config.clone() }, 2, &spare, false).is_none());
        assert!(start_offload(&config, 2, &spare, true).is_none());
        assert!(start_offload(&config, 1, &spare, false).is_none());
        assert!(start_offload(&config, 2, &SpareCpus::default(), false).is_none());
        let offload = start_offload(&config, 3, &spare, false).expect("two rails beyond the first and spare CPUs");
        assert_eq!(offload.cost_ns(), 1000.0);
    }

    #[test]
    fn waiting_bytes_count_what_no_rail_has_taken_yet() {
        static DATA: [u8; 100] = [0; 100];
        let transfer = |pieces: Vec<Piece>| Transfer { request: 0, peer: 1, receiver: 0, transfer: 0, data: &DATA, pieces, unassigned: Vec::new(), posted_on: vec![0; 2] };
        let transfers = [
            transfer(vec![Piece { posted: 10, ..Piece::new(0, 0, 60) }, Piece { posted: 100, ..Piece::new(1, 60, 100) }]),
            transfer(vec![Piece::new(1, 0, 30), Piece { posted: 35, ..Piece::new(0, 30, 100) }]),
        ];
        assert_eq!(waiting_bytes(&transfers, 3), vec![115, 30, 0]);
    }

    #[test]
    fn ranges_merge_overlaps_duplicates_and_neighbours() {
        let mut ranges = Vec::new();
        add_range(&mut ranges, 10, 20);
        add_range(&mut ranges, 30, 40);
        assert_eq!(ranges, vec![(10, 20), (30, 40)]);
        add_range(&mut ranges, 12, 18);
        assert_eq!(ranges, vec![(10, 20), (30, 40)]);
        add_range(&mut ranges, 20, 30);
        assert_eq!(ranges, vec![(10, 40)]);
        add_range(&mut ranges, 0, 5);
        add_range(&mut ranges, 45, 50);
        add_range(&mut ranges, 3, 47);
        assert_eq!(ranges, vec![(0, 50)]);
        add_range(&mut ranges, 50, 50);
        assert_eq!(ranges, vec![(0, 50)]);
    }
}
