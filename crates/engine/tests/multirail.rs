//! The engine over several network rails (in-process rails with chosen profiles, capacities and
//! failures): matching across rails, rendezvous split over the rails, failover without loss or
//! duplication, a clear error once no rail is left, and node-local and network peers in one job.

mod common;

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use braid_config::{Config, StrategyKind};
use braid_engine::{Engine, EngineError, RequestId, SendMode, Source, TagSelector};
use common::rails::{run_rail_job, run_rail_job_finalizing, RailNet, RailOptions};
use common::scenarios::{self, post, receive, send, CONTEXT};
use common::{leak, pattern};

/// Without hedging, so that every rendezvous byte crosses exactly once and the tests can count
/// them; `hedging()` turns it on.
fn config() -> Config {
    Config { spin_count: 100, rail_hedge: false, ..Config::default() }
}

fn hedging() -> Config {
    Config { rail_hedge: true, ..config() }
}

/// Two rails, the first twice as fast as the second.
fn two_rails() -> Vec<RailOptions> {
    vec![RailOptions::with_bandwidth(2e9), RailOptions::with_bandwidth(1e9)]
}

/// A checksum that notices reordered as well as changed bytes.
fn checksum(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |hash, &byte| (hash ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3))
}

#[test]
fn wildcard_receives_keep_each_senders_order_across_nodes() {
    let (results, _) = run_rail_job(vec![0, 1, 2], two_rails(), config(), |engine, _| scenarios::wildcard_order(engine));
    assert_eq!(results[2], 400);
}

#[test]
fn mixed_sizes_arrive_in_order_and_intact() {
    // Small (eager), medium and large (rendezvous, split) messages interleaved, with a
    // synchronous send and a truncated receive among them.
    const SIZES: [usize; 7] = [0, 1, 3000, 200_000, 64 * 1024, 3 << 20, 17];
    run_rail_job(vec![0, 1], two_rails(), config(), |engine, _| {
        if engine.rank() == 0 {
            let mut sends: Vec<_> = SIZES.iter().enumerate().map(|(tag, &len)| send(engine, pattern(tag as u64, len), 1, tag as i32)).collect();
            sends.push(engine.isend(leak(pattern(99, 500_000)), 1, 99, CONTEXT, SendMode::Synchronous).unwrap());
            sends.push(engine.isend(leak(pattern(98, 20)), 1, 98, CONTEXT, SendMode::Synchronous).unwrap());
            for request in sends {
                engine.wait(request).unwrap();
            }
            return;
        }
        for (tag, &len) in SIZES.iter().enumerate() {
            let (status, data) = receive(engine, len, Source::Any, TagSelector::Any);
            assert_eq!((status.tag, status.count, status.source), (tag as i32, len, 0));
            assert!(*data == pattern(tag as u64, len)[..], "message {tag} of {len} bytes corrupted");
        }
        let (status, data) = receive(engine, 100_000, Source::Rank(0), TagSelector::Tag(99));
        assert!(status.truncated);
        assert!(*data == pattern(99, 500_000)[..100_000]);
        let (_, data) = receive(engine, 20, Source::Rank(0), TagSelector::Tag(98));
        assert!(*data == pattern(98, 20)[..]);
        assert_eq!(engine.iprobe(Source::Any, TagSelector::Any, CONTEXT).unwrap(), None);
    });
}

#[test]
fn a_matched_probe_takes_the_message_out_of_matching_across_nodes() {
    run_rail_job(vec![0, 1], two_rails(), config(), |engine, _| scenarios::matched_probe(engine));
}

#[test]
fn unmatched_sends_are_cancelled_across_nodes() {
    run_rail_job(vec![0, 1], two_rails(), config(), |engine, _| scenarios::cancel_sends(engine));
    run_rail_job(vec![0, 1], two_rails(), hedging(), |engine, _| scenarios::cancel_sends(engine));
}

