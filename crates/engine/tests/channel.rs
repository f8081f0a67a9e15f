//! Engine behaviour over the in-process channel transport, which lets the tests force
//! back-pressure, refused remote reads and doorbell sleeps.

mod common;

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use braid_config::{CmaMode, Config, WaitMode};
use braid_engine::{Engine, EngineError, RequestId, SendMode, Source, TagSelector};
use common::scenarios::{self, post, receive, send, CONTEXT};
use common::{leak, leak_zeroed, pattern, run_channel_job, run_channel_job_on, ChannelNet, ChannelOptions, RemoteReads};

fn config() -> Config {
    Config { spin_count: 100, ..Config::default() }
}

#[test]
fn wildcard_receives_keep_each_senders_order() {
    let (results, _) = run_channel_job(3, config(), ChannelOptions::default(), scenarios::wildcard_order);
    assert_eq!(results[2], 400);
}

#[test]
fn posted_and_unexpected_receives_both_match_within_their_context() {
    let barrier = Arc::new(Barrier::new(2));
    run_channel_job(2, config(), ChannelOptions::default(), move |engine| {
        if engine.rank() == 0 {
            barrier.wait();
            for tag in [3, 2, 1] {
                send(engine, vec![tag as u8; 10], 1, tag);
            }
            engine.isend(leak(vec![66; 5]), 1, 1, CONTEXT + 1, SendMode::Standard).unwrap();
            for tag in [4, 5] {
                send(engine, vec![tag as u8; 10], 1, tag);
            }
            barrier.wait();
            return;
        }
        let posted: Vec<_> = [1, 2, 3].map(|tag| post(engine, 10, Source::Rank(0), TagSelector::Tag(tag))).into();
        barrier.wait();
        for (request, tag) in posted.into_iter().zip([1, 2, 3]) {
            let (status, data) = engine.wait_receive(request).unwrap();
            assert_eq!((status.tag, status.source, status.count), (tag, 0, 10));
            assert_eq!(data, &[tag as u8; 10]);
        }
        barrier.wait();
        engine.wait_until(|engine| engine.iprobe(Source::Any, TagSelector::Tag(5), CONTEXT).unwrap().is_some()).unwrap();
        let (status, data) = receive(engine, 10, Source::Rank(0), TagSelector::Tag(5));
        assert_eq!((status.tag, &*data), (5, &[5u8; 10][..]));
        let (status, data) = receive(engine, 10, Source::Any, TagSelector::Any);
        assert_eq!((status.tag, &*data), (4, &[4u8; 10][..]));
        let other = engine.irecv(leak_zeroed(5), Source::Any, TagSelector::Any, CONTEXT + 1).unwrap();
        assert_eq!(engine.wait_receive(other).unwrap().1, &[66; 5]);
    });
}

#[test]
fn probe_reports_the_earliest_matching_message_without_receiving_it() {
    run_channel_job(2, config(), ChannelOptions::default(), |engine| {
        if engine.rank() == 0 {
            let small = send(engine, pattern(7, 100), 1, 7);
            let large = send(engine, pattern(8, 50_000), 1, 8);
            engine.wait(small).unwrap();
            engine.wait(large).unwrap();
            return;
        }
        assert_eq!(engine.iprobe(Source::Any, TagSelector::Tag(9), CONTEXT).unwrap(), None);
        let mut probed = None;
        engine
            .wait_until(|engine| {
                probed = engine.iprobe(Source::Rank(0), TagSelector::Tag(8), CONTEXT).unwrap();
                probed.is_some()
            })
            .unwrap();
        let status = probed.unwrap();
        assert_eq!((status.source, status.tag, status.count), (0, 8, 50_000));
        let first = engine.iprobe(Source::Any, TagSelector::Any, CONTEXT).unwrap().unwrap();
        assert_eq!((first.tag, first.count), (7, 100));
        let (_, large) = receive(engine, 50_000, Source::Any, TagSelector::Tag(8));
        assert_eq!(*large, pattern(8, 50_000)[..]);
        let (_, small) = receive(engine, 100, Source::Any, TagSelector::Any);
        assert_eq!(*small, pattern(7, 100)[..]);
        assert_eq!(engine.iprobe(Source::Any, TagSelector::Any, CONTEXT).unwrap(), None);
    });
}

