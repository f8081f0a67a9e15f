//! The five strategies of BRAID_STRATEGY.

use super::timing::{argmin_up, capacity_by, common_finish, fastest_rail, predicted_finish, soonest_rail, split_finish, time_until_idle, transfer_time, usable_factor};
use super::{Chunk, MultirailStrategy, RailView};

/// Chunk boundaries fall on multiples of this many bytes, so that chunks start word-aligned.
const WORD_GRANULE: usize = 8;
/// When every chunk is at least [`PAGE_GRANULE_MIN_CHUNK`] long, boundaries fall on pages
/// instead: a page of rounding then moves a chunk's finish by under 0.4%.
const PAGE_GRANULE: usize = 4096;
const PAGE_GRANULE_MIN_CHUNK: usize = 1 << 20;

/// Everything on the rail whose profile is fastest for that size, eager and rendezvous alike.
pub(crate) struct Single;

/// Whole messages to whichever rail delivers them soonest, counting what it still has queued.
pub(crate) struct Greedy;

/// Equal shares over the up rails (as many as keep each share at least `split_min`, fastest
/// first), ignoring load.
pub(crate) struct Iso {
    pub(crate) split_min: usize,
}

/// Shares proportional to each up rail's large-message bandwidth, ignoring load; a rail whose
/// share would be under `split_min` is left out.
pub(crate) struct Weighted {
    pub(crate) split_min: usize,
}

/// Predicted-time split (Brunet, Trahay and Denis 2008): chunks sized so that every chosen rail finishes together,
/// counting when each rail frees up and how fast it really drains.
///
/// The common finish time T is found by dichotomy on T itself (not on a ratio; the bracket is
/// narrowed by false position), which serves any number of rails: each rail gets the largest
/// chunk it can finish by T (inverse prediction), and T is the smallest time at which the chunks
/// add up to the message. A busy rail whose backlog outlasts T gets nothing. Then, while the
/// smallest chunk is under `split_min`, that rail is dropped and T found again for the rest.
/// The result is compared with the best single rail, which wins ties, so `hetero` is never
/// predicted slower than `greedy`.
///
/// Predictions go wrong when other traffic comes and goes, so the split is only a plan: the
/// engine hands each rail `queue_horizon_ns` worth of it at a time, and a rail that runs out
/// takes over the end of a slower rail's remainder ([`MultirailStrategy::takeover`]), again so
/// that both finish together.
pub(crate) struct Hetero {
    pub(crate) split_min: usize,
    pub(crate) queue_horizon_ns: Option<f64>,
}

/// When no rail is up there is no good answer; rail 0 is named so that the engine's send to it
/// reports the failure.
fn or_first(rail: Option<usize>) -> usize {
    rail.unwrap_or(0)
}

fn whole(len: usize, rail: usize, out: &mut Vec<Chunk>) {
    out.push(Chunk { rail, offset: 0, len });
}