fn exchange_split(config: Config, len: usize) -> (u64, u64) {
    let (_, net) = run_rail_job(vec![0, 1], two_rails(), config, move |engine, _| {
        let peer = 1 - engine.rank();
        let incoming = post(engine, len, Source::Rank(peer), TagSelector::Tag(1));
        let data = pattern(engine.rank() as u64, len);
        let sent_sum = checksum(&data);
        let outgoing = send(engine, data, peer, 1);
        let (status, received) = engine.wait_receive(incoming).unwrap();
        assert_eq!(status.count, len);
        assert_eq!(checksum(received), checksum(&pattern(peer as u64, len)), "{len}-byte message corrupted");
        assert_eq!(engine.wait(outgoing).unwrap().count, len);
        sent_sum
    });
    (net.data_bytes(0), net.data_bytes(1))
}

#[test]
fn large_messages_are_split_over_both_rails_by_their_speed() {
    // Every chunk handed over at once: the split is the plan alone, 2:1 as the profiles say.
    let (fast, slow) = exchange_split(Config { rail_queue_us: 0, ..config() }, 32 << 20);
    assert_eq!(fast + slow, 2 * (32 << 20), "every byte crosses exactly once when no rail fails");
    let share = fast as f64 / (fast + slow) as f64;
    assert!((0.55..0.8).contains(&share), "the 2:1 rails carried {fast} and {slow} bytes");
}

#[test]
fn a_rail_that_drains_faster_than_its_profile_takes_over_from_the_other() {
    // The in-process rails really drain alike, whatever their profiles say. Handed a few
    // milliseconds of the plan at a time, the rail profiled slower runs dry first and takes
    // over the end of the other's remainder, so the shares move from 2:1 toward 1:1.
    // Each rail holds at most 1 MiB in flight, as a socket buffer would: the rail holding
    // more than that of its share keeps it unposted, where a dry rail can take it over.
    let (fast, slow) = exchange_split(config(), 32 << 20);
    assert_eq!(fast + slow, 2 * (32 << 20), "every byte crosses exactly once, taken over or not");
    let share = fast as f64 / (fast + slow) as f64;
    assert!(share < 0.62, "no rebalancing: the rails carried {fast} and {slow} bytes");
}

/// A 2 Gbit/s rail and a 1 Gbit/s one that stops delivering once it has carried 512 KiB of
/// chunks: what it takes after that sits undelivered until [`RailNet::release`].
fn second_rail_stalling() -> Vec<RailOptions> {
    vec![RailOptions::with_bandwidth(2e9), RailOptions { stall_after: Some(512 << 10), ..RailOptions::with_bandwidth(1e9) }]
}

/// Makes progress until every one of `receives` is complete (20 s at most), then ends rail 1's
/// stall; returns whether they all completed while it still stalled.
fn complete_while_stalled(engine: &mut Engine, net: &RailNet, receives: &[RequestId]) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !receives.iter().all(|&receive| engine.is_complete(receive)) && Instant::now() < deadline {
        engine.progress().unwrap();
    }
    let completed = receives.iter().all(|&receive| engine.is_complete(receive)) && net.stalled(1);
    net.release(1);
    completed
}

#[test]
fn a_stalled_rail_is_hedged_so_the_message_completes_without_it() {
    // Rail 1 stops delivering once it has carried 512 KiB of an 8 MiB message: what it took
    // after that sits undelivered. Rail 0 takes over what rail 1 has not taken yet, then, dry,
    // sends again what rail 1 holds. The receive must complete while rail 1 is still stalled;
    // after the stall ends, rail 1's late copies must change nothing, and a second message
    // must arrive intact.
    let rails = second_rail_stalling();
    let len = 8 << 20;
    let (results, net) = run_rail_job(vec![0, 1], rails, hedging(), move |engine, net| {
        if engine.rank() == 0 {
            for seed in [1, 2] {
                let outgoing = send(engine, pattern(seed, len), 1, 7);
                engine.wait(outgoing).unwrap();
            }
            return true;
        }
        let first = post(engine, len, Source::Rank(0), TagSelector::Tag(7));
        let completed_while_stalled = complete_while_stalled(engine, net, &[first]);
        let (_, data) = engine.wait_receive(first).unwrap();
        assert!(*data == pattern(1, len)[..], "the hedged message was corrupted");
        let second = post(engine, len, Source::Rank(0), TagSelector::Tag(7));
        let (_, data) = engine.wait_receive(second).unwrap();
        assert!(*data == pattern(2, len)[..], "the message after the late copies was corrupted");
        completed_while_stalled
    });
    assert_eq!(results, vec![true, true], "the receive waited for the stalled rail");
    assert!(net.data_bytes(0) + net.data_bytes(1) > 2 * len as u64, "nothing was sent twice");
}

