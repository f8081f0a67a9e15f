//! Aggregation, the derived rendezvous threshold and the settings of the multirail strategies.

use braid_config::{Config, StrategyKind};
use braid_strategy::multirail::{
    build, rendezvous_threshold, Aggregator, Batch, Decision, RailView, SplitSettings, RENDEZVOUS_THRESHOLD_MAX,
    RENDEZVOUS_THRESHOLD_MIN,
};
use braid_transport::Profile;

const GBIT: f64 = 1e9 / 8.0;

fn idle(profile: &Profile) -> RailView<'_> {
    RailView { profile, backlog_bytes: 0, rate_factor: 1.0, up: true }
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
    assert_eq!(settings, SplitSettings { split_min: 4096, rate_smoothing: 0.5, aggregate_max: 8192 });
    let mut aggregator = settings.aggregator();
    assert_eq!(aggregator.push(8192, false), Decision::SendAlone);
    assert_eq!(settings.rate_estimator().factor(), 1.0);
    assert_eq!(build(StrategyKind::Iso, settings).name(), "iso");
    assert_eq!(build(config.strategy, settings).name(), "hetero", "hetero is the default");
}
