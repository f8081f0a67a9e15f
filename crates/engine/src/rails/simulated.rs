//! A simulated network for testing the rail set's core deterministically: rails with a rate, a
//! latency and a send buffer each (and, where a test sets one, a standing queue of other
//! traffic), a virtual clock, and rails that fail at a chosen moment. Each rank speaks to it
//! through [`RankIo`], the same [`RailIo`] the driver answers from its transports. [`Rank`]
//! plays the engine's part above the core (eager messages, RTS/CTS/FIN, placing chunks), so a
//! test sees what an MPI program would: which messages arrived, in what order, with what bytes,
//! and which sends completed.

use std::cell::Cell;
use std::collections::VecDeque;
use std::io::IoSlice;
use std::time::{Duration, Instant};

use braid_config::Config;
use braid_lane::{PeerId, Profile};
use braid_strategy::ProtocolPolicy;
use braid_transport::{FrameWriter, PathTiming, SendOutcome, TransportError};

use super::io::RailIo;
use super::machine::RailMachine;
use crate::frame::{batch_entries, Frame, NetFrame};
use crate::node::SpareCpus;
use crate::EngineError;

/// A seeded generator (SplitMix64): the same seed, the same run.
pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub(super) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[low, high)`.
    pub(super) fn range(&mut self, low: u64, high: u64) -> u64 {
        low + self.next() % (high - low).max(1)
    }

    pub(super) fn chance(&mut self, percent: u64) -> bool {
        self.range(0, 100) < percent
    }
}

/// One rail's character.
#[derive(Debug, Clone, Copy)]
pub(super) struct RailModel {
    pub(super) bytes_per_second: f64,
    pub(super) latency: Duration,
    /// Bytes the sender's side holds before it waits for room (a socket's send buffer).
    pub(super) buffer: u64,
}

/// A frame on a simulated wire.
pub(super) struct WireFrame {
    pub(super) from: PeerId,
    pub(super) header: Vec<u8>,
    pub(super) payload: Vec<u8>,
    /// When it is in at the receiver.
    pub(super) arrives: Instant,
}

/// One direction of one rail between two ranks.
#[derive(Default)]
struct Link {
    frames: VecDeque<WireFrame>,
    /// When the wire has sent every frame taken so far.
    wire_free: Option<Instant>,
    /// A write overfilled the buffer: no room until it has drained to two thirds (as the TCP
    /// transport waits for room after a short write).
    waiting_room: bool,
    /// When a frame was last taken.
    last_sent: Option<Instant>,
}

/// A rail's failure: frames still on the wire when it fails are lost; the ranks learn of it
/// `noticed_after` later (a dead TCP connection shows after its timeout), and until then the
/// rail still takes frames, which are lost too.
#[derive(Debug, Clone, Copy)]
pub(super) struct Failure {
    pub(super) at: Instant,
    pub(super) noticed_after: Duration,
}

/// What kind of frame a transmit wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A control frame, acknowledging up to `ack`.
    Control {
        ack: u64,
    },
    Ack {
        ack: u64,
    },
    Data,
    /// A NET_BATCH frame of `frames` control frames.
    Batch {
        frames: usize,
    },
}

/// What a test can check about one transmit afterwards.
#[derive(Debug, Clone, Copy)]
pub(super) struct Transmitted {
    pub(super) rail: usize,
    pub(super) from: PeerId,
    pub(super) at: Instant,
    pub(super) arrives: Instant,
    pub(super) kind: Kind,
    /// Payload bytes.
    pub(super) bytes: usize,
}

/// Rails between `ranks` ranks, each modelled by a [`RailModel`], on a virtual clock.
pub(super) struct SimNetwork {
    pub(super) now: Instant,
    pub(super) models: Vec<RailModel>,
    ranks: usize,
    /// `links[(rail * ranks + from) * ranks + to]`.
    links: Vec<Link>,
    pub(super) failures: Vec<Option<Failure>>,
    /// `told[(rail * ranks + rank) * ranks + peer]`: the rank has been told that the rail no
    /// longer reaches the peer (a transmit failed, or it asked).
    told: Vec<Cell<bool>>,
    /// Transmits attempted on a rail after the rank was told it had failed.
    pub(super) after_told: usize,
    pub(super) log: Vec<Transmitted>,
    /// Per rail: how long a frame waits behind other traffic's standing queue (zero: the rail
    /// is ours alone), on top of its latency.
    pub(super) standing_queue: Vec<Duration>,
}

impl SimNetwork {
    pub(super) fn new(models: Vec<RailModel>, ranks: usize) -> SimNetwork {
        let links = (0..models.len() * ranks * ranks).map(|_| Link::default()).collect();
        let told = (0..models.len() * ranks * ranks).map(|_| Cell::new(false)).collect();
        SimNetwork { now: Instant::now(), failures: vec![None; models.len()], standing_queue: vec![Duration::ZERO; models.len()], models, ranks, links, told, after_told: 0, log: Vec::new() }
    }

    fn link(&self, rail: usize, from: PeerId, to: PeerId) -> &Link {
        &self.links[(rail * self.ranks + from as usize) * self.ranks + to as usize]
    }

    fn link_mut(&mut self, rail: usize, from: PeerId, to: PeerId) -> &mut Link {
        &mut self.links[(rail * self.ranks + from as usize) * self.ranks + to as usize]
    }

    /// `rail` fails at `at`; the ranks notice `noticed_after` later.
    pub(super) fn fail(&mut self, rail: usize, at: Instant, noticed_after: Duration) {
        self.failures[rail] = Some(Failure { at, noticed_after });
    }

    fn noticed(&self, rail: usize) -> bool {
        self.failures[rail].is_some_and(|failure| self.now >= failure.at + failure.noticed_after)
    }

    fn lost(&self, rail: usize, frame: &WireFrame) -> bool {
        self.failures[rail].is_some_and(|failure| frame.arrives > failure.at)
    }

    /// Bytes of `link` not yet on the wire at `now`.
    fn backlog_of(link: &Link, now: Instant, rate: f64) -> u64 {
        let Some(free) = link.wire_free.filter(|&free| free > now) else { return 0 };
        (free.duration_since(now).as_secs_f64() * rate).ceil() as u64
    }

    /// The frames that have arrived at `rank` by now, rail by rail, in order on each; a failed
    /// rail's lost frames are dropped.
    pub(super) fn arrived(&mut self, rank: PeerId) -> Vec<(usize, WireFrame)> {
        let mut arrived = Vec::new();
        for rail in 0..self.models.len() {
            for from in 0..self.ranks as PeerId {
                while self.link(rail, from, rank).frames.front().is_some_and(|frame| frame.arrives <= self.now) {
                    let frame = self.link_mut(rail, from, rank).frames.pop_front().expect("front checked");
                    if !self.lost(rail, &frame) {
                        arrived.push((rail, frame));
                    }
                }
            }
        }
        arrived
    }

    /// Whether a frame has arrived at `rank` by now (its doorbell would ring).
    pub(super) fn has_arrived(&self, rank: PeerId) -> bool {
        (0..self.models.len()).any(|rail| (0..self.ranks as PeerId).any(|from| self.link(rail, from, rank).frames.front().is_some_and(|frame| frame.arrives <= self.now)))
    }

    /// Whether any frame is still on a wire (lost ones included, until their arrival time).
    pub(super) fn in_flight(&self) -> bool {
        self.links.iter().any(|link| !link.frames.is_empty())
    }

    /// `rank`'s view of the rails.
    pub(super) fn port(&mut self, rank: PeerId) -> RankIo<'_> {
        RankIo { net: self, rank }
    }
}

/// One rank's rails in the simulated network.
pub(super) struct RankIo<'a> {
    net: &'a mut SimNetwork,
    rank: PeerId,
}

impl RailIo for RankIo<'_> {
    fn now(&self) -> Instant {
        self.net.now
    }

    fn name(&self, _rail: usize) -> &str {
        "simulated"
    }

    fn reaches(&self, rail: usize, peer: PeerId) -> bool {
        let noticed = self.net.noticed(rail);
        if noticed {
            self.net.told[(rail * self.net.ranks + self.rank as usize) * self.net.ranks + peer as usize].set(true);
        }
        !noticed
    }

    fn transmit(&mut self, rail: usize, peer: PeerId, header: &[u8], payload: &[IoSlice<'_>]) -> Result<SendOutcome, TransportError> {
        let (net, rank) = (&mut *self.net, self.rank);
        let told = &net.told[(rail * net.ranks + rank as usize) * net.ranks + peer as usize];
        if told.get() {
            net.after_told += 1;
        }
        if net.noticed(rail) {
            told.set(true);
            return Err(TransportError::Unreachable(peer));
        }
        if !self.has_room(rail, peer) {
            return Ok(SendOutcome::WouldBlock);
        }
        let net = &mut *self.net;
        let model = net.models[rail];
        let now = net.now;
        let bytes: Vec<u8> = payload.iter().flat_map(|slice| slice.iter().copied()).collect();
        let payload_len = bytes.len();
        let len = header.len() + bytes.len() + 4;
        let queued = net.standing_queue[rail];
        let link = net.link_mut(rail, rank, peer);
        let start = link.wire_free.map_or(now, |free| free.max(now));
        let left = start + Duration::from_secs_f64(len as f64 / model.bytes_per_second);
        let arrives = left + model.latency + queued;
        link.wire_free = Some(left);
        link.last_sent = Some(now);
        link.frames.push_back(WireFrame { from: rank, header: header.to_vec(), payload: bytes, arrives });
        let backlog = SimNetwork::backlog_of(link, now, model.bytes_per_second);
        link.waiting_room = backlog > model.buffer;
        let kind = match NetFrame::decode(header).expect("a network header") {
            NetFrame::Control { ack, .. } => Kind::Control { ack },
            NetFrame::Ack { ack } => Kind::Ack { ack },
            NetFrame::Data { .. } => Kind::Data,
            NetFrame::Batch => {
                let frames = &link.frames.back().expect("just pushed").payload;
                Kind::Batch { frames: batch_entries(frames).count() }
            }
        };
        net.log.push(Transmitted { rail, from: rank, at: now, arrives, kind, bytes: payload_len });
        Ok(SendOutcome::Sent)
    }

    fn backlog(&self, rail: usize, peer: PeerId) -> u64 {
        SimNetwork::backlog_of(self.net.link(rail, self.rank, peer), self.net.now, self.net.models[rail].bytes_per_second)
    }

    fn has_room(&self, rail: usize, peer: PeerId) -> bool {
        let link = self.net.link(rail, self.rank, peer);
        !link.waiting_room || self.backlog(rail, peer) <= self.net.models[rail].buffer * 2 / 3
    }

    fn lend_writer(&mut self, _rail: usize, _peer: PeerId) -> Option<Box<dyn FrameWriter>> {
        None
    }

    /// As TCP reports it, except that TCP learns of a queue only once an acknowledgement has
    /// crossed it: the round trip crosses the standing queue once (the answers come back on an
    /// empty path); the least round trip is the path's own.
    fn path_timing(&self, rail: usize, peer: PeerId) -> Option<PathTiming> {
        let latency = self.net.models[rail].latency;
        let last_sent = self.net.link(rail, self.rank, peer).last_sent?;
        Some(PathTiming { round_trip: 2 * latency + self.net.standing_queue[rail], least_round_trip: 2 * latency, since_data_sent: self.net.now.saturating_duration_since(last_sent) })
    }
}

/// The bytes of message `tag` from `from` to `to`, `len` long: every message differs.
pub(super) fn message_bytes(from: PeerId, to: PeerId, tag: i32, len: usize) -> Vec<u8> {
    let mut rng = Rng::new(((from as u64) << 40) ^ ((to as u64) << 20) ^ tag as u64);
    (0..len).map(|_| rng.next() as u8).collect()
}

/// One of a rank's sends.
pub(super) struct Send {
    pub(super) data: &'static [u8],
    pub(super) done: bool,
}

/// A rendezvous receive being filled.
pub(super) struct Receive {
    from: PeerId,
    tag: i32,
    /// The sender's request, which FIN completes.
    sender: u32,
    buffer: Vec<u8>,
    filled: usize,
}

/// One rank: the rail set's core, and the engine's part above it.
pub(super) struct Rank {
    pub(super) id: PeerId,
    pub(super) machine: RailMachine,
    pub(super) sends: Vec<Send>,
    pub(super) receives: Vec<Option<Receive>>,
    /// Tags of the messages matched from each rank, in matching order.
    pub(super) matched: Vec<Vec<i32>>,
    /// Tags of the messages from each rank whose bytes are all in (and were checked).
    pub(super) completed: Vec<Vec<i32>>,
    /// When each rendezvous receive was filled, in that order.
    pub(super) filled_at: Vec<Instant>,
    /// The time of the current progress step.
    clock: Instant,
    pub(super) error: Option<EngineError>,
}

/// Settings for the simulated ranks: `strategy`'s defaults, no offload workers.
pub(super) fn sim_config(strategy: braid_config::StrategyKind) -> Config {
    Config { strategy, offload: braid_config::OffloadMode::Off, ..Config::default() }
}

impl Rank {
    /// Rank `id` of `ranks`, over `net`'s rails, with profiles that match their models.
    pub(super) fn new(id: PeerId, ranks: usize, net: &mut SimNetwork, config: &Config) -> Rank {
        let profiles: Vec<Profile> = net.models.iter().map(|model| Profile::from_model(model.latency.as_nanos() as f64, model.bytes_per_second, 16 << 20)).collect();
        Rank::with_profiles(id, ranks, net, config, profiles)
    }

    pub(super) fn with_profiles(id: PeerId, ranks: usize, net: &mut SimNetwork, config: &Config, profiles: Vec<Profile>) -> Rank {
        let policy = ProtocolPolicy::from_config(config);
        let max_payloads = vec![braid_transport::tcp::MAX_PAYLOAD; net.models.len()];
        let peers: Vec<PeerId> = (0..ranks as PeerId).filter(|&peer| peer != id).collect();
        let now = net.now;
        let machine = RailMachine::new(config, &policy, id, profiles, &max_payloads, peers, &net.port(id), (&SpareCpus::default(), false), now);
        Rank { id, machine, sends: Vec::new(), receives: Vec::new(), matched: vec![Vec::new(); ranks], completed: vec![Vec::new(); ranks], filled_at: Vec::new(), clock: now, error: None }
    }

    /// Starts a send of `len` bytes to `to` as message `tag`, eager or rendezvous as the engine
    /// would choose, and hands it to the rails as `post_frame` does.
    pub(super) fn send(&mut self, net: &mut SimNetwork, to: PeerId, tag: i32, len: usize) {
        let data: &'static [u8] = Box::leak(message_bytes(self.id, to, tag, len).into_boxed_slice());
        let request = self.sends.len() as u32;
        self.sends.push(Send { data, done: false });
        if len <= self.machine.eager_limit {
            self.machine.queue_control(to, Frame::Eager { context: 0, tag }, data, Some(request));
            if self.machine.holds_eager(to, len) {
                return;
            }
        } else {
            self.machine.queue_control(to, Frame::Rts { context: 0, tag, len: len as u64, sender: request, pid: 0, address: 0 }, &[], None);
        }
        let flushed = self.machine.flush_control(to, &mut net.port(self.id));
        self.settle(flushed);
    }

    /// One progress step: the frames that arrived, then the rails' own work. Returns whether
    /// anything happened.
    /// A receive waits for messages from `awaited` (see [`RailMachine::check_awaited`]).
    pub(super) fn check_awaited(&mut self, net: &mut SimNetwork, awaited: &[PeerId]) -> Result<(), EngineError> {
        self.machine.check_awaited(awaited.iter().copied(), &RankIo { net, rank: self.id })
    }

    pub(super) fn progress(&mut self, net: &mut SimNetwork) -> bool {
        if self.error.is_some() {
            return false;
        }
        self.clock = net.now;
        let arrived = net.arrived(self.id);
        let mut moved = !arrived.is_empty();
        for (_, frame) in arrived {
            if let Err(error) = self.on_frame(frame.from, &frame.header, &frame.payload) {
                self.error.get_or_insert(error);
                return true;
            }
        }
        if self.machine.active() {
            let advanced = self.machine.advance(!moved, &mut net.port(self.id));
            moved |= matches!(advanced, Ok(true));
            self.settle(advanced);
        }
        moved
    }

    /// Completes the sends whose frames left; keeps the first error.
    fn settle(&mut self, result: Result<bool, EngineError>) {
        if let Err(error) = result {
            self.error.get_or_insert(error);
        }
        for request in self.machine.take_sent() {
            self.sends[request as usize].done = true;
        }
    }

    /// What `dispatch.rs` does with a frame from the rails, and the protocols above it.
    fn on_frame(&mut self, from: PeerId, header: &[u8], payload: &[u8]) -> Result<(), EngineError> {
        match NetFrame::decode(header).expect("well-formed network header") {
            NetFrame::Control { seq, ack, inner } => {
                let frame = Frame::decode(inner).expect("well-formed header");
                if self.machine.accept_control(from, seq, ack)? {
                    self.dispatch(from, frame, payload, seq);
                }
                Ok(())
            }
            NetFrame::Ack { ack } => self.machine.acknowledged(from, ack),
            NetFrame::Data { receiver, offset, transfer } => {
                let offset = offset as usize;
                let Some(fresh) = self.machine.place_data(from, receiver, offset, transfer, payload.len())? else { return Ok(()) };
                let receive = self.receives[receiver as usize].as_mut().expect("a chunk for a receive that is filling");
                receive.buffer[offset..offset + payload.len()].copy_from_slice(payload);
                receive.filled += fresh;
                if receive.filled == receive.buffer.len() {
                    let receive = self.receives[receiver as usize].take().expect("checked above");
                    assert!(receive.buffer == message_bytes(receive.from, self.id, receive.tag, receive.buffer.len()), "rendezvous {} from {} arrived changed", receive.tag, receive.from);
                    self.completed[receive.from as usize].push(receive.tag);
                    self.filled_at.push(self.clock);
                    self.machine.queue_control(from, Frame::Fin { sender: receive.sender }, &[], None);
                }
                Ok(())
            }
            NetFrame::Batch => {
                for entry in batch_entries(payload) {
                    let (header, payload) = entry.expect("well-formed batch");
                    self.on_frame(from, header, payload)?;
                }
                Ok(())
            }
        }
    }

    fn dispatch(&mut self, from: PeerId, frame: Frame, payload: &[u8], seq: u64) {
        match frame {
            Frame::Eager { tag, .. } => {
                self.matched[from as usize].push(tag);
                assert!(payload == message_bytes(from, self.id, tag, payload.len()), "eager message {tag} from {from} arrived changed");
                self.completed[from as usize].push(tag);
            }
            Frame::Rts { tag, len, sender, .. } => {
                self.matched[from as usize].push(tag);
                let receiver = self.receives.len() as u32;
                self.receives.push(Some(Receive { from, tag, sender, buffer: vec![0; len as usize], filled: 0 }));
                let transfer = self.machine.queue_control(from, Frame::Cts { sender, receiver, len }, &[], None);
                self.machine.expect(from, receiver, transfer, len as usize);
            }
            Frame::Cts { sender, receiver, len } => {
                let data = self.sends[sender as usize].data;
                assert_eq!(len as usize, data.len());
                self.machine.start_transfer(from, sender, receiver, seq, data);
            }
            Frame::Fin { sender } => {
                self.machine.finish_transfer(from, sender);
                self.sends[sender as usize].done = true;
            }
            other => panic!("the simulated ranks send no {other:?}"),
        }
    }

    /// Every send complete, every receive filled, nothing left to send or to be acknowledged.
    pub(super) fn quiet(&self) -> bool {
        self.sends.iter().all(|send| send.done) && self.receives.iter().all(Option::is_none) && !self.machine.has_work() && self.machine.unacked == 0
    }
}
