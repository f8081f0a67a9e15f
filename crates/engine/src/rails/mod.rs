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

//!
//! The rail set owns its rail transports. Its parts: `control.rs` (the sequenced control
//! channel: sequence numbers, acknowledgements, re-sending, aggregation), `transfer.rs`
//! (rendezvous payloads split over the rails, received ranges, takeover and hedging),
//! `horizon.rs` (how far ahead chunks are queued), `rates.rs` (drain-rate observation),
//! `doorbell.rs` (sleeping on every rail at once, and for how long).

mod control;
mod doorbell;
mod horizon;
mod rates;
mod transfer;

use std::collections::VecDeque;
use std::time::Instant;

use braid_config::{Config, OffloadMode};
use braid_strategy::multirail::{self, MultirailStrategy, RailView, RateEstimator, SplitSettings};
use braid_strategy::ProtocolPolicy;
use braid_lane::{PeerId, Profile};
use braid_transport::Transport;

use crate::counters::TransportTraffic;
use crate::frame::{CONTROL_OVERHEAD, EAGER_HEADER_MAX, NET_DATA_HEADER};
use crate::node::{NodeInfo, SpareCpus};
use crate::offload::Offload;
use crate::{protocol_error, EngineError};
use control::Peer;
use horizon::ProgressGaps;
use transfer::{settle, waiting_bytes, Receive, Transfer};

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

/// The rail set: the rail transports and everything sent over them.
pub(crate) struct Network {
    rails: Vec<Rail>,
    peers: Vec<Option<Peer>>,
    /// Largest eager message to a network peer (`ProtocolPolicy::rails_eager_limit`).
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
    /// `links`, so no writer is still out when they close.
    offload: Option<Offload>,
    /// The rail transports, in rail order. Lent out while they are polled (see
    /// [`Network::lend_links`]): the frames they deliver update this rail set.
    links: Vec<Box<dyn Transport>>,
    /// Every rail's doorbell in one epoll set (`None`: some rail has none).
    doorbell: Option<braid_sys::net::Poller>,
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

impl Network {
    /// Takes over the rail transports `links` (already connected) with their `profiles`, for
    /// the `rail_peers`; `node` says what CPUs offload may use, `policy` how large an eager
    /// message may be.
    pub(crate) fn new(
        config: &Config,
        policy: &ProtocolPolicy,
        rank: u32,
        profiles: Vec<Profile>,
        links: Vec<Box<dyn Transport>>,
        rail_peers: Vec<PeerId>,
        node: &NodeInfo,
    ) -> Network {
        let now = Instant::now();
        let transports = &links;
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
            policy.rails_eager_limit(multirail::rendezvous_threshold(&views, CONTROL_OVERHEAD + EAGER_HEADER_MAX), frame_room)
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
            doorbell: doorbell::open(&links),
            links,
        }
    }

    /// Lends the rail transports out, to be polled: the frames they deliver update this rail set
    /// (and the engine), which meanwhile only queues what it would send.
    #[inline]
    pub(crate) fn lend_links(&mut self) -> Vec<Box<dyn Transport>> {
        std::mem::take(&mut self.links)
    }

    /// Takes back the rail transports lent by [`Network::lend_links`].
    #[inline]
    pub(crate) fn return_links(&mut self, links: Vec<Box<dyn Transport>>) {
        self.links = links;
    }

    /// The rail transports' names, in rail order.
    pub(crate) fn link_names(&self) -> impl Iterator<Item = &str> + '_ {
        self.links.iter().map(|link| link.name())
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

    /// Checks the rails of every peer with something outstanding, splits new transfers, posts
    /// chunks, sends acknowledgements and observes drain rates. `idle`: nothing else happened in
    /// this progress step.
    pub(crate) fn advance(&mut self, idle: bool) -> Result<bool, EngineError> {
        let mut moved = false;
        // A new step: the control rails are free again for whatever waits for them.
        self.step += 1;
        self.detect_failures()?;
        moved |= self.flush_unsent()?;
        if self.transfers.is_empty() {
            self.gaps.idle();
        } else {
            let now = Instant::now();
            self.gaps.step(now);
            // Observed before posting: a rail that ran dry must be seen empty, not refilled.
            self.observe_rates(now);
            moved |= self.post_chunks()?;
        }
        moved |= self.send_acks(idle && !moved)?;
        Ok(moved)
    }

    /// A rail that stopped reaching a peer with frames or chunks outstanding is failed over.
    fn detect_failures(&mut self) -> Result<(), EngineError> {
        if self.unacked == 0 && self.unsent == 0 && self.transfers.is_empty() {
            return Ok(());
        }
        for peer in 0..self.peers.len() as PeerId {
            let Some(state) = self.peers[peer as usize].as_ref() else { continue };
            let busy = !state.unacked.is_empty() || !state.unsent.is_empty() || self.transfers.iter().any(|transfer| transfer.peer == peer);
            if !busy {
                continue;
            }
            let dead: Vec<usize> = (0..self.rails.len()).filter(|&rail| state.rail_up[rail] && !self.links[rail].reaches(peer)).collect();
            for rail in dead {
                self.fail_rail(peer, rail)?;
            }
        }
        Ok(())
    }

    /// `rail` no longer reaches `peer`: move its control frames and chunks to the other rails.
    #[cold]
    fn fail_rail(&mut self, peer: PeerId, rail: usize) -> Result<(), EngineError> {
        let Some(state) = self.peers.get_mut(peer as usize).and_then(Option::as_mut) else { return Ok(()) };
        let newly_failed = std::mem::replace(&mut state.rail_up[rail], false);
        if newly_failed && self.debug {
            eprintln!("braid: rank {}: rail {} to rank {peer} failed", self.rank, self.links[rail].name());
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
            state.control_rail = self.strategy.eager_rail(self.eager_limit, &views(&self.rails, &self.links, peer, &up, &waiting));
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
