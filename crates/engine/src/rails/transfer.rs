//! Rendezvous payloads over the rails: the sender's transfers, split over the rails by the
//! strategy and posted in chunks (by offload workers when that pays), a dry rail taking over
//! the end of another's remainder or hedging its undelivered tail; the receiver's ranges.

use std::sync::Arc;
use std::time::Instant;

use braid_lane::PeerId;
use braid_strategy::multirail::{self, Chunk, MultirailStrategy, RailView};
use braid_transport::{SendOutcome, TransportError};

use super::io::RailIo;
use super::machine::{rail_error, views, Rail, RailMachine};
use crate::frame::Header;
use crate::offload::{Offload, OffloadJob};
use crate::{gather, protocol_error, EngineError};

/// A piece of a rendezvous payload assigned to one rail; `posted` is the next byte to post.
/// An offloaded piece is posted by a worker thread (`job`), which reports how far it got.
#[derive(Debug, Clone)]
pub(super) struct Piece {
    pub(super) rail: usize,
    pub(super) start: usize,
    pub(super) posted: usize,
    pub(super) end: usize,
    pub(super) job: Option<Arc<OffloadJob>>,
    /// `[start, unhedged_end)` is what no other rail has been asked to send again (see
    /// [`hedge`]); a hedge itself is never hedged.
    pub(super) unhedged_end: usize,
    /// The peer's `posted_on[rail]` when this piece's last byte was posted. What the rail took
    /// for the peer after that, of any transfer, sits behind this piece's undelivered tail in
    /// its backlog.
    pub(super) posted_mark: Option<u64>,
    /// Where its latest frames begin: the receiver counts a frame's bytes only once all of
    /// them are in, so a byte still in the rail's backlog holds back its frame's earlier bytes.
    pub(super) frames: FrameStarts,
}

/// How many of a piece's latest frame starts are kept; an undelivered tail reaches further back
/// than these only on a rail that holds more than this many frames of one piece.
const FRAME_STARTS_KEPT: usize = 8;

/// The starts of a piece's latest frames (posted in order), and its largest frame.
#[derive(Debug, Clone, Default)]
pub(super) struct FrameStarts {
    starts: [usize; FRAME_STARTS_KEPT],
    count: usize,
    largest: usize,
}

impl FrameStarts {
    pub(super) fn record(&mut self, start: usize, len: usize) {
        self.starts[self.count % FRAME_STARTS_KEPT] = start;
        self.count += 1;
        self.largest = self.largest.max(len);
    }

    /// The first byte of the frame that holds `byte`, not before `floor`: exact within the kept
    /// frames; before them, up to the largest frame earlier.
    pub(super) fn frame_start(&self, byte: usize, floor: usize) -> usize {
        let kept = self.count.min(FRAME_STARTS_KEPT);
        let oldest = self.starts[(self.count - kept) % FRAME_STARTS_KEPT];
        if kept == 0 || byte < oldest {
            return byte.saturating_sub(self.largest.saturating_sub(1)).max(floor);
        }
        self.starts.iter().take(kept).copied().filter(|&start| start <= byte).max().unwrap_or(oldest).max(floor)
    }
}

impl Piece {
    pub(super) fn new(rail: usize, start: usize, end: usize) -> Piece {
        Piece { rail, start, posted: start, end, job: None, unhedged_end: end, posted_mark: None, frames: FrameStarts::default() }
    }

    /// A copy of `[start, end)`, sent again on `rail`.
    pub(super) fn hedge(rail: usize, start: usize, end: usize) -> Piece {
        Piece { unhedged_end: start, ..Piece::new(rail, start, end) }
    }
}

/// Waits until the worker posting `piece` (if any) is done with its bytes: their buffer may be
/// given back to the application once the piece is dropped. A worker ends promptly once its
/// frames are written or its connection is shut down.
pub(super) fn settle(piece: &Piece) {
    if let Some(job) = &piece.job {
        while !job.finished() {
            std::thread::yield_now();
        }
    }
}

/// A rendezvous send whose receiver sent CTS; it lives until FIN.
pub(super) struct Transfer {
    pub(super) request: u32,
    pub(super) peer: PeerId,
    pub(super) receiver: u32,
    pub(super) transfer: u64,
    pub(super) data: &'static [u8],
    pub(super) pieces: Vec<Piece>,
    /// Byte ranges not assigned to a rail yet (all of it at first, a failed rail's later).
    pub(super) unassigned: Vec<(usize, usize)>,
}

