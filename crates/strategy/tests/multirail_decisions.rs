//! Aggregation, the derived rendezvous threshold and the settings of the multirail strategies.

use braid_config::{Config, StrategyKind};
use braid_lane::Profile;
use braid_strategy::multirail::{
    build, predicted_finish, rendezvous_threshold, time_until_idle, Aggregator, Batch, Decision, RailView, SplitSettings, RENDEZVOUS_THRESHOLD_MAX, RENDEZVOUS_THRESHOLD_MIN,
};

const GBIT: f64 = 1e9 / 8.0;

fn idle(profile: &Profile) -> RailView<'_> {
    RailView { profile, backlog_bytes: 0, rate_factor: 1.0, up: true, standing_delay_ns: 0.0 }
}

#[test]
fn frames_leave_at_once_while_the_rail_is_idle() {
    let mut aggregator = Aggregator::new(1000);
    assert_eq!(aggregator.push(100, true), Decision::SendAlone);
    assert_eq!(aggregator.push(100, true), Decision::SendAlone);
    assert!(!aggregator.due_on_idle());
    assert_eq!(aggregator.flush(), Batch::default());
}

#[test]
fn frames_wait_for_a_busy_rail_and_leave_together_when_it_frees_up() {
    let mut aggregator = Aggregator::new(1000);
    assert_eq!(aggregator.push(100, false), Decision::Hold);
    assert_eq!(aggregator.push(200, false), Decision::Hold);
    assert!(aggregator.due_on_idle());
    assert_eq!(aggregator.pending(), Batch { frames: 2, bytes: 300 });
    assert_eq!(aggregator.flush(), Batch { frames: 2, bytes: 300 });
    assert!(!aggregator.due_on_idle());
    // A frame arriving when the rail is idle again joins what waits, so that order is kept.
    assert_eq!(aggregator.push(50, false), Decision::Hold);
    assert_eq!(aggregator.push(60, true), Decision::HoldAndFlush);
    assert_eq!(aggregator.flush(), Batch { frames: 2, bytes: 110 });
}

#[test]
fn a_full_packet_leaves_and_an_overflowing_frame_waits_for_the_next() {
    let mut aggregator = Aggregator::new(1000);
    assert_eq!(aggregator.push(600, false), Decision::Hold);
    assert_eq!(aggregator.push(400, false), Decision::HoldAndFlush, "budget reached exactly");
    assert_eq!(aggregator.flush(), Batch { frames: 2, bytes: 1000 });

    assert_eq!(aggregator.push(600, false), Decision::Hold);
    assert_eq!(aggregator.push(401, false), Decision::FlushFirst);
    assert_eq!(aggregator.pending(), Batch { frames: 1, bytes: 600 }, "the refused frame is not counted");
    assert_eq!(aggregator.flush(), Batch { frames: 1, bytes: 600 });
    assert_eq!(aggregator.push(401, false), Decision::Hold);

    assert_eq!(aggregator.push(5000, false), Decision::FlushFirst);
    aggregator.flush();
    assert_eq!(aggregator.push(5000, false), Decision::SendAlone, "a frame that fills a packet alone");
    assert_eq!(aggregator.push(1000, false), Decision::SendAlone);
}

#[test]
fn rendezvous_pays_once_the_split_gains_a_round_trip() {
    // 2 + 1 Gbit/s, 50 us each: eager on the fast rail takes 50 us + 4 ns/B, a split 50 us +
    // 8/3 ns/B plus a 100 us handshake: rendezvous pays from 100 us / (4/3 ns/B) = 75 000 B.
    let fast = Profile::from_model(50_000.0, 2.0 * GBIT, 1 << 24);
    let slow = Profile::from_model(50_000.0, GBIT, 1 << 24);
    let rails = [idle(&fast), idle(&slow)];
    let threshold = rendezvous_threshold(&rails, 0);
    assert!((threshold as f64 - 75_000.0).abs() <= 0.01 * 75_000.0, "{threshold}");
    let with_header = rendezvous_threshold(&rails, 1000);
    assert!((with_header as f64 - 74_000.0).abs() <= 0.01 * 74_000.0, "{with_header}");
}

#[test]
fn rendezvous_threshold_is_clamped() {
    let fast = Profile::from_model(50_000.0, 2.0 * GBIT, 1 << 24);
    assert_eq!(rendezvous_threshold(&[idle(&fast)], 64), RENDEZVOUS_THRESHOLD_MAX, "one rail: a split never pays");
    let down = RailView { up: false, ..idle(&fast) };
    assert_eq!(rendezvous_threshold(&[down, down], 64), RENDEZVOUS_THRESHOLD_MAX);
    let quick = Profile::from_model(500.0, 10.0 * GBIT, 1 << 24);
    assert_eq!(rendezvous_threshold(&[idle(&quick), idle(&quick)], 64), RENDEZVOUS_THRESHOLD_MIN);
}