#[test]
fn a_stalled_rail_is_hedged_with_several_messages_in_flight() {
    // As above, with four 2 MiB messages posted at once: what rail 1 took of several of them
    // sits undelivered, and every receive must complete while it is still stalled.
    let rails = second_rail_stalling();
    let (len, count) = (2 << 20, 4u64);
    let (results, _) = run_rail_job(vec![0, 1], rails, hedging(), move |engine, net| {
        if engine.rank() == 0 {
            let sends: Vec<_> = (0..count).map(|seed| send(engine, pattern(seed, len), 1, seed as i32)).collect();
            for outgoing in sends {
                engine.wait(outgoing).unwrap();
            }
            return true;
        }
        let receives: Vec<_> = (0..count).map(|seed| post(engine, len, Source::Rank(0), TagSelector::Tag(seed as i32))).collect();
        let completed_while_stalled = complete_while_stalled(engine, net, &receives);
        for (seed, receive) in receives.into_iter().enumerate() {
            let (_, data) = engine.wait_receive(receive).unwrap();
            assert!(*data == pattern(seed as u64, len)[..], "message {seed} was corrupted");
        }
        completed_while_stalled
    });
    assert_eq!(results, vec![true, true], "the receives waited for the stalled rail");
}

#[test]
fn the_single_strategy_keeps_to_the_fastest_rail() {
    let (fast, slow) = exchange_split(Config { strategy: StrategyKind::Single, ..config() }, 8 << 20);
    assert_eq!((fast, slow), (2 * (8 << 20), 0));
}

#[test]
fn the_eager_limit_setting_caps_the_rails_eager_limit() {
    // The rails' profiles alone send up to at least 4 KiB eagerly (their rendezvous threshold
    // is never lower); with BRAID_EAGER_MAX at 1000 bytes, 3000 bytes go by rendezvous.
    const SIZES: [usize; 2] = [1000, 3000];
    let config = Config { eager_max: 1000, ..config() };
    let (counts, _) = run_rail_job(vec![0, 1], two_rails(), config, |engine, _| {
        if engine.rank() == 0 {
            for (tag, &len) in SIZES.iter().enumerate() {
                let request = send(engine, pattern(tag as u64, len), 1, tag as i32);
                engine.wait(request).unwrap();
            }
            let counters = engine.counter_values();
            return Some((counters.eager_sends, counters.rendezvous_sends));
        }
        for (tag, &len) in SIZES.iter().enumerate() {
            let (status, data) = receive(engine, len, Source::Rank(0), TagSelector::Tag(tag as i32));
            assert_eq!(status.count, len);
            assert!(*data == pattern(tag as u64, len)[..], "message {tag} of {len} bytes corrupted");
        }
        None
    });
    assert_eq!(counts[0], Some((1, 1)), "(eager, rendezvous) sends of 1000 and 3000 bytes");
}

/// Rank 0 posts `count` small sends at once, then waits for them; rank 1 checks them. Returns
/// the frames both rails carried.
fn small_burst(strategy: StrategyKind, count: usize) -> u64 {
    let config = Config { strategy, ..config() };
    let (_, net) = run_rail_job(vec![0, 1], two_rails(), config, move |engine, _| {
        if engine.rank() == 0 {
            let sends: Vec<_> = (0..count).map(|tag| send(engine, pattern(tag as u64, 8 + tag % 5), 1, tag as i32)).collect();
            for request in sends {
                engine.wait(request).unwrap();
            }
            return;
        }
        for tag in 0..count {
            let (status, data) = receive(engine, 64, Source::Rank(0), TagSelector::Any);
            assert_eq!((status.tag, status.count), (tag as i32, 8 + tag % 5));
            assert!(data[..status.count] == pattern(tag as u64, 8 + tag % 5)[..], "message {tag} corrupted");
        }
    });
    net.frames(0) + net.frames(1)
}