/// A strategy that never splits: every message, eager or not, goes whole to the rail `$pick`
/// names.
macro_rules! whole_message_strategy {
    ($strategy:ty, $name:literal, $pick:path) => {
        impl MultirailStrategy for $strategy {
            fn name(&self) -> &'static str {
                $name
            }

            fn eager_rail(&mut self, len: usize, rails: &[RailView<'_>]) -> usize {
                or_first($pick(len, rails))
            }

            fn split(&mut self, len: usize, rails: &[RailView<'_>], out: &mut Vec<Chunk>) {
                whole(len, self.eager_rail(len, rails), out);
            }
        }
    };
}

whole_message_strategy!(Single, "single", fastest_rail);
whole_message_strategy!(Greedy, "greedy", soonest_rail);

impl MultirailStrategy for Iso {
    fn name(&self) -> &'static str {
        "iso"
    }

    fn eager_rail(&mut self, len: usize, rails: &[RailView<'_>]) -> usize {
        or_first(fastest_rail(len, rails))
    }

    fn split(&mut self, len: usize, rails: &[RailView<'_>], out: &mut Vec<Chunk>) {
        let Some(start) = begin_split(len, rails, out) else { return };
        // Fastest first, so that the rails left out are the slow ones.
        out[start..].sort_unstable_by(|a, b| {
            let bandwidth = |chunk: &Chunk| rails[chunk.rail].profile.bandwidth();
            bandwidth(b).total_cmp(&bandwidth(a)).then(a.rail.cmp(&b.rail))
        });
        let wanted = (len / self.split_min.max(1)).clamp(1, out.len() - start);
        out.truncate(start + wanted);
        out[start..].sort_unstable_by_key(|chunk| chunk.rail);
        apportion(len, &mut out[start..], |_| 1.0);
        drop_empty(start, out);
    }
}

impl MultirailStrategy for Weighted {
    fn name(&self) -> &'static str {
        "weighted"
    }

    fn eager_rail(&mut self, len: usize, rails: &[RailView<'_>]) -> usize {
        or_first(fastest_rail(len, rails))
    }

    fn split(&mut self, len: usize, rails: &[RailView<'_>], out: &mut Vec<Chunk>) {
        let Some(start) = begin_split(len, rails, out) else { return };
        let unbounded = out[start..].iter().any(|chunk| rails[chunk.rail].profile.bandwidth().is_infinite());
        let weight = |rail: usize| {
            let bandwidth = rails[rail].profile.bandwidth();
            match (unbounded, bandwidth.is_infinite()) {
                (false, _) => bandwidth,
                (true, infinite) => f64::from(u8::from(infinite)),
            }
        };
        loop {
            apportion(len, &mut out[start..], weight);
            if !drop_smallest_under(self.split_min, start, out) {
                break;
            }
        }
        drop_empty(start, out);
    }
}

impl MultirailStrategy for Hetero {
    fn name(&self) -> &'static str {
        "hetero"
    }

    fn eager_rail(&mut self, len: usize, rails: &[RailView<'_>]) -> usize {
        or_first(argmin_up(rails, |rail| predicted_finish(rail, len) + rail.standing_delay_ns))
    }

    fn split(&mut self, len: usize, rails: &[RailView<'_>], out: &mut Vec<Chunk>) {
        let Some(best) = soonest_rail(len, rails) else { return whole(len, or_first(None), out) };
        if len < self.split_min.saturating_mul(2) {
            // Any split would leave a chunk under split_min.
            return whole(len, best, out);
        }
        let start = push_up_rails(rails, out);
        loop {
            let candidates = out[start..].iter().map(|chunk| chunk.rail);
            let Some(finish) = common_finish(len, rails, candidates) else {
                out.truncate(start);
                break;
            };
            apportion(len, &mut out[start..], |rail| capacity_by(&rails[rail], finish, len));
            drop_empty(start, out);
            if !drop_smallest_under(self.split_min, start, out) {
                break;
            }
        }
        let single = predicted_finish(&rails[best], len);
        if out.len() - start < 2 || split_finish(&out[start..], rails) >= single {
            out.truncate(start);
            whole(len, best, out);
        }
    }

    fn aggregates_eager(&self) -> bool {
        true
    }

    fn queue_horizon_ns(&self) -> Option<f64> {
        self.queue_horizon_ns
    }

    /// The victim's backlog (which counts the `unposted` bytes) drains at its corrected rate;
    /// the thief starts after its own backlog and latency. With r_v, r_t those rates, B_v the
    /// victim's backlog and T_t the thief's start, moving x bytes ends both together when
    /// (B_v - x) / r_v = T_t + x / r_t.
    ///
    /// A move under BRAID_SPLIT_MIN is not worth a chunk of its own, except when it is the whole
    /// remainder: a victim that cannot post its last bytes (a stalled rail, its socket full)
    /// would otherwise hold them, and the message, however small they are.
    fn takeover(&mut self, thief: usize, victim: usize, unposted: usize, rails: &[RailView<'_>]) -> usize {
        let (Some(thief_view), Some(victim_view)) = (rails.get(thief), rails.get(victim)) else { return 0 };
        if !thief_view.up || unposted == 0 {
            return 0;
        }
        let rate = |view: &RailView<'_>| view.profile.bandwidth() * usable_factor(view.rate_factor) / 1e9;
        let (victim_rate, thief_rate) = (rate(victim_view), rate(thief_view));
        if !(victim_rate > 0.0 && thief_rate > 0.0) {
            return 0;
        }
        let victim_finish = time_until_idle(victim_view);
        let thief_start = time_until_idle(thief_view) + transfer_time(thief_view, 0);
        let moved = (victim_finish - thief_start) / (1.0 / victim_rate + 1.0 / thief_rate);
        if moved >= unposted as f64 {
            return unposted;
        }
        if moved.is_nan() || moved < self.split_min as f64 {
            return 0;
        }
        let moved = moved as usize;
        moved - moved % WORD_GRANULE
    }
}

/// The common start of the load-blind splits (`iso`, `weighted`, whose eager rail is the
/// fastest): an empty message or one with no rail up goes whole to one rail and `None` is
/// returned; otherwise the up rails are pushed as candidates and where they start is returned.
fn begin_split(len: usize, rails: &[RailView<'_>], out: &mut Vec<Chunk>) -> Option<usize> {
    if len == 0 {
        whole(len, or_first(fastest_rail(len, rails)), out);
        return None;
    }
    let start = push_up_rails(rails, out);
    if start == out.len() {
        whole(len, or_first(None), out);
        return None;
    }
    Some(start)
}

/// Appends a zero-length chunk for every up rail (the candidates); returns where they start.
fn push_up_rails(rails: &[RailView<'_>], out: &mut Vec<Chunk>) -> usize {
    let start = out.len();
    out.extend(rails.iter().enumerate().filter(|(_, rail)| rail.up).map(|(rail, _)| Chunk { rail, offset: 0, len: 0 }));
    start
}

/// Gives each candidate a share of 0..len proportional to `weight(rail)`. Boundaries are the
/// rounded running sums of the shares, the last one exactly `len`, so the chunks cover 0..len
/// in order with no gap or overlap whatever the rounding; a share may come out empty.
fn apportion(len: usize, candidates: &mut [Chunk], weight: impl Fn(usize) -> f64) {
    let total: f64 = candidates.iter().map(|chunk| weight(chunk.rail)).sum();
    let smallest = candidates.iter().map(|chunk| weight(chunk.rail)).fold(f64::INFINITY, f64::min);
    let granule = if total > 0.0 && smallest / total * len as f64 >= PAGE_GRANULE_MIN_CHUNK as f64 { PAGE_GRANULE } else { WORD_GRANULE };
    let last = candidates.len().saturating_sub(1);
    let mut running = 0.0;
    let mut boundary = 0;
    for (index, chunk) in candidates.iter_mut().enumerate() {
        running += weight(chunk.rail);
        let end = if index == last {
            len
        } else if total <= 0.0 {
            boundary
        } else {
            let exact = running / total * len as f64;
            let rounded = ((exact / granule as f64).round() as usize).saturating_mul(granule);
            rounded.clamp(boundary, len)
        };
        *chunk = Chunk { rail: chunk.rail, offset: boundary, len: end - boundary };
        boundary = end;
    }
}

/// Removes the empty chunks after `start` (the others keep covering 0..len).
fn drop_empty(start: usize, out: &mut Vec<Chunk>) {
    let mut kept = start;
    for index in start..out.len() {
        if out[index].len > 0 {
            out[kept] = out[index];
            kept += 1;
        }
    }
    out.truncate(kept);
}

/// If more than one candidate remains and the smallest chunk is under `split_min`, removes
/// that rail from the candidates (to be apportioned again) and says so.
fn drop_smallest_under(split_min: usize, start: usize, out: &mut Vec<Chunk>) -> bool {
    if out.len() - start < 2 {
        return false;
    }
    let Some(smallest) = (start..out.len()).min_by_key(|&index| out[index].len) else { return false };
    if out[smallest].len >= split_min {
        return false;
    }
    out.remove(smallest);
    true
}