#[test]
fn settings_come_from_the_configuration() {
    let config = Config { split_min: 4096, rate_smoothing: 0.5, eager_max: 8192, ..Config::default() };
    let settings = SplitSettings::from_config(&config);
    assert_eq!(settings, SplitSettings { split_min: 4096, rate_smoothing: 0.5, aggregate_max: 8192, queue_horizon_ns: 5e6 });
    let mut aggregator = settings.aggregator();
    assert_eq!(aggregator.push(8192, false), Decision::SendAlone);
    assert_eq!(settings.rate_estimator().factor(), 1.0);
    assert_eq!(build(StrategyKind::Iso, settings).name(), "iso");
    assert_eq!(build(config.strategy, settings).name(), "hetero", "hetero is the default");
}

#[test]
fn only_hetero_holds_chunks_back_and_rebalances() {
    let settings = SplitSettings::default();
    let profile = Profile::from_model(40_000.0, GBIT, 1 << 24);
    let rails = [RailView { backlog_bytes: 1 << 20, ..idle(&profile) }, idle(&profile)];
    for kind in [StrategyKind::Single, StrategyKind::Greedy, StrategyKind::Iso, StrategyKind::Weighted] {
        let mut strategy = build(kind, settings);
        assert_eq!(strategy.queue_horizon_ns(), None, "{kind:?}");
        assert_eq!(strategy.takeover(1, 0, 1 << 20, &rails), 0, "{kind:?}");
    }
    assert_eq!(build(StrategyKind::Hetero, settings).queue_horizon_ns(), Some(5e6));
    let unlimited = SplitSettings { queue_horizon_ns: 0.0, ..settings };
    assert_eq!(build(StrategyKind::Hetero, unlimited).queue_horizon_ns(), None);
}

#[test]
fn an_idle_rail_takes_over_enough_of_a_slowed_rail_for_both_to_finish_together() {
    let mut hetero = build(StrategyKind::Hetero, SplitSettings::default());
    let fast = Profile::from_model(40_000.0, 2.0 * GBIT, 1 << 24);
    let slow = Profile::from_model(60_000.0, GBIT, 1 << 24);
    // The 2 Gbit/s rail is found to drain at a quarter of its rate, with 512 KiB still queued,
    // 384 KiB of them not yet handed to it.
    let victim = RailView { backlog_bytes: 512 << 10, rate_factor: 0.25, ..idle(&fast) };
    let rails = [victim, idle(&slow)];
    let taken = hetero.takeover(1, 0, 384 << 10, &rails);
    assert!(taken > 0 && taken <= 384 << 10 && taken.is_multiple_of(8), "{taken}");
    let victim_after = RailView { backlog_bytes: victim.backlog_bytes - taken as u64, ..victim };
    let (victim_finish, thief_finish) = (time_until_idle(&victim_after), predicted_finish(&rails[1], taken));
    assert!((victim_finish - thief_finish).abs() <= 0.01 * victim_finish, "{victim_finish} vs {thief_finish}");

    // A thief that is itself busy for longer than the victim takes nothing, nor does a rail
    // that is down, nor is a remainder under BRAID_SPLIT_MIN split...
    let busy_thief = [victim, RailView { backlog_bytes: 4 << 20, ..idle(&slow) }];
    assert_eq!(hetero.takeover(1, 0, 384 << 10, &busy_thief), 0);
    let down = [victim, RailView { up: false, ..idle(&slow) }];
    assert_eq!(hetero.takeover(1, 0, 384 << 10, &down), 0);
    let tiny = [RailView { backlog_bytes: 8 << 10, ..victim }, idle(&slow)];
    assert_eq!(hetero.takeover(1, 0, 8 << 10, &tiny), 0);
    // ... unless it is all the victim has left and the thief would finish it first: a victim
    // whose socket is full (a stalled path) would otherwise hold its last bytes, and the message.
    let full = [RailView { backlog_bytes: 1 << 20, ..victim }, idle(&slow)];
    assert_eq!(hetero.takeover(1, 0, (8 << 10) + 3, &full), (8 << 10) + 3);
}

#[test]
fn hetero_sends_small_frames_around_a_standing_queue_only_when_it_costs_more_than_the_slower_rail() {
    let fast = Profile::from_model(20_000.0, 2.0 * GBIT, 1 << 24);
    let slow = Profile::from_model(25_000.0, GBIT, 1 << 24);
    let mut hetero = build(StrategyKind::Hetero, SplitSettings::default());
    assert_eq!(hetero.eager_rail(64, &[idle(&fast), idle(&slow)]), 0, "no queue: the faster rail");
    let queued = |delay_ns: f64| [RailView { standing_delay_ns: delay_ns, ..idle(&fast) }, idle(&slow)];
    assert_eq!(hetero.eager_rail(64, &queued(2_000.0)), 0, "a queue shorter than the latencies' difference");
    assert_eq!(hetero.eager_rail(64, &queued(700_000.0)), 1, "a queue of 0.7 ms");
    // The load-blind strategies keep the fastest rail by profile.
    for kind in [StrategyKind::Single, StrategyKind::Weighted] {
        assert_eq!(build(kind, SplitSettings::default()).eager_rail(64, &queued(700_000.0)), 0, "{kind:?}");
    }
}