#[test]
fn small_sends_posted_together_leave_in_batches() {
    // hetero aggregates: the first send leaves alone, the rest wait for the busy rail and leave
    // together. single sends every message on its own.
    const COUNT: usize = 200;
    let aggregated = small_burst(StrategyKind::Hetero, COUNT);
    let alone = small_burst(StrategyKind::Single, COUNT);
    assert!(alone >= COUNT as u64, "single carried {alone} frames for {COUNT} messages");
    assert!(aggregated <= COUNT as u64 / 10, "hetero carried {aggregated} frames for {COUNT} messages");
}

/// Rank 0 streams large and small messages to rank 1 while rail `killed` dies after
/// `after` rendezvous bytes; everything must arrive once, in order, intact.
fn survive_rail_failure(killed: usize, after: u64) {
    const ROUNDS: usize = 6;
    let mut rails = two_rails();
    rails[killed].fail_after = Some(after);
    let (_, net) = run_rail_job(vec![0, 1], rails, config(), |engine, _| {
        if engine.rank() == 0 {
            let mut sends = Vec::new();
            for round in 0..ROUNDS {
                sends.push(send(engine, pattern(round as u64, 4 << 20), 1, 0));
                for small in 0..20 {
                    sends.push(send(engine, pattern(1000 + (round * 20 + small) as u64, 100), 1, 1));
                }
            }
            for request in sends {
                engine.wait(request).unwrap();
            }
            return;
        }
        let mut larges = Vec::new();
        for round in 0..ROUNDS {
            larges.push(post(engine, 4 << 20, Source::Rank(0), TagSelector::Tag(0)));
            let _ = round;
        }
        for index in 0..ROUNDS * 20 {
            let (status, data) = receive(engine, 100, Source::Rank(0), TagSelector::Tag(1));
            assert_eq!(status.count, 100);
            assert!(*data == pattern(1000 + index as u64, 100)[..], "small message {index} lost, duplicated or reordered");
        }
        for (round, request) in larges.into_iter().enumerate() {
            let (status, data) = engine.wait_receive(request).unwrap();
            assert_eq!(status.count, 4 << 20);
            assert!(*data == pattern(round as u64, 4 << 20)[..], "large message {round} corrupted");
        }
        let deadline = Instant::now() + Duration::from_millis(50);
        while Instant::now() < deadline {
            assert_eq!(engine.iprobe(Source::Any, TagSelector::Any, CONTEXT).unwrap(), None, "a message arrived twice");
        }
    });
    assert!(!net.alive(killed), "the rail was never killed");
}

#[test]
fn a_data_rail_failing_mid_transfer_loses_nothing() {
    survive_rail_failure(1, 3 << 20);
}

#[test]
fn the_control_rail_failing_mid_run_loses_nothing() {
    survive_rail_failure(0, 5 << 20);
}

#[test]
fn losing_every_rail_is_a_clear_error() {
    let mut rails = two_rails();
    rails[0].fail_after = Some(1 << 20);
    rails[1].fail_after = Some(1 << 20);
    let barrier = Arc::new(Barrier::new(2));
    let (errors, _) = run_rail_job_finalizing(vec![0, 1], rails, config(), false, move |engine, net| {
        if engine.rank() == 1 {
            let request = post(engine, 16 << 20, Source::Rank(0), TagSelector::Tag(0));
            // Receive until both rails are down (then this rank's own progress fails too).
            while net.alive(0) || net.alive(1) {
                let _ = engine.progress();
            }
            barrier.wait();
            assert!(!engine.is_complete(request));
            return None;
        }
        let outgoing = send(engine, pattern(0, 16 << 20), 1, 0);
        let error = engine.wait(outgoing).unwrap_err();
        barrier.wait();
        Some(error)
    });
    match &errors[0] {
        Some(EngineError::Unreachable { rank: 1, reason }) => assert!(reason.contains("every network rail"), "{reason}"),
        other => panic!("expected rank 1 to be reported unreachable, got {other:?}"),
    }
}

