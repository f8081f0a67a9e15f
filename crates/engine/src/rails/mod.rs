//! Peers reached only over the network rails (Brunet, Trahay and Denis 2008).
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
//!   backlog, over the time between two observations) corrects its profile for the next split.
//!
//! The rail set is split as quinn-proto splits a QUIC connection from its endpoint:
//! * **The core** ([`RailMachine`], `machine.rs`) holds every piece of protocol state and reads
//!   neither a clock nor a transport. Its inputs: the time, the frames that arrived, and what the
//!   rails report through [`io::RailIo`] (`io.rs`): whether a rail took a frame, has room, still
//!   reaches a peer, and its backlog. The time comes through `RailIo::now`, asked for only where
//!   it is needed, as often as the rail set read the clock before it was split: a clock read
//!   costs as much as the rest of a small message's way through the core. Its outputs: the frames to write
//!   (handed to [`io::RailIo::transmit`], borrowed from its queues), the sends completed
//!   (`take_sent`), the receives filled, and how long the rank may sleep (`sleep_limit`). Its
//!   parts: `control.rs` (the sequenced control channel: sequence numbers, acknowledgements,
//!   re-sending, aggregation), `transfer.rs` (rendezvous payloads split over the rails, received
//!   ranges, takeover and hedging), `horizon.rs` (how far ahead chunks are queued), `rates.rs`
//!   (drain-rate observation), `doorbell.rs` (how long the rank may sleep).
//! * **The driver** ([`Network`], this file) owns the rail transports and their doorbell set,
//!   answers the core's questions from them and from the clock, and feeds it.
//! * **The tests** run the same core on a simulated network (`simulated.rs`: rails with rates,
//!   latencies and buffers, a virtual clock, a seeded generator), rails failing included
//!   (`properties.rs`).

mod control;
mod doorbell;
pub(crate) use doorbell::RailDoorbells;
mod horizon;
mod io;
mod machine;
#[cfg(test)]
mod properties;
mod rates;
#[cfg(test)]
mod simulated;
mod transfer;

use std::sync::Arc;
use std::time::{Duration, Instant};

use braid_config::Config;
use braid_lane::{PeerId, Profile};
use braid_strategy::ProtocolPolicy;
use braid_transport::Transport;

use crate::frame::Frame;
use crate::node::NodeInfo;
use crate::EngineError;
use machine::RailMachine;

/// The rail set's driver: the rail transports, and the core ([`RailMachine`]) it feeds.
pub(crate) struct Network {
    /// Every piece of protocol state. Declared (so dropped) before `links`: its offload workers
    /// give back the writers they were lent before the transports close.
    machine: RailMachine,
    /// The rail transports, in rail order. Lent out while they are polled (see
    /// [`Network::lend_links`]): the frames they deliver update the core.
    links: Vec<Box<dyn Transport>>,
    /// Every rail's doorbell in one epoll set (`None`: some rail has none).
    doorbell: Option<Arc<RailDoorbells>>,
    /// Largest eager message to a network peer (`ProtocolPolicy::rails_eager_limit`).
    pub(crate) eager_limit: usize,
    /// When this rank last handed a control frame to a rail (see [`Network::reply_spin`]), and
    /// the core's count of them then.
    last_sent_at: Option<Instant>,
    handed_seen: u64,
}

impl Network {
    /// Takes over the rail transports `links` (already connected) with their `profiles`, for
    /// the `rail_peers`; `node` says what CPUs offload may use, `policy` how large an eager
    /// message may be.
    pub(crate) fn new(config: &Config, policy: &ProtocolPolicy, rank: u32, profiles: Vec<Profile>, links: Vec<Box<dyn Transport>>, rail_peers: Vec<PeerId>, node: &NodeInfo) -> Network {
        let max_payloads: Vec<usize> = links.iter().map(|link| link.capabilities().max_payload).collect();
        let offload = (&node.spare, node.oversubscribed);
        let machine = RailMachine::new(config, policy, rank, profiles, &max_payloads, rail_peers, &links, offload, Instant::now());
        Network { eager_limit: machine.eager_limit, doorbell: doorbell::open(&links), machine, links, last_sent_at: None, handed_seen: 0 }
    }

