//! The TCP rail transport over loopback, with in-process ranks: every rank reaches every other
//! because shared memory is off (all test ranks share one node).
#![cfg(not(loom))]

use std::io::IoSlice;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use braid_config::Config;
use braid_lane::{Profile, Sample};
use braid_pmi::threads::ThreadBootstrap;
use braid_transport::conformance::{pattern, Suite};
use braid_transport::profile_cache;
use braid_transport::tcp::{Rail, TcpTransport, MAX_PAYLOAD, PENDING_BYTES_MAX};
use braid_transport::{SendOutcome, Transport, TransportError};

const DEADLINE: Duration = Duration::from_secs(30);

/// A profile directory of this test process that holds nothing (model profiles).
fn empty_profile_dir(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!("braid-tcp-test-{tag}-{}", std::process::id()))
}

fn network_only(tag: &str) -> Config {
    Config { shm: false, profile_dir: empty_profile_dir(tag).display().to_string(), ..Config::default() }
}

fn loopback(address: [u8; 4], name: &str) -> Rail {
    Rail { name: name.to_string(), address: Ipv4Addr::from(address) }
}

fn transport(config: &Config, socket_buffer: Option<usize>) -> TcpTransport {
    let mut transport = TcpTransport::new(config, loopback([127, 0, 0, 1], "lo")).unwrap();
    if let Some(bytes) = socket_buffer {
        transport.set_socket_buffer(bytes);
    }
    transport
}

#[test]
fn tcp_conforms_with_two_ranks() {
    let config = network_only("conf2");
    Suite::new("tcp2", 2, move |_, _| transport(&config, None)).run_all();
}

#[test]
fn tcp_conforms_with_three_ranks_and_tiny_socket_buffers() {
    let config = network_only("conf3");
    Suite::new("tcp3", 3, move |_, _| transport(&config, Some(4096))).expect_backpressure().run_all();
}

#[test]
fn same_node_ranks_are_left_to_shared_memory() {
    let config = Config { shm: true, ..network_only("samenode") };
    let results = Suite::new("tcp-samenode", 3, move |_, _| transport(&config, None)).run_job("peers", |me| me.peers());
    assert_eq!(results, vec![Vec::<u32>::new(); 3]);
}

#[test]
fn names_and_capabilities() {
    let tcp = transport(&network_only("caps"), None);
    assert_eq!(tcp.name(), "tcp:lo");
    let caps = tcp.capabilities();
    assert_eq!(caps.max_payload, MAX_PAYLOAD);
    assert!(!caps.remote_read && caps.wakes_receiver, "its epoll set is a doorbell");
    assert!(tcp.identity().starts_with("lo-127.0.0.1"), "{}", tcp.identity());
    assert!(!tcp.profile_is_measured());
}

/// Rank 0 floods rank 1 (which does not poll) until `WouldBlock`; the backlog then covers at
/// least the queued frames; rank 1 drains while rank 0 polls; every frame arrives, in order; the
/// backlog returns to zero.
#[test]
fn backpressure_then_drain() {
    const FRAME: usize = 64 << 10;
    let config = network_only("backpressure");
    let suite = Suite::new("tcp-backpressure", 2, move |_, _| transport(&config, Some(16 << 10)));
    suite.run_job("flood", |me| {
        let payload = vec![0x3cu8; FRAME];
        if me.rank == 0 {
            let mut sent = 0u32;
            while me.transport.try_send(1, &sent.to_le_bytes(), &[IoSlice::new(&payload)]).unwrap() == SendOutcome::Sent {
                sent += 1;
                assert!(sent < 10_000, "no WouldBlock while the receiver does not read");
            }
            let backlog = me.transport.backlog(1) as usize;
            assert!(backlog > PENDING_BYTES_MAX / 2, "backlog of {backlog} bytes after flooding");
            me.barrier();
            me.send(1, b"count", &[IoSlice::new(&sent.to_le_bytes())]);
            me.receive_until(|inbox| inbox.iter().any(|f| f.header == b"done"));
            let deadline = Instant::now() + DEADLINE;
            while me.transport.backlog(1) > 0 {
                me.poll();
                assert!(Instant::now() < deadline, "backlog stuck at {} after everything was read", me.transport.backlog(1));
            }
        } else {
            me.barrier();
            me.receive_until(|inbox| inbox.iter().any(|f| f.header == b"count"));
            let count = me.inbox.last().map(|f| u32::from_le_bytes(f.payload[..4].try_into().unwrap()));
            let floods: Vec<_> = me.inbox.iter().filter(|f| f.header.len() == 4).collect();
            assert_eq!(Some(floods.len() as u32), count, "the count frame comes after every flood frame");
            for (seq, frame) in floods.iter().enumerate() {
                assert_eq!(frame.header, (seq as u32).to_le_bytes(), "frame {seq} out of order");
                assert!(frame.payload.len() == FRAME && frame.payload.iter().all(|&b| b == 0x3c));
            }
            me.send(0, b"done", &[]);
        }
    });
}

