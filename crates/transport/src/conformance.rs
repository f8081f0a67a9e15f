//! One conformance suite for every transport: N in-process ranks (threads with a
//! [`ThreadBootstrap`]) exercise the [`Transport`] contract. A failed check panics with its name.
//!
//! ```no_run
//! use braid_transport::{conformance::Suite, selfloop::SelfTransport};
//! Suite::new("self", 1, |_rank, _size| SelfTransport::new()).run_all();
//! ```
//!
//! The suite assumes reachability is symmetric (if `a` reaches `b`, `b` reaches `a`) and checks it.

use std::io::IoSlice;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use braid_lane::PeerId;
use braid_pmi::threads::ThreadBootstrap;

use crate::{Incoming, RemoteRegion, SendOutcome, Sink, Transport, TransportError, MAX_HEADER};

/// How long one check may take before it is declared hung.
const CHECK_DEADLINE: Duration = Duration::from_secs(30);
/// The timeout given to `sleep` in the wake checks; a working doorbell returns far sooner.
const SLEEP_TIMEOUT: Duration = Duration::from_secs(4);
const WOKEN_WITHIN: Duration = Duration::from_secs(2);

/// A received frame, copied out of the callback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    pub peer: PeerId,
    pub header: Vec<u8>,
    pub payload: Vec<u8>,
}

/// The checks, for one transport at one job size.
pub struct Suite<F> {
    label: String,
    size: u32,
    make: Arc<F>,
    bounded: bool,
}

/// What a rank's body gets: its connected transport, the job shape, and job-wide helpers.
pub struct Rank<T> {
    pub transport: T,
    pub rank: u32,
    pub size: u32,
    pub inbox: Vec<Received>,
    job: Arc<JobState>,
}

struct JobState {
    size: u32,
    failed: AtomicBool,
    deadline: Instant,
    barrier: Mutex<(u32, u64)>,
    released: Condvar,
    shared: Mutex<Vec<Vec<PeerId>>>,
}

static JOBS: AtomicU64 = AtomicU64::new(0);

