//! Multirail strategies driven on a simulated network: rails with a true rate, a latency and
//! background traffic, profiles sampled from them, and the strategies' decisions applied.

use braid_config::StrategyKind;
use braid_lane::Profile;
use braid_strategy::multirail::{build, predicted_finish, split_finish, Chunk, MultirailStrategy, RailView, RateEstimator, SplitSettings};

const GBIT: f64 = 1e9 / 8.0;
const MIB: usize = 1 << 20;
const KIB: usize = 1 << 10;
const LARGEST_SAMPLE: usize = 64 * MIB;
const ALL_KINDS: [StrategyKind; 5] = [StrategyKind::Single, StrategyKind::Greedy, StrategyKind::Iso, StrategyKind::Weighted, StrategyKind::Hetero];

/// One simulated rail. Our own bytes queue on it (the backlog the strategy sees); background
/// traffic takes `background_share` of its rate without showing in our backlog.
struct SimRail {
    rate: f64,
    latency_ns: f64,
    background_share: f64,
    backlog_bytes: f64,
    profile: Profile,
    estimator: RateEstimator,
    up: bool,
}

impl SimRail {
    fn new(rate: f64, latency_ns: f64) -> SimRail {
        SimRail {
            rate,
            latency_ns,
            background_share: 0.0,
            backlog_bytes: 0.0,
            profile: Profile::from_model(latency_ns, rate, LARGEST_SAMPLE),
            estimator: RateEstimator::new(SplitSettings::default().rate_smoothing),
            up: true,
        }
    }

    fn drain_rate(&self) -> f64 {
        self.rate * (1.0 - self.background_share)
    }
}

struct Network {
    rails: Vec<SimRail>,
    corrects_rates: bool,
}

impl Network {
    fn new(rails: Vec<SimRail>) -> Network {
        Network { rails, corrects_rates: false }
    }

    fn views(&self) -> Vec<RailView<'_>> {
        self.rails
            .iter()
            .map(|rail| RailView {
                profile: &rail.profile,
                backlog_bytes: rail.backlog_bytes as u64,
                rate_factor: if self.corrects_rates { rail.estimator.factor() } else { 1.0 },
                up: rail.up,
                standing_delay_ns: 0.0,
            })
            .collect()
    }

    fn split(&self, strategy: &mut dyn MultirailStrategy, len: usize) -> Vec<Chunk> {
        let mut chunks = Vec::new();
        strategy.split(len, &self.views(), &mut chunks);
        chunks
    }

    /// Hands the chunks to their rails now; returns when the last byte arrives (ns from now).
    /// Each chunk's drain is reported to its rail's estimator, as the engine does.
    fn send(&mut self, chunks: &[Chunk]) -> f64 {
        let mut arrival: f64 = 0.0;
        for chunk in chunks {
            let rail = &mut self.rails[chunk.rail];
            assert!(rail.up, "chunk on a rail that is down");
            let queued_ns = rail.backlog_bytes * 1e9 / rail.drain_rate();
            let drain_ns = chunk.len as f64 * 1e9 / rail.drain_rate();
            arrival = arrival.max(queued_ns + drain_ns + rail.latency_ns);
            rail.backlog_bytes += chunk.len as f64;
            let profile = rail.profile.clone();
            rail.estimator.observe(chunk.len as u64, drain_ns.ceil() as u64, &profile);
        }
        arrival
    }

    fn advance(&mut self, nanos: f64) {
        for rail in &mut self.rails {
            rail.backlog_bytes = (rail.backlog_bytes - rail.drain_rate() * nanos / 1e9).max(0.0);
        }
    }

    /// Time for `len` bytes on one rail alone, from now.
    fn alone(&self, rail: usize, len: usize) -> f64 {
        let rail = &self.rails[rail];
        (rail.backlog_bytes + len as f64) * 1e9 / rail.drain_rate() + rail.latency_ns
    }

    fn sum_of_rates(&self) -> f64 {
        self.rails.iter().filter(|rail| rail.up).map(SimRail::drain_rate).sum()
    }
}

