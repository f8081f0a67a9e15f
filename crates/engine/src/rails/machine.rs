//! The rail set's core: every piece of protocol state of the rails (per-peer control channels,
//! transfers and receives, failover, rate observation) as one state machine. It reads no clock
//! (the time is an input, asked of its [`RailIo`] where needed) and calls no transport: it
//! hands the frames it wants written to its [`RailIo`] and takes the rails' answers and
//! reports as inputs, so the same logic runs over the real transports ([`super::Network`]) and
//! over a simulated network in the tests.

use std::cell::Cell;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

use braid_config::{Config, OffloadMode};
use braid_lane::{PeerId, Profile};
use braid_strategy::multirail::{self, MultirailStrategy, RailView, RateEstimator, SplitSettings};
use braid_strategy::ProtocolPolicy;
use braid_transport::TransportError;

use super::control::Peer;
use super::horizon::ProgressGaps;
use super::io::RailIo;
use super::transfer::{settle, waiting_bytes, Receive, Transfer};
use crate::counters::TransportTraffic;
use crate::frame::{CONTROL_OVERHEAD, EAGER_HEADER_MAX, NET_DATA_HEADER};
use crate::node::SpareCpus;
use crate::offload::Offload;
use crate::{protocol_error, EngineError};

/// One rail's state shared by every peer.
pub(super) struct Rail {
    pub(super) profile: Profile,
    pub(super) rate: RateEstimator,
    /// Largest NET_DATA payload.
    pub(super) chunk_max: usize,
    /// Drain observation: bytes posted since `observed_at`, the backlog then, and the peers the
    /// rail has carried chunks to since it was last seen idle (empty: not being observed).
    pub(super) posted: u64,
    pub(super) backlog: u64,
    pub(super) observed_at: Instant,
    pub(super) peers: Vec<PeerId>,
    /// The current observation is the first stretch since the rail was seen idle. A shaped
    /// link lets a burst through at once after idling, so that stretch would overstate the
    /// sustained rate; it only starts the next one.
    pub(super) first_stretch: bool,
}

/// The rail set's protocol state: everything sent over the rails and received from them.
pub(crate) struct RailMachine {
    pub(super) rails: Vec<Rail>,
    pub(super) peers: Vec<Option<Peer>>,
    /// Largest eager message to a network peer (`ProtocolPolicy::rails_eager_limit`).
    pub(crate) eager_limit: usize,
    pub(super) strategy: Box<dyn MultirailStrategy>,
    /// Smallest drain worth a rate observation (BRAID_SPLIT_MIN).
    pub(super) observe_min: u64,
    pub(super) transfers: Vec<Transfer>,
    pub(super) receives: Vec<Receive>,
    pub(super) spare: Vec<Vec<u8>>,
    pub(super) unsent: usize,
    pub(super) unacked: usize,
    pub(super) ack_due: bool,
    pub(super) debug: bool,
    /// Rails that stopped reaching a peer since the engine last asked: (peer, rail).
    pub(crate) failovers: Vec<(PeerId, usize)>,
    /// BRAID_RAIL_REFILL: the share of a rail's queue cap that must be free before a sleeping
    /// sender wakes to top it up (see [`Rail::refill`]).
    pub(super) refill_share: f64,
    /// BRAID_RAIL_HEDGE: see [`hedge`].
    pub(super) hedging: bool,
    /// BRAID_RAIL_DELAY_FRESH_MS: round trips older than this count as no standing queue (zero:
    /// not read).
    pub(super) delay_fresh: Duration,
    pub(super) rank: u32,
    /// Workers that submit the chunks of a split when that pays (BRAID_OFFLOAD), through
    /// writers the rails lend; dropped before the rails, so no writer is still out when they
    /// close.
    pub(super) offload: Option<Offload>,
    /// How long this rank recently went between two progress steps with chunks to post.
    pub(super) gaps: ProgressGaps,
    /// The chunk bytes each rail has not taken yet, as `sleep_limit` and `rebalance` count them
    /// at every step, kept for its capacity (a cell: `sleep_limit` only reads the machine).
    pub(super) waiting_scratch: Cell<Vec<u64>>,
    /// `post_chunks`' room left per (rail, peer), kept for its capacity.
    pub(super) rooms: Vec<(usize, PeerId, u64)>,
    /// Whether eager frames wait for a busy control rail (the strategy's choice).
    pub(super) aggregates: bool,
    /// Progress steps so far: a frame that left in the current one makes its rail busy.
    pub(super) step: u64,
    /// Payload of the NET_BATCH frame being built, kept for its capacity.
    pub(super) batch: Vec<u8>,
    /// Most payload bytes in one NET_BATCH frame.
    pub(super) batch_max: usize,
    /// Send requests whose frames left; the engine completes them (`take_sent`).
    pub(super) sent: Vec<u32>,
    /// What this rank sent on each rail (the engine counts what arrives).
    pub(crate) traffic: Vec<TransportTraffic>,
    /// Control frames handed to a rail so far, and the peer of the latest: the driver notes when
    /// this rank last sent (see [`super::Network::reply_spin`]).
    pub(super) handed: u64,
    pub(super) handed_to: PeerId,
}

