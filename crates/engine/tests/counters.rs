//! The traffic counters the tools interface reads: messages and bytes per peer, frames and bytes
//! per transport and rail, the unexpected queue, time spent blocked.

mod common;

use std::sync::{Arc, Barrier};
use std::time::Duration;

use braid_config::{Config, WaitMode};
use braid_engine::{CounterValues, Source, TagSelector};
use common::rails::{run_rail_job, RailOptions};
use common::scenarios::{post, receive, send};
use common::{run_channel_job, ChannelOptions, RemoteReads};

fn config() -> Config {
    Config { spin_count: 100, rail_hedge: false, ..Config::default() }
}

const EAGER: usize = 100;
const LARGE: usize = 1 << 20;

/// Rank 0 sends three eager messages and one rendezvous message to rank 1 before rank 1 posts
/// any receive; each rank returns its counters after the exchange, and rank 1 also while the
/// messages wait in its unexpected queue.
fn unexpected_exchange(remote_reads: RemoteReads) -> Vec<(Option<CounterValues>, CounterValues)> {
    let barrier = Arc::new(Barrier::new(2));
    let options = ChannelOptions { remote_reads, ..ChannelOptions::default() };
    let (results, _) = run_channel_job(2, config(), options, move |engine| {
        if engine.rank() == 0 {
            let sends: Vec<_> = (1..=3).map(|tag| send(engine, vec![tag as u8; EAGER], 1, tag)).collect();
            let large = send(engine, vec![9; LARGE], 1, 4);
            barrier.wait();
            for request in sends.into_iter().chain([large]) {
                engine.wait(request).unwrap();
            }
            return (None, engine.counter_values());
        }
        barrier.wait();
        engine.wait_until(|engine| engine.iprobe(Source::Any, TagSelector::Tag(4), common::scenarios::CONTEXT).unwrap().is_some()).unwrap();
        let waiting = engine.counter_values();
        for tag in 1..=3 {
            assert_eq!(receive(engine, EAGER, Source::Rank(0), TagSelector::Tag(tag)).0.count, EAGER);
        }
        assert_eq!(receive(engine, LARGE, Source::Rank(0), TagSelector::Tag(4)).0.count, LARGE);
        (Some(waiting), engine.counter_values())
    });
    results
}

fn check_unexpected_exchange(remote_reads: RemoteReads) {
    let results = unexpected_exchange(remote_reads);
    let (_, sender) = &results[0];
    let (waiting, receiver) = &results[1];
    let waiting = waiting.as_ref().unwrap();
    let total = (3 * EAGER + LARGE) as u64;

    assert_eq!(sender.transport_names, ["loop", "channel"]);
    assert_eq!((sender.peers[1].messages_sent, sender.peers[1].bytes_sent), (4, total));
    assert_eq!((sender.peers[0].messages_sent, sender.peers[1].messages_received), (0, 0));
    assert_eq!((sender.eager_sends, sender.rendezvous_sends), (3, 1));
    assert!(sender.transports[1].frames_sent >= 4);
    assert_eq!(sender.transports[0], Default::default(), "nothing went to the own rank");

    assert_eq!((waiting.peers[0].messages_received, waiting.peers[0].bytes_received), (4, total));
    assert_eq!((waiting.unexpected_level, waiting.unexpected_high_watermark, waiting.unexpected_total), (4, 4, 4));
    assert_eq!((receiver.unexpected_level, receiver.unexpected_high_watermark, receiver.unexpected_total), (0, 4, 4));
    assert_eq!((receiver.peers[0].messages_received, receiver.peers[0].bytes_received), (4, total));
    // Eager payloads and the rendezvous data arrive through the channel, as frames or read
    // directly from the sender's memory.
    assert_eq!(receiver.transports[1].bytes_received, total);
    assert_eq!(receiver.transports[1].frames_received, sender.transports[1].frames_sent);
    assert_eq!(receiver.transports[1].frames_sent, sender.transports[1].frames_received);
}

#[test]
fn messages_are_counted_per_peer_and_frames_per_transport_single_copy() {
    check_unexpected_exchange(RemoteReads::On);
}

#[test]
fn messages_are_counted_per_peer_and_frames_per_transport_pipeline() {
    check_unexpected_exchange(RemoteReads::Off);
}

