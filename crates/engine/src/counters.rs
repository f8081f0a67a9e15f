//! Traffic counters, read by the MPI tools interface (MPI_T performance variables).
//!
//! Counting is plain `u64` additions on the engine's own paths: the engine is single-threaded,
//! so no atomics are needed, and the per-peer and per-transport tables are allocated once at
//! start-up, so counting never allocates. Reading ([`crate::Engine::counter_values`]) copies
//! everything out, off the message path.
//!
//! Two levels are counted:
//! * **messages** per peer (job rank): one per MPI message, sent when the engine takes it (eager
//!   or rendezvous announcement), received when its first frame arrives (whether or not a
//!   receive is posted); bytes are the whole message's length. Protocol frames (CTS, FIN, ACK)
//!   are not messages.
//! * **frames** per transport (self, shared memory, each network rail, in the engine's order):
//!   every frame handed to or delivered by the transport, protocol frames included, with its
//!   payload bytes (headers excluded); bytes copied directly between address spaces (single-copy
//!   reads and writes) count as bytes of that transport without a frame.

use std::time::{Duration, Instant};

use braid_transport::PeerId;

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
    pub(crate) fn sent(&mut self, frames: u64, bytes: usize) {
        self.frames_sent += frames;
        self.bytes_sent += bytes as u64;
    }

    /// `frames` frames carrying `bytes` payload bytes (or bytes read directly) arrived.
    #[inline(always)]
    pub(crate) fn received(&mut self, frames: u64, bytes: usize) {
        self.frames_received += frames;
        self.bytes_received += bytes as u64;
    }
}

/// Every counter of one engine.
#[derive(Debug, Clone, Default)]
pub(crate) struct Counters {
    peers: Vec<PeerTraffic>,
    transports: Vec<TransportTraffic>,
    eager_sends: u64,
    rendezvous_sends: u64,
    unexpected_level: u64,
    /// Highest `unexpected_level` since the watermark was last restarted.
    unexpected_high: u64,
    unexpected_total: u64,
    blocked_ns: u64,
    sleeps: u64,
}

impl Counters {
    pub(crate) fn new(peers: usize, transports: usize) -> Counters {
        Counters { peers: vec![PeerTraffic::default(); peers], transports: vec![TransportTraffic::default(); transports], ..Counters::default() }
    }

    /// The engine took a message of `bytes` for `peer`, eagerly or by rendezvous.
    #[inline(always)]
    pub(crate) fn message_sent(&mut self, peer: PeerId, bytes: usize, rendezvous: bool) {
        if let Some(traffic) = self.peers.get_mut(peer as usize) {
            traffic.messages_sent += 1;
            traffic.bytes_sent += bytes as u64;
        }
        if rendezvous {
            self.rendezvous_sends += 1;
        } else {
            self.eager_sends += 1;
        }
    }

    /// An eager message of `bytes` for `peer` left at once, as one frame of `transport`.
    #[inline(always)]
    pub(crate) fn eager_sent_now(&mut self, peer: PeerId, transport: usize, bytes: usize) {
        self.message_sent(peer, bytes, false);
        self.frame_sent(transport, bytes);
    }

    /// The first frame of a message of `bytes` arrived from `peer`.
    #[inline(always)]
    pub(crate) fn message_received(&mut self, peer: PeerId, bytes: usize) {
        if let Some(traffic) = self.peers.get_mut(peer as usize) {
            traffic.messages_received += 1;
            traffic.bytes_received += bytes as u64;
        }
    }

    /// `transport` took a frame with `bytes` of payload.
    #[inline(always)]
    pub(crate) fn frame_sent(&mut self, transport: usize, bytes: usize) {
        if let Some(traffic) = self.transports.get_mut(transport) {
            traffic.sent(1, bytes);
        }
    }

    /// `transport` delivered a frame with `bytes` of payload.
    #[inline(always)]
    pub(crate) fn frame_received(&mut self, transport: usize, bytes: usize) {
        if let Some(traffic) = self.transports.get_mut(transport) {
            traffic.received(1, bytes);
        }
    }

    /// `bytes` were read from a peer's memory through `transport` (single copy).
    #[inline]
    pub(crate) fn copied_in(&mut self, transport: usize, bytes: usize) {
        if let Some(traffic) = self.transports.get_mut(transport) {
            traffic.received(0, bytes);
        }
    }

    /// `bytes` were written into a peer's memory through `transport` (shared single copy).
    #[inline]
    pub(crate) fn copied_out(&mut self, transport: usize, bytes: usize) {
        if let Some(traffic) = self.transports.get_mut(transport) {
            traffic.sent(0, bytes);
        }
    }

    /// A message joined the unexpected queue.
    #[inline]
    pub(crate) fn unexpected_stored(&mut self) {
        self.unexpected_level += 1;
        self.unexpected_total += 1;
        self.unexpected_high = self.unexpected_high.max(self.unexpected_level);
    }