impl<T, F> Suite<F>
where
    T: Transport + Send + 'static,
    F: Fn(u32, u32) -> T + Send + Sync + 'static,
{
    /// `make(rank, size)` builds an unconnected transport for one rank.
    pub fn new(label: &str, size: u32, make: F) -> Suite<F> {
        Suite { label: label.to_string(), size, make: Arc::new(make), bounded: false }
    }

    /// Also require `WouldBlock` once enough frames are unread (transports with finite buffers).
    pub fn expect_backpressure(mut self) -> Suite<F> {
        self.bounded = true;
        self
    }

    pub fn run_all(&self) {
        self.capabilities_are_sane();
        self.bad_sends_are_refused();
        self.ordered_delivery();
        self.payload_shapes();
        self.backpressure();
        self.remote_access();
        self.sleep_and_wake();
        self.placed_payloads();
    }

    /// A job id unique in this process (and across concurrent test processes).
    pub fn job_id(&self, check: &str) -> String {
        format!("conf-{}-{check}-{}-{}", self.label, std::process::id(), JOBS.fetch_add(1, Ordering::Relaxed))
    }

    /// Runs `body` on every rank of a fresh job (connected transports); returns the results.
    pub fn run_job<R: Send + 'static>(&self, check: &str, body: impl Fn(&mut Rank<T>) -> R + Send + Sync + 'static) -> Vec<R> {
        let job = Arc::new(JobState {
            size: self.size,
            failed: AtomicBool::new(false),
            deadline: Instant::now() + CHECK_DEADLINE,
            barrier: Mutex::new((0, 0)),
            released: Condvar::new(),
            shared: Mutex::new(vec![Vec::new(); self.size as usize]),
        });
        let body = Arc::new(body);
        let threads: Vec<_> = ThreadBootstrap::job(&self.job_id(check), self.size)
            .into_iter()
            .enumerate()
            .map(|(rank, mut bootstrap)| {
                let (make, body, job) = (Arc::clone(&self.make), Arc::clone(&body), Arc::clone(&job));
                let name = format!("{}:{check}:rank{rank}", self.label);
                std::thread::Builder::new()
                    .name(name)
                    .spawn(move || {
                        let _flag = FailFlag(&job.failed);
                        let (rank, size) = (rank as u32, job.size);
                        let mut transport = make(rank, size);
                        transport.connect(&mut bootstrap).unwrap_or_else(|error| panic!("rank {rank}: connect failed: {error}"));
                        let mut context = Rank { transport, rank, size, inbox: Vec::new(), job: Arc::clone(&job) };
                        body(&mut context)
                    })
                    .expect("spawn rank thread")
            })
            .collect();
        let results: Vec<_> = threads.into_iter().map(|thread| thread.join()).collect();
        let mut values = Vec::new();
        for result in results {
            match result {
                Ok(value) => values.push(value),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        values
    }

    pub fn capabilities_are_sane(&self) {
        let label = self.label.clone();
        self.run_job("caps", move |me| {
            let caps = me.transport.capabilities();
            assert!(!me.transport.name().is_empty());
            assert!(caps.max_inline <= caps.max_payload, "{label}: max_inline {} > max_payload {}", caps.max_inline, caps.max_payload);
            assert!(caps.max_payload > 0);
            let profile = me.transport.profile();
            assert!(profile.predict(0) >= 0.0 && profile.predict(1 << 16) >= profile.predict(64), "{label}: profile must grow with size");
            let peers = me.peers();
            me.job.shared.lock().expect("shared")[me.rank as usize] = peers.clone();
            me.barrier();
            let all = me.job.shared.lock().expect("shared").clone();
            for peer in peers {
                assert!(all[peer as usize].contains(&me.rank), "{label}: rank {} reaches {peer} but not the reverse", me.rank);
            }
        });
    }

    pub fn bad_sends_are_refused(&self) {
        self.run_job("refusals", |me| {
            let nowhere = me.size + 7;
            assert!(!me.transport.reaches(nowhere));
            assert_eq!(me.transport.try_send(nowhere, b"h", &[]), Err(TransportError::Unreachable(nowhere)));
            let caps = me.transport.capabilities();
            for peer in me.peers() {
                assert!(me.transport.try_send(peer, &[0; MAX_HEADER + 1], &[]).is_err(), "oversized header must be refused");
                if caps.max_payload < 1 << 26 {
                    let big = vec![0u8; caps.max_payload + 1];
                    assert_eq!(me.transport.try_send(peer, &[], &[IoSlice::new(&big)]), Err(TransportError::TooLarge { len: caps.max_payload + 1, max: caps.max_payload }));
                }
            }
        });
    }

    /// Many small frames to every reached peer, interleaved; each pair's stream arrives in order.
    pub fn ordered_delivery(&self) {
        const FRAMES: u32 = 300;
        self.run_job("ordered", |me| {
            let peers = me.peers();
            for seq in 0..FRAMES {
                for &peer in &peers {
                    let payload = pattern(me.rank, seq, (seq % 50) as usize);
                    me.send(peer, &frame_header(me.rank, seq, 8), &[IoSlice::new(&payload)]);
                }
            }
            me.receive_until(|inbox| peers.iter().all(|&p| inbox.iter().filter(|f| f.peer == p).count() == FRAMES as usize));
            for &peer in &peers {
                let frames: Vec<_> = me.inbox.iter().filter(|f| f.peer == peer).collect();
                for (seq, frame) in frames.iter().enumerate() {
                    let seq = seq as u32;
                    assert_eq!(frame.header, frame_header(peer, seq, 8), "rank {} from {peer}: frame {seq} out of order", me.rank);
                    assert_eq!(frame.payload, pattern(peer, seq, (seq % 50) as usize));
                }
            }
        });
    }

    /// Payload sizes around every boundary (inline limit, cell sizes, pool buffer), header lengths
    /// from 0 to MAX_HEADER, payloads gathered from 1 to 3 slices.
    pub fn payload_shapes(&self) {
        self.run_job("shapes", |me| {
            let caps = me.transport.capabilities();
            let sizes = shape_sizes(caps.max_inline, caps.max_payload);
            let header_lengths = [0, 1, 13, MAX_HEADER];
            let peers = me.peers();
            for (seq, &size) in sizes.iter().enumerate() {
                let seq = seq as u32;
                let payload = pattern(me.rank, seq, size);
                let header = frame_header(me.rank, seq, header_lengths[seq as usize % header_lengths.len()]);
                let parts = split_in(&payload, seq as usize % 3 + 1);
                let slices: Vec<IoSlice<'_>> = parts.iter().map(|part| IoSlice::new(part)).collect();
                for &peer in &peers {
                    me.send(peer, &header, &slices);
                }
            }
            me.receive_until(|inbox| inbox.len() == sizes.len() * peers.len());
            for &peer in &peers {
                let frames: Vec<_> = me.inbox.iter().filter(|f| f.peer == peer).collect();
                assert_eq!(frames.len(), sizes.len());
                for (seq, (frame, &size)) in frames.iter().zip(&sizes).enumerate() {
                    let seq = seq as u32;
                    let header_len = header_lengths[seq as usize % header_lengths.len()];
                    assert_eq!(frame.header, frame_header(peer, seq, header_len), "header of the {size}-byte frame");
                    assert!(frame.payload == pattern(peer, seq, size), "payload of {size} bytes (got {}) corrupted", frame.payload.len());
                }
            }
        });
    }

    /// Rank 0 floods its first peer, which does not poll: once the transport says `WouldBlock`
    /// (required if `expect_backpressure`), the receiver drains and the sender makes progress.
    pub fn backpressure(&self) {
        let bounded = self.bounded;
        self.run_job("backpressure", move |me| {
            let caps = me.transport.capabilities();
            let target = if me.rank == 0 { me.peers().first().copied() } else { None };
            me.job.shared.lock().expect("shared")[me.rank as usize] = target.into_iter().collect();
            me.barrier();
            let receiver = me.job.shared.lock().expect("shared")[0].first().copied();
            let mut sizes = vec![caps.max_inline.min(32)];
            if caps.max_payload > caps.max_inline {
                sizes.push(caps.max_payload.min(1 << 20));
            }
            for size in sizes {
                let limit = 4096.min((16 << 20) / size.max(1));
                let mut sent = 0u32;
                if let Some(peer) = target {
                    let payload = vec![0xa5u8; size];
                    while (sent as usize) < limit {
                        match me.transport.try_send(peer, &sent.to_le_bytes(), &[IoSlice::new(&payload)]).expect("flood send") {
                            SendOutcome::Sent => sent += 1,
                            SendOutcome::WouldBlock => break,
                        }
                    }
                    assert!(!bounded || (sent as usize) < limit, "{size}-byte frames: {limit} sends without WouldBlock");
                    me.job.shared.lock().expect("shared")[0] = vec![peer, sent];
                }
                me.barrier();
                let flood = me.job.shared.lock().expect("shared")[0].get(1).copied().unwrap_or(0);
                const MORE: u32 = 10;
                if let Some(peer) = target {
                    let payload = vec![0x5au8; size];
                    for extra in 0..MORE {
                        me.send(peer, &(sent + extra).to_le_bytes(), &[IoSlice::new(&payload)]);
                    }
                }
                if receiver == Some(me.rank) {
                    me.receive_until(|inbox| inbox.len() == (flood + MORE) as usize);
                    for (seq, frame) in me.inbox.iter().enumerate() {
                        assert_eq!((frame.peer, frame.header.clone(), frame.payload.len()), (0, (seq as u32).to_le_bytes().to_vec(), size));
                    }
                    me.inbox.clear();
                }
                // The flooding rank must keep polling here: a TCP sender's queued frames only
                // leave while it polls.
                me.barrier_polling();
            }
        });
    }

    /// With `remote_read`, rank 0 exposes a buffer and its first peer reads it whole and in part,
    /// then writes into it; without it, `remote_read` and `remote_write` must fail cleanly.
    pub fn remote_access(&self) {
        self.run_job("remote-access", |me| {
            if !me.transport.capabilities().remote_read {
                let mut local = [0u8; 16];
                let source = [1u8; 16];
                let region = me.transport.expose(&source);
                for peer in me.peers().into_iter().chain([me.rank]) {
                    let result = me.transport.remote_read(peer, region, 0, &mut local);
                    assert!(matches!(result, Err(TransportError::Unsupported(_) | TransportError::RemoteAccessRefused)), "{result:?}");
                    let result = me.transport.remote_write(peer, region, 0, &local);
                    assert!(matches!(result, Err(TransportError::Unsupported(_) | TransportError::RemoteAccessRefused)), "{result:?}");
                }
                return;
            }
            if me.rank == 0 {
                me.job.shared.lock().expect("shared")[0] = me.peers().first().copied().into_iter().collect();
            }
            me.barrier();
            let Some(reader) = me.job.shared.lock().expect("shared")[0].first().copied() else { return };
            let buffer = if me.rank == 0 { pattern(0, 99, (3 << 20) + 5) } else { Vec::new() };
            if me.rank == 0 {
                let region = me.transport.expose(&buffer);
                me.send(reader, &encode_region(region), &[]);
            }
            if me.rank == reader {
                me.read_exposed_region();
            }
            if me.rank == 0 {
                me.receive_until(|inbox| inbox.iter().any(|f| f.peer == reader && f.header == b"done"));
                assert!(buffer[WRITTEN_AT..WRITTEN_AT + 1000] == pattern(1, 100, 1000)[..], "remote write left wrong bytes");
            }
            drop(buffer);
        });
    }

    /// A receiver blocked in `sleep` is woken by a send; a send between `prepare_sleep` and
    /// `sleep` makes the sleep return at once; frames queued before `prepare_sleep` are seen by
    /// the poll that follows it.
    pub fn sleep_and_wake(&self) {
        self.run_job("sleep", |me| {
            if !me.transport.capabilities().wakes_receiver {
                return;
            }
            if me.transport.reaches(me.rank) {
                me.send(me.rank, b"before", &[]);
                assert!(me.transport.prepare_sleep().is_some());
                me.receive_until(|inbox| inbox.iter().any(|f| f.header == b"before"));
                me.transport.finish_sleep();
                me.inbox.clear();
            }
            let (sender, receiver) = (0u32, 1u32);
            let paired = me.size >= 2 && me.rank <= 1 && me.transport.reaches(1 - me.rank);
            if !paired {
                me.barrier();
                me.barrier();
                me.barrier();
                return;
            }
            debug_assert!(me.rank == sender || me.rank == receiver);
            if me.rank == receiver {
                let start = Instant::now();
                me.barrier();
                loop {
                    let token = me.transport.prepare_sleep().expect("a transport that wakes receivers gives a sleep token");
                    if me.poll() > 0 {
                        me.transport.finish_sleep();
                        break;
                    }
                    me.transport.sleep(token, SLEEP_TIMEOUT);
                    me.transport.finish_sleep();
                    me.check_alive();
                }
                assert!(start.elapsed() < WOKEN_WITHIN, "a sleeping receiver was not woken by a send ({:?})", start.elapsed());
                assert_eq!(me.inbox.len(), 1);

                let token = me.transport.prepare_sleep().expect("sleep token");
                me.barrier();
                me.barrier();
                let start = Instant::now();
                me.transport.sleep(token, SLEEP_TIMEOUT);
                me.transport.finish_sleep();
                assert!(start.elapsed() < WOKEN_WITHIN, "a frame sent after prepare_sleep did not end the sleep ({:?})", start.elapsed());
                me.receive_until(|inbox| inbox.len() == 2);
            } else {
                me.barrier();
                std::thread::sleep(Duration::from_millis(50));
                me.send(receiver, b"wake", &[]);
                me.barrier();
                me.send(receiver, b"early", &[]);
                me.barrier();
            }
        });
    }
}

/// A sink that places the payloads of frames whose header starts with `P` (one place per peer
/// and header), and begins placing those starting with `D` only to decline them when asked again;
/// every other frame goes to the inbox.
struct PlacingSink<'a> {
    inbox: &'a mut Vec<Received>,
    places: &'a mut Vec<(PeerId, Vec<u8>, Vec<u8>)>,
    placed: &'a mut Vec<(PeerId, Vec<u8>)>,
    asked: &'a mut Vec<(PeerId, Vec<u8>)>,
}

