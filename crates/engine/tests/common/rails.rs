//! In-process network rails: each rail an ordered channel per pair of ranks with its own profile,
//! capacity and frame size, counters of the rendezvous bytes it carried, and a switch that kills
//! it (optionally once it has carried some bytes), dropping what is in flight as a failed link
//! would. Ranks are grouped into nodes: rails reach only other nodes, and [`NodeLocal`] keeps a
//! direct transport to its own node (the role of shared memory).

use std::collections::VecDeque;
use std::io::IoSlice;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use braid_config::Config;
use braid_engine::Engine;
use braid_lane::{Capabilities, PeerId, Profile};
use braid_pmi::threads::ThreadBootstrap;
use braid_pmi::Bootstrap;
use braid_transport::{Incoming, Payload, SendOutcome, Transport, TransportError};

use super::{concat, unique_job_name, ChannelNet, ChannelOptions, ChannelTransport, LoopTransport};

/// One rail's shape.
#[derive(Debug, Clone)]
pub struct RailOptions {
    pub profile: Profile,
    /// Frames in flight per ordered pair of ranks before `try_send` answers `WouldBlock`.
    pub capacity: usize,
    /// ... and bytes in flight per ordered pair (a socket's buffer is counted in bytes; 1 MiB
    /// unless a test says otherwise, so that a stalled rail fills up as a socket would).
    pub capacity_bytes: u64,
    pub max_payload: usize,
    /// Kill the rail once it has carried this many rendezvous (NET_DATA) payload bytes.
    pub fail_after: Option<u64>,
    /// Stop delivering once the rail has carried this many rendezvous payload bytes, until
    /// [`RailNet::release`]: what is in flight stays there, as on a link slowed to a crawl.
    pub stall_after: Option<u64>,
}

impl RailOptions {
    /// A rail of `bytes_per_second` with 20 us latency, 16 frames or 1 MiB in flight.
    pub fn with_bandwidth(bytes_per_second: f64) -> RailOptions {
        RailOptions { profile: Profile::from_model(20_000.0, bytes_per_second, 16 << 20), capacity: 16, capacity_bytes: 1 << 20, max_payload: 256 * 1024, fail_after: None, stall_after: None }
    }
}

/// A frame on a rail: source, header, payload.
type RailFrame = (PeerId, Vec<u8>, Vec<u8>);

struct Rail {
    options: RailOptions,
    /// Per receiving rank: frames in arrival order.
    inboxes: Vec<Mutex<VecDeque<RailFrame>>>,
    in_flight: Vec<AtomicUsize>,
    /// Per (sender, receiver): bytes of the frames in flight (the backlog, as a socket's
    /// send queue counts it).
    in_flight_bytes: Vec<AtomicU64>,
    alive: AtomicBool,
    stalled: AtomicBool,
    released: AtomicBool,
    data_bytes: AtomicU64,
    frames: AtomicU64,
    backlog_reads: AtomicU64,
}

/// The shared state of one job's rails.
pub struct RailNet {
    size: u32,
    nodes: Vec<u32>,
    rails: Vec<Rail>,
}

/// First byte of the engine's NET_DATA frames (counted per rail).
const NET_DATA_KIND: u8 = 10;

impl RailNet {
    /// Index of the ordered pair `from` -> `to` in a rail's per-pair counters.
    fn pair(&self, from: PeerId, to: PeerId) -> usize {
        (from * self.size + to) as usize
    }

    /// `nodes[rank]` is the node of each rank.
    pub fn new(nodes: Vec<u32>, rails: Vec<RailOptions>) -> Arc<RailNet> {
        let size = nodes.len() as u32;
        Arc::new(RailNet {
            size,
            nodes,
            rails: rails
                .into_iter()
                .map(|options| Rail {
                    options,
                    inboxes: (0..size).map(|_| Mutex::new(VecDeque::new())).collect(),
                    in_flight: (0..size * size).map(|_| AtomicUsize::new(0)).collect(),
                    in_flight_bytes: (0..size * size).map(|_| AtomicU64::new(0)).collect(),
                    alive: AtomicBool::new(true),
                    stalled: AtomicBool::new(false),
                    released: AtomicBool::new(false),
                    data_bytes: AtomicU64::new(0),
                    frames: AtomicU64::new(0),
                    backlog_reads: AtomicU64::new(0),
                })
                .collect(),
        })
    }

    /// Rendezvous payload bytes rail `rail` carried.
    pub fn data_bytes(&self, rail: usize) -> u64 {
        self.rails[rail].data_bytes.load(Ordering::SeqCst)
    }

    /// How many times a rank asked rail `rail` for its backlog.
    pub fn backlog_reads(&self, rail: usize) -> u64 {
        self.rails[rail].backlog_reads.load(Ordering::SeqCst)
    }

