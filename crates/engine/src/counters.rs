//! Traffic counters, read by the MPI tools interface (MPI_T performance variables).
//!
//! Counting is plain `u64` additions on the engine's own paths: the engine is single-threaded,
//! so no atomics are needed, and the tables are allocated once at start-up, so counting never
//! allocates. What a small message adds to lives in its peer's first cache line or two; reading
//! ([`crate::Engine::counter_values`]) copies out and sums up, off the message path.
//!
//! Two levels are counted:
//! * **messages** per peer (job rank): one per MPI message, sent when the engine takes it (eager
//!   or rendezvous announcement), received when its first frame arrives (whether or not a
//!   receive is posted); bytes are the whole message's length. Protocol frames (CTS, FIN, ACK)
//!   are not messages.
//! * **frames** per transport (self, shared memory, each network rail, in the engine's order):
//!   every frame handed to or delivered by the transport, protocol frames included, with its
//!   payload bytes (headers excluded); bytes copied directly between address spaces (single-copy
//!   reads and writes) count as bytes of that transport without a frame. A peer reached directly
//!   always uses the same transport, so its frames are counted per peer and summed per transport
//!   when read; the rails count their own (the network layer what it sends, [`Counters`] what
//!   arrives).

use std::time::{Duration, Instant};

use braid_lane::PeerId;

/// Buckets of the message-size histograms: bucket 0 holds empty messages, bucket `k` sizes in
/// `[2^(k-1), 2^k)`, as Open MPI's monitoring writes them.
pub const SIZE_BUCKETS: usize = 66;

/// The histogram bucket of a message of `bytes`.
#[inline(always)]
pub fn size_bucket(bytes: usize) -> usize {
    (u64::BITS - (bytes as u64).leading_zeros()) as usize
}

/// What this rank exchanged with one peer, in MPI messages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PeerTraffic {
    pub messages_sent: u64,
    pub bytes_sent: u64,
    pub messages_received: u64,
    pub bytes_received: u64,
}

/// What went through one transport, in frames and payload bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TransportTraffic {
    pub frames_sent: u64,
    pub bytes_sent: u64,
    pub frames_received: u64,
    pub bytes_received: u64,
}

impl TransportTraffic {
    /// `frames` frames carrying `bytes` payload bytes (or bytes written directly) left.
    #[inline(always)]
    pub(crate) fn sent(&mut self, frames: u64, bytes: u64) {
        self.frames_sent += frames;
        self.bytes_sent += bytes;
    }

    /// `frames` frames carrying `bytes` payload bytes (or bytes read directly) arrived.
    #[inline(always)]
    pub(crate) fn received(&mut self, frames: u64, bytes: u64) {
        self.frames_received += frames;
        self.bytes_received += bytes;
    }
}

/// The counters of one peer: its messages, and the frames of the direct transport that reaches it.
/// An eager message that is one frame of that transport (the small-message fast paths) is counted
/// once, in `single`, and added to both when read: half the additions on the hot path.
#[repr(C, align(64))]
#[derive(Debug, Clone, Copy)]
struct PeerCounters {
    single: TransportTraffic,
    /// Messages sent to the peer by size bucket ([`size_bucket`]); the smallest sizes' buckets
    /// share `single`'s cache line.
    sent_sizes: [u64; SIZE_BUCKETS],
    messages: PeerTraffic,
    frames: TransportTraffic,
}

impl Default for PeerCounters {
    fn default() -> PeerCounters {
        PeerCounters { single: TransportTraffic::default(), messages: PeerTraffic::default(), frames: TransportTraffic::default(), sent_sizes: [0; SIZE_BUCKETS] }
    }
}

impl PeerCounters {
    /// Messages, with those counted in `single`.
    fn messages(&self) -> PeerTraffic {
        PeerTraffic {
            messages_sent: self.messages.messages_sent + self.single.frames_sent,
            bytes_sent: self.messages.bytes_sent + self.single.bytes_sent,
            messages_received: self.messages.messages_received + self.single.frames_received,
            bytes_received: self.messages.bytes_received + self.single.bytes_received,
        }
    }

    /// Frames, with those counted in `single`.
    fn frames(&self) -> TransportTraffic {
        let mut frames = self.frames;
        frames.sent(self.single.frames_sent, self.single.bytes_sent);
        frames.received(self.single.frames_received, self.single.bytes_received);
        frames
    }
}

/// Every counter of one engine.
#[derive(Debug, Clone, Default)]
pub(crate) struct Counters {
    peers: Vec<PeerCounters>,
    /// The first rail's transport index.
    rail_base: usize,
    /// What each rail delivered.
    rails_received: Vec<TransportTraffic>,
    rendezvous_sends: u64,
    unexpected_level: u64,
    /// Highest `unexpected_level` since the watermark was last restarted.
    unexpected_high: u64,
    unexpected_total: u64,
    blocked_ns: u64,
    sleeps: u64,
    rail_bytes_placed: u64,
}