    /// A message left the unexpected queue.
    #[inline]
    pub(crate) fn unexpected_taken(&mut self) {
        self.unexpected_level = self.unexpected_level.saturating_sub(1);
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

    fn add_blocked(&mut self, time: Duration) {
        self.blocked_ns = self.blocked_ns.saturating_add(u64::try_from(time.as_nanos()).unwrap_or(u64::MAX));
    }

    /// Starts a new high-watermark interval at the current level.
    pub(crate) fn restart_unexpected_high_watermark(&mut self) {
        self.unexpected_high = self.unexpected_level;
    }

    /// A copy of every counter; `rail_sends[i]` adds what the network layer sent on the transport
    /// `rail_base + i`, `names` are the transports' names.
    pub(crate) fn values(&self, rail_base: usize, rail_sends: &[TransportTraffic], names: Vec<String>) -> CounterValues {
        let mut transports = self.transports.clone();
        for (traffic, sends) in transports.iter_mut().skip(rail_base).zip(rail_sends) {
            traffic.sent(sends.frames_sent, sends.bytes_sent as usize);
        }
        CounterValues {
            peers: self.peers.clone(),
            transports,
            transport_names: names,
            eager_sends: self.eager_sends,
            rendezvous_sends: self.rendezvous_sends,
            unexpected_level: self.unexpected_level,
            unexpected_high_watermark: self.unexpected_high,
            unexpected_total: self.unexpected_total,
            blocked_ns: self.blocked_ns,
            sleeps: self.sleeps,
        }
    }
}

/// Every counter of an engine at one moment (the comment at the top of counters.rs says what
/// each counts).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CounterValues {
    /// Indexed by job rank.
    pub peers: Vec<PeerTraffic>,
    /// Indexed like `transport_names`.
    pub transports: Vec<TransportTraffic>,
    /// The transports in the engine's order: "self", "shm", then the rails ("tcp:eth1", ...).
    pub transport_names: Vec<String>,
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

    #[test]
    fn messages_and_frames_are_counted_apart() {
        let mut counters = Counters::new(2, 3);
        counters.message_sent(1, 100, false);
        counters.message_sent(1, 1 << 20, true);
        counters.eager_sent_now(0, 0, 8);
        counters.frame_sent(1, 100);
        counters.frame_sent(1, 0);
        counters.message_received(1, 40);
        counters.frame_received(2, 40);
        counters.copied_in(1, 4096);
        counters.copied_out(1, 512);
        // Out-of-range peers and transports are ignored rather than trusted.
        counters.message_sent(7, 1, false);
        counters.frame_received(9, 1);
        let values = counters.values(2, &[TransportTraffic { frames_sent: 2, bytes_sent: 30, ..TransportTraffic::default() }], vec!["self".into(), "shm".into(), "tcp:eth1".into()]);
        assert_eq!(values.peers[1], PeerTraffic { messages_sent: 2, bytes_sent: 100 + (1 << 20), messages_received: 1, bytes_received: 40 });
        assert_eq!(values.peers[0], PeerTraffic { messages_sent: 1, bytes_sent: 8, messages_received: 0, bytes_received: 0 });
        assert_eq!(values.transports[0], TransportTraffic { frames_sent: 1, bytes_sent: 8, frames_received: 0, bytes_received: 0 });
        assert_eq!(values.transports[1], TransportTraffic { frames_sent: 2, bytes_sent: 612, frames_received: 0, bytes_received: 4096 });
        assert_eq!(values.transports[2], TransportTraffic { frames_sent: 2, bytes_sent: 30, frames_received: 1, bytes_received: 40 });
        assert_eq!((values.eager_sends, values.rendezvous_sends), (3, 1));
    }

    #[test]
    fn the_unexpected_queue_keeps_its_level_and_high_watermark() {
        let mut counters = Counters::new(1, 1);
        counters.unexpected_stored();
        counters.unexpected_stored();
        counters.unexpected_stored();
        counters.unexpected_taken();
        counters.unexpected_taken();
        let values = counters.values(1, &[], Vec::new());
        assert_eq!((values.unexpected_level, values.unexpected_high_watermark, values.unexpected_total), (1, 3, 3));
        counters.restart_unexpected_high_watermark();
        counters.unexpected_stored();
        counters.unexpected_taken();
        counters.unexpected_taken();
        counters.unexpected_taken();
        let values = counters.values(1, &[], Vec::new());
        assert_eq!((values.unexpected_level, values.unexpected_high_watermark, values.unexpected_total), (0, 2, 4));
    }

    #[test]
    fn blocked_time_and_sleeps_are_measured() {
        let mut counters = Counters::new(1, 1);
        assert_eq!(counters.time_blocked(|| 5), 5);
        counters.time_asleep(|| std::thread::sleep(Duration::from_millis(2)));
        let values = counters.values(1, &[], Vec::new());
        assert!(values.blocked_ns >= 2_000_000, "{}", values.blocked_ns);
        assert_eq!(values.sleeps, 1);
    }
}