    /// Lends the rail transports out, to be polled: the frames they deliver update the core
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

    /// What this rank sent on each rail.
    /// Whether rails failed over since the last [`Network::take_failovers`].
    #[inline]
    pub(crate) fn has_failovers(&self) -> bool {
        !self.machine.failovers.is_empty()
    }

    /// The rails that failed over since the last take: (peer, rail).
    pub(crate) fn take_failovers(&mut self) -> Vec<(PeerId, usize)> {
        std::mem::take(&mut self.machine.failovers)
    }

    pub(crate) fn traffic(&self) -> &[crate::counters::TransportTraffic] {
        &self.machine.traffic
    }

    /// The strategy's name and each peer's control rail, for the debug line.
    pub(crate) fn describe(&self) -> String {
        self.machine.describe()
    }

    /// Something to send, re-send or acknowledge: the engine runs [`Network::advance`].
    #[inline]
    pub(crate) fn active(&self) -> bool {
        self.machine.active()
    }

    /// Frames or chunks not yet handed to a rail (finalize waits for them).
    pub(crate) fn has_work(&self) -> bool {
        self.machine.has_work()
    }

    /// A rendezvous is moving: chunks to send or to receive (see [`RailMachine::moving_bulk`]).
    #[inline]
    pub(crate) fn moving_bulk(&self) -> bool {
        self.machine.moving_bulk()
    }

    /// A progress step of the rails (see [`RailMachine::advance`]).
    pub(crate) fn advance(&mut self, idle: bool) -> Result<bool, EngineError> {
        let advanced = self.machine.advance(idle, &mut self.links);
        self.note_sends();
        advanced
    }

    /// Stamps the time if the core handed a control frame to a rail since the last look: one
    /// clock read per call that sent (beside its system call), none otherwise.
    #[inline]
    fn note_sends(&mut self) {
        if self.machine.handed != self.handed_seen {
            self.handed_seen = self.machine.handed;
            self.last_sent_at = Some(Instant::now());
        }
    }

    /// How long a rank that starts to wait at `now` stays awake for an answer: until
    /// `reply_window` after the last control frame it sent over the rails, when that
    /// frame's rail takes more (its answer, if it was a request, is due in about a round trip,
    /// and a wake-up on a CPU busy with packet work can cost several). Zero when it sent nothing
    /// that recently, or its socket is full (what it waits for then is room, which the doorbell
    /// reports).
    pub(crate) fn reply_spin(&self, now: Instant, reply_window: Duration) -> Duration {
        match self.last_sent_at {
            Some(sent) if !reply_window.is_zero() && self.machine.last_control_rail_has_room(&self.links) => (sent + reply_window).saturating_duration_since(now),
            _ => Duration::ZERO,
        }
    }

    /// Fails the rails that no longer reach a peer a receive waits for (see
    /// [`RailMachine::check_awaited`]).
    #[cold]
    pub(crate) fn check_awaited(&mut self, awaited: impl Iterator<Item = PeerId>) -> Result<(), EngineError> {
        self.machine.check_awaited(awaited, &self.links)
    }

    /// Queues a control frame to `peer` (see [`RailMachine::queue_control`]).
    #[inline]
    pub(crate) fn queue_control(&mut self, peer: PeerId, frame: Frame, payload: &[u8], completes: Option<u32>) -> u64 {
        self.machine.queue_control(peer, frame, payload, completes)
    }

    /// Whether the eager frame just queued to `peer` waits for its busy control rail.
    #[inline]
    pub(crate) fn holds_eager(&mut self, peer: PeerId, len: usize) -> bool {
        self.machine.holds_eager(peer, len)
    }