/// Tiny kernel buffers and frames up to MAX_PAYLOAD: every frame is written in many pieces,
/// the rest of each waits in the pending buffer, and all arrive intact and in order.
#[test]
fn large_frames_survive_partial_writes() {
    let sizes = [MAX_PAYLOAD, 1 << 20, 777_777, 5, MAX_PAYLOAD - 1, 0, 300_001];
    let config = network_only("partial");
    let suite = Suite::new("tcp-partial", 2, move |_, _| transport(&config, Some(4096)));
    let sizes = Arc::new(sizes);
    suite.run_job("partial", move |me| {
        if me.rank == 0 {
            let mut queued_seen = false;
            for (seq, &size) in sizes.iter().enumerate() {
                let payload = pattern(0, seq as u32, size);
                let (first, second) = payload.split_at(size / 3);
                me.send(1, &(seq as u32).to_le_bytes(), &[IoSlice::new(first), IoSlice::new(second)]);
                queued_seen |= me.transport.backlog(1) as usize > 64 << 10;
            }
            assert!(queued_seen, "a 4 MiB frame cannot have left at once through a 4 KiB socket buffer");
            me.receive_until(|inbox| inbox.iter().any(|f| f.header == b"ok"));
        } else {
            me.receive_until(|inbox| inbox.len() == sizes.len());
            for (seq, frame) in me.inbox.iter().enumerate() {
                assert_eq!(frame.header, (seq as u32).to_le_bytes());
                assert!(frame.payload == pattern(0, seq as u32, sizes[seq]), "frame {seq} of {} bytes corrupted", sizes[seq]);
            }
            me.send(0, b"ok", &[]);
        }
    });
}