#[test]
fn a_matched_probe_takes_the_message_out_of_matching_until_received() {
    run_channel_job(2, config(), ChannelOptions::default(), scenarios::matched_probe);
    run_channel_job(2, Config { cma: CmaMode::Off, ..config() }, ChannelOptions::default(), scenarios::matched_probe);
}

#[test]
fn unmatched_sends_are_cancelled_and_matched_ones_complete() {
    run_channel_job(2, config(), ChannelOptions::default(), scenarios::cancel_sends);
    run_channel_job(2, Config { cma: CmaMode::Off, ..config() }, ChannelOptions::default(), scenarios::cancel_sends);
}

#[test]
fn sends_to_self_are_cancelled_until_received() {
    run_channel_job(1, config(), ChannelOptions::default(), |engine| {
        for (len, mode) in [(16, SendMode::Synchronous), (1 << 20, SendMode::Standard)] {
            let request = engine.isend(leak(pattern(1, len)), 0, 1, CONTEXT, mode).unwrap();
            engine.cancel(request);
            assert!(engine.wait(request).unwrap().cancelled, "a {len}-byte send to self was not cancelled");
        }
        assert_eq!(engine.iprobe(Source::Any, TagSelector::Any, CONTEXT).unwrap(), None);
        let request = engine.isend(leak(pattern(2, 1 << 20)), 0, 2, CONTEXT, SendMode::Standard).unwrap();
        let (message, _) = scenarios::mprobe(engine, Source::Rank(0), TagSelector::Tag(2));
        engine.cancel(request);
        let received = engine.imrecv(message, leak_zeroed(1 << 20)).unwrap();
        assert!(*engine.wait_receive(received).unwrap().1 == pattern(2, 1 << 20)[..]);
        assert!(!engine.wait(request).unwrap().cancelled, "a send matched by a probe was cancelled");
    });
}

#[test]
fn a_send_still_queued_here_is_cancelled_at_once() {
    let barrier = Arc::new(Barrier::new(2));
    let options = ChannelOptions { capacity: 1, ..ChannelOptions::default() };
    run_channel_job(2, config(), options, move |engine| {
        if engine.rank() == 0 {
            let first = send(engine, pattern(1, 8), 1, 1);
            let eager = send(engine, pattern(2, 8), 1, 2);
            let rendezvous = send(engine, pattern(3, 1 << 20), 1, 3);
            assert!(engine.is_complete(first) && !engine.is_complete(eager), "the channel took more than one frame");
            assert!(engine.cancel(eager) && engine.cancel(rendezvous));
            assert!(engine.wait(eager).unwrap().cancelled && engine.wait(rendezvous).unwrap().cancelled);
            let last = send(engine, pattern(4, 8), 1, 4);
            barrier.wait();
            engine.wait(last).unwrap();
            return;
        }
        barrier.wait();
        for tag in [1, 4] {
            let (status, data) = receive(engine, 8, Source::Any, TagSelector::Any);
            assert_eq!((status.tag, &*data), (tag, &pattern(tag as u64, 8)[..]));
        }
        assert_eq!(engine.iprobe(Source::Any, TagSelector::Any, CONTEXT).unwrap(), None);
    });
}

#[test]
fn only_unmatched_receives_can_be_cancelled() {
    run_channel_job(1, config(), ChannelOptions::default(), |engine| {
        let waiting = post(engine, 8, Source::Any, TagSelector::Any);
        assert!(engine.cancel(waiting));
        let status = engine.wait(waiting).unwrap();
        assert!(status.cancelled);
        let matched = post(engine, 8, Source::Rank(0), TagSelector::Tag(1));
        let sent = send(engine, vec![1; 8], 0, 1);
        engine.wait(sent).unwrap();
        engine.progress().unwrap();
        assert!(!engine.cancel(matched));
        let status = engine.wait(matched).unwrap();
        assert!(!status.cancelled);
        assert_eq!(status.count, 8);
        let sending = send(engine, vec![2; 8], 0, 2);
        assert!(!engine.cancel(sending));
        engine.wait(sending).unwrap();
        let (status, _) = receive(engine, 8, Source::Any, TagSelector::Tag(2));
        assert!(!status.cancelled);
    });
}

