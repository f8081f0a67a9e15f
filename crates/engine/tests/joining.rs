//! Processes of two jobs joined into one group (MPI's dynamic processes) talk as peers: each
//! thread of this test is a process, job A has two, job B one.

use std::time::Duration;

use braid_config::{Config, WaitMode};
use braid_engine::{Engine, Source, TagSelector};
use braid_pmi::threads::ThreadBootstrap;
use braid_pmi::Bootstrap;

fn leak(len: usize) -> &'static mut [u8] {
    Box::leak(vec![0u8; len].into_boxed_slice())
}

/// Job A (`a` ranks) and job B (`b` ranks) join one group; each process runs `body` with its
/// engine, its job, its rank there and the peer numbers of the group (A's ranks, then B's).
fn joined(name: &str, a: u32, b: u32, config: Config, body: impl Fn(&mut Engine, char, u32, &[u32]) + Send + Sync + Copy + 'static) {
    let pid = std::process::id();
    let jobs = [('A', ThreadBootstrap::job(&format!("{name}-a-{pid}"), a)), ('B', ThreadBootstrap::job(&format!("{name}-b-{pid}"), b))];
    let mut group = ThreadBootstrap::job(&format!("{name}-g-{pid}"), a + b).into_iter();
    let threads: Vec<_> = jobs
        .into_iter()
        .flat_map(|(job, bootstraps)| bootstraps.into_iter().map(move |bootstrap| (job, bootstrap)))
        .map(|(job, bootstrap)| {
            let mut member = group.next().unwrap();
            let config = config.clone();
            std::thread::spawn(move || {
                let rank = bootstrap.rank();
                let mut engine = Engine::new(&config, Box::new(bootstrap)).unwrap();
                let peers = engine.join(&config, &mut member).unwrap();
                body(&mut engine, job, rank, &peers);
                engine.finalize().unwrap();
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
}

#[test]
fn joined_processes_get_new_peer_numbers_and_keep_the_jobs_own() {
    joined("join-numbers", 2, 1, Config { spin_count: 100, ..Config::default() }, |engine, job, _, peers| match job {
        'A' => {
            assert_eq!(&peers[..2], &[0, 1]);
            assert_eq!(peers[2], 2, "the first new process follows the job's ranks");
            assert_eq!(engine.peer_count(), 3);
        }
        _ => {
            assert_eq!(peers, &[1, 2, 0], "job A's processes are new to job B");
            assert_eq!(engine.peer_count(), 3);
        }
    });
}

/// Job A's rank 0 and job B's (group rank `a`) swap `len` bytes.
fn ping_pong(engine: &mut Engine, job: char, rank: u32, peers: &[u32], a: usize, len: usize) {
    let (context, b0) = (7, peers[a]);
    let payload: Vec<u8> = (0..len).map(|i| (i * 31 + 7) as u8).collect();
    match (job, rank) {
        ('A', 0) => {
            let data: &'static [u8] = Box::leak(payload.clone().into_boxed_slice());
            let send = engine.isend(data, b0, 5, context, braid_engine::SendMode::Standard).unwrap();
            engine.wait(send).unwrap();
            let buffer = leak(len);
            let receive = engine.irecv(buffer, Source::Rank(b0), TagSelector::Tag(6), context).unwrap();
            let (status, bytes) = engine.wait_receive(receive).unwrap();
            assert_eq!((status.source, status.count), (b0, len));
            assert_eq!(bytes, &payload[..]);
        }
        ('B', 0) => {
            let buffer = leak(len);
            let receive = engine.irecv(buffer, Source::Any, TagSelector::Any, context).unwrap();
            let (status, bytes) = engine.wait_receive(receive).unwrap();
            assert_eq!((status.source, status.tag, status.count), (peers[0], 5, len));
            assert_eq!(bytes, &payload[..]);
            let echo: &'static [u8] = Box::leak(bytes.to_vec().into_boxed_slice());
            let send = engine.isend(echo, peers[0], 6, context, braid_engine::SendMode::Standard).unwrap();
            engine.wait(send).unwrap();
        }
        _ => {}
    }
}

#[test]
fn messages_of_every_protocol_cross_between_the_jobs() {
    for len in [0, 100, 40_000, 3 << 20] {
        joined("join-sizes", 2, 1, Config { spin_count: 100, ..Config::default() }, move |engine, job, rank, peers| ping_pong(engine, job, rank, peers, 2, len));
    }
}

#[test]
fn a_process_blocked_on_a_joined_peer_sleeps_until_it_sends() {
    // Job B's process waits 300 ms for job A's: it sleeps on the doorbells of both its job's
    // transport and the group's, and the message from the other job wakes it (long before
    // the sleep's 10 s time-out).
    joined("join-sleep", 1, 2, Config { wait: WaitMode::Block, block_timeout_ms: 10_000, ..Config::default() }, |engine, job, rank, peers| {
        if (job, rank) == ('A', 0) {
            std::thread::sleep(Duration::from_millis(300));
        }
        let started = std::time::Instant::now();
        ping_pong(engine, job, rank, peers, 1, 64);
        if (job, rank) == ('B', 0) {
            assert!(started.elapsed() < Duration::from_secs(3), "woken only by the sleep's time-out");
        }
    });
}

#[test]
fn a_released_group_reaches_nobody_and_joining_again_gives_new_peers() {
    let pid = std::process::id();
    let jobs = [("A", ThreadBootstrap::job(&format!("release-a-{pid}"), 1)), ("B", ThreadBootstrap::job(&format!("release-b-{pid}"), 1))];
    let groups: Vec<Vec<ThreadBootstrap>> = (0..2).map(|round| ThreadBootstrap::job(&format!("release-g{round}-{pid}"), 2)).collect();
    let mut members: Vec<Vec<ThreadBootstrap>> = vec![Vec::new(), Vec::new()];
    for group in groups {
        for (process, member) in group.into_iter().enumerate() {
            members[process].push(member);
        }
    }
    let threads: Vec<_> = jobs
        .into_iter()
        .zip(members)
        .map(|((job, mut bootstraps), rounds)| {
            std::thread::spawn(move || {
                let config = Config { spin_count: 100, ..Config::default() };
                let mut engine = Engine::new(&config, Box::new(bootstraps.remove(0))).unwrap();
                let other = usize::from(job == "A");
                let mut seen = Vec::new();
                for mut member in rounds {
                    let peers = engine.join(&config, &mut member).unwrap();
                    let peer = peers[other];
                    seen.push(peer);
                    // One message each way over the group, then the group is released.
                    let data: &'static [u8] = Box::leak(vec![7u8; 100].into_boxed_slice());
                    let send = engine.isend(data, peer, 1, 3, braid_engine::SendMode::Standard).unwrap();
                    let receive = engine.irecv(leak(100), Source::Rank(peer), TagSelector::Tag(1), 3).unwrap();
                    engine.wait(send).unwrap();
                    engine.wait_receive(receive).unwrap();
                    member.fence().unwrap();
                    assert_eq!(engine.release_joined(|_| false), 1);
                    let after = engine.isend(data, peer, 1, 3, braid_engine::SendMode::Standard);
                    assert!(after.is_err(), "a released peer must be unreachable: {after:?} (peer {peer})");
                }
                assert_ne!(seen[0], seen[1], "joining again numbers the process anew");
                engine.finalize().unwrap();
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
}

/// Shared memory off and the loopback as the one rail: the jobs' own ranks and the group's new
/// peers are all reached over TCP, as processes on other nodes are.
fn over_the_network(name: &str) -> (Config, std::path::PathBuf) {
    let profile_dir = std::env::temp_dir().join(format!("braid-join-{name}-{}", std::process::id()));
    let config = Config { shm: false, rails: braid_config::Rails::Named(vec!["lo".into()]), profile_dir: profile_dir.display().to_string(), spin_count: 100, ..Config::default() };
    (config, profile_dir)
}

#[test]
fn joined_processes_without_shared_memory_talk_over_the_network() {
    for len in [0, 100, 40_000, 3 << 20] {
        let (config, profile_dir) = over_the_network("tcp-sizes");
        joined("join-tcp", 2, 1, config, move |engine, job, rank, peers| ping_pong(engine, job, rank, peers, 2, len));
        let _ = std::fs::remove_dir_all(profile_dir);
    }
}

#[test]
fn a_process_blocked_on_a_peer_over_the_network_sleeps_until_it_sends() {
    let (config, profile_dir) = over_the_network("tcp-sleep");
    let config = Config { wait: WaitMode::Block, block_timeout_ms: 10_000, ..config };
    joined("join-tcp-sleep", 1, 1, config, |engine, job, rank, peers| {
        if (job, rank) == ('A', 0) {
            std::thread::sleep(Duration::from_millis(300));
        }
        let (started, sleeps) = (std::time::Instant::now(), engine.counter_values().sleeps);
        ping_pong(engine, job, rank, peers, 1, 64);
        if (job, rank) == ('B', 0) {
            assert!(started.elapsed() < Duration::from_secs(3), "woken only by the sleep's time-out");
            // Asleep on the socket, not yielding its core nor waking every few microseconds.
            let slept = engine.counter_values().sleeps - sleeps;
            assert!((1..50).contains(&slept), "{slept} sleeps in 300 ms");
        }
    });
    let _ = std::fs::remove_dir_all(profile_dir);
}