impl Sink for PlacingSink<'_> {
    fn deliver(&mut self, frame: Incoming<'_>) {
        let mut payload = Vec::new();
        frame.payload.append_to(&mut payload);
        self.inbox.push(Received { peer: frame.peer, header: frame.header.to_vec(), payload })
    }

    fn place(&mut self, peer: PeerId, header: &[u8], len: usize) -> Option<&mut [u8]> {
        match header.first() {
            Some(b'D') if self.asked.iter().any(|(p, h)| *p == peer && h == header) => None,
            Some(b'D') => {
                self.asked.push((peer, header.to_vec()));
                // A scratch place: whatever lands there is never looked at.
                self.places.push((peer, header.to_vec(), vec![0; len]));
                self.places.last_mut().map(|(_, _, place)| place.as_mut_slice())
            }
            Some(b'P') => {
                let index = match self.places.iter().position(|(p, h, _)| *p == peer && h == header) {
                    Some(index) => index,
                    None => {
                        self.places.push((peer, header.to_vec(), vec![0; len]));
                        self.places.len() - 1
                    }
                };
                Some(self.places[index].2.as_mut_slice())
            }
            _ => None,
        }
    }

    fn placed(&mut self, peer: PeerId, header: &[u8], len: usize) {
        assert_eq!(header.first(), Some(&b'P'), "a declined payload was reported placed");
        assert!(self.places.iter().any(|(p, h, place)| *p == peer && h == header && place.len() == len));
        self.placed.push((peer, header.to_vec()));
    }
}