fn truncation(options: ChannelOptions, cma: CmaMode) {
    run_channel_job(2, Config { cma, ..config() }, options, |engine| {
        if engine.rank() == 0 {
            let small = send(engine, pattern(1, 100), 1, 1);
            let large = send(engine, pattern(2, 1 << 20), 1, 2);
            engine.wait(small).unwrap();
            let status = engine.wait(large).unwrap();
            assert_eq!(status.count, 1 << 20);
            return;
        }
        let (status, data) = receive(engine, 40, Source::Rank(0), TagSelector::Tag(1));
        assert!(status.truncated);
        assert_eq!((status.count, &*data), (40, &pattern(1, 100)[..40]));
        let (status, data) = receive(engine, 300_000, Source::Rank(0), TagSelector::Tag(2));
        assert!(status.truncated);
        assert_eq!(status.count, 300_000);
        assert!(*data == pattern(2, 1 << 20)[..300_000]);
    });
}

#[test]
fn truncation_delivers_what_fits_single_copy() {
    truncation(ChannelOptions::default(), CmaMode::Auto);
}

#[test]
fn truncation_delivers_what_fits_pipeline() {
    truncation(ChannelOptions::default(), CmaMode::Off);
}

#[test]
fn synchronous_send_completes_only_after_the_receive_matches() {
    let barrier = Arc::new(Barrier::new(2));
    run_channel_job(2, config(), ChannelOptions::default(), move |engine| {
        if engine.rank() == 0 {
            for (len, tag) in [(16, 1), (100_000, 2)] {
                let request = engine.isend(leak(pattern(tag as u64, len)), 1, tag, CONTEXT, SendMode::Synchronous).unwrap();
                let deadline = Instant::now() + Duration::from_millis(50);
                while Instant::now() < deadline {
                    engine.progress().unwrap();
                    assert!(!engine.is_complete(request), "a {len}-byte synchronous send completed before its receive was posted");
                }
                barrier.wait();
                engine.wait(request).unwrap();
            }
            return;
        }
        for (len, tag) in [(16, 1), (100_000, 2)] {
            barrier.wait();
            let (status, data) = receive(engine, len, Source::Rank(0), TagSelector::Tag(tag));
            assert_eq!((status.count, &*data), (len, &pattern(tag as u64, len)[..]));
        }
    });
}

fn exchange_large(config: Config, options: ChannelOptions) -> Arc<ChannelNet> {
    run_channel_job(2, config, options, scenarios::exchange_large).1
}

#[test]
fn rendezvous_single_copy_moves_8_mib_intact() {
    let net = exchange_large(config(), ChannelOptions::default());
    assert_eq!(net.refused_reads(), 0);
}

/// Rank 0 sends `count` messages of `len` bytes to rank 1, one at a time; rank 1 checks them.
fn one_way(engine: &mut Engine, count: usize, len: usize) {
    for i in 0..count as u64 {
        if engine.rank() == 0 {
            let sent = send(engine, pattern(500 + i, len), 1, 20);
            engine.wait(sent).unwrap();
        } else if engine.rank() == 1 {
            let (status, data) = receive(engine, len, Source::Rank(0), TagSelector::Tag(20));
            assert!(status.count == len && *data == pattern(500 + i, len)[..], "message {i} of {len} bytes corrupted");
        }
    }
}

/// Each of `offers` shared copies (halves of `half` bytes) was either written whole by its sender
/// or taken back by its receiver, never both and never neither.
fn assert_offers_settled_once(net: &ChannelNet, half: usize, offers: usize) {
    assert_eq!((net.written() % half, net.written() / half + net.revoked()), (0, offers), "every offer is settled exactly once");
}

/// The first 8 MiB message to a peer is read whole; each later one is offered to the sender,
/// which writes half of it into the receiver's buffer unless the receiver got there first (a
/// race the sender, spinning in its wait, almost always wins).
#[test]
fn later_large_messages_share_their_copy_with_the_sender() {
    const HALF: usize = 4 << 20;
    let (_, net) = run_channel_job(2, config(), ChannelOptions::default(), |engine| one_way(engine, 6, 2 * HALF));
    assert!(net.written() >= HALF, "no offer was taken: {} bytes written", net.written());
    assert_offers_settled_once(&net, HALF, 5);
    let (_, alone) = run_channel_job(2, Config { cma_share_min: 0, ..config() }, ChannelOptions::default(), |engine| one_way(engine, 2, 2 * HALF));
    assert_eq!(alone.written(), 0);
}