/// A rendezvous receive being filled by NET_DATA chunks.
pub(super) struct Receive {
    pub(super) request: u32,
    pub(super) peer: PeerId,
    pub(super) transfer: u64,
    pub(super) expected: usize,
    /// Disjoint, sorted byte ranges that have arrived.
    pub(super) ranges: Vec<(usize, usize)>,
}

/// Smallest NET_DATA frame a rail's queue is topped up with when the strategy limits what a
/// rail holds: a top-up is the room left under the cap, in as few frames as
/// [`QUEUED_FRAME_MAX`] allows (fewer frames, system calls and receive-side reads per byte than
/// a fixed small frame), and at least this, so the cap is kept to within this many bytes.
pub(super) const QUEUED_FRAME_MIN: usize = 64 << 10;

/// Largest NET_DATA frame of such a top-up. A transport that takes only part of a frame keeps
/// the rest (TCP copies it into its pending buffer, which takes 256 KiB before it refuses
/// more): with a cap raised to cover long absences (up to 50 ms of a rail's drain), frames of
/// the whole room would have that copy reach megabytes.
pub(super) const QUEUED_FRAME_MAX: usize = 256 << 10;

/// Hands the pieces of a fresh split (`transfer.pieces[first..]`) to offload workers when
/// equation 1 of Brunet, Trahay and Denis 2008 says that submitting them in parallel beats submitting them one after
/// another, each piece's submission costing a copy of its bytes and each piece's duration
/// being its predicted finish on its rail. The piece on the peer's
/// control rail stays with this thread (control frames must not wait behind a worker), and so
/// does any whose rail cannot lend a writer. Returns how many pieces went to workers.
#[cold]
fn offload_split(offload: &Offload, rails: &[Rail], io: &mut impl RailIo, transfer: &mut Transfer, first: usize, control_rail: usize, views: &[RailView<'_>]) -> usize {
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
        let Some(writer) = io.lend_writer(piece.rail, transfer.peer) else { continue };
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
pub(super) fn waiting_bytes(transfers: &[Transfer], rails: usize) -> Vec<u64> {
    let mut waiting = Vec::new();
    fill_waiting_bytes(transfers, rails, &mut waiting);
    waiting
}

/// [`waiting_bytes`] into `waiting`, reusing its capacity (the progress step's form: no
/// allocation once the machine's scratch vector has grown to the rail count).
pub(super) fn fill_waiting_bytes(transfers: &[Transfer], rails: usize, waiting: &mut Vec<u64>) {
    waiting.clear();
    waiting.resize(rails, 0);
    for piece in transfers.iter().flat_map(|transfer| &transfer.pieces) {
        waiting[piece.rail] += (piece.end - piece.posted) as u64;
    }
}

impl RailMachine {
    /// CTS `transfer` from `peer`: send `len` bytes of `data` to its request `receiver`.
    pub(crate) fn start_transfer(&mut self, peer: PeerId, request: u32, receiver: u32, transfer: u64, data: &'static [u8]) {
        self.transfers.push(Transfer { request, peer, receiver, transfer, data, pieces: Vec::new(), unassigned: vec![(0, data.len())] });
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

    /// Whether receive `receiver` still waits for chunks of `transfer` from `peer`.
    pub(crate) fn expects(&self, peer: PeerId, receiver: u32, transfer: u64) -> bool {
        self.receives.iter().any(|r| r.peer == peer && r.request == receiver && r.transfer == transfer)
    }

    /// Receive `request` sent CTS `transfer` for `expected` bytes of `peer`'s send.
    pub(crate) fn expect(&mut self, peer: PeerId, request: u32, transfer: u64, expected: usize) {
        self.receives.push(Receive { request, peer, transfer, expected, ranges: Vec::new() });
    }

    /// A chunk of `len` bytes at `offset` arrived for receive `receiver`: records its range and
    /// returns how many of its bytes no earlier chunk brought (a hedged copy may bring them
    /// twice); `None` for a chunk of an earlier transfer, to be dropped. A receive whose bytes are
    /// all in is forgotten.
    pub(crate) fn place_data(&mut self, peer: PeerId, receiver: u32, offset: usize, transfer: u64, len: usize) -> Result<Option<usize>, EngineError> {
        let Some(index) = self.receives.iter().position(|r| r.peer == peer && r.request == receiver && r.transfer == transfer) else {
            return Ok(None);
        };
        let receive = &mut self.receives[index];
        let end = offset.checked_add(len).filter(|&end| end <= receive.expected).ok_or_else(|| protocol_error(peer, "DATA beyond the expected length"))?;
        let fresh = add_range(&mut receive.ranges, offset, end);
        if receive.ranges.as_slice() == [(0, receive.expected)] {
            self.receives.swap_remove(index);
        }
        Ok(Some(fresh))
    }

    /// Splits unassigned ranges and posts chunks while the rails take them.
    pub(super) fn post_chunks(&mut self, now: Instant, io: &mut impl RailIo) -> Result<bool, EngineError> {
        let mut moved = false;
        let mut failed: Option<(PeerId, usize)> = None;
        let mut chunks: Vec<Chunk> = Vec::new();
        let horizon = self.queue_horizon_ns();
        // Room left under each (rail, peer) cap: the backlog is read once per call, then
        // counted down, however many pieces share the rail. The list is kept between calls so
        // that a progress step allocates nothing.
        let mut rooms = std::mem::take(&mut self.rooms);
        rooms.clear();
        let mut waiting = if self.transfers.iter().any(|transfer| !transfer.unassigned.is_empty()) { waiting_bytes(&self.transfers, self.rails.len()) } else { Vec::new() };
        for transfer in &mut self.transfers {
            if !transfer.unassigned.is_empty() {
                let Some(state) = self.peers.get(transfer.peer as usize).and_then(Option::as_ref) else { continue };
                let up = &state.rail_up;
                let first_new = transfer.pieces.len();
                for (start, end) in transfer.unassigned.drain(..) {
                    chunks.clear();
                    self.strategy.split(end - start, &views(&self.rails, io, transfer.peer, up, &waiting), &mut chunks);
                    for chunk in &chunks {
                        // A strategy that picked a failed rail is overruled: the first rail up takes it.
                        let rail = if up[chunk.rail] { chunk.rail } else { up.iter().position(|&up| up).unwrap_or(chunk.rail) };
                        let offset = start + chunk.offset;
                        transfer.pieces.push(Piece::new(rail, offset, offset + chunk.len));
                        waiting[rail] += chunk.len as u64;
                    }
                }
                if let (Some(offload), None) = (&self.offload, horizon) {
                    let views = views(&self.rails, io, transfer.peer, up, &waiting);
                    let offloaded = offload_split(offload, &self.rails, io, transfer, first_new, state.control_rail, &views);
                    if offloaded > 0 && self.debug {
                        debug_line!(self.rank, "{offloaded} pieces of {} bytes to rank {} offloaded", transfer.data.len(), transfer.peer);
                    }
                }
                if self.debug {
                    let split: Vec<(usize, usize)> = transfer.pieces.iter().map(|piece| (piece.rail, piece.end - piece.posted)).collect();
                    let rails: Vec<(u64, f64)> = views(&self.rails, io, transfer.peer, up, &waiting).iter().map(|view| (view.backlog_bytes, view.rate_factor)).collect();
                    debug_line!(
                        self.rank,
                        "{} bytes to rank {} split (rail, bytes) {split:?}; rails then (backlog, rate factor) {rails:?}; control rail {}",
                        transfer.data.len(),
                        transfer.peer,
                        state.control_rail
                    );
                }
            }
            let Some(peer) = self.peers.get_mut(transfer.peer as usize).and_then(Option::as_mut) else { continue };
            let posted_on = &mut peer.posted_on;
            for piece in &mut transfer.pieces {
                let rail = &mut self.rails[piece.rail];
                if piece.posted < piece.end && !rail.peers.contains(&transfer.peer) {
                    rail.watch(transfer.peer, io.backlog(piece.rail, transfer.peer), now);
                }
                if let Some(job) = &piece.job {
                    let posted = piece.start + job.posted();
                    if posted > piece.posted {
                        self.traffic[piece.rail].sent((posted - piece.posted).div_ceil(rail.chunk_max) as u64, (posted - piece.posted) as u64);
                        rail.posted += (posted - piece.posted) as u64;
                        posted_on[piece.rail] += (posted - piece.posted) as u64;
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
                    piece.posted_mark.get_or_insert(posted_on[piece.rail]);
                    continue;
                }
                // A socket waiting for room takes no chunk until its doorbell says it has some:
                // neither its backlog is read nor a frame queued behind its pending bytes.
                if !io.has_room(piece.rail, transfer.peer) {
                    continue;
                }
                let slot = horizon.map(|horizon| {
                    rooms.iter().position(|&(r, peer, _)| r == piece.rail && peer == transfer.peer).unwrap_or_else(|| {
                        let cap = rail.queue_cap(horizon);
                        rooms.push((piece.rail, transfer.peer, cap.saturating_sub(io.backlog(piece.rail, transfer.peer))));
                        rooms.len() - 1
                    })
                });
                let mut room = slot.map_or(u64::MAX, |slot| rooms[slot].2);
                while piece.posted < piece.end && room > 0 {
                    let frame_max = rail.chunk_max.min(usize::try_from(room).unwrap_or(usize::MAX).clamp(QUEUED_FRAME_MIN, QUEUED_FRAME_MAX));
                    let end = piece.end.min(piece.posted + frame_max);
                    room = room.saturating_sub((end - piece.posted) as u64);
                    let header = Header::net_data(transfer.receiver, piece.posted as u64, transfer.transfer);
                    match io.transmit(piece.rail, transfer.peer, header.as_bytes(), &gather(&transfer.data[piece.posted..end])) {
                        Ok(SendOutcome::Sent) => {
                            self.traffic[piece.rail].sent(1, (end - piece.posted) as u64);
                            piece.frames.record(piece.posted, end - piece.posted);
                            rail.posted += (end - piece.posted) as u64;
                            posted_on[piece.rail] += (end - piece.posted) as u64;
                            piece.posted = end;
                            if end == piece.end {
                                piece.posted_mark = Some(posted_on[piece.rail]);
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
                        Err(error) => return Err(rail_error(io, piece.rail, transfer.peer, error)),
                    }
                }
                if let Some(slot) = slot {
                    rooms[slot].2 = room;
                }
            }
        }
        self.rooms = rooms;
        if let Some((peer, rail)) = failed {
            self.fail_rail(peer, rail, io)?;
            moved = true;
        }
        if horizon.is_some() {
            moved |= self.rebalance(io);
        }
        Ok(moved)
    }

    /// Lets every rail that has no chunk bytes left to send, and is about to run dry, take over
    /// the end of the largest remainder another rail still holds for the same transfer, as
    /// much as the strategy says ends both together. Waiting until the thief runs dry keeps
    /// two rails from trading the same bytes back and forth on noisy rate estimates. When no
    /// rail holds a remainder, the dry rail may send again what a slower rail has posted but
    /// not yet delivered (see [`hedge`]), the oldest transfer's first.
    pub(super) fn rebalance(&mut self, io: &impl RailIo) -> bool {
        let mut waiting = self.waiting_scratch.take();
        fill_waiting_bytes(&self.transfers, self.rails.len(), &mut waiting);
        let remainder = |piece: &Piece| piece.end - piece.posted;
        let mut moved = false;
        for transfer in &mut self.transfers {
            let Some(state) = self.peers.get(transfer.peer as usize).and_then(Option::as_ref) else { continue };
            for thief in 0..self.rails.len() {
                if !runs_dry(&self.rails, io, &state.rail_up, &waiting, thief, transfer.peer) {
                    continue;
                }
                let Some(victim) = (0..transfer.pieces.len())
                    .filter(|&index| {
                        let piece = &transfer.pieces[index];
                        piece.rail != thief && piece.job.is_none() && remainder(piece) > 0
                    })
                    .max_by_key(|&index| remainder(&transfer.pieces[index]))
                else {
                    continue;
                };
                let piece = transfer.pieces[victim].clone();
                let views = views(&self.rails, io, transfer.peer, &state.rail_up, &waiting);
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
                    debug_line!(self.rank, "rail {thief} takes over {taken} bytes of rail {} to rank {}", piece.rail, transfer.peer);
                }
            }
        }
        if self.hedging {
            moved |= self.hedge_dry_rails(io, &mut waiting);
        }
        self.waiting_scratch.set(waiting);
        moved
    }

    /// The last resort of [`rebalance`](Self::rebalance): a rail still dry once the takeovers
    /// are done sends again the undelivered end of a slower rail's piece (see [`hedge`]), the
    /// oldest transfer's first, but only toward a peer none of whose transfers has unposted
    /// bytes left on another rail: those are a takeover's to move, and hedging before them
    /// would spend the rail on copies while they wait.
    fn hedge_dry_rails(&mut self, io: &impl RailIo, waiting: &mut [u64]) -> bool {
        let mut moved = false;
        for thief in 0..self.rails.len() {
            // The last peer looked at, and whether `thief` may hedge for it: it runs dry towards
            // the peer and no transfer to the peer has unposted bytes on another rail (the same
            // for each of its transfers, which mostly come in a row, until a hedge fills `thief`).
            let mut looked_at: Option<(PeerId, bool)> = None;
            for index in 0..self.transfers.len() {
                let peer = self.transfers[index].peer;
                let Some(state) = self.peers.get(peer as usize).and_then(Option::as_ref) else { continue };
                let may_hedge = match looked_at {
                    Some((seen, may_hedge)) if seen == peer => may_hedge,
                    _ => {
                        let may_hedge = runs_dry(&self.rails, io, &state.rail_up, waiting, thief, peer)
                            && !self.transfers.iter().filter(|transfer| transfer.peer == peer).flat_map(|transfer| &transfer.pieces).any(|piece| piece.rail != thief && piece.posted < piece.end);
                        looked_at = Some((peer, may_hedge));
                        may_hedge
                    }
                };
                if !may_hedge {
                    continue;
                }
                let views = views(&self.rails, io, peer, &state.rail_up, waiting);
                if let Some(hedged) = hedge(self.strategy.as_mut(), &mut self.transfers[index], &state.posted_on, thief, io, &views) {
                    waiting[thief] += hedged as u64;
                    looked_at = None;
                    moved = true;
                    if self.debug {
                        debug_line!(self.rank, "rail {thief} sends again the last {hedged} undelivered bytes of a slower rail to rank {peer}");
                    }
                }
            }
        }
        moved
    }
}

impl Rail {
    /// Most bytes kept queued on this rail: `horizon_ns` of its corrected sustained rate, and
    /// at least two frames so that it never runs dry between two progress steps.
    pub(super) fn queue_cap(&self, horizon_ns: f64) -> u64 {
        let rate = self.profile.bandwidth() * multirail::usable_factor(self.rate.factor());
        let floor = 2 * self.frame_min();
        let cap = horizon_ns * rate / 1e9;
        if cap.is_finite() {
            (cap as u64).max(floor)
        } else {
            u64::MAX
        }
    }

    /// How much room under `cap` a sleeping sender waits for before it tops this rail up:
    /// `share` of it (BRAID_RAIL_REFILL), at least a frame. The sender then wakes once per
    /// refill, not once per frame, and posts the refill in frames of up to
    /// [`QUEUED_FRAME_MAX`]; the rest of the cap still covers the wake-up.
    pub(super) fn refill(&self, cap: u64, share: f64) -> u64 {
        ((cap as f64 * share) as u64).max(self.frame_min())
    }

    /// The smallest top-up frame on this rail ([`QUEUED_FRAME_MIN`], or its largest frame if
    /// that is smaller): also how little a rail holds when it counts as dry.
    pub(super) fn frame_min(&self) -> u64 {
        self.chunk_max.min(QUEUED_FRAME_MIN) as u64
    }
}

/// Whether rail `thief` has run dry toward `peer`, so that it may take over or hedge: up, no
/// chunk bytes of any transfer waiting for it, room in its socket (a rail waiting for room is
/// not about to run dry; its backlog is not read), and at most a frame in its backlog.
fn runs_dry(rails: &[Rail], io: &impl RailIo, up: &[bool], waiting: &[u64], thief: usize, peer: PeerId) -> bool {
    up[thief] && waiting[thief] == 0 && io.has_room(thief, peer) && io.backlog(thief, peer) <= rails[thief].frame_min()
}

/// Hedging, after multipath TCP's opportunistic retransmission: every byte of `transfer` is
/// posted, `thief` has run dry, and another rail still holds posted bytes it has not delivered
/// (its backlog to the peer, less what it took for the peer after the piece, `posted_on` minus
/// the piece's mark; counted from the start of the frame it begins in, as the receiver can use
/// a frame only once all of it is in). The thief sends again as much of that tail's end as the
/// strategy's takeover says ends both together; the receiver keeps whichever copy lands first
/// and ignores the other, so a rail slowed after the split no longer holds the message up. The
/// copy left on the slow rail costs that rail its time, which its backlog shows the next split.
/// Returns the bytes hedged.
fn hedge(strategy: &mut dyn MultirailStrategy, transfer: &mut Transfer, posted_on: &[u64], thief: usize, io: &impl RailIo, views: &[RailView<'_>]) -> Option<usize> {
    let undelivered = |piece: &Piece, mark: u64| {
        let behind = posted_on[piece.rail] - mark;
        let own = usize::try_from(io.backlog(piece.rail, transfer.peer).saturating_sub(behind)).unwrap_or(usize::MAX);
        if own == 0 {
            return 0;
        }
        let first = piece.frames.frame_start(piece.end.saturating_sub(own), piece.start);
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

/// Adds `[start, end)` to disjoint sorted `ranges`, merging what touches or overlaps; returns
/// how many of its bytes were not in `ranges` yet.
fn add_range(ranges: &mut Vec<(usize, usize)>, start: usize, end: usize) -> usize {
    if start == end {
        return 0;
    }
    let first = ranges.partition_point(|&(_, e)| e < start);
    let mut merged = (start, end);
    let mut last = first;
    let mut covered = 0;
    while last < ranges.len() && ranges[last].0 <= merged.1 {
        covered += ranges[last].1.min(end).saturating_sub(ranges[last].0.max(start));
        merged = (merged.0.min(ranges[last].0), merged.1.max(ranges[last].1));
        last += 1;
    }
    ranges.splice(first..last, [merged]);
    end - start - covered
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn waiting_bytes_count_what_no_rail_has_taken_yet() {
        static DATA: [u8; 100] = [0; 100];
        let transfer = |pieces: Vec<Piece>| Transfer { request: 0, peer: 1, receiver: 0, transfer: 0, data: &DATA, pieces, unassigned: Vec::new() };
        let transfers = [
            transfer(vec![Piece { posted: 10, ..Piece::new(0, 0, 60) }, Piece { posted: 100, ..Piece::new(1, 60, 100) }]),
            transfer(vec![Piece::new(1, 0, 30), Piece { posted: 35, ..Piece::new(0, 30, 100) }]),
        ];
        assert_eq!(waiting_bytes(&transfers, 3), vec![115, 30, 0]);
    }

    #[test]
    fn a_byte_is_held_back_to_the_start_of_its_frame() {
        let mut frames = FrameStarts::default();
        assert_eq!(frames.frame_start(500, 100), 500, "no frame posted yet");
        let mut posted = 100;
        for len in [64, 256, 128, 128, 64, 64, 64, 64, 200] {
            frames.record(posted, len);
            posted += len;
        }
        // Frames: 100, 164, 420, 548, 676, 740, 804, 868, 932..1132; the first is no longer kept.
        assert_eq!(frames.frame_start(1000, 100), 932);
        assert_eq!(frames.frame_start(932, 100), 932);
        assert_eq!(frames.frame_start(931, 100), 868);
        assert_eq!(frames.frame_start(300, 100), 164);
        assert_eq!(frames.frame_start(164, 100), 164);
        // Before the kept frames: up to the largest frame (256) earlier, not before the floor.
        assert_eq!(frames.frame_start(163, 100), 100);
        assert_eq!(frames.frame_start(163, 0), 0);
    }

    #[test]
    fn ranges_merge_overlaps_duplicates_and_neighbours() {
        let mut ranges = Vec::new();
        assert_eq!(add_range(&mut ranges, 10, 20), 10);
        assert_eq!(add_range(&mut ranges, 30, 40), 10);
        assert_eq!(ranges, vec![(10, 20), (30, 40)]);
        assert_eq!(add_range(&mut ranges, 12, 18), 0);
        assert_eq!(ranges, vec![(10, 20), (30, 40)]);
        assert_eq!(add_range(&mut ranges, 20, 30), 10);
        assert_eq!(ranges, vec![(10, 40)]);
        assert_eq!(add_range(&mut ranges, 0, 5), 5);
        assert_eq!(add_range(&mut ranges, 45, 50), 5);
        // Only the gaps are new: 5..10 and 40..45.
        assert_eq!(add_range(&mut ranges, 3, 47), 10);
        assert_eq!(ranges, vec![(0, 50)]);
        assert_eq!(add_range(&mut ranges, 50, 50), 0);
        assert_eq!(add_range(&mut ranges, 50, 52), 2);
        assert_eq!(ranges, vec![(0, 52)]);
    }
}