#[test]
fn node_local_and_network_peers_mix_in_one_job() {
    // Ranks 0, 1 on one node and 2, 3 on another: every rank sends every other a small and a
    // large message.
    let (results, net) = run_rail_job(vec![0, 0, 1, 1], two_rails(), config(), |engine, _| {
        let rank = engine.rank();
        let peers: Vec<u32> = (0..4).filter(|&peer| peer != rank).collect();
        let mut receives = Vec::new();
        for &peer in &peers {
            receives.push((peer, 0, post(engine, 1000, Source::Rank(peer), TagSelector::Tag(0))));
            receives.push((peer, 1, post(engine, 2 << 20, Source::Rank(peer), TagSelector::Tag(1))));
        }
        let mut sends = Vec::new();
        for &peer in &peers {
            sends.push(send(engine, pattern(u64::from(rank * 10 + peer), 1000), peer, 0));
            sends.push(send(engine, pattern(u64::from(100 + rank * 10 + peer), 2 << 20), peer, 1));
        }
        for (peer, tag, request) in receives {
            let (status, data) = engine.wait_receive(request).unwrap();
            let seed = if tag == 0 { peer * 10 + rank } else { 100 + peer * 10 + rank };
            assert!(*data == pattern(u64::from(seed), status.count)[..], "message from {peer} with tag {tag} corrupted");
        }
        for request in sends {
            engine.wait(request).unwrap();
        }
        rank
    });
    assert_eq!(results, vec![0, 1, 2, 3]);
    // Only the 8 cross-node large messages crossed the rails.
    assert_eq!(net.data_bytes(0) + net.data_bytes(1), 8 * (2 << 20));
}

/// Two TCP rails over loopback addresses 127.0.0.1 and 127.0.0.2 between threads of this
/// process (`BRAID_SHM=off`: every peer is a network peer).
fn run_tcp_job<T: Send + 'static>(size: u32, body: impl Fn(&mut braid_engine::Engine) -> T + Send + Sync + 'static) -> Vec<T> {
    run_tcp_job_with(size, config(), None, body)
}

/// [`run_tcp_job`] with `config` (shared memory off, a fresh profile directory) and the rails'
/// kernel socket buffers set to `socket_buffer` bytes, if given.
fn run_tcp_job_with<T: Send + 'static>(size: u32, config: Config, socket_buffer: Option<usize>, body: impl Fn(&mut braid_engine::Engine) -> T + Send + Sync + 'static) -> Vec<T> {
    use braid_transport::tcp::{Rail, TcpTransport};
    static JOBS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let job = JOBS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let profile_dir = std::env::temp_dir().join(format!("braid-engine-tcp-test-{}-{job}", std::process::id()));
    let config = Config { shm: false, profile_dir: profile_dir.display().to_string(), ..config };
    let body = Arc::new(body);
    let handles: Vec<_> = braid_pmi::threads::ThreadBootstrap::job(&format!("braid-engine-tcp-{}-{job}", std::process::id()), size)
        .into_iter()
        .map(|bootstrap| {
            let (config, body) = (config.clone(), Arc::clone(&body));
            std::thread::spawn(move || {
                let rank = braid_pmi::Bootstrap::rank(&bootstrap);
                let rails: Vec<Box<dyn braid_transport::Transport>> = [("lo", [127, 0, 0, 1]), ("lo-second", [127, 0, 0, 2])]
                    .into_iter()
                    .map(|(name, address)| {
                        let rail = Rail { name: name.to_string(), address: address.into() };
                        let mut transport = TcpTransport::new(&config, rail).expect("tcp rail");
                        if let Some(bytes) = socket_buffer {
                            transport.set_socket_buffer(bytes);
                        }
                        Box::new(transport) as Box<dyn braid_transport::Transport>
                    })
                    .collect();
                let mut engine =
                    braid_engine::Engine::with_rails(&config, Box::new(bootstrap), Box::new(braid_transport::selfloop::SelfTransport::new()), Vec::new(), rails).expect("engine over tcp rails");
                assert_eq!(engine.rank(), rank);
                let result = body(&mut engine);
                engine.finalize().expect("finalize");
                result
            })
        })
        .collect();
    let results = handles.into_iter().map(|handle| handle.join().expect("rank panicked")).collect();
    let _ = std::fs::remove_dir_all(profile_dir);
    results
}

