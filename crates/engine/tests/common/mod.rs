//! Test harness: in-process jobs (one thread per rank over `ThreadBootstrap`) and a channel
//! transport whose capacity, frame size, remote reads and doorbell the tests choose, so that
//! back-pressure and the fallbacks can be forced.

#![allow(dead_code)]

pub mod rails;
pub mod scenarios;

use std::collections::VecDeque;
use std::io::IoSlice;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use braid_config::Config;
use braid_engine::Engine;
use braid_lane::{Capabilities, PeerId, Profile};
use braid_pmi::threads::ThreadBootstrap;
use braid_pmi::Bootstrap;
use braid_transport::{Incoming, Payload, RemoteRegion, SendOutcome, Transport, TransportError};

/// What the channel transport offers for remote reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoteReads {
    /// Not offered: rendezvous always uses the pipeline.
    Off,
    /// Offered and working, reads and writes (CMA on the own process).
    On,
    /// Offered, but every read and write is refused as the kernel would with EPERM.
    Refused,
    /// Reads work, every write is refused.
    WritesRefused,
}

#[derive(Debug, Clone, Copy)]
pub struct ChannelOptions {
    /// Frames in flight per ordered pair of ranks before `try_send` answers `WouldBlock`.
    pub capacity: usize,
    pub max_payload: usize,
    pub remote_reads: RemoteReads,
}

impl Default for ChannelOptions {
    fn default() -> Self {
        ChannelOptions { capacity: 64, max_payload: 64 * 1024, remote_reads: RemoteReads::On }
    }
}

struct Frame {
    source: PeerId,
    header: Vec<u8>,
    payload: Vec<u8>,
}

struct Inbox {
    frames: Mutex<VecDeque<Frame>>,
    /// Rung (incremented) on every frame; sleepers wait for it to change.
    bell: Mutex<u32>,
    rung: Condvar,
}

/// The shared state of one job's channels.
pub struct ChannelNet {
    size: u32,
    options: ChannelOptions,
    inboxes: Vec<Inbox>,
    in_flight: Vec<AtomicUsize>,
    sleeps: AtomicUsize,
    refused_reads: AtomicUsize,
    refused_writes: AtomicUsize,
    /// Bytes each rank wrote into a peer's memory (the senders' parts of shared copies).
    written: Vec<AtomicUsize>,
    /// Per ordered pair (receiver * size + sender): the shared-copy offer, as the shared-memory
    /// transport keeps it (token << 2 | 1 offered, 2 claimed, 3 revoked).
    shares: Vec<AtomicU64>,
    tokens: AtomicU64,
    revoked: AtomicUsize,
}

impl ChannelNet {
    pub fn new(size: u32, options: ChannelOptions) -> Arc<ChannelNet> {
        Arc::new(ChannelNet {
            size,
            options,
            inboxes: (0..size).map(|_| Inbox { frames: Mutex::new(VecDeque::new()), bell: Mutex::new(0), rung: Condvar::new() }).collect(),
            in_flight: (0..size * size).map(|_| AtomicUsize::new(0)).collect(),
            sleeps: AtomicUsize::new(0),
            refused_reads: AtomicUsize::new(0),
            refused_writes: AtomicUsize::new(0),
            written: (0..size).map(|_| AtomicUsize::new(0)).collect(),
            shares: (0..size * size).map(|_| AtomicU64::new(0)).collect(),
            tokens: AtomicU64::new(0),
            revoked: AtomicUsize::new(0),
        })
    }

    /// How many times a rank actually went to sleep on a doorbell.
    pub fn sleeps(&self) -> usize {
        self.sleeps.load(Ordering::SeqCst)
    }

    pub fn refused_reads(&self) -> usize {
        self.refused_reads.load(Ordering::SeqCst)
    }

    pub fn refused_writes(&self) -> usize {
        self.refused_writes.load(Ordering::SeqCst)
    }

    pub fn written(&self) -> usize {
        self.written.iter().map(|bytes| bytes.load(Ordering::SeqCst)).sum()
    }

    pub fn written_by(&self, rank: PeerId) -> usize {
        self.written[rank as usize].load(Ordering::SeqCst)
    }