fn two_rails() -> Network {
    Network::new(vec![SimRail::new(2.0 * GBIT, 40_000.0), SimRail::new(GBIT, 60_000.0)])
}

fn three_rails() -> Network {
    Network::new(vec![SimRail::new(2.0 * GBIT, 40_000.0), SimRail::new(GBIT, 60_000.0), SimRail::new(0.25 * GBIT, 50_000.0)])
}

fn strategy(kind: StrategyKind) -> Box<dyn MultirailStrategy> {
    build(kind, SplitSettings::default())
}

fn bytes_per_rail(chunks: &[Chunk], rails: usize) -> Vec<usize> {
    let mut bytes = vec![0; rails];
    for chunk in chunks {
        bytes[chunk.rail] += chunk.len;
    }
    bytes
}

fn assert_share(chunks: &[Chunk], len: usize, rail: usize, expected: f64, tolerance: f64) {
    let share = chunks.iter().filter(|chunk| chunk.rail == rail).map(|chunk| chunk.len).sum::<usize>() as f64 / len as f64;
    assert!((share - expected).abs() <= tolerance * expected, "rail {rail}: share {share}, expected {expected}: {chunks:?}");
}

#[test]
fn two_to_one_gigabit_rails_split_two_to_one() {
    let network = two_rails();
    let mut hetero = strategy(StrategyKind::Hetero);
    for len in [4 * MIB, 16 * MIB, 64 * MIB + 12_345] {
        let chunks = network.split(hetero.as_mut(), len);
        assert_eq!(chunks.len(), 2, "{chunks:?}");
        assert_share(&chunks, len, 0, 2.0 / 3.0, 0.02);
        assert_share(&chunks, len, 1, 1.0 / 3.0, 0.02);
    }
}

#[test]
fn three_rails_split_eight_four_one_and_drop_the_slow_one_for_medium_messages() {
    let network = three_rails();
    let mut hetero = strategy(StrategyKind::Hetero);
    let len = 16 * MIB;
    let chunks = network.split(hetero.as_mut(), len);
    assert_eq!(chunks.len(), 3);
    for (rail, expected) in [(0, 8.0 / 13.0), (1, 4.0 / 13.0), (2, 1.0 / 13.0)] {
        assert_share(&chunks, len, rail, expected, 0.02);
    }
    // 128 KiB: the 250 Mbit/s rail's share would be under BRAID_SPLIT_MIN.
    let chunks = network.split(hetero.as_mut(), 128 * KIB);
    assert_eq!(chunks.iter().map(|chunk| chunk.rail).collect::<Vec<_>>(), vec![0, 1]);
    // 20 KiB: a split would leave the 1 Gbit/s rail under BRAID_SPLIT_MIN too.
    let chunks = network.split(hetero.as_mut(), 20 * KIB);
    assert_eq!(chunks, vec![Chunk { rail: 0, offset: 0, len: 20 * KIB }]);
}

#[test]
fn a_busy_rail_is_skipped_for_a_small_message_but_used_for_a_huge_one() {
    let mut network = two_rails();
    network.rails[0].backlog_bytes = (4 * MIB) as f64; // the 2 Gbit/s rail is busy for ~17 ms
    let mut hetero = strategy(StrategyKind::Hetero);
    let views = network.views();
    assert_eq!(hetero.eager_rail(64, &views), 1);

    let small = network.split(hetero.as_mut(), 256 * KIB);
    assert_eq!(small, vec![Chunk { rail: 1, offset: 0, len: 256 * KIB }]);

    let len = 64 * MIB;
    let huge = network.split(hetero.as_mut(), len);
    assert_eq!(huge.len(), 2, "{huge:?}");
    let on_busy = bytes_per_rail(&huge, 2)[0] as f64 / len as f64;
    assert!(on_busy > 0.5 && on_busy < 2.0 / 3.0, "busy rail share {on_busy}");
    let time = network.send(&huge);
    assert!(time < network.alone(0, len).min(network.alone(1, len)));
}