/// Connects one transport per rail on every rank, each rail in the same order everywhere.
fn connect_rails(job: &str, size: u32, rails: Vec<Rail>, socket_buffer: Option<usize>, body: impl Fn(u32, Vec<TcpTransport>, &Barrier) + Send + Sync + 'static) {
    let config = network_only(job);
    let body = Arc::new(body);
    let barrier = Arc::new(Barrier::new(size as usize));
    let job_id = format!("tcp-{job}-{}", std::process::id());
    let threads: Vec<_> = ThreadBootstrap::job(&job_id, size)
        .into_iter()
        .map(|mut bootstrap| {
            let (config, rails, body, barrier) = (config.clone(), rails.clone(), Arc::clone(&body), Arc::clone(&barrier));
            std::thread::spawn(move || {
                let mut transports: Vec<TcpTransport> = rails.into_iter().map(|rail| TcpTransport::new(&config, rail).unwrap()).collect();
                for transport in &mut transports {
                    if let Some(bytes) = socket_buffer {
                        transport.set_socket_buffer(bytes);
                    }
                    transport.connect(&mut bootstrap).unwrap();
                }
                body(bootstrap_rank(&bootstrap), transports, &barrier);
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
}

fn bootstrap_rank(bootstrap: &ThreadBootstrap) -> u32 {
    braid_pmi::Bootstrap::rank(bootstrap)
}

/// A message split in chunks over two rails (127.0.0.1 and 127.0.0.2) to the same peer; the
/// receiver places each chunk at the offset its header carries.
#[test]
fn two_rails_carry_chunks_of_one_message() {
    const LEN: usize = (3 << 20) + 12_345;
    const CHUNK: usize = 200_000;
    let rails = vec![loopback([127, 0, 0, 1], "lo"), loopback([127, 0, 0, 2], "lo-second")];
    connect_rails("tworails", 2, rails, None, |rank, mut rails, _| {
        assert_eq!(rails.iter().map(|r| r.name().to_string()).collect::<Vec<_>>(), ["tcp:lo", "tcp:lo-second"]);
        let message = pattern(9, 9, LEN);
        let deadline = Instant::now() + DEADLINE;
        if rank == 0 {
            let mut offset = 0;
            let mut rail = 0;
            while offset < LEN {
                let end = (offset + CHUNK).min(LEN);
                match rails[rail].try_send(1, &(offset as u64).to_le_bytes(), &[IoSlice::new(&message[offset..end])]).unwrap() {
                    SendOutcome::Sent => {
                        offset = end;
                        rail = 1 - rail;
                    }
                    SendOutcome::WouldBlock => rail = 1 - rail,
                }
                for transport in &mut rails {
                    transport.poll(&mut |_| {});
                }
                assert!(Instant::now() < deadline, "sending did not finish");
            }
            let mut done = false;
            while !done {
                for transport in &mut rails {
                    transport.poll(&mut |frame| done |= frame.header == b"done");
                }
                assert!(Instant::now() < deadline, "no acknowledgement");
            }
        } else {
            let mut received = vec![0u8; LEN];
            let mut filled = 0;
            let mut per_rail = [0usize; 2];
            while filled < LEN {
                for (index, transport) in rails.iter_mut().enumerate() {
                    transport.poll(&mut |frame| {
                        let offset = u64::from_le_bytes(frame.header.try_into().unwrap()) as usize;
                        received[offset..offset + frame.payload.len()].copy_from_slice(frame.payload.whole());
                        filled += frame.payload.len();
                        per_rail[index] += frame.payload.len();
                    });
                }
                assert!(Instant::now() < deadline, "chunks missing: {filled} of {LEN} bytes");
            }
            assert!(received == message, "reassembled message differs");
            assert!(per_rail.iter().all(|&bytes| bytes >= CHUNK), "both rails carried chunks: {per_rail:?}");
            assert_eq!(rails[1].try_send(0, b"done", &[]), Ok(SendOutcome::Sent));
        }
    });
}

/// A peer that sends and goes away at once: its frames still arrive whole (dropping a transport
/// hands its queued bytes to the kernel), then `poll` notices the end: the peer is no longer
/// reached and sends to it are refused; nothing panics.
#[test]
fn a_closed_peer_is_detected_by_poll_after_its_last_frames() {
    const LAST: usize = 1 << 20;
    connect_rails("closed-poll", 2, vec![loopback([127, 0, 0, 1], "lo")], Some(4096), |rank, mut rails, _| {
        let mut tcp = rails.pop().unwrap();
        if rank == 1 {
            for seq in 0..3u32 {
                assert_eq!(tcp.try_send(0, &seq.to_le_bytes(), &[IoSlice::new(&[7; 100])]), Ok(SendOutcome::Sent));
            }
            let last = pattern(1, 3, LAST);
            let deadline = Instant::now() + DEADLINE;
            while tcp.try_send(0, &3u32.to_le_bytes(), &[IoSlice::new(&last)]) != Ok(SendOutcome::Sent) {
                tcp.poll(&mut |_| {});
                assert!(Instant::now() < deadline, "the last frame was never accepted");
            }
            assert!(tcp.backlog(0) as usize > LAST / 2, "the last frame is still queued when the transport is dropped");
            return;
        }
        let deadline = Instant::now() + DEADLINE;
        let mut frames = Vec::new();
        while tcp.reaches(1) {
            tcp.poll(&mut |frame| frames.push((frame.header.to_vec(), frame.payload.whole().to_vec())));
            assert!(Instant::now() < deadline, "the closed peer was not noticed");
        }
        let headers: Vec<_> = frames.iter().map(|(header, _)| header.clone()).collect();
        assert_eq!(headers, (0..4u32).map(|seq| seq.to_le_bytes().to_vec()).collect::<Vec<_>>());
        assert!(frames[3].1 == pattern(1, 3, LAST), "the last frame arrived corrupted");
        assert_eq!(tcp.try_send(1, b"late", &[]), Err(TransportError::Unreachable(1)));
        assert_eq!(tcp.backlog(1), 0);
        assert_eq!(tcp.poll(&mut |_| panic!("nothing more arrives")), 0);
    });
}

/// A peer that goes away is detected by sending alone (EPIPE / ECONNRESET).
#[test]
fn a_closed_peer_is_detected_by_sending() {
    connect_rails("closed-send", 2, vec![loopback([127, 0, 0, 1], "lo")], None, |rank, mut rails, barrier| {
        let mut tcp = rails.pop().unwrap();
        if rank == 1 {
            drop(tcp);
            barrier.wait();
            return;
        }
        barrier.wait();
        let deadline = Instant::now() + DEADLINE;
        let payload = vec![1u8; 1000];
        loop {
            match tcp.try_send(1, b"x", &[IoSlice::new(&payload)]) {
                Ok(_) => std::thread::sleep(Duration::from_millis(2)),
                Err(error) => {
                    assert_eq!(error, TransportError::Unreachable(1));
                    break;
                }
            }
            assert!(Instant::now() < deadline, "sending to a closed peer never failed");
        }
        assert!(!tcp.reaches(1));
    });
}

/// A rank whose rail address is not local fails with an error naming the rail; the others
/// complete wire-up without it.
#[test]
fn a_rank_that_cannot_listen_fails_clearly_and_alone() {
    let config = network_only("nolisten");
    let job_id = format!("tcp-nolisten-{}", std::process::id());
    let threads: Vec<_> = ThreadBootstrap::job(&job_id, 3)
        .into_iter()
        .enumerate()
        .map(|(rank, mut bootstrap)| {
            let config = config.clone();
            std::thread::spawn(move || {
                let address = if rank == 2 { [192, 0, 2, 1] } else { [127, 0, 0, 1] };
                let mut tcp = TcpTransport::new(&config, loopback(address, "lo")).unwrap();
                let result = tcp.connect(&mut bootstrap);
                (result, (0..3).filter(|&peer| tcp.reaches(peer)).collect::<Vec<u32>>())
            })
        })
        .collect();
    let results: Vec<_> = threads.into_iter().map(|thread| thread.join().unwrap()).collect();
    assert_eq!(results[0], (Ok(()), vec![1]));
    assert_eq!(results[1], (Ok(()), vec![0]));
    match &results[2].0 {
        Err(TransportError::System(reason)) => assert!(reason.contains("rail lo (192.0.2.1)") && reason.contains("cannot listen"), "{reason}"),
        other => panic!("expected a listen failure, got {other:?}"),
    }
}

#[test]
fn cached_profiles_are_loaded_for_the_rail_identity() {
    let dir = empty_profile_dir("cache");
    let config = Config { profile_dir: dir.display().to_string(), ..Config::default() };
    let mut first = transport(&config, None);
    assert!(!first.profile_is_measured());
    let measured = Profile::from_samples(vec![Sample { size: 0, nanos: 9_000.0 }, Sample { size: 1, nanos: 9_100.0 }, Sample { size: 2, nanos: 9_300.0 }]);
    profile_cache::save(&measured, first.profile_file()).unwrap();
    assert!(first.profile_file().starts_with(&dir));
    first.set_profile(measured.clone());
    assert!(first.profile_is_measured());
    assert_eq!(first.profile(), &measured);

    let second = transport(&config, None);
    assert!(second.profile_is_measured(), "the cached profile is found again");
    assert_eq!(second.profile(), &measured);
    let other_rail = TcpTransport::new(&config, loopback([127, 0, 0, 2], "lo")).unwrap();
    assert!(!other_rail.profile_is_measured(), "another address is another rail");
    std::fs::remove_dir_all(&dir).unwrap();
}