    /// Frames of any kind rail `rail` carried.
    pub fn frames(&self, rail: usize) -> u64 {
        self.rails[rail].frames.load(Ordering::SeqCst)
    }

    /// Takes rail `rail` down: every frame in flight on it is lost.
    pub fn kill(&self, rail: usize) {
        let rail = &self.rails[rail];
        rail.alive.store(false, Ordering::SeqCst);
        for inbox in &rail.inboxes {
            inbox.lock().unwrap().clear();
        }
    }

    /// Ends rail `rail`'s stall: what it held is delivered, and it stalls no more.
    pub fn release(&self, rail: usize) {
        let rail = &self.rails[rail];
        rail.released.store(true, Ordering::SeqCst);
        rail.stalled.store(false, Ordering::SeqCst);
    }

    /// Whether rail `rail` is holding back what it carries.
    pub fn stalled(&self, rail: usize) -> bool {
        self.rails[rail].stalled.load(Ordering::SeqCst)
    }

    pub fn alive(&self, rail: usize) -> bool {
        self.rails[rail].alive.load(Ordering::SeqCst)
    }
}

pub struct RailTransport {
    rank: PeerId,
    rail: usize,
    name: String,
    net: Arc<RailNet>,
    arrived: VecDeque<RailFrame>,
}

impl RailTransport {
    pub fn new(net: &Arc<RailNet>, rail: usize, rank: PeerId) -> RailTransport {
        RailTransport { rank, rail, name: format!("rail{rail}"), net: Arc::clone(net), arrived: VecDeque::new() }
    }

    fn state(&self) -> &Rail {
        &self.net.rails[self.rail]
    }
}

impl Transport for RailTransport {
    fn name(&self) -> &str {
        &self.name
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities { max_payload: self.state().options.max_payload, max_inline: 1024, remote_read: false, wakes_receiver: false }
    }

    fn profile(&self) -> &Profile {
        &self.state().options.profile
    }

    fn connect(&mut self, _bootstrap: &mut dyn Bootstrap) -> Result<(), TransportError> {
        Ok(())
    }

    fn reaches(&self, peer: PeerId) -> bool {
        peer < self.net.size && self.net.nodes[peer as usize] != self.net.nodes[self.rank as usize] && self.state().alive.load(Ordering::SeqCst)
    }