/// A rank with a rendezvous of its own in flight to the sender does not offer: the sender's core
/// is busy with it.
#[test]
fn traffic_both_ways_is_not_shared() {
    const LEN: usize = 8 << 20;
    let (_, net) = run_channel_job(2, config(), ChannelOptions::default(), |engine| {
        scenarios::exchange_large(engine);
        if engine.rank() == 0 {
            let pending = send(engine, pattern(1, LEN), 1, 30);
            let (status, data) = receive(engine, LEN, Source::Rank(1), TagSelector::Tag(31));
            assert!(status.count == LEN && *data == pattern(2, LEN)[..]);
            engine.wait(pending).unwrap();
        } else {
            let sent = send(engine, pattern(2, LEN), 0, 31);
            engine.wait(sent).unwrap();
            let (status, data) = receive(engine, LEN, Source::Rank(0), TagSelector::Tag(30));
            assert!(status.count == LEN && *data == pattern(1, LEN)[..]);
        }
    });
    assert_eq!(net.written_by(1), 0, "rank 0 offered a copy while its own send to rank 1 was in flight");
}

/// A window of large messages in flight (as a bandwidth benchmark posts them): every one
/// arrives intact, and every copy is offered in turn and settled once (written by the sender or
/// taken back by the receiver; which one depends on how fast the sender's thread runs here).
#[test]
fn a_window_of_large_messages_shares_its_copies_in_turn() {
    const LEN: usize = 256 * 1024;
    const WINDOW: usize = 16;
    let (_, net) = run_channel_job(2, config(), ChannelOptions::default(), |engine| {
        one_way(engine, 1, LEN);
        if engine.rank() == 0 {
            let sends: Vec<_> = (0..WINDOW).map(|i| send(engine, pattern(1000 + i as u64, LEN), 1, i as i32)).collect();
            for request in sends {
                engine.wait(request).unwrap();
            }
        } else {
            let receives: Vec<_> = (0..WINDOW).map(|i| post(engine, LEN, Source::Rank(0), TagSelector::Tag(i as i32))).collect();
            for (i, request) in receives.into_iter().enumerate() {
                let (status, data) = engine.wait_receive(request).unwrap();
                assert!(status.count == LEN && *data == pattern(1000 + i as u64, LEN)[..], "message {i} corrupted");
            }
        }
    });
    assert_offers_settled_once(&net, LEN / 2, WINDOW);
}

/// A sender that stays away from MPI after starting a large send does not hold up the receiver:
/// the unclaimed half of the copy is taken back and read by the receiver.
#[test]
fn a_sender_busy_outside_mpi_leaves_the_whole_copy_to_the_receiver() {
    const LEN: usize = 8 << 20;
    let (waits, net) = run_channel_job(2, config(), ChannelOptions::default(), |engine| {
        scenarios::exchange_large(engine);
        if engine.rank() == 0 {
            let sent = send(engine, pattern(7, LEN), 1, 9);
            std::thread::sleep(Duration::from_millis(400));
            engine.wait(sent).unwrap();
            return Duration::ZERO;
        }
        let start = Instant::now();
        let (status, data) = receive(engine, LEN, Source::Rank(0), TagSelector::Tag(9));
        assert!(status.count == LEN && *data == pattern(7, LEN)[..], "8 MiB message corrupted");
        start.elapsed()
    });
    assert!(waits[1] < Duration::from_millis(300), "the receive waited {:?} for a busy sender", waits[1]);
    assert!(net.revoked() >= 1);
}

#[test]
fn a_refused_remote_write_streams_the_rest_of_the_share() {
    let options = ChannelOptions { remote_reads: RemoteReads::WritesRefused, ..ChannelOptions::default() };
    let (_, net) = run_channel_job(2, config(), options, |engine| one_way(engine, 4, 8 << 20));
    // Three offers: the first one claimed is refused and streamed, later ones are left unclaimed.
    assert_eq!((net.written(), net.refused_reads()), (0, 0));
    assert!(net.refused_writes() <= 1 && net.refused_writes() + net.revoked() == 3, "refused {}, revoked {}", net.refused_writes(), net.revoked());
}