impl<T, F> Suite<F>
where
    T: Transport + Send + 'static,
    F: Fn(u32, u32) -> T + Send + Sync + 'static,
{
    /// Frames whose payload the sink places arrive in their place, in order with the frames
    /// around them, whether the transport places them or delivers them whole; one whose placing
    /// the sink declines once begun is dropped (or delivered whole, by a transport that does not
    /// place), and the frames after it arrive intact.
    pub fn placed_payloads(&self) {
        self.run_job("placed", |me| {
            let len = me.transport.capabilities().max_payload.min(1 << 20);
            let peers = me.peers();
            let frames: [&[u8]; 7] = [b"s0", b"P1", b"s2", b"D3", b"s4", b"P5", b"s6"];
            for (seq, header) in frames.iter().enumerate() {
                let payload = if header[0] == b's' { pattern(me.rank, seq as u32, 100) } else { pattern(me.rank, seq as u32, len) };
                for &peer in &peers {
                    me.send(peer, header, &[IoSlice::new(&payload)]);
                }
            }
            let (mut places, mut placed, mut asked) = (Vec::new(), Vec::new(), Vec::new());
            let arrived = |inbox: &[Received], placed: &[(PeerId, Vec<u8>)], peer: PeerId, header: &[u8]| {
                inbox.iter().any(|f| f.peer == peer && f.header == header) || placed.iter().any(|(p, h)| *p == peer && h == header)
            };
            loop {
                let done = peers.iter().all(|&peer| [&b"s6"[..], b"P1", b"P5"].iter().all(|header| arrived(&me.inbox, &placed, peer, header)));
                if done {
                    break;
                }
                let mut sink = PlacingSink { inbox: &mut me.inbox, places: &mut places, placed: &mut placed, asked: &mut asked };
                if me.transport.poll_placing(&mut sink) == 0 {
                    std::thread::yield_now();
                }
                me.check_alive();
            }
            for &peer in &peers {
                let order: Vec<&[u8]> = me.inbox.iter().filter(|f| f.peer == peer).map(|f| f.header.as_slice()).filter(|h| h[0] == b's').collect();
                assert_eq!(order, [&b"s0"[..], b"s2", b"s4", b"s6"], "rank {} from {peer}: small frames out of order", me.rank);
                for frame in me.inbox.iter().filter(|f| f.peer == peer) {
                    let seq = u32::from(frame.header[1] - b'0');
                    let expected = if frame.header[0] == b's' { pattern(peer, seq, 100) } else { pattern(peer, seq, len) };
                    assert!(frame.payload == expected, "rank {} from {peer}: frame {:?} corrupted", me.rank, frame.header);
                }
                for (p, header) in placed.iter().filter(|(p, _)| *p == peer) {
                    let seq = u32::from(header[1] - b'0');
                    let place = places.iter().find(|(q, h, _)| q == p && h == header).map(|(_, _, place)| place).expect("a place");
                    assert!(*place == pattern(peer, seq, len), "rank {} from {peer}: placed payload {header:?} corrupted", me.rank);
                }
            }
            // Every rank stays until every other has read what it sent.
            me.barrier_polling();
        });
    }
}