    fn try_send(&mut self, peer: PeerId, header: &[u8], payload: &[IoSlice<'_>]) -> Result<SendOutcome, TransportError> {
        if !self.reaches(peer) {
            return Err(TransportError::Unreachable(peer));
        }
        let rail = self.state();
        let len: usize = payload.iter().map(|slice| slice.len()).sum();
        if len > rail.options.max_payload {
            return Err(TransportError::TooLarge { len, max: rail.options.max_payload });
        }
        let pair = self.net.pair(self.rank, peer);
        if !self.has_room(peer) {
            return Ok(SendOutcome::WouldBlock);
        }
        if header.first() == Some(&NET_DATA_KIND) {
            let carried = rail.data_bytes.fetch_add(len as u64, Ordering::SeqCst) + len as u64;
            if rail.options.fail_after.is_some_and(|limit| carried >= limit) {
                // The link dies with this chunk in flight.
                self.net.kill(self.rail);
                return Ok(SendOutcome::Sent);
            }
            if rail.options.stall_after.is_some_and(|limit| carried >= limit) && !rail.released.load(Ordering::SeqCst) {
                rail.stalled.store(true, Ordering::SeqCst);
            }
        }
        rail.in_flight[pair].fetch_add(1, Ordering::SeqCst);
        rail.in_flight_bytes[pair].fetch_add((header.len() + len) as u64, Ordering::SeqCst);
        rail.frames.fetch_add(1, Ordering::SeqCst);
        rail.inboxes[peer as usize].lock().unwrap().push_back((self.rank, header.to_vec(), concat(payload)));
        Ok(SendOutcome::Sent)
    }

    fn poll(&mut self, deliver: &mut dyn FnMut(Incoming<'_>)) -> usize {
        let rail = &self.net.rails[self.rail];
        if rail.stalled.load(Ordering::SeqCst) {
            return 0;
        }
        std::mem::swap(&mut self.arrived, &mut rail.inboxes[self.rank as usize].lock().unwrap());
        let count = self.arrived.len();
        while let Some((source, header, payload)) = self.arrived.pop_front() {
            deliver(Incoming { peer: source, header: &header, payload: Payload::Complete(&payload) });
            let pair = self.net.pair(source, self.rank);
            rail.in_flight[pair].fetch_sub(1, Ordering::SeqCst);
            rail.in_flight_bytes[pair].fetch_sub((header.len() + payload.len()) as u64, Ordering::SeqCst);
        }
        count
    }

    /// A rail with `capacity` frames or `capacity_bytes` bytes in flight to `peer` is full, as a
    /// socket waiting for room.
    fn has_room(&self, peer: PeerId) -> bool {
        let rail = self.state();
        let pair = self.net.pair(self.rank, peer);
        peer >= self.net.size || (rail.in_flight[pair].load(Ordering::SeqCst) < rail.options.capacity && rail.in_flight_bytes[pair].load(Ordering::SeqCst) < rail.options.capacity_bytes)
    }

    fn backlog(&self, peer: PeerId) -> u64 {
        let rail = self.state();
        rail.backlog_reads.fetch_add(1, Ordering::SeqCst);
        rail.in_flight_bytes[self.net.pair(self.rank, peer)].load(Ordering::SeqCst)
    }
}

/// A direct transport restricted to the ranks of its own node.
pub struct NodeLocal {
    inner: ChannelTransport,
    rank: PeerId,
    nodes: Vec<u32>,
}

impl Transport for NodeLocal {
    fn name(&self) -> &str {
        "node-local"
    }
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }
    fn profile(&self) -> &Profile {
        self.inner.profile()
    }
    fn connect(&mut self, bootstrap: &mut dyn Bootstrap) -> Result<(), TransportError> {
        self.inner.connect(bootstrap)
    }
    fn reaches(&self, peer: PeerId) -> bool {
        self.inner.reaches(peer) && self.nodes.get(peer as usize) == self.nodes.get(self.rank as usize)
    }
    fn try_send(&mut self, peer: PeerId, header: &[u8], payload: &[IoSlice<'_>]) -> Result<SendOutcome, TransportError> {
        self.inner.try_send(peer, header, payload)
    }
    fn poll(&mut self, deliver: &mut dyn FnMut(Incoming<'_>)) -> usize {
        self.inner.poll(deliver)
    }
    fn remote_read(&mut self, peer: PeerId, remote: braid_transport::RemoteRegion, offset: u64, local: &mut [u8]) -> Result<(), TransportError> {
        self.inner.remote_read(peer, remote, offset, local)
    }
}

/// Runs `body` on every rank of an in-process job whose ranks sit on `nodes` (rails between
/// nodes, a node-local channel within one), then finalizes; returns each rank's result.
pub fn run_rail_job<T: Send + 'static>(nodes: Vec<u32>, rails: Vec<RailOptions>, config: Config, body: impl Fn(&mut Engine, &RailNet) -> T + Send + Sync + 'static) -> (Vec<T>, Arc<RailNet>) {
    run_rail_job_finalizing(nodes, rails, config, true, body)
}

/// Like [`run_rail_job`]; `check_finalize: false` skips finalize for a job whose network is
/// gone: finalize ends in a fence of every rank, and a rank whose progress fails never gets
/// there (a real job aborts instead), so the others would wait for it forever.
pub fn run_rail_job_finalizing<T: Send + 'static>(
    nodes: Vec<u32>,
    rails: Vec<RailOptions>,
    config: Config,
    check_finalize: bool,
    body: impl Fn(&mut Engine, &RailNet) -> T + Send + Sync + 'static,
) -> (Vec<T>, Arc<RailNet>) {
    let size = nodes.len() as u32;
    let rail_count = rails.len();
    let net = RailNet::new(nodes.clone(), rails);
    let local = ChannelNet::new(size, ChannelOptions::default());
    let body = Arc::new(body);
    let handles: Vec<_> = ThreadBootstrap::job(&unique_job_name(), size)
        .into_iter()
        .map(|bootstrap| {
            let (net, local, body, config, nodes) = (Arc::clone(&net), Arc::clone(&local), Arc::clone(&body), config.clone(), nodes.clone());
            std::thread::spawn(move || {
                let rank = bootstrap.rank();
                let direct: Vec<Box<dyn Transport>> = vec![Box::new(NodeLocal { inner: ChannelTransport::new(&local, rank), rank, nodes })];
                let rails: Vec<Box<dyn Transport>> = (0..rail_count).map(|rail| Box::new(RailTransport::new(&net, rail, rank)) as Box<dyn Transport>).collect();
                let mut engine = Engine::with_rails(&config, Box::new(bootstrap), Box::new(LoopTransport::new(rank)), direct, rails).expect("engine start");
                let result = body(&mut engine, &net);
                if check_finalize {
                    engine.finalize().expect("finalize");
                }
                result
            })
        })
        .collect();
    let results = handles.into_iter().map(|handle| handle.join().expect("rank panicked")).collect();
    (results, net)
}