#[test]
fn dichotomy_makes_chosen_rails_finish_together() {
    let mut seed = 0x5eed_1234_u64;
    let mut hetero = strategy(StrategyKind::Hetero);
    let mut checked = 0;
    for _ in 0..300 {
        let mut network = random_network(&mut seed);
        for rail in &mut network.rails {
            rail.up = true;
        }
        network.corrects_rates = true;
        let len = 64 * KIB + (next(&mut seed) % (32 * MIB as u64)) as usize;
        let views = network.views();
        let mut chunks = Vec::new();
        hetero.split(len, &views, &mut chunks);
        let finishes: Vec<f64> = chunks.iter().map(|chunk| predicted_finish(&views[chunk.rail], chunk.len)).collect();
        let latest = finishes.iter().copied().fold(0.0, f64::max);
        let earliest = finishes.iter().copied().fold(f64::INFINITY, f64::min);
        assert!(latest - earliest <= (0.01 * latest).max(1_000.0), "{len}: {chunks:?} finish {finishes:?}");
        // Never predicted slower than the best single rail.
        let best_single = (0..views.len()).map(|rail| predicted_finish(&views[rail], len)).fold(f64::INFINITY, f64::min);
        assert!(split_finish(&chunks, &views) <= best_single);
        checked += usize::from(chunks.len() > 1);
    }
    assert!(checked > 100, "only {checked} splits used several rails");
}

#[test]
fn hetero_is_never_slower_than_the_best_single_rail_and_near_the_sum_when_large() {
    for network in [two_rails(), three_rails()] {
        let mut hetero = strategy(StrategyKind::Hetero);
        let mut len = 8;
        while len <= 16 * MIB {
            for size in [len, len + len / 3 + 8] {
                let mut copy = Network::new(Vec::new());
                copy.rails = network.rails.iter().map(|rail| SimRail::new(rail.rate, rail.latency_ns)).collect();
                let chunks = copy.split(hetero.as_mut(), size);
                let time = copy.send(&chunks);
                let best_single = (0..network.rails.len()).map(|rail| network.alone(rail, size)).fold(f64::INFINITY, f64::min);
                assert!(time <= best_single * (1.0 + 1e-9), "{size}: {time} > {best_single}: {chunks:?}");
                if size >= MIB {
                    let efficiency = size as f64 * 1e9 / time / network.sum_of_rates();
                    assert!(efficiency >= 0.95, "{size}: efficiency {efficiency}");
                }
            }
            len *= 2;
        }
    }
}

#[test]
fn rate_correction_moves_the_split_away_from_a_slowed_rail() {
    let mut network = two_rails();
    network.corrects_rates = true;
    network.rails[0].background_share = 0.5; // another flow takes half of the 2 Gbit/s rail
    let mut hetero = strategy(StrategyKind::Hetero);
    let len = 4 * MIB;
    let mut times = Vec::new();
    let mut last = Vec::new();
    for _ in 0..20 {
        last = network.split(hetero.as_mut(), len);
        let time = network.send(&last);
        times.push(time);
        network.advance(time);
    }
    assert!((network.rails[0].estimator.factor() - 0.5).abs() < 0.01, "{}", network.rails[0].estimator.factor());
    assert_share(&last, len, 0, 0.5, 0.02);
    assert!(times[19] < 0.8 * times[0], "{times:?}");
    // Ideal with both rails at 1 Gbit/s: half on each.
    let ideal = (len / 2) as f64 * 1e9 / GBIT + 60_000.0;
    assert!(times[19] <= ideal * 1.02, "{} vs {ideal}", times[19]);
}

