//! A hostile or broken peer on a real TCP rail: rank 1 of each job is this test's own socket,
//! which takes part in the wire-up (publishes an address, accepts rank 0's connection and hello)
//! and then writes whatever bytes the case gives. Rank 0 is the real transport: the frames that
//! arrived whole before the bad bytes are delivered, then the peer is marked down with the reason
//! (never trusted for a length), sends to it are refused, and nothing panics or hangs.
#![cfg(not(loom))]

use std::io::{IoSlice, Read, Write};
use std::net::{Ipv4Addr, TcpListener};
use std::time::{Duration, Instant};

use braid_config::Config;
use braid_pmi::threads::ThreadBootstrap;
use braid_pmi::Bootstrap;
use braid_transport::tcp::{Rail, TcpTransport, MAX_PAYLOAD};
use braid_transport::{Transport, TransportError, MAX_HEADER};

const DEADLINE: Duration = Duration::from_secs(30);
/// The hello rank 0 sends first on the connection it opens (magic, rank, hash).
const HELLO_LEN: usize = 16;

/// A frame as the transport writes it: lengths, header, payload.
fn frame(header: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::new();
    bytes.extend_from_slice(&(header.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    bytes.extend_from_slice(header);
    bytes.extend_from_slice(payload);
    bytes
}

/// Just the prefix of a frame claiming these lengths.
fn prefix(header_len: u32, payload_len: u32) -> Vec<u8> {
    [header_len.to_le_bytes(), payload_len.to_le_bytes()].concat()
}

struct Outcome {
    /// (header, payload) of every frame rank 0 received, in order.
    frames: Vec<(Vec<u8>, Vec<u8>)>,
    reason: String,
}

/// Runs one job of two ranks: the real transport at rank 0, `bytes` written by rank 1 after the
/// wire-up (then its socket is closed, unless `keep_open`).
fn against(case: &str, bytes: Vec<u8>, keep_open: bool) -> Outcome {
    let config = Config { shm: false, profile_dir: std::env::temp_dir().join(format!("braid-tcp-hostile-{case}-{}", std::process::id())).display().to_string(), ..Config::default() };
    let mut bootstraps = ThreadBootstrap::job(&format!("tcp-hostile-{case}-{}", std::process::id()), 2);
    let mut fake = bootstraps.pop().unwrap();
    let mut real = bootstraps.pop().unwrap();
    let peer = std::thread::spawn(move || {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let address = listener.local_addr().unwrap();
        fake.put("tcp-lo-1", &format!("{address}/hostile-node")).unwrap();
        fake.fence().unwrap();
        let (mut stream, _) = listener.accept().unwrap();
        let mut hello = [0u8; HELLO_LEN];
        stream.read_exact(&mut hello).unwrap();
        assert_eq!(&hello[..4], b"BRTC", "rank 0 greets first");
        stream.write_all(&bytes).unwrap();
        if keep_open {
            // Hold the connection until rank 0 has closed its side.
            let mut rest = Vec::new();
            let _ = stream.read_to_end(&mut rest);
        }
    });
    let mut tcp = TcpTransport::new(&config, Rail { name: "lo".into(), address: Ipv4Addr::LOCALHOST }).unwrap();
    tcp.connect(&mut real).expect("wire-up with the hostile peer");
    assert!(tcp.reaches(1));
    assert_eq!(tcp.down_reason(1), None, "a peer still reached has no reason to be down");
    let deadline = Instant::now() + DEADLINE;
    let mut frames = Vec::new();
    while tcp.reaches(1) {
        tcp.poll(&mut |incoming| frames.push((incoming.header.to_vec(), incoming.payload.whole().to_vec())));
        assert!(Instant::now() < deadline, "{case}: the peer was never marked down");
    }
    assert_eq!(tcp.try_send(1, b"x", &[IoSlice::new(b"after")]), Err(TransportError::Unreachable(1)));
    assert_eq!(tcp.poll(&mut |_| panic!("{case}: a frame after the peer was marked down")), 0);
    let reason = tcp.down_reason(1).expect("the reason the peer is down");
    drop(tcp);
    peer.join().expect("the hostile peer's thread");
    Outcome { frames, reason }
}

#[test]
fn a_header_longer_than_any_sender_writes_ends_the_peer_after_its_good_frames() {
    let mut bytes = frame(b"good", &[1, 2, 3]);
    bytes.extend(prefix(u32::MAX, 10));
    bytes.extend([0xAB; 64]);
    let outcome = against("header", bytes, true);
    assert_eq!(outcome.frames, vec![(b"good".to_vec(), vec![1, 2, 3])]);
    assert!(outcome.reason.contains("malformed frame") && outcome.reason.contains(&format!("a {}-byte header", u32::MAX)), "{}", outcome.reason);
}

#[test]
fn a_payload_longer_than_any_sender_writes_is_never_read_or_allocated() {
    let mut bytes = frame(b"first", &[]);
    bytes.extend(frame(b"second", &[9; 5000]));
    bytes.extend(prefix(MAX_HEADER as u32, MAX_PAYLOAD as u32 + 1));
    let outcome = against("payload", bytes, true);
    assert_eq!(outcome.frames.len(), 2);
    assert_eq!(outcome.frames[1], (b"second".to_vec(), vec![9; 5000]));
    assert!(outcome.reason.contains("malformed frame") && outcome.reason.contains(&format!("{}-byte payload", MAX_PAYLOAD + 1)), "{}", outcome.reason);
}

#[test]
fn a_frame_cut_by_the_end_of_the_stream_is_not_delivered() {
    let mut bytes = frame(b"whole", &[5; 100]);
    let cut = frame(b"cut", &[6; 100_000]);
    bytes.extend_from_slice(&cut[..cut.len() / 2]);
    let outcome = against("truncated", bytes, false);
    assert_eq!(outcome.frames, vec![(b"whole".to_vec(), vec![5; 100])]);
    assert!(outcome.reason.contains(&format!("closed the connection {} bytes into a frame", cut.len() / 2)), "{}", outcome.reason);
}

#[test]
fn a_stream_cut_inside_a_frame_prefix_is_truncated_too() {
    let outcome = against("prefix", vec![3, 0, 0], false);
    assert!(outcome.frames.is_empty());
    assert!(outcome.reason.contains("3 bytes into a frame"), "{}", outcome.reason);
}

/// Pseudo-random bytes (a fixed xorshift sequence per seed): whatever they say, the transport
/// delivers only frames within the limits, then finds them malformed or cut, and ends the peer.
#[test]
fn random_bytes_end_the_peer_with_a_reason_and_only_bounded_frames() {
    for seed in 1..=8u64 {
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let bytes: Vec<u8> = (0..(64 << 10))
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        let outcome = against(&format!("random{seed}"), bytes, false);
        for (header, payload) in &outcome.frames {
            assert!(header.len() <= MAX_HEADER && payload.len() <= MAX_PAYLOAD);
        }
        assert!(outcome.reason.contains("malformed frame") || outcome.reason.contains("into a frame"), "seed {seed}: {}", outcome.reason);
    }
}

#[test]
fn a_peer_that_closes_between_frames_is_down_without_blame() {
    let outcome = against("closed", frame(b"only", b"frame"), false);
    assert_eq!(outcome.frames.len(), 1);
    assert_eq!(outcome.reason, "the peer closed the connection");
}