impl Counters {
    /// Counters for `peers` ranks and `rails` rails from transport `rail_base` on.
    pub(crate) fn new(peers: usize, rail_base: usize, rails: usize) -> Counters {
        Counters { peers: vec![PeerCounters::default(); peers], rail_base, rails_received: vec![TransportTraffic::default(); rails], ..Counters::default() }
    }

    /// The engine took a message of `bytes` for `peer`, eagerly or by rendezvous.
    #[inline]
    pub(crate) fn message_sent(&mut self, peer: PeerId, bytes: usize, rendezvous: bool) {
        if let Some(counters) = self.peers.get_mut(peer as usize) {
            counters.messages.messages_sent += 1;
            counters.messages.bytes_sent += bytes as u64;
            counters.sent_sizes[size_bucket(bytes)] += 1;
        }
        self.rendezvous_sends += u64::from(rendezvous);
    }

    /// An eager message of `bytes` for `peer` left at once, as one frame of its direct transport.
    #[inline(always)]
    pub(crate) fn eager_sent_now(&mut self, peer: PeerId, bytes: usize) {
        if let Some(counters) = self.peers.get_mut(peer as usize) {
            counters.single.sent(1, bytes as u64);
            counters.sent_sizes[size_bucket(bytes)] += 1;
        }
    }

    /// An eager message of `bytes` arrived from `peer` in one frame of its direct transport.
    #[inline(always)]
    pub(crate) fn eager_received(&mut self, peer: PeerId, bytes: usize) {
        if let Some(counters) = self.peers.get_mut(peer as usize) {
            counters.single.received(1, bytes as u64);
        }
    }

    /// The first frame of a message of `bytes` arrived from `peer` (the frame is counted apart).
    #[inline]
    pub(crate) fn message_received(&mut self, peer: PeerId, bytes: usize) {
        if let Some(counters) = self.peers.get_mut(peer as usize) {
            counters.messages.messages_received += 1;
            counters.messages.bytes_received += bytes as u64;
        }
    }

    /// The direct transport of `peer` took a frame with `bytes` of payload for it.
    #[inline]
    pub(crate) fn frame_sent(&mut self, peer: PeerId, bytes: usize) {
        if let Some(counters) = self.peers.get_mut(peer as usize) {
            counters.frames.sent(1, bytes as u64);
        }
    }

    /// A frame with `bytes` of payload arrived from `peer` (for a peer reached over the rails,
    /// the rail's count is the one read).
    #[inline]
    pub(crate) fn frame_received(&mut self, peer: PeerId, bytes: usize) {
        if let Some(counters) = self.peers.get_mut(peer as usize) {
            counters.frames.received(1, bytes as u64);
        }
    }

    /// Rail `rail` delivered a frame with `bytes` of payload.
    #[inline]
    pub(crate) fn rail_frame_received(&mut self, rail: usize, bytes: usize) {
        if let Some(traffic) = self.rails_received.get_mut(rail) {
            traffic.received(1, bytes as u64);
        }
    }

    /// `bytes` were read from `peer`'s memory (single copy).
    #[inline]
    pub(crate) fn copied_in(&mut self, peer: PeerId, bytes: usize) {
        if let Some(counters) = self.peers.get_mut(peer as usize) {
            counters.frames.received(0, bytes as u64);
        }
    }

    /// `bytes` were written into `peer`'s memory (shared single copy).
    #[inline]
    pub(crate) fn copied_out(&mut self, peer: PeerId, bytes: usize) {
        if let Some(counters) = self.peers.get_mut(peer as usize) {
            counters.frames.sent(0, bytes as u64);
        }
    }

    /// A message joined the unexpected queue; how many it holds now.
    #[inline]
    pub(crate) fn unexpected_stored(&mut self) -> u64 {
        self.unexpected_level += 1;
        self.unexpected_total += 1;
        self.unexpected_high = self.unexpected_high.max(self.unexpected_level);
        self.unexpected_level
    }

    /// A message left the unexpected queue.
    #[inline]
    pub(crate) fn unexpected_taken(&mut self) {
        self.unexpected_level = self.unexpected_level.saturating_sub(1);
    }

    /// `bytes` of a rail's chunk were received straight into the receive buffer.
    #[inline]
    pub(crate) fn rail_bytes_placed(&mut self, bytes: usize) {
        self.rail_bytes_placed += bytes as u64;
    }