impl<T: Transport> Rank<T> {
    /// The ranks this transport reaches, self included if it does.
    pub fn peers(&self) -> Vec<PeerId> {
        (0..self.size).filter(|&p| self.transport.reaches(p)).collect()
    }

    /// Polls once, appending to the inbox.
    pub fn poll(&mut self) -> usize {
        let inbox = &mut self.inbox;
        self.transport.poll(&mut |frame| {
            // Read as the engine reads an eager payload: appended as it is written.
            let mut payload = Vec::new();
            frame.payload.append_to(&mut payload);
            inbox.push(Received { peer: frame.peer, header: frame.header.to_vec(), payload })
        })
    }

    /// Sends, polling (into the inbox) while the transport says `WouldBlock`.
    pub fn send(&mut self, peer: PeerId, header: &[u8], payload: &[IoSlice<'_>]) {
        loop {
            match self.transport.try_send(peer, header, payload) {
                Ok(SendOutcome::Sent) => return,
                Ok(SendOutcome::WouldBlock) => {
                    if self.poll() == 0 {
                        std::thread::yield_now();
                    }
                    self.check_alive();
                }
                Err(error) => panic!("rank {}: send to {peer} failed: {error}", self.rank),
            }
        }
    }

    /// Polls until `done(inbox)`.
    pub fn receive_until(&mut self, done: impl Fn(&[Received]) -> bool) {
        while !done(&self.inbox) {
            if self.poll() == 0 {
                std::thread::yield_now();
            }
            self.check_alive();
        }
    }

    /// Job-wide barrier that gives up if another rank failed or the check overran. It does not
    /// poll: a receiver waiting here leaves its channels full.
    pub fn barrier(&self) {
        meet(&self.job, Duration::from_millis(50), || self.check_alive());
    }

    /// A barrier that keeps polling (into the inbox) while it waits, for transports whose
    /// queued frames only leave while the sender polls (TCP).
    pub fn barrier_polling(&mut self) {
        let job = Arc::clone(&self.job);
        meet(&job, Duration::from_millis(1), || {
            self.poll();
            self.check_alive();
        });
    }

    /// Panics if another rank failed or the check overran its deadline.
    pub fn check_alive(&self) {
        assert!(!self.job.failed.load(Ordering::Relaxed), "rank {}: another rank failed", self.rank);
        assert!(Instant::now() < self.job.deadline, "rank {}: check did not finish in {CHECK_DEADLINE:?}", self.rank);
    }

    /// The reader's side of `remote_read`: waits for rank 0's region, reads it, answers "done".
    fn read_exposed_region(&mut self) {
        self.receive_until(|inbox| inbox.iter().any(|f| f.peer == 0 && f.header.len() == 20));
        let index = self.inbox.iter().position(|f| f.peer == 0 && f.header.len() == 20).expect("region frame");
        let region = decode_region(&self.inbox.remove(index).header);
        let expected = pattern(0, 99, region.len as usize);
        let mut whole = vec![0u8; region.len as usize];
        self.transport.remote_read(0, region, 0, &mut whole).expect("remote read of the whole region");
        assert!(whole == expected, "remote read returned wrong bytes");
        let mut part = vec![0u8; 1000];
        self.transport.remote_read(0, region, 12_345, &mut part).expect("remote read at an offset");
        assert_eq!(part, expected[12_345..13_345]);
        let beyond = self.transport.remote_read(0, region, region.len - 10, &mut part);
        assert!(beyond.is_err(), "a read past the exposed region must fail");
        let written = pattern(1, 100, 1000);
        self.transport.remote_write(0, region, WRITTEN_AT as u64, &written).expect("remote write at an offset");
        let beyond = self.transport.remote_write(0, region, region.len - 10, &written);
        assert!(beyond.is_err(), "a write past the exposed region must fail");
        self.send(0, b"done", &[]);
    }
}

struct FailFlag<'a>(&'a AtomicBool);

