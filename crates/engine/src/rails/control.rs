//! The sequenced control channel to each peer routed over the rails: control frames carry
//! per-peer sequence numbers and cumulative acknowledgements, unacknowledged copies are kept for
//! re-sending after a failover, the control rail is chosen again while nothing is in flight, and
//! eager frames posted while the rail is busy leave together as one NET_BATCH frame.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use braid_lane::PeerId;
use braid_strategy::multirail::{Aggregator, Decision};
use braid_transport::{PathTiming, SendOutcome, TransportError};

use super::io::RailIo;
use super::machine::{rail_error, views, RailMachine};
use super::transfer::waiting_bytes;
use crate::frame::{push_batch_entry, Frame, Header, BATCH_ENTRY_OVERHEAD, CONTROL_OVERHEAD, EAGER_HEADER_MAX};
use crate::{gather, protocol_error, EngineError};

/// A receiver acknowledges at least every this many control frames without waiting to be idle:
/// it bounds the copies a streaming sender keeps for re-sending.
pub(super) const ACK_EVERY: u64 = 32;

/// Payload buffers kept for reuse.
const SPARE_BUFFERS: usize = 64;

/// A control frame with its own copy of the payload, kept until the peer acknowledges it.
pub(super) struct Control {
    pub(super) seq: u64,
    pub(super) header: Header,
    pub(super) payload: Vec<u8>,
    /// The send request that completes when this frame leaves (a standard eager send).
    pub(super) completes: Option<u32>,
}

/// Control-frame state toward one peer routed over the rails.
pub(super) struct Peer {
    pub(super) control_rail: usize,
    /// When the control rail was last chosen.
    pub(super) control_chosen: Instant,
    pub(super) rail_up: Vec<bool>,
    pub(super) next_seq: u64,
    pub(super) unsent: VecDeque<Control>,
    pub(super) unacked: VecDeque<Control>,
    /// Highest sequence number received from the peer (all below it were received too).
    pub(super) received: u64,
    /// Highest sequence number we have acknowledged to the peer.
    pub(super) acknowledged: u64,
    /// Eager frames waiting for the control rail (see the module comment).
    pub(super) aggregator: Aggregator,
    /// The progress step in which a frame to this peer last left.
    pub(super) sent_in_step: u64,
    /// Chunk bytes posted to this peer on each rail, over every transfer: a piece's mark (see
    /// the transfer module's hedging) counts what its rail took after it from here.
    pub(super) posted_on: Vec<u64>,
}

/// How often, at most, a peer's control rail is chosen again (from the rails' backlogs), so
/// that control frames stop queueing behind chunks piled on one rail.
const CONTROL_RAIL_RECHECK: Duration = Duration::from_millis(2);

/// The queue a path holds for other traffic, as one frame would wait in it: the smoothed round
/// trip less the least one (a bulk flow queues one direction; its acknowledgements come back on
/// an empty path). Round trips measured more than `fresh` ago say nothing of the queue now:
/// none is counted.
fn standing_delay_ns(timing: PathTiming, fresh: Duration) -> f64 {
    if timing.since_data_sent > fresh {
        return 0.0;
    }
    timing.round_trip.saturating_sub(timing.least_round_trip).as_secs_f64() * 1e9
}

impl RailMachine {
    /// Queues a control frame (payload copied) to `peer`; returns its sequence number. When it
    /// leaves, send request `completes` is done (collected by [`RailMachine::take_sent`]).
    pub(crate) fn queue_control(&mut self, peer: PeerId, frame: Frame, payload: &[u8], completes: Option<u32>) -> u64 {
        let mut copy = self.spare.pop().unwrap_or_default();
        copy.clear();
        copy.extend_from_slice(payload);
        let Some(state) = self.peers.get_mut(peer as usize).and_then(Option::as_mut) else { unreachable!("the router sends only rail peers here") };
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
            // Sent again after a failover: the acknowledgement the peer lacks may have been lost
            // with the failed rail, so it is owed again.
            state.acknowledged = state.acknowledged.min(seq.saturating_sub(1));
            self.ack_due = true;
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

    /// Hands queued control frames of `peer` to its control rail: one by one, or, where the
    /// strategy aggregates and several wait, as NET_BATCH frames of up to `batch_max` bytes.
    pub(crate) fn flush_control(&mut self, peer: PeerId, io: &mut impl RailIo) -> Result<bool, EngineError> {
        self.recheck_control_rail(peer, io);
        let mut moved = false;
        loop {
            let Some(state) = self.peers.get_mut(peer as usize).and_then(Option::as_mut) else { return Ok(moved) };
            if state.unsent.is_empty() {
                state.aggregator.flush();
                return Ok(moved);
            }
            let rail = state.control_rail;
            let frames = match self.aggregates && state.unsent.len() > 1 {
                true => fill_batch(&mut self.batch, &state.unsent, state.received, self.batch_max),
                false => 1,
            };
            let outcome = match frames {
                1 => send_one(io, rail, peer, &state.unsent[0], state.received),
                _ => io.transmit(rail, peer, Header::net_batch().as_bytes(), &[std::io::IoSlice::new(&self.batch)]),
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
                    self.handed += 1;
                    self.handed_to = peer;
                    moved = true;
                }
                Ok(SendOutcome::WouldBlock) => return Ok(moved),
                Err(TransportError::Unreachable(_)) => {
                    self.fail_rail(peer, rail, io)?;
                    moved = true;
                }
                Err(error) => return Err(rail_error(io, rail, peer, error)),
            }
        }
    }