    /// Runs `wait` (a yield of the core) and counts its duration as time blocked.
    #[inline]
    pub(crate) fn time_blocked<R>(&mut self, wait: impl FnOnce() -> R) -> R {
        let start = Instant::now();
        let result = wait();
        self.add_blocked(start.elapsed());
        result
    }

    /// Runs `sleep` (a sleep on the doorbell), counting it and its duration as time blocked.
    #[inline]
    pub(crate) fn time_asleep<R>(&mut self, sleep: impl FnOnce() -> R) -> R {
        self.sleeps += 1;
        self.time_blocked(sleep)
    }

    /// Counts a sleep on the doorbell that a thread took without the engine.
    pub(crate) fn add_asleep(&mut self, time: Duration) {
        self.sleeps += 1;
        self.add_blocked(time);
    }

    fn add_blocked(&mut self, time: Duration) {
        self.blocked_ns = self.blocked_ns.saturating_add(u64::try_from(time.as_nanos()).unwrap_or(u64::MAX));
    }

    /// Starts a new high-watermark interval at the current level.
    pub(crate) fn restart_unexpected_high_watermark(&mut self) {
        self.unexpected_high = self.unexpected_level;
    }

    /// A copy of every counter. `direct_route(peer)` is the direct transport that reaches a peer
    /// (`None`: the rails), `rail_sends[i]` what the network layer sent on rail `i`, `names` the
    /// transports' names.
    pub(crate) fn values(&self, direct_route: impl Fn(PeerId) -> Option<usize>, rail_sends: &[TransportTraffic], names: Vec<String>) -> CounterValues {
        let mut transports = vec![TransportTraffic::default(); names.len()];
        for (peer, counters) in self.peers.iter().enumerate() {
            if let Some(traffic) = direct_route(peer as PeerId).and_then(|transport| transports.get_mut(transport)) {
                let frames = counters.frames();
                traffic.sent(frames.frames_sent, frames.bytes_sent);
                traffic.received(frames.frames_received, frames.bytes_received);
            }
        }
        let rails = transports.iter_mut().skip(self.rail_base);
        for ((traffic, received), sent) in rails.zip(&self.rails_received).zip(rail_sends) {
            traffic.sent(sent.frames_sent, sent.bytes_sent);
            traffic.received(received.frames_received, received.bytes_received);
        }
        let peers: Vec<PeerTraffic> = self.peers.iter().map(PeerCounters::messages).collect();
        let peer_transport = (0..peers.len()).map(|peer| direct_route(peer as PeerId).unwrap_or(self.rail_base) as u64).collect();
        let messages_sent: u64 = peers.iter().map(|traffic| traffic.messages_sent).sum();
        CounterValues {
            peers,
            sent_sizes: self.peers.iter().map(|counters| counters.sent_sizes).collect(),
            transports,
            transport_names: names,
            peer_transport,
            eager_sends: messages_sent - self.rendezvous_sends,
            rendezvous_sends: self.rendezvous_sends,
            unexpected_level: self.unexpected_level,
            unexpected_high_watermark: self.unexpected_high,
            unexpected_total: self.unexpected_total,
            blocked_ns: self.blocked_ns,
            sleeps: self.sleeps,
            rail_bytes_placed: self.rail_bytes_placed,
        }
    }
}

/// Every counter of an engine at one moment (the comment at the top of counters.rs says what
/// each counts).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CounterValues {
    /// Indexed by job rank.
    pub peers: Vec<PeerTraffic>,
    /// Indexed by job rank: the messages sent to it by size bucket ([`size_bucket`]).
    pub sent_sizes: Vec<[u64; SIZE_BUCKETS]>,
    /// Indexed like `transport_names`.
    pub transports: Vec<TransportTraffic>,
    /// The transports in the engine's order: "self", "shm", then the rails ("tcp:eth1", ...).
    pub transport_names: Vec<String>,
    /// Indexed by job rank: where in `transport_names` the transport that carries messages to
    /// that rank is; the first rail for a rank reached over the rails (which share its messages).
    pub peer_transport: Vec<u64>,
    pub eager_sends: u64,
    pub rendezvous_sends: u64,
    /// Messages waiting in the unexpected queue now.
    pub unexpected_level: u64,
    /// Most messages waiting at once since the watermark was last restarted.
    pub unexpected_high_watermark: u64,
    /// Messages that have arrived before their receive.
    pub unexpected_total: u64,
    /// Nanoseconds waiting ranks spent yielding their core or asleep, rather than polling.
    pub blocked_ns: u64,
    /// Sleeps on the doorbell.
    pub sleeps: u64,
    /// Rendezvous bytes received over the rails straight into the receive buffer (with no copy
    /// out of a transport's buffer).
    pub rail_bytes_placed: u64,
}