#[test]
fn tcp_rails_over_loopback_keep_order_and_move_large_messages_intact() {
    let results = run_tcp_job(3, |engine| {
        let ordered = scenarios::wildcard_order(engine);
        if engine.rank() < 2 {
            let peer = 1 - engine.rank();
            for len in [100_000, 8 << 20] {
                let incoming = post(engine, len, Source::Rank(peer), TagSelector::Tag(7));
                let outgoing = send(engine, pattern(u64::from(engine.rank()), len), peer, 7);
                let (status, data) = engine.wait_receive(incoming).unwrap();
                assert_eq!(status.count, len);
                assert_eq!(checksum(data), checksum(&pattern(u64::from(peer), len)), "{len}-byte message over tcp corrupted");
                engine.wait(outgoing).unwrap();
            }
        }
        ordered
    });
    assert_eq!(results[2], 400);
}

/// While its receiver is away, both rails fill up; the sender's progress steps then read neither
/// rail's backlog (a full rail takes no chunk, so its backlog does not matter yet), and the
/// message completes once the receiver is back.
#[test]
fn full_rails_are_not_asked_for_their_backlog() {
    use std::sync::atomic::{AtomicBool, Ordering};
    const LEN: usize = 32 << 20;
    let (away, back) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
    let steps_reading = Arc::new(std::sync::Mutex::new(None));
    let (away_in, back_in, steps_in) = (Arc::clone(&away), Arc::clone(&back), Arc::clone(&steps_reading));
    run_rail_job(vec![0, 1], two_rails(), config(), move |engine, net| {
        let peer = 1 - engine.rank();
        if engine.rank() == 1 {
            let incoming = post(engine, LEN, Source::Rank(peer), TagSelector::Tag(1));
            while net.data_bytes(0) + net.data_bytes(1) == 0 {
                engine.progress().unwrap();
            }
            away_in.store(true, Ordering::SeqCst);
            let deadline = Instant::now() + Duration::from_secs(30);
            while !back_in.load(Ordering::SeqCst) {
                assert!(Instant::now() < deadline, "the sender never finished its steps");
                std::thread::sleep(Duration::from_millis(1));
            }
            let (status, received) = engine.wait_receive(incoming).unwrap();
            assert_eq!(status.count, LEN);
            assert_eq!(checksum(received), checksum(&pattern(0, LEN)));
            return;
        }
        let outgoing = send(engine, pattern(0, LEN), peer, 1);
        while !away_in.load(Ordering::SeqCst) {
            engine.progress().unwrap();
        }
        // The receiver no longer polls: within a few steps both rails are full.
        for _ in 0..100 {
            engine.progress().unwrap();
        }
        let before = [net.backlog_reads(0), net.backlog_reads(1)];
        for _ in 0..1000 {
            engine.progress().unwrap();
        }
        *steps_in.lock().unwrap() = Some([net.backlog_reads(0) - before[0], net.backlog_reads(1) - before[1]]);
        back_in.store(true, Ordering::SeqCst);
        engine.wait(outgoing).unwrap();
    });
    assert_eq!(*steps_reading.lock().unwrap(), Some([0, 0]), "backlog reads of full rails over 1000 progress steps");
}