#[test]
fn with_one_rail_loaded_hetero_beats_weighted_on_a_stream_of_one_mebibyte_transfers() {
    let run = |kind: StrategyKind| {
        let mut network = two_rails();
        network.corrects_rates = true;
        network.rails[0].background_share = 0.75;
        let mut strategy = strategy(kind);
        let mut transfer = || {
            let chunks = network.split(strategy.as_mut(), MIB);
            let time = network.send(&chunks);
            network.advance(time);
            time
        };
        // Warm-up, as the benchmark does: the correction needs a few drains to learn the load.
        let warm_up: Vec<f64> = (0..20).map(|_| transfer()).collect();
        let mut times: Vec<f64> = (0..100).map(|_| transfer()).collect();
        assert!(warm_up.iter().all(|&time| time <= warm_up[0] * (1.0 + 1e-9)), "{kind:?} got slower while learning");
        times.sort_by(f64::total_cmp);
        times[times.len() * 99 / 100]
    };
    let (hetero, weighted) = (run(StrategyKind::Hetero), run(StrategyKind::Weighted));
    assert!(hetero <= 0.8 * weighted, "p99 hetero {hetero} weighted {weighted}");
}

#[test]
fn baselines_do_what_they_say() {
    let mut network = two_rails();
    network.rails[0].backlog_bytes = (8 * MIB) as f64;
    let views = network.views();
    let mut chunks = Vec::new();

    let mut single = strategy(StrategyKind::Single);
    assert_eq!(single.name(), "single");
    assert_eq!(single.eager_rail(100, &views), 0, "single ignores load");
    single.split(MIB, &views, &mut chunks);
    assert_eq!(chunks, vec![Chunk { rail: 0, offset: 0, len: MIB }]);

    let mut greedy = strategy(StrategyKind::Greedy);
    assert_eq!(greedy.name(), "greedy");
    assert_eq!(greedy.eager_rail(100, &views), 1, "greedy takes the rail that frees up first");
    chunks.clear();
    greedy.split(MIB, &views, &mut chunks);
    assert_eq!(chunks, vec![Chunk { rail: 1, offset: 0, len: MIB }]);
    chunks.clear();
    greedy.split(256 * MIB, &views, &mut chunks);
    assert_eq!(chunks, vec![Chunk { rail: 0, offset: 0, len: 256 * MIB }], "a huge message waits for the fast rail");

    let mut iso = strategy(StrategyKind::Iso);
    assert_eq!(iso.name(), "iso");
    chunks.clear();
    iso.split(MIB + 8, &views, &mut chunks);
    assert_eq!(chunks, vec![Chunk { rail: 0, offset: 0, len: MIB / 2 + 8 }, Chunk { rail: 1, offset: MIB / 2 + 8, len: MIB / 2 }]);
    chunks.clear();
    iso.split(20 * KIB, &views, &mut chunks);
    assert_eq!(chunks, vec![Chunk { rail: 0, offset: 0, len: 20 * KIB }], "two shares would be under BRAID_SPLIT_MIN");
    let three = three_rails();
    chunks.clear();
    iso.split(48 * KIB, &three.views(), &mut chunks);
    assert_eq!(bytes_per_rail(&chunks, 3), vec![16 * KIB; 3]);
    chunks.clear();
    iso.split(40 * KIB, &three.views(), &mut chunks);
    assert_eq!(bytes_per_rail(&chunks, 3), vec![20 * KIB, 20 * KIB, 0], "the slowest rail is left out first");

    let mut weighted = strategy(StrategyKind::Weighted);
    assert_eq!(weighted.name(), "weighted");
    chunks.clear();
    weighted.split(3 * MIB, &views, &mut chunks);
    assert_eq!(bytes_per_rail(&chunks, 2), vec![2 * MIB, MIB], "weighted ignores the backlog");
    chunks.clear();
    weighted.split(16 * MIB, &three.views(), &mut chunks);
    assert_share(&chunks, 16 * MIB, 2, 1.0 / 13.0, 0.01);
    chunks.clear();
    weighted.split(64 * KIB, &three.views(), &mut chunks);
    assert_eq!(chunks.iter().map(|chunk| chunk.rail).collect::<Vec<_>>(), vec![0, 1]);
    assert_share(&chunks, 64 * KIB, 0, 2.0 / 3.0, 0.01);

    assert_eq!(strategy(StrategyKind::Hetero).name(), "hetero");
    assert!(strategy(StrategyKind::Hetero).aggregates_eager());
    assert!(!strategy(StrategyKind::Weighted).aggregates_eager());
}