#[test]
fn messages_to_the_own_rank_use_the_self_transport() {
    let (results, _) = run_channel_job(1, config(), ChannelOptions::default(), |engine| {
        let incoming = post(engine, 64, Source::Rank(0), TagSelector::Tag(1));
        let outgoing = send(engine, vec![1; 64], 0, 1);
        engine.wait(outgoing).unwrap();
        engine.wait_receive(incoming).unwrap();
        engine.counter_values()
    });
    let values = &results[0];
    assert_eq!(values.peers[0].messages_sent, 1);
    assert_eq!(values.peers[0].bytes_received, 64);
    assert_eq!((values.transports[0].frames_sent, values.transports[0].bytes_received), (1, 64));
    assert_eq!((values.unexpected_total, values.unexpected_high_watermark), (0, 0));
}

#[test]
fn restarting_the_high_watermark_starts_from_the_current_level() {
    let (results, _) = run_channel_job(1, config(), ChannelOptions::default(), |engine| {
        for tag in 0..3 {
            let request = send(engine, vec![0; 8], 0, tag);
            engine.wait(request).unwrap();
        }
        engine.progress().unwrap();
        receive(engine, 8, Source::Any, TagSelector::Tag(0));
        engine.restart_unexpected_high_watermark();
        let restarted = engine.counter_values();
        receive(engine, 8, Source::Any, TagSelector::Any);
        (restarted, engine.counter_values())
    });
    let (restarted, after) = &results[0];
    assert_eq!((restarted.unexpected_level, restarted.unexpected_high_watermark), (2, 2));
    assert_eq!((after.unexpected_level, after.unexpected_high_watermark, after.unexpected_total), (1, 2, 3));
}

#[test]
fn a_blocked_receiver_counts_its_sleeps_and_their_time() {
    let config = Config { wait: WaitMode::Block, block_timeout_ms: 5000, ..config() };
    let (results, net) = run_channel_job(2, config, ChannelOptions::default(), |engine| {
        if engine.rank() == 0 {
            std::thread::sleep(Duration::from_millis(50));
            let request = send(engine, vec![1; 8], 1, 1);
            engine.wait(request).unwrap();
        } else {
            receive(engine, 8, Source::Rank(0), TagSelector::Tag(1));
        }
        engine.counter_values()
    });
    assert!(net.sleeps() >= 1);
    assert!(results[1].sleeps >= 1, "the receiver's sleeps were not counted");
    assert!(results[1].blocked_ns >= 20_000_000, "only {} ns counted as blocked", results[1].blocked_ns);
}

#[test]
fn rail_traffic_is_counted_on_each_rail() {
    let len = 8 << 20;
    let rails = vec![RailOptions::with_bandwidth(2e9), RailOptions::with_bandwidth(1e9)];
    let (results, net) = run_rail_job(vec![0, 1], rails, config(), move |engine, _| {
        if engine.rank() == 0 {
            let request = send(engine, vec![5; len], 1, 1);
            engine.wait(request).unwrap();
        } else {
            receive(engine, len, Source::Rank(0), TagSelector::Tag(1));
        }
        engine.counter_values()
    });
    let (sender, receiver) = (&results[0], &results[1]);
    assert_eq!(sender.transport_names, ["loop", "node-local", "rail0", "rail1"]);
    assert_eq!((sender.peers[1].messages_sent, sender.peers[1].bytes_sent, sender.rendezvous_sends), (1, len as u64, 1));
    assert_eq!((receiver.peers[0].messages_received, receiver.peers[0].bytes_received), (1, len as u64));
    for rail in 0..2 {
        // Only the rendezvous chunks carry payload: what the sender counts on a rail is what
        // the rail carried.
        assert_eq!(sender.transports[2 + rail].bytes_sent, net.data_bytes(rail), "rail {rail}");
    }
    assert_eq!(sender.transports[2].bytes_sent + sender.transports[3].bytes_sent, len as u64);
    assert_eq!(receiver.transports[2].bytes_received + receiver.transports[3].bytes_received, len as u64);
    assert!(sender.transports[2].frames_sent + sender.transports[3].frames_sent >= 2);
}