/// A rank waiting on TCP rails sleeps on their doorbells and wakes when a frame arrives (the
/// sleeps may last 10 s, so only the doorbell can end them in time); a sender holding chunk
/// bytes back under the queue horizon sleeps only until a rail needs more, so a large message
/// does not stall; and the receiver gets the chunks' payloads straight into its buffer.
#[test]
fn tcp_rails_ring_a_sleeping_rank_and_place_chunks_in_the_receive_buffer() {
    const LEN: usize = 64 << 20;
    let config = Config { block_timeout_ms: 10_000, spin_count: 10, ..config() };
    // Loopback carries 64 KiB segments, so with large socket buffers most reads would end just
    // short of a chunk's end, where placing is not worth it; small buffers cut them anywhere, as
    // a real link's 1500 or 9000-byte packets do.
    let results = run_tcp_job_with(2, config, Some(32 << 10), |engine| {
        let peer = 1 - engine.rank();
        if engine.rank() == 1 {
            let incoming = post(engine, 8, Source::Rank(peer), TagSelector::Tag(1));
            let started = Instant::now();
            engine.wait_receive(incoming).unwrap();
            let woken_after = started.elapsed();
            let sleeps = engine.counter_values().sleeps;
            assert!(sleeps > 0, "the receiver never slept");
            assert!(woken_after < Duration::from_secs(5), "the arriving frame did not wake the receiver ({woken_after:?})");
            let incoming = post(engine, LEN, Source::Rank(peer), TagSelector::Tag(2));
            let (status, received) = engine.wait_receive(incoming).unwrap();
            assert_eq!(status.count, LEN);
            assert_eq!(checksum(received), checksum(&pattern(0, LEN)), "the placed message is corrupted");
            let placed = engine.counter_values().rail_bytes_placed;
            assert!(placed >= LEN as u64 / 2, "only {placed} of {LEN} bytes were received in place");
            return Duration::ZERO;
        }
        std::thread::sleep(Duration::from_millis(300));
        let outgoing = send(engine, vec![1; 8], peer, 1);
        engine.wait(outgoing).unwrap();
        let sleeps_before = engine.counter_values().sleeps;
        let started = Instant::now();
        let outgoing = send(engine, pattern(0, LEN), peer, 2);
        engine.wait(outgoing).unwrap();
        let took = started.elapsed();
        assert!(engine.counter_values().sleeps > sleeps_before, "the sender never slept while its chunks drained");
        took
    });
    assert!(results[0] < Duration::from_secs(5), "64 MiB over loopback took {:?}: a sender holding bytes back slept too long", results[0]);
}

fn sample_pair(plan: braid_engine::sampling::SamplePlan) -> (braid_lane::Profile, Vec<usize>) {
    use braid_engine::sampling::ping_pong;
    use common::rails::{RailNet, RailTransport};
    let mut options = RailOptions::with_bandwidth(1e9);
    options.capacity = 4;
    options.max_payload = 64 * 1024;
    let net = RailNet::new(vec![0, 1], vec![options]);
    let responder = {
        let net = Arc::clone(&net);
        std::thread::spawn(move || ping_pong(&mut RailTransport::new(&net, 0, 1), 0, false, &plan, |_, _| {}).unwrap())
    };
    let mut progressed = Vec::new();
    let profile = ping_pong(&mut RailTransport::new(&net, 0, 0), 1, true, &plan, |size, _| progressed.push(size)).unwrap();
    assert!(responder.join().unwrap().is_none(), "only the initiator measures");
    (profile.expect("the initiator's profile"), progressed)
}

#[test]
fn sampling_measures_every_size_and_respects_the_deadline() {
    use braid_engine::sampling::{sizes, SamplePlan};
    let (profile, progressed) = sample_pair(SamplePlan { largest: 1 << 20, repetitions: 3, deadline: None });
    assert_eq!(progressed, sizes(1 << 20));
    let measured: Vec<usize> = profile.samples().iter().map(|sample| sample.size).collect();
    assert_eq!(measured, sizes(1 << 20));
    assert!(profile.samples().windows(2).all(|pair| pair[0].nanos <= pair[1].nanos), "larger sizes predicted faster");
    assert!(profile.samples()[0].nanos > 0.0);
    let (short, _) = sample_pair(SamplePlan { largest: 16 << 20, repetitions: 1, deadline: Some(Instant::now()) });
    assert_eq!(short.samples().len(), 2, "past the deadline only the two smallest sizes are measured");
}