impl Drop for FailFlag<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::Relaxed);
        }
    }
}

/// Deterministic content for (sender, sequence) frames.
pub fn pattern(sender: u32, seq: u32, len: usize) -> Vec<u8> {
    let seed = (sender as usize).wrapping_mul(131).wrapping_add(seq as usize * 7919);
    (0..len).map(|i| (seed.wrapping_add(i.wrapping_mul(31)) ^ (i >> 8)) as u8).collect()
}

/// A header of `len` bytes: sender and sequence first (when they fit), then filler.
fn frame_header(sender: u32, seq: u32, len: usize) -> Vec<u8> {
    let mut header: Vec<u8> = sender.to_le_bytes().into_iter().chain(seq.to_le_bytes()).collect();
    header.extend((0..MAX_HEADER).map(|i| (i as u8).wrapping_mul(3).wrapping_add(seq as u8)));
    header.truncate(len);
    header
}

fn shape_sizes(max_inline: usize, max_payload: usize) -> Vec<usize> {
    let cap = max_payload.min(1 << 20);
    let inline = max_inline.min(1 << 16);
    let mut sizes: Vec<usize> = [0, 1, 7, 8, 9, 40, 47, 48, 49, 55, 56, 57, 63, 64, 65, 100, 1000, 4099, 70_000]
        .into_iter()
        .chain([inline.saturating_sub(1), inline, inline + 1, 3 * inline + 5, cap - 1, cap])
        .filter(|&size| size <= cap)
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

/// Splits `bytes` into `parts` consecutive slices of uneven lengths (some possibly empty).
fn split_in(bytes: &[u8], parts: usize) -> Vec<&[u8]> {
    let mut cuts = vec![0];
    for part in 1..parts {
        cuts.push((bytes.len() * part / parts + part).min(bytes.len()));
    }
    cuts.push(bytes.len());
    cuts.windows(2).map(|w| &bytes[w[0]..w[1].max(w[0])]).collect()
}

/// Where the remote-access check writes into the exposed buffer.
const WRITTEN_AT: usize = 777;

fn encode_region(region: RemoteRegion) -> Vec<u8> {
    let mut bytes = region.pid.to_le_bytes().to_vec();
    bytes.extend(region.address.to_le_bytes());
    bytes.extend(region.len.to_le_bytes());
    bytes
}

fn decode_region(bytes: &[u8]) -> RemoteRegion {
    RemoteRegion {
        pid: i32::from_le_bytes(bytes[0..4].try_into().expect("pid")),
        address: u64::from_le_bytes(bytes[4..12].try_into().expect("address")),
        len: u64::from_le_bytes(bytes[12..20].try_into().expect("len")),
    }
}

/// Counts this rank in at the job's barrier and waits for the others, calling `between` every
/// `period` while it waits.
fn meet(job: &JobState, period: Duration, mut between: impl FnMut()) {
    let mut state = job.barrier.lock().expect("barrier");
    let generation = state.1;
    state.0 += 1;
    if state.0 == job.size {
        *state = (0, generation + 1);
        job.released.notify_all();
        return;
    }
    while state.1 == generation {
        state = job.released.wait_timeout(state, period).expect("barrier").0;
        drop(state);
        between();
        state = job.barrier.lock().expect("barrier");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_cover_the_bytes_in_order() {
        let bytes: Vec<u8> = (0..100).collect();
        for parts in 1..4 {
            let pieces = split_in(&bytes, parts);
            assert_eq!(pieces.len(), parts);
            assert_eq!(pieces.concat(), bytes);
        }
        assert_eq!(split_in(&[], 3).concat(), Vec::<u8>::new());
    }

    #[test]
    fn regions_round_trip() {
        let region = RemoteRegion { pid: 1234, address: 0xdead_beef_0000, len: 77 };
        assert_eq!(decode_region(&encode_region(region)), region);
    }
}