    /// Shared-copy offers the receiver took back because the sender had not claimed them.
    pub fn revoked(&self) -> usize {
        self.revoked.load(Ordering::SeqCst)
    }

    fn share(&self, receiver: PeerId, sender: PeerId) -> &AtomicU64 {
        &self.shares[(receiver * self.size + sender) as usize]
    }

    fn pair(&self, from: PeerId, to: PeerId) -> &AtomicUsize {
        &self.in_flight[(from * self.size + to) as usize]
    }
}

pub struct ChannelTransport {
    rank: PeerId,
    net: Arc<ChannelNet>,
    profile: Profile,
    arrived: VecDeque<Frame>,
}

impl ChannelTransport {
    pub fn new(net: &Arc<ChannelNet>, rank: PeerId) -> ChannelTransport {
        ChannelTransport { rank, net: Arc::clone(net), profile: Profile::default(), arrived: VecDeque::new() }
    }
}

fn concat(payload: &[IoSlice<'_>]) -> Vec<u8> {
    let mut joined = Vec::with_capacity(payload.iter().map(|slice| slice.len()).sum());
    for slice in payload {
        joined.extend_from_slice(slice);
    }
    joined
}

fn read_own_memory(remote: RemoteRegion, offset: u64, local: &mut [u8]) -> Result<(), TransportError> {
    if offset + local.len() as u64 > remote.len {
        return Err(TransportError::System("read beyond the exposed region".into()));
    }
    let mut done = 0;
    while done < local.len() {
        let copied = braid_sys::cma::read_remote(remote.pid, remote.address + offset + done as u64, &mut local[done..]).map_err(|error| TransportError::System(error.to_string()))?;
        if copied == 0 {
            return Err(TransportError::System("short remote read".into()));
        }
        done += copied;
    }
    Ok(())
}

fn write_own_memory(remote: RemoteRegion, offset: u64, local: &[u8]) -> Result<(), TransportError> {
    if offset + local.len() as u64 > remote.len {
        return Err(TransportError::System("write beyond the exposed region".into()));
    }
    let mut done = 0;
    while done < local.len() {
        let copied = braid_sys::cma::write_remote(remote.pid, remote.address + offset + done as u64, &local[done..]).map_err(|error| TransportError::System(error.to_string()))?;
        if copied == 0 {
            return Err(TransportError::System("short remote write".into()));
        }
        done += copied;
    }
    Ok(())
}

impl Transport for ChannelTransport {
    fn name(&self) -> &str {
        "channel"
    }

    fn capabilities(&self) -> Capabilities {
        let options = self.net.options;
        Capabilities { max_payload: options.max_payload, max_inline: 256, remote_read: options.remote_reads != RemoteReads::Off, wakes_receiver: true }
    }

    fn profile(&self) -> &Profile {
        &self.profile
    }

    fn connect(&mut self, _bootstrap: &mut dyn Bootstrap) -> Result<(), TransportError> {
        Ok(())
    }

    fn reaches(&self, peer: PeerId) -> bool {
        peer != self.rank && peer < self.net.size
    }

    fn try_send(&mut self, peer: PeerId, header: &[u8], payload: &[IoSlice<'_>]) -> Result<SendOutcome, TransportError> {
        let len: usize = payload.iter().map(|slice| slice.len()).sum();
        if len > self.net.options.max_payload {
            return Err(TransportError::TooLarge { len, max: self.net.options.max_payload });
        }
        let pair = self.net.pair(self.rank, peer);
        if pair.load(Ordering::SeqCst) >= self.net.options.capacity {
            return Ok(SendOutcome::WouldBlock);
        }
        pair.fetch_add(1, Ordering::SeqCst);
        let inbox = &self.net.inboxes[peer as usize];
        let frame = Frame { source: self.rank, header: header.to_vec(), payload: concat(payload) };
        inbox.frames.lock().unwrap().push_back(frame);
        *inbox.bell.lock().unwrap() += 1;
        inbox.rung.notify_all();
        Ok(SendOutcome::Sent)
    }

    fn poll(&mut self, deliver: &mut dyn FnMut(Incoming<'_>)) -> usize {
        std::mem::swap(&mut self.arrived, &mut self.net.inboxes[self.rank as usize].frames.lock().unwrap());
        let count = self.arrived.len();
        while let Some(frame) = self.arrived.pop_front() {
            deliver(Incoming { peer: frame.source, header: &frame.header, payload: Payload::Complete(&frame.payload) });
            self.net.pair(frame.source, self.rank).fetch_sub(1, Ordering::SeqCst);
        }
        count
    }

    fn remote_read(&mut self, _peer: PeerId, remote: RemoteRegion, offset: u64, local: &mut [u8]) -> Result<(), TransportError> {
        match self.net.options.remote_reads {
            RemoteReads::Off => Err(TransportError::Unsupported("remote read")),
            RemoteReads::Refused => {
                self.net.refused_reads.fetch_add(1, Ordering::SeqCst);
                Err(TransportError::RemoteAccessRefused)
            }
            RemoteReads::On | RemoteReads::WritesRefused => read_own_memory(remote, offset, local),
        }
    }

    fn offer_share(&mut self, peer: PeerId) -> Option<u64> {
        if self.net.options.remote_reads == RemoteReads::Off {
            return None;
        }
        let token = self.net.tokens.fetch_add(1, Ordering::SeqCst) + 1;
        self.net.share(self.rank, peer).store(token << 2 | 1, Ordering::SeqCst);
        Some(token)
    }

    fn claim_share(&mut self, peer: PeerId, token: u64) -> bool {
        self.net.share(peer, self.rank).compare_exchange(token << 2 | 1, token << 2 | 2, Ordering::SeqCst, Ordering::SeqCst).is_ok()
    }

    fn revoke_share(&mut self, peer: PeerId, token: u64) -> bool {
        let revoked = self.net.share(self.rank, peer).compare_exchange(token << 2 | 1, token << 2 | 3, Ordering::SeqCst, Ordering::SeqCst).is_ok();
        if revoked {
            self.net.revoked.fetch_add(1, Ordering::SeqCst);
        }
        revoked
    }

    fn remote_write(&mut self, _peer: PeerId, remote: RemoteRegion, offset: u64, local: &[u8]) -> Result<(), TransportError> {
        match self.net.options.remote_reads {
            RemoteReads::Off => Err(TransportError::Unsupported("remote write")),
            RemoteReads::Refused | RemoteReads::WritesRefused => {
                self.net.refused_writes.fetch_add(1, Ordering::SeqCst);
                Err(TransportError::RemoteAccessRefused)
            }
            RemoteReads::On => {
                write_own_memory(remote, offset, local)?;
                self.net.written[self.rank as usize].fetch_add(local.len(), Ordering::SeqCst);
                Ok(())
            }
        }
    }

    fn prepare_sleep(&mut self) -> Option<u32> {
        Some(*self.net.inboxes[self.rank as usize].bell.lock().unwrap())
    }

    fn sleep(&mut self, token: u32, timeout: Duration) {
        let inbox = &self.net.inboxes[self.rank as usize];
        let bell = inbox.bell.lock().unwrap();
        if *bell == token {
            self.net.sleeps.fetch_add(1, Ordering::SeqCst);
            drop(inbox.rung.wait_timeout_while(bell, timeout, |bell| *bell == token).unwrap());
        }
    }
}

/// A loopback for the own rank: unlimited frames, remote reads on the own process, no doorbell.
pub struct LoopTransport {
    rank: PeerId,
    profile: Profile,
    frames: VecDeque<(Vec<u8>, Vec<u8>)>,
}

impl LoopTransport {
    pub fn new(rank: PeerId) -> LoopTransport {
        LoopTransport { rank, profile: Profile::default(), frames: VecDeque::new() }
    }
}

impl Transport for LoopTransport {
    fn name(&self) -> &str {
        "loop"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities { max_payload: usize::MAX, max_inline: usize::MAX, remote_read: true, wakes_receiver: false }
    }

    fn profile(&self) -> &Profile {
        &self.profile
    }

    fn connect(&mut self, _bootstrap: &mut dyn Bootstrap) -> Result<(), TransportError> {
        Ok(())
    }

    fn reaches(&self, peer: PeerId) -> bool {
        peer == self.rank
    }

    fn try_send(&mut self, _peer: PeerId, header: &[u8], payload: &[IoSlice<'_>]) -> Result<SendOutcome, TransportError> {
        self.frames.push_back((header.to_vec(), concat(payload)));
        Ok(SendOutcome::Sent)
    }

    fn poll(&mut self, deliver: &mut dyn FnMut(Incoming<'_>)) -> usize {
        let count = self.frames.len();
        for (header, payload) in std::mem::take(&mut self.frames) {
            deliver(Incoming { peer: self.rank, header: &header, payload: Payload::Complete(&payload) });
        }
        count
    }

    fn remote_read(&mut self, _peer: PeerId, remote: RemoteRegion, offset: u64, local: &mut [u8]) -> Result<(), TransportError> {
        read_own_memory(remote, offset, local)
    }
}

/// Runs `body` on every rank of an in-process job over channel transports, then finalizes.
/// Returns what each rank's body returned, in rank order.
pub fn run_channel_job<T: Send + 'static>(size: u32, config: Config, options: ChannelOptions, body: impl Fn(&mut Engine) -> T + Send + Sync + 'static) -> (Vec<T>, Arc<ChannelNet>) {
    run_channel_job_on(None, size, config, options, body)
}

/// Like [`run_channel_job`], every rank's thread bound to `cpu` (when given) before its engine
/// starts, so the job oversubscribes that CPU.
pub fn run_channel_job_on<T: Send + 'static>(
    cpu: Option<usize>,
    size: u32,
    config: Config,
    options: ChannelOptions,
    body: impl Fn(&mut Engine) -> T + Send + Sync + 'static,
) -> (Vec<T>, Arc<ChannelNet>) {
    let net = ChannelNet::new(size, options);
    let job = unique_job_name();
    let body = Arc::new(body);
    let handles: Vec<_> = ThreadBootstrap::job(&job, size)
        .into_iter()
        .map(|bootstrap| {
            let (net, body, config) = (Arc::clone(&net), Arc::clone(&body), config.clone());
            std::thread::spawn(move || {
                if let Some(cpu) = cpu {
                    braid_sys::affinity::set_calling_thread(&[cpu]).expect("bind the rank to one CPU");
                }
                let rank = bootstrap.rank();
                let channel = ChannelTransport::new(&net, rank);
                let mut engine = Engine::with_transports(&config, Box::new(bootstrap), Box::new(LoopTransport::new(rank)), vec![Box::new(channel)]).expect("engine start");
                let result = body(&mut engine);
                engine.finalize().expect("finalize");
                result
            })
        })
        .collect();
    let results = handles.into_iter().map(|handle| handle.join().expect("rank panicked")).collect();
    (results, net)
}

/// Runs `body` on every rank of an in-process job built with `Engine::new` (self + shared memory).
pub fn run_job<T: Send + 'static>(size: u32, config: Config, body: impl Fn(&mut Engine) -> T + Send + Sync + 'static) -> Vec<T> {
    let job = unique_job_name();
    let body = Arc::new(body);
    let handles: Vec<_> = ThreadBootstrap::job(&job, size)
        .into_iter()
        .map(|bootstrap| {
            let (body, config) = (Arc::clone(&body), config.clone());
            std::thread::spawn(move || {
                let mut engine = Engine::new(&config, Box::new(bootstrap)).expect("engine start");
                let result = body(&mut engine);
                engine.finalize().expect("finalize");
                result
            })
        })
        .collect();
    handles.into_iter().map(|handle| handle.join().expect("rank panicked")).collect()
}

fn unique_job_name() -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!("braid-enginetest-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::SeqCst))
}

/// A buffer that lives as long as the test process, as MPI buffers outlive their requests.
pub fn leak(data: Vec<u8>) -> &'static [u8] {
    Box::leak(data.into_boxed_slice())
}

pub fn leak_zeroed(len: usize) -> &'static mut [u8] {
    Box::leak(vec![0u8; len].into_boxed_slice())
}

/// Deterministic pseudo-random bytes: `pattern(seed, len)` is what a receiver checks against.
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut bytes = Vec::with_capacity(len + 8);
    while bytes.len() < len {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        bytes.extend_from_slice(&state.to_le_bytes());
    }
    bytes.truncate(len);
    bytes
}