/// What the strategy sees of each rail toward `peer`. A rail's backlog is what its transport
/// still holds for the peer plus `waiting[rail]`, the chunk bytes assigned to it that it has not
/// taken yet: once a socket buffer is full the transport's count stops growing, and a rail
/// judged by it alone would look ever less busy than it is.
pub(super) fn views<'a>(rails: &'a [Rail], io: &impl RailIo, peer: PeerId, up: &[bool], waiting: &[u64]) -> Vec<RailView<'a>> {
    rails
        .iter()
        .enumerate()
        .zip(up)
        .zip(waiting)
        .map(|(((index, rail), &up), &waiting)| RailView { profile: &rail.profile, backlog_bytes: io.backlog(index, peer) + waiting, rate_factor: rail.rate.factor(), up, standing_delay_ns: 0.0 })
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

/// The error a rail's failure other than unreachability ends the job with.
#[cold]
pub(super) fn rail_error(io: &impl RailIo, rail: usize, peer: PeerId, error: TransportError) -> EngineError {
    EngineError::Transport(format!("{} transport, rank {peer}: {error}", io.name(rail)))
}

impl RailMachine {
    /// The state for rails with these `profiles` and largest frame payloads (`max_payloads`),
    /// toward the `rail_peers`, as `io` reaches them at `now`; `spare` and `oversubscribed` say
    /// whether offload workers may run, `policy` how large an eager message may be.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        config: &Config,
        policy: &ProtocolPolicy,
        rank: u32,
        profiles: Vec<Profile>,
        max_payloads: &[usize],
        rail_peers: Vec<PeerId>,
        io: &impl RailIo,
        (spare, oversubscribed): (&SpareCpus, bool),
        now: Instant,
    ) -> RailMachine {
        let settings = SplitSettings::from_config(config);
        let rails: Vec<Rail> = profiles
            .into_iter()
            .zip(max_payloads)
            .map(|(profile, &max_payload)| Rail {
                profile,
                rate: settings.rate_estimator(),
                chunk_max: max_payload.saturating_sub(NET_DATA_HEADER).max(1),
                posted: 0,
                backlog: 0,
                observed_at: now,
                peers: Vec::new(),
                first_stretch: false,
            })
            .collect();
        let frame_room = max_payloads.iter().map(|max_payload| max_payload.saturating_sub(CONTROL_OVERHEAD + EAGER_HEADER_MAX)).min().unwrap_or(0);
        let all_up = vec![true; rails.len()];
        let eager_limit = if rails.is_empty() {
            0
        } else {
            let views: Vec<RailView<'_>> = rails.iter().zip(&all_up).map(|(rail, &up)| RailView { profile: &rail.profile, backlog_bytes: 0, rate_factor: 1.0, up, standing_delay_ns: 0.0 }).collect();
            policy.rails_eager_limit(multirail::rendezvous_threshold(&views, CONTROL_OVERHEAD + EAGER_HEADER_MAX), frame_room)
        };
        let mut strategy = multirail::build(config.strategy, settings);
        let size = rail_peers.iter().max().map_or(0, |&peer| peer as usize + 1);
        let mut peers: Vec<Option<Peer>> = (0..size).map(|_| None).collect();
        // A strategy that holds chunks back hands them over in small frames, where equation 1
        // never pays: no workers, and no start-up measurement of their cost.
        let offload = match strategy.queue_horizon_ns() {
            None => start_offload(config, rails.len(), spare, oversubscribed),
            Some(_) => None,
        };
        let nothing_waiting = vec![0; rails.len()];
        let strategy_aggregates = strategy.aggregates_eager();
        for peer in rail_peers {
            let up: Vec<bool> = (0..rails.len()).map(|rail| io.reaches(rail, peer)).collect();
            // Control frames share their rail with eager messages up to the limit: the rail
            // that delivers such a message soonest, not merely the one with the least latency.
            let control_rail = strategy.eager_rail(eager_limit, &views(&rails, io, peer, &up, &nothing_waiting));
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
                posted_on: vec![0; rails.len()],
            });
        }
        let traffic = vec![TransportTraffic::default(); rails.len()];
        RailMachine {
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
            failovers: Vec::new(),
            refill_share: config.rail_refill,
            hedging: config.rail_hedge,
            delay_fresh: Duration::from_millis(config.rail_delay_fresh_ms.into()),
            rank,
            offload,
            gaps: ProgressGaps::default(),
            waiting_scratch: Cell::new(Vec::new()),
            rooms: Vec::new(),
            aggregates: strategy_aggregates,
            step: 1,
            batch: Vec::new(),
            batch_max: settings.aggregate_max.min(frame_room),
            sent: Vec::new(),
            traffic,
            handed: 0,
            handed_to: 0,
        }
    }

    /// The strategy's name and each peer's control rail, for the debug line.
    pub(crate) fn describe(&self) -> String {
        let controls: Vec<(usize, usize)> = self.peers.iter().enumerate().filter_map(|(rank, peer)| peer.as_ref().map(|peer| (rank, peer.control_rail))).collect();
        let offload = match &self.offload {
            Some(offload) => format!("offload cost {:.1} us", offload.cost_ns() / 1e3),
            None => "no offload".to_string(),
        };
        format!("strategy {}, eager up to {} bytes, control rails (rank, rail) {controls:?}, {offload}", self.strategy.name(), self.eager_limit)
    }

    /// Something to send, re-send or acknowledge, or chunks to wait for (whose rails must be
    /// watched): the driver runs [`RailMachine::advance`].
    #[inline]
    pub(crate) fn active(&self) -> bool {
        self.unsent > 0 || self.unacked > 0 || self.ack_due || !self.transfers.is_empty() || !self.receives.is_empty()
    }

    /// A rendezvous is moving: a transfer whose chunks go out, or a receive waiting for chunks.
    #[inline]
    pub(crate) fn moving_bulk(&self) -> bool {
        !self.transfers.is_empty() || !self.receives.is_empty()
    }

    /// Whether the control rail of the peer that the latest control frame went to takes more
    /// now (false while its connection waits for room after a short write).
    pub(crate) fn last_control_rail_has_room(&self, io: &impl RailIo) -> bool {
        let peer = self.handed_to;
        self.peers.get(peer as usize).and_then(Option::as_ref).is_none_or(|state| io.has_room(state.control_rail, peer))
    }

    /// Frames or chunks not yet handed to a rail (finalize waits for them).
    pub(crate) fn has_work(&self) -> bool {
        self.unsent > 0 || self.transfers.iter().any(|transfer| !transfer.unassigned.is_empty() || transfer.pieces.iter().any(|piece| piece.posted < piece.end))
    }

    /// The rank slept, planning to be back by `planned`: only a later return is an absence.
    pub(crate) fn slept_until(&mut self, planned: Instant) {
        self.gaps.slept_until(planned);
    }

    pub(super) fn peer(&mut self, peer: PeerId) -> Result<&mut Peer, EngineError> {
        self.peers.get_mut(peer as usize).and_then(Option::as_mut).ok_or_else(|| protocol_error(peer, "network frame from a peer not routed over the rails"))
    }

    /// Checks the rails of every peer with something outstanding, splits new transfers, posts
    /// chunks, sends acknowledgements and observes drain rates. `idle`: nothing else happened in
    /// this progress step.
    pub(crate) fn advance(&mut self, idle: bool, io: &mut impl RailIo) -> Result<bool, EngineError> {
        let mut moved = false;
        // A new step: the control rails are free again for whatever waits for them.
        self.step += 1;
        self.detect_failures(io)?;
        moved |= self.flush_unsent(io)?;
        if self.transfers.is_empty() {
            self.gaps.idle();
        } else {
            let now = io.now();
            self.gaps.step(now);
            // Observed before posting: a rail that ran dry must be seen empty, not refilled.
            self.observe_rates(now, io);
            moved |= self.post_chunks(now, io)?;
        }
        moved |= self.send_acks(idle && !moved, io)?;
        Ok(moved)
    }

    /// A rail that stopped reaching a peer with frames or chunks outstanding, either way, is
    /// failed over. A receiver waiting for chunks watches too: with nothing of its own in flight
    /// it would otherwise never learn that every rail to the sender has failed, and wait forever.
    fn detect_failures(&mut self, io: &impl RailIo) -> Result<(), EngineError> {
        if self.unacked == 0 && self.unsent == 0 && self.transfers.is_empty() && self.receives.is_empty() {
            return Ok(());
        }
        for peer in 0..self.peers.len() as PeerId {
            let Some(state) = self.peers[peer as usize].as_ref() else { continue };
            let busy = !state.unacked.is_empty() || !state.unsent.is_empty() || self.transfers.iter().any(|transfer| transfer.peer == peer) || self.receives.iter().any(|receive| receive.peer == peer);
            if busy {
                self.fail_unreachable_rails(peer, io)?;
            }
        }
        Ok(())
    }

    /// A receive waits for a message from each of `awaited`, and nothing of this rank's own is in
    /// flight to those peers, so [`RailMachine::detect_failures`] does not watch them: a rail that
    /// stopped reaching one of them (its connection closed, on an idle link by the keepalive) is
    /// failed, and a peer that no rail reaches any more ends the wait with an error instead of
    /// leaving it to wait forever.
    pub(crate) fn check_awaited(&mut self, awaited: impl Iterator<Item = PeerId>, io: &impl RailIo) -> Result<(), EngineError> {
        for peer in awaited {
            self.fail_unreachable_rails(peer, io)?;
        }
        Ok(())
    }

    /// Fails every rail still up to `peer` (a peer over the rails) that no longer reaches it.
    fn fail_unreachable_rails(&mut self, peer: PeerId, io: &impl RailIo) -> Result<(), EngineError> {
        for rail in 0..self.rails.len() {
            let up = self.peers.get(peer as usize).and_then(Option::as_ref).is_some_and(|state| state.rail_up[rail]);
            if up && !io.reaches(rail, peer) {
                self.fail_rail(peer, rail, io)?;
            }
        }
        Ok(())
    }

    /// `rail` no longer reaches `peer`: move its control frames and chunks to the other rails.
    #[cold]
    pub(super) fn fail_rail(&mut self, peer: PeerId, rail: usize, io: &impl RailIo) -> Result<(), EngineError> {
        let Some(state) = self.peers.get_mut(peer as usize).and_then(Option::as_mut) else { return Ok(()) };
        let newly_failed = std::mem::replace(&mut state.rail_up[rail], false);
        if newly_failed {
            self.failovers.push((peer, rail));
            if self.debug {
                let why = io.down_reason(rail, peer).unwrap_or_else(|| "no reason known".into());
                debug_line!(self.rank, "rail {} to rank {peer} failed: {why}", io.name(rail));
            }
        }
        if !state.rail_up.iter().any(|&up| up) {
            let reasons: Vec<String> = (0..self.rails.len()).filter_map(|rail| Some(format!("{}: {}", io.name(rail), io.down_reason(rail, peer)?))).collect();
            let mut reason = String::from("every network rail to it has failed");
            if !reasons.is_empty() {
                reason += &format!(" ({})", reasons.join("; "));
            }
            return Err(EngineError::Unreachable { rank: peer, reason });
        }
        if !newly_failed {
            return Ok(());
        }
        if state.control_rail == rail {
            let up = state.rail_up.clone();
            let waiting = waiting_bytes(&self.transfers, self.rails.len());
            state.control_rail = self.strategy.eager_rail(self.eager_limit, &views(&self.rails, io, peer, &up, &waiting));
            if !up[state.control_rail] {
                state.control_rail = up.iter().position(|&up| up).expect("a rail is up");
            }
        }
        // Everything not acknowledged may have died with the rail, if it was ours, or its
        // acknowledgement may have, if it was the peer's control rail (each side picks its own):
        // re-send it, in order. The peer drops what it has and acknowledges again.
        self.unacked -= state.unacked.len();
        self.unsent += state.unacked.len();
        while let Some(control) = state.unacked.pop_back() {
            state.unsent.push_front(control);
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
}

#[cfg(test)]
mod tests {
    use super::*;
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
}