impl CounterValues {
    /// Starts a new high-watermark interval at the current level (as the engine's does).
    pub fn restart_unexpected_high_watermark(&mut self) {
        self.unexpected_high_watermark = self.unexpected_level;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(count: usize) -> Vec<String> {
        (0..count).map(|transport| format!("transport{transport}")).collect()
    }

    #[test]
    fn size_buckets_follow_open_mpis_monitoring() {
        assert_eq!([size_bucket(0), size_bucket(1), size_bucket(2), size_bucket(3), size_bucket(4), size_bucket(1 << 20)], [0, 1, 2, 2, 3, 21]);
        assert_eq!(size_bucket(usize::MAX), 64);
    }

    #[test]
    fn a_small_message_touches_one_cache_line_of_counters() {
        assert_eq!(std::mem::align_of::<PeerCounters>(), 64);
        assert_eq!(std::mem::offset_of!(PeerCounters, single), 0);
        assert!(std::mem::size_of::<TransportTraffic>() <= 64);
    }

    #[test]
    fn messages_are_counted_per_peer_and_frames_per_transport() {
        // Rank 0 (this one) on transport 0, rank 1 on transport 1, rank 2 over rail 0 (transport 2).
        let mut counters = Counters::new(3, 2, 1);
        counters.message_sent(1, 100, false);
        counters.frame_sent(1, 100);
        counters.message_sent(1, 1 << 20, true);
        counters.frame_sent(1, 0);
        counters.eager_sent_now(0, 8);
        counters.eager_received(1, 40);
        counters.copied_in(1, 4096);
        counters.copied_out(1, 512);
        counters.message_sent(2, 30, false);
        counters.message_received(2, 7);
        counters.rail_frame_received(0, 7);
        // Per-peer frames of a peer reached over the rails are not its rail's: the rail counts.
        counters.frame_received(2, 7);
        // Out-of-range peers and rails are ignored rather than trusted.
        counters.message_sent(7, 1, false);
        counters.rail_frame_received(9, 1);
        let route = |peer: PeerId| (peer < 2).then_some(peer as usize);
        let rail_sends = [TransportTraffic { frames_sent: 2, bytes_sent: 30, ..TransportTraffic::default() }];
        let values = counters.values(route, &rail_sends, names(3));
        assert_eq!(values.peers[1], PeerTraffic { messages_sent: 2, bytes_sent: 100 + (1 << 20), messages_received: 1, bytes_received: 40 });
        assert_eq!(values.peers[0], PeerTraffic { messages_sent: 1, bytes_sent: 8, messages_received: 0, bytes_received: 0 });
        assert_eq!(values.transports[0], TransportTraffic { frames_sent: 1, bytes_sent: 8, frames_received: 0, bytes_received: 0 });
        assert_eq!(values.transports[1], TransportTraffic { frames_sent: 2, bytes_sent: 612, frames_received: 1, bytes_received: 4136 });
        assert_eq!(values.transports[2], TransportTraffic { frames_sent: 2, bytes_sent: 30, frames_received: 1, bytes_received: 7 });
        assert_eq!((values.eager_sends, values.rendezvous_sends), (3, 1));
        assert_eq!((values.sent_sizes[1][7], values.sent_sizes[1][21], values.sent_sizes[0][4]), (1, 1, 1));
        assert_eq!(values.sent_sizes[1].iter().sum::<u64>(), 2);
    }

    #[test]
    fn the_unexpected_queue_keeps_its_level_and_high_watermark() {
        let mut counters = Counters::new(1, 1, 0);
        counters.unexpected_stored();
        counters.unexpected_stored();
        counters.unexpected_stored();
        counters.unexpected_taken();
        counters.unexpected_taken();
        let values = counters.values(|_| Some(0), &[], names(1));
        assert_eq!((values.unexpected_level, values.unexpected_high_watermark, values.unexpected_total), (1, 3, 3));
        counters.restart_unexpected_high_watermark();
        counters.unexpected_stored();
        counters.unexpected_taken();
        counters.unexpected_taken();
        counters.unexpected_taken();
        let values = counters.values(|_| Some(0), &[], names(1));
        assert_eq!((values.unexpected_level, values.unexpected_high_watermark, values.unexpected_total), (0, 2, 4));
    }

    #[test]
    fn blocked_time_and_sleeps_are_measured() {
        let mut counters = Counters::new(1, 1, 0);
        assert_eq!(counters.time_blocked(|| 5), 5);
        counters.time_asleep(|| std::thread::sleep(Duration::from_millis(2)));
        let values = counters.values(|_| Some(0), &[], names(1));
        assert!(values.blocked_ns >= 2_000_000, "{}", values.blocked_ns);
        assert_eq!(values.sleeps, 1);
    }
}