    /// Chooses `peer`'s control rail again when the last choice is [`CONTROL_RAIL_RECHECK`] old
    /// and no control frame is in flight: frames on the old rail have all arrived, so those on
    /// the new one cannot overtake them.
    fn recheck_control_rail(&mut self, peer: PeerId, io: &impl RailIo) {
        let Some(state) = self.peers.get(peer as usize).and_then(Option::as_ref) else { return };
        // The time is asked for last: a streaming sender always has frames in flight.
        if !state.unacked.is_empty() || state.unsent.is_empty() {
            return;
        }
        let now = io.now();
        if now.saturating_duration_since(state.control_chosen) < CONTROL_RAIL_RECHECK {
            return;
        }
        let waiting = waiting_bytes(&self.transfers, self.rails.len());
        let mut rails = views(&self.rails, io, peer, &state.rail_up, &waiting);
        if !self.delay_fresh.is_zero() {
            for (rail, view) in rails.iter_mut().enumerate() {
                view.standing_delay_ns = io.path_timing(rail, peer).map_or(0.0, |timing| standing_delay_ns(timing, self.delay_fresh));
            }
        }
        let chosen = self.strategy.eager_rail(self.eager_limit, &rails);
        let Some(state) = self.peers.get_mut(peer as usize).and_then(Option::as_mut) else { return };
        state.control_chosen = now;
        if chosen != state.control_rail && state.rail_up.get(chosen) == Some(&true) {
            if self.debug {
                let seen: Vec<(u64, f64)> = rails.iter().map(|view| (view.backlog_bytes, (view.standing_delay_ns / 1e3).round())).collect();
                debug_line!(self.rank, "control rail to rank {peer} moves from {} to {chosen}; rails (backlog, standing delay us) {seen:?}", state.control_rail);
            }
            state.control_rail = chosen;
        }
    }

    /// Sends bare acknowledgements: to every peer owed one when `idle`, else only where
    /// [`ACK_EVERY`] frames are waiting.
    pub(super) fn send_acks(&mut self, idle: bool, io: &mut impl RailIo) -> Result<bool, EngineError> {
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
            match io.transmit(rail, peer, header.as_bytes(), &[]) {
                Ok(SendOutcome::Sent) => {
                    self.traffic[rail].sent(1, 0);
                    state.acknowledged = state.received;
                    moved = true;
                }
                Ok(SendOutcome::WouldBlock) => still_due = true,
                Err(TransportError::Unreachable(_)) => {
                    still_due = true;
                    self.fail_rail(peer, rail, io)?;
                }
                Err(error) => return Err(rail_error(io, rail, peer, error)),
            }
        }
        self.ack_due = still_due;
        Ok(moved)
    }

    /// Whether control frames wait to be handed to a rail (some may be held for aggregation).
    #[inline]
    pub(crate) fn has_unsent(&self) -> bool {
        self.unsent > 0
    }

    /// Hands every peer's queued control frames (waiting ones included) to its control rail.
    pub(crate) fn flush_unsent(&mut self, io: &mut impl RailIo) -> Result<bool, EngineError> {
        let mut moved = false;
        if self.unsent > 0 {
            for peer in 0..self.peers.len() as PeerId {
                if self.peers[peer as usize].as_ref().is_some_and(|state| !state.unsent.is_empty()) {
                    moved |= self.flush_control(peer, io)?;
                }
            }
        }
        Ok(moved)
    }
}

/// Posts one control frame, acknowledging everything up to `received`.
fn send_one(io: &mut impl RailIo, rail: usize, peer: PeerId, control: &Control, received: u64) -> Result<SendOutcome, TransportError> {
    let header = Header::control(control.seq, received, &control.header);
    io.transmit(rail, peer, header.as_bytes(), &gather(&control.payload))
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