    /// Send requests whose frames have left since the last call.
    #[inline]
    pub(crate) fn take_sent(&mut self) -> impl Iterator<Item = u32> + '_ {
        self.machine.take_sent()
    }

    /// A CONTROL envelope arrived; true if its frame is new (see [`RailMachine::accept_control`]).
    #[inline]
    pub(crate) fn accept_control(&mut self, peer: PeerId, seq: u64, ack: u64) -> Result<bool, EngineError> {
        self.machine.accept_control(peer, seq, ack)
    }

    /// The peer has every control frame up to `ack`.
    #[inline]
    pub(crate) fn acknowledged(&mut self, peer: PeerId, ack: u64) -> Result<(), EngineError> {
        self.machine.acknowledged(peer, ack)
    }

    /// Hands `peer`'s queued control frames to its control rail.
    #[inline]
    pub(crate) fn flush_control(&mut self, peer: PeerId) -> Result<bool, EngineError> {
        let flushed = self.machine.flush_control(peer, &mut self.links);
        self.note_sends();
        flushed
    }

    /// Whether control frames wait to be handed to a rail.
    #[inline]
    pub(crate) fn has_unsent(&self) -> bool {
        self.machine.has_unsent()
    }

    /// Hands every peer's queued control frames to its control rail.
    pub(crate) fn flush_unsent(&mut self) -> Result<bool, EngineError> {
        let flushed = self.machine.flush_unsent(&mut self.links);
        self.note_sends();
        flushed
    }

    /// CTS `transfer` from `peer`: send `data` to its request `receiver`.
    pub(crate) fn start_transfer(&mut self, peer: PeerId, request: u32, receiver: u32, transfer: u64, data: &'static [u8]) {
        self.machine.start_transfer(peer, request, receiver, transfer, data)
    }

    /// FIN for send `request`: its chunks need no re-sending any more.
    pub(crate) fn finish_transfer(&mut self, peer: PeerId, request: u32) {
        self.machine.finish_transfer(peer, request)
    }

    /// Whether receive `receiver` still waits for chunks of `transfer` from `peer`.
    #[inline]
    pub(crate) fn expects(&self, peer: PeerId, receiver: u32, transfer: u64) -> bool {
        self.machine.expects(peer, receiver, transfer)
    }

    /// Receive `request` sent CTS `transfer` for `expected` bytes of `peer`'s send.
    pub(crate) fn expect(&mut self, peer: PeerId, request: u32, transfer: u64, expected: usize) {
        self.machine.expect(peer, request, transfer, expected)
    }

    /// A chunk arrived for receive `receiver` (see [`RailMachine::place_data`]).
    #[inline]
    pub(crate) fn place_data(&mut self, peer: PeerId, receiver: u32, offset: usize, transfer: u64, len: usize) -> Result<Option<usize>, EngineError> {
        self.machine.place_data(peer, receiver, offset, transfer, len)
    }

    /// Whether a waiting rank can sleep on the rails (every rail has a doorbell).
    pub(crate) fn can_sleep(&self) -> bool {
        self.doorbell.is_some()
    }

    /// How long this rank may sleep when nothing arrives (see [`RailMachine::sleep_limit`]).
    pub(crate) fn sleep_limit(&self) -> Option<Duration> {
        self.machine.sleep_limit(&self.links)
    }

    /// Sleeps until a rail's doorbell rings or `timeout` passes. The sleep is no absence from
    /// progress: the queue horizon need not cover it (it ends when the rails need the rank).
    pub(crate) fn sleep(&mut self, timeout: Duration) {
        let Some(doorbell) = &self.doorbell else { return };
        let planned = Instant::now() + timeout;
        doorbell.sleep(timeout);
        self.machine.slept_until(planned);
    }

    /// The rails' doorbells, for a thread that sleeps on them without holding the engine; it
    /// tells the rails when it means to wake ([`Network::slept_until`]).
    pub(crate) fn shared_doorbells(&self) -> Option<Arc<RailDoorbells>> {
        self.doorbell.clone()
    }

    /// After a sleep on [`Network::shared_doorbells`] planned to last until `planned`.
    pub(crate) fn slept_until(&mut self, planned: Instant) {
        if let Some(doorbell) = &self.doorbell {
            doorbell.clear_wake();
        }
        self.machine.slept_until(planned);
    }

    /// Wakes a thread of this process asleep on the rails' doorbells.
    pub(crate) fn wake_sleeper(&self) {
        if let Some(doorbell) = &self.doorbell {
            doorbell.wake();
        }
    }
}
