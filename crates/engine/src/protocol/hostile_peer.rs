//! A peer whose frames lie, over a real TCP rail: rank 1's rail rewrites the headers it sends to
//! rank 0 (a chunk's offset far past the receive, a kind no sender writes, a header cut short).
//! The transport's framing is intact, so the lie reaches the protocol: rank 0 must refuse it
//! with an error naming rank 1, never write outside the receive buffer, and rank 1 must learn
//! that rank 0 went away instead of waiting forever.

use std::io::IoSlice;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use braid_config::Config;
use braid_lane::{Capabilities, PeerId, Profile};
use braid_pmi::{threads::ThreadBootstrap, Bootstrap};
use braid_transport::tcp::{Rail, TcpTransport};
use braid_transport::{selfloop::SelfTransport, SendOutcome, Sink, Transport, TransportError};

use crate::frame::{NET_DATA_HEADER, NET_DATA_KIND};
use crate::{Engine, EngineError, SendMode, Source, TagSelector};

const HONEST: u8 = 0;
/// NET_DATA chunks claim an offset 2^40 bytes further on.
const OFFSET_BEYOND: u8 = 1;
/// Every header's kind becomes one that no sender writes.
const UNKNOWN_KIND: u8 = 2;
/// Every header keeps only its kind byte and one more.
const CUT_HEADER: u8 = 3;

/// A rail whose frames to rank 0 are rewritten as `mode` says once it is set.
struct Lying {
    inner: TcpTransport,
    mode: Arc<AtomicU8>,
}

impl Lying {
    fn rewrite(&self, header: &[u8]) -> Vec<u8> {
        let mut lie = header.to_vec();
        match self.mode.load(Ordering::Relaxed) {
            OFFSET_BEYOND if lie.len() == NET_DATA_HEADER && lie[0] == NET_DATA_KIND => {
                let offset = u64::from_le_bytes(lie[5..13].try_into().expect("8 bytes")) + (1 << 40);
                lie[5..13].copy_from_slice(&offset.to_le_bytes());
            }
            UNKNOWN_KIND => lie[0] = 0xEE,
            CUT_HEADER => lie.truncate(2),
            _ => {}
        }
        lie
    }
}

impl Transport for Lying {
    fn name(&self) -> &str {
        self.inner.name()
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
        self.inner.reaches(peer)
    }
    fn try_send(&mut self, peer: PeerId, header: &[u8], payload: &[IoSlice<'_>]) -> Result<SendOutcome, TransportError> {
        let header = if peer == 0 { self.rewrite(header) } else { header.to_vec() };
        self.inner.try_send(peer, &header, payload)
    }
    fn poll(&mut self, deliver: &mut dyn FnMut(braid_transport::Incoming<'_>)) -> usize {
        self.inner.poll(deliver)
    }
    fn poll_placing(&mut self, sink: &mut dyn Sink) -> usize {
        self.inner.poll_placing(sink)
    }
    fn down_reason(&self, peer: PeerId) -> Option<String> {
        self.inner.down_reason(peer)
    }
}

/// Rank 1 sends rank 0 one message of `len` bytes through a rail lying as `mode` says; what
/// each rank's wait returned.
fn lie(case: &str, mode: u8, len: usize) -> Vec<Result<(), EngineError>> {
    let profile_dir = std::env::temp_dir().join(format!("braid-hostile-peer-{case}-{}", std::process::id()));
    let config = Config { shm: false, profile_dir: profile_dir.display().to_string(), ..Config::default() };
    let threads: Vec<_> = ThreadBootstrap::job(&format!("braid-hostile-peer-{case}-{}", std::process::id()), 2)
        .into_iter()
        .map(|bootstrap| {
            let config = config.clone();
            std::thread::spawn(move || {
                let rank = bootstrap.rank();
                let switch = Arc::new(AtomicU8::new(HONEST));
                let inner = TcpTransport::new(&config, Rail { name: "lo".into(), address: [127, 0, 0, 1].into() }).expect("tcp rail");
                let rail: Box<dyn Transport> = Box::new(Lying { inner, mode: Arc::clone(&switch) });
                let mut engine = Engine::with_rails(&config, Box::new(bootstrap), Box::new(SelfTransport::new()), Vec::new(), vec![rail]).expect("engine");
                let result = if rank == 1 {
                    switch.store(mode, Ordering::Relaxed);
                    let data: &'static [u8] = Box::leak(vec![7u8; len].into_boxed_slice());
                    engine.isend(data, 0, 3, 0, SendMode::Standard).and_then(|request| engine.wait(request)).map(drop)
                } else {
                    let buffer: &'static mut [u8] = Box::leak(vec![0u8; len].into_boxed_slice());
                    engine.irecv(buffer, Source::Rank(1), TagSelector::Tag(3), 0).and_then(|request| engine.wait(request)).map(drop)
                };
                // No finalize: its fence would wait for a rank that has failed.
                drop(engine);
                result
            })
        })
        .collect();
    let results = threads.into_iter().map(|thread| thread.join().expect("rank panicked")).collect();
    let _ = std::fs::remove_dir_all(profile_dir);
    results
}

fn protocol_error_from_rank_1(result: &Result<(), EngineError>, what: &str) {
    match result {
        Err(EngineError::Transport(message)) => assert!(message.contains("protocol error from rank 1") && message.contains(what), "{message}"),
        other => panic!("rank 0 should refuse rank 1's frame ({what}), got {other:?}"),
    }
}

/// A rendezvous send cannot complete without rank 0: it ends with rank 0 unreachable and why.
fn rank_1_learns_rank_0_is_gone(result: &Result<(), EngineError>) {
    match result {
        Err(EngineError::Unreachable { rank: 0, reason }) => assert!(reason.contains("tcp:lo: the"), "{reason}"),
        other => panic!("rank 1 should find rank 0 unreachable, got {other:?}"),
    }
}

#[test]
fn a_chunk_offset_past_the_receive_is_refused() {
    let results = lie("offset", OFFSET_BEYOND, 4 << 20);
    protocol_error_from_rank_1(&results[0], "DATA beyond the expected length");
    rank_1_learns_rank_0_is_gone(&results[1]);
}

#[test]
fn a_frame_of_no_known_kind_is_refused() {
    let results = lie("kind", UNKNOWN_KIND, 100);
    protocol_error_from_rank_1(&results[0], "malformed");
}

#[test]
fn a_header_cut_short_is_refused() {
    let results = lie("cut", CUT_HEADER, 1 << 20);
    protocol_error_from_rank_1(&results[0], "malformed");
    rank_1_learns_rank_0_is_gone(&results[1]);
}