#[test]
fn hetero_eager_rail_is_the_soonest_to_deliver() {
    let mut network = two_rails();
    let mut hetero = strategy(StrategyKind::Hetero);
    assert_eq!(hetero.eager_rail(8, &network.views()), 0, "lower latency");
    network.rails[0].backlog_bytes = 2048.0; // 8 us of queue: still ahead of the 60 us rail
    assert_eq!(hetero.eager_rail(8, &network.views()), 0);
    network.rails[0].backlog_bytes = 16.0 * KIB as f64; // 65 us of queue
    assert_eq!(hetero.eager_rail(8, &network.views()), 1);
    network.rails[1].up = false;
    assert_eq!(hetero.eager_rail(8, &network.views()), 0, "a rail that is down is never chosen");
}

#[test]
fn rails_that_are_down_carry_nothing() {
    let mut network = three_rails();
    network.rails[0].up = false;
    for kind in ALL_KINDS {
        let chunks = network.split(strategy(kind).as_mut(), 16 * MIB);
        assert!(chunks.iter().all(|chunk| chunk.rail != 0), "{kind:?}: {chunks:?}");
    }
}

#[test]
fn chunks_cover_the_payload_exactly_for_every_strategy() {
    let mut seed = 42_u64;
    let mut strategies: Vec<_> = ALL_KINDS.iter().map(|&kind| strategy(kind)).collect();
    let mut sizes: Vec<usize> = (0..=64).chain([KIB - 1, 16 * KIB, 16 * KIB + 1, MIB - 3, MIB, 64 * MIB + 1]).collect();
    sizes.extend((0..400).map(|_| (next(&mut seed) % (1 << (next(&mut seed) % 27))) as usize));
    for &len in &sizes {
        let network = random_network(&mut seed);
        let views = network.views();
        let any_up = views.iter().any(|rail| rail.up);
        for strategy in &mut strategies {
            let prefix = Chunk { rail: 99, offset: 7, len: 7 };
            let mut chunks = vec![prefix];
            strategy.split(len, &views, &mut chunks);
            assert_eq!(chunks[0], prefix, "split appends");
            let chunks = &chunks[1..];
            let name = strategy.name();
            assert!(!chunks.is_empty(), "{name} {len}");
            let mut covered = 0;
            for chunk in chunks {
                assert_eq!(chunk.offset, covered, "{name} {len}: {chunks:?}");
                assert!(chunk.len > 0 || len == 0, "{name} {len}: empty chunk in {chunks:?}");
                assert!(chunk.rail < views.len());
                assert!(!any_up || views[chunk.rail].up, "{name} {len}: rail down in {chunks:?}");
                covered += chunk.len;
            }
            assert_eq!(covered, len, "{name}: {chunks:?}");
            assert!(!any_up || views[strategy.eager_rail(len, &views)].up);
        }
    }
}

fn next(seed: &mut u64) -> u64 {
    *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    *seed >> 33
}

/// 1 to 4 rails of 100 Mbit/s to 10 Gbit/s, 5 to 200 us, random backlogs, rate factors, and
/// sometimes a rail down.
fn random_network(seed: &mut u64) -> Network {
    let count = 1 + (next(seed) % 4) as usize;
    let rails = (0..count)
        .map(|_| {
            let rate = GBIT * (0.1 + (next(seed) % 1000) as f64 / 100.0);
            let latency = 5_000.0 + (next(seed) % 195_000) as f64;
            let mut rail = SimRail::new(rate, latency);
            if next(seed).is_multiple_of(3) {
                rail.backlog_bytes = (next(seed) % (8 * MIB as u64)) as f64;
            }
            if next(seed).is_multiple_of(3) {
                let drain_ns = 1 + next(seed) % 20_000_000;
                let profile = rail.profile.clone();
                rail.estimator.observe(MIB as u64, drain_ns, &profile);
            }
            rail.up = !next(seed).is_multiple_of(6);
            rail
        })
        .collect();
    Network { rails, corrects_rates: true }
}