#[test]
fn rendezvous_pipeline_moves_8_mib_intact() {
    exchange_large(Config { cma: CmaMode::Off, ..config() }, ChannelOptions { capacity: 8, ..ChannelOptions::default() });
}

#[test]
fn a_refused_remote_read_falls_back_to_the_pipeline_once_per_peer() {
    let net = exchange_large(config(), ChannelOptions { remote_reads: RemoteReads::Refused, ..ChannelOptions::default() });
    assert_eq!(net.refused_reads(), 2, "each rank should try one remote read, then remember the refusal");
}

#[test]
fn many_outstanding_sends_queue_behind_a_full_channel_in_order() {
    let options = ChannelOptions { capacity: 3, max_payload: 16 * 1024, remote_reads: RemoteReads::Off };
    let (backed_up, _) = run_channel_job(2, config(), options, scenarios::many_outstanding);
    assert!(backed_up[0], "the channel never filled up");
}

#[test]
fn self_sends_of_every_size_arrive_posted_or_not() {
    run_channel_job(1, config(), ChannelOptions::default(), scenarios::self_sends);
}

#[test]
fn a_blocking_receiver_sleeps_until_the_message_arrives() {
    let config = Config { wait: WaitMode::Block, block_timeout_ms: 5000, ..config() };
    let (waited, net) = run_channel_job(2, config, ChannelOptions::default(), scenarios::late_message);
    assert!(net.sleeps() >= 1, "the receiver never slept");
    assert!(waited[1] >= Duration::from_millis(150));
    assert!(waited[1] < Duration::from_millis(3000), "the doorbell did not wake the receiver: {:?}", waited[1]);
}

#[test]
fn auto_waiting_blocks_at_once_when_the_ranks_share_one_cpu() {
    let cpu = *braid_sys::affinity::calling_thread().unwrap().first().unwrap();
    let config = Config { wait: WaitMode::Auto, spin_count: u32::MAX, block_timeout_ms: 5000, ..config() };
    let (waited, net) = run_channel_job_on(Some(cpu), 2, config, ChannelOptions::default(), scenarios::late_message);
    assert!(net.sleeps() >= 1, "an oversubscribed rank kept spinning");
    assert!(waited[1] < Duration::from_millis(3000), "the doorbell did not wake the receiver: {:?}", waited[1]);
}

#[test]
fn released_sends_complete_before_finalize_returns() {
    let barrier = Arc::new(Barrier::new(2));
    run_channel_job(2, config(), ChannelOptions::default(), move |engine| {
        if engine.rank() == 0 {
            let eager = send(engine, pattern(1, 10), 1, 1);
            let large = send(engine, pattern(2, 1 << 20), 1, 2);
            engine.release(eager);
            engine.release(large);
            barrier.wait();
            return;
        }
        barrier.wait();
        std::thread::sleep(Duration::from_millis(20));
        let (_, data) = receive(engine, 1 << 20, Source::Rank(0), TagSelector::Tag(2));
        assert!(*data == pattern(2, 1 << 20)[..]);
        let (_, data) = receive(engine, 10, Source::Rank(0), TagSelector::Tag(1));
        assert_eq!(*data, pattern(1, 10)[..]);
    });
}

#[test]
fn bad_ranks_and_requests_are_reported() {
    run_channel_job(2, config(), ChannelOptions::default(), |engine| {
        assert!(matches!(engine.isend(leak(vec![1]), 2, 0, CONTEXT, SendMode::Standard), Err(EngineError::Unreachable { rank: 2, .. })));
        assert!(matches!(engine.irecv(leak_zeroed(1), Source::Rank(7), TagSelector::Any, CONTEXT), Err(EngineError::Unreachable { rank: 7, .. })));
        assert_eq!(engine.wait(RequestId(0)), Err(EngineError::BadRequest));
        assert_eq!(engine.test(RequestId(12345)), Err(EngineError::BadRequest));
        assert_eq!(engine.node_ranks(), &[0, 1]);
        assert_eq!(engine.size(), 2);
    });
}
