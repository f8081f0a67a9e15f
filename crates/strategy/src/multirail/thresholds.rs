//! Thresholds derived from the profiles: where rendezvous starts to pay, and when handing chunk
//! submission to idle cores does (Brunet, Trahay and Denis 2008, equation 1).

use super::timing::{common_finish, predicted_finish, transfer_time};
use super::RailView;

/// Smallest rendezvous threshold returned: below a few pages a handshake costs more than any
/// split gains on every network the samples describe.
pub const RENDEZVOUS_THRESHOLD_MIN: usize = 4096;
/// Largest rendezvous threshold returned: eager copies of larger messages cost the receiver
/// more buffer than the saved round trip is worth, whatever the samples say.
pub const RENDEZVOUS_THRESHOLD_MAX: usize = 1 << 20;
/// The threshold is located to within this many bytes.
const THRESHOLD_RESOLUTION: usize = 8;

/// The smallest message size at which a rendezvous split over the up rails — one extra round
/// trip of handshake (2 x the fastest rail's predict(0)) plus the common finish time of the
/// chunks — is predicted to beat sending the message eagerly on the rail that delivers it
/// soonest; every frame carries `header_bytes`. Clamped to
/// [`RENDEZVOUS_THRESHOLD_MIN`]..=[`RENDEZVOUS_THRESHOLD_MAX`] (the maximum when it never pays,
/// e.g. on one rail). The rails are taken as given: pass them idle for a static threshold.
pub fn rendezvous_threshold(rails: &[RailView<'_>], header_bytes: usize) -> usize {
    let up = || rails.iter().enumerate().filter(|(_, rail)| rail.up).map(|(index, _)| index);
    let Some(latency) = up().map(|rail| transfer_time(&rails[rail], 0)).min_by(f64::total_cmp) else {
        return RENDEZVOUS_THRESHOLD_MAX;
    };
    let handshake = 2.0 * latency;
    let pays = |size: usize| {
        let framed = size.saturating_add(header_bytes);
        let eager = up().map(|rail| predicted_finish(&rails[rail], framed)).fold(f64::INFINITY, f64::min);
        common_finish(framed, rails, up()).is_some_and(|split| handshake + split < eager)
    };
    if pays(RENDEZVOUS_THRESHOLD_MIN) {
        return RENDEZVOUS_THRESHOLD_MIN;
    }
    let mut failing = RENDEZVOUS_THRESHOLD_MIN;
    let mut paying = loop {
        let next = failing * 2;
        if next > RENDEZVOUS_THRESHOLD_MAX {
            return RENDEZVOUS_THRESHOLD_MAX;
        }
        if pays(next) {
            break next;
        }
        failing = next;
    };
    while paying - failing > THRESHOLD_RESOLUTION {
        let middle = failing + (paying - failing) / 2;
        if pays(middle) {
            paying = middle;
        } else {
            failing = middle;
        }
    }
    paying
}

/// Whether submitting a split's chunks from idle cores beats submitting them all from the
/// calling core (Brunet, Trahay and Denis 2008, equation 1).
///
/// With n chunks of predicted transfer durations T_D,i (`chunk_times_ns`, from the profiles),
/// a per-chunk submission time c (`copy_time_ns`: the CPU copy or system call that hands one
/// chunk to its rail) and the offload cost T_O (`offload_cost_ns`):
///
/// - sequential, one core submitting the chunks one after another, longest transfer first
///   (T_D,(0) >= T_D,(1) >= ...):  T_seq = max_k ((k + 1) c + T_D,(k));
/// - offloaded, equation 1, each chunk submitted by its own idle core once the offload has
///   reached it:                     T_off = T_O + c + max_i T_D,i.
///
/// Offload pays exactly when T_off < T_seq. It never pays for a single chunk, and for equal
/// chunks it pays when T_O < (n - 1) c: when the submissions it overlaps cost more than it does.
pub fn offload_pays(chunk_times_ns: &[f64], offload_cost_ns: f64, copy_time_ns: f64) -> bool {
    let longest = chunk_times_ns.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if chunk_times_ns.len() < 2 {
        return false;
    }
    let offloaded = offload_cost_ns + copy_time_ns + longest;
    let sequential = chunk_times_ns
        .iter()
        .enumerate()
        .map(|(index, &time)| {
            let submitted_before = chunk_times_ns.iter().enumerate().filter(|&(other, &other_time)| other_time > time || (other_time == time && other < index)).count();
            (submitted_before + 1) as f64 * copy_time_ns + time
        })
        .fold(f64::NEG_INFINITY, f64::max);
    offloaded < sequential
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offload_never_pays_for_one_chunk_or_none() {
        assert!(!offload_pays(&[], 0.0, 1e6));
        assert!(!offload_pays(&[1e6], 0.0, 1e6));
    }

    #[test]
    fn offload_pays_when_it_costs_less_than_the_submissions_it_overlaps() {
        // Two equal chunks: pays iff T_O < c.
        assert!(offload_pays(&[10_000.0, 10_000.0], 2_999.0, 3_000.0));
        assert!(!offload_pays(&[10_000.0, 10_000.0], 3_000.0, 3_000.0));
        // Three equal chunks: pays iff T_O < 2c.
        assert!(offload_pays(&[10_000.0; 3], 5_999.0, 3_000.0));
        assert!(!offload_pays(&[10_000.0; 3], 6_000.0, 3_000.0));
        // The short chunk submitted second hides 2 us of its submission: pays iff T_O < c - 2 us.
        assert!(offload_pays(&[10_000.0, 8_000.0], 999.0, 3_000.0));
        assert!(!offload_pays(&[8_000.0, 10_000.0], 1_000.0, 3_000.0));
        // Tiny messages, the paper's 3 us offload cost and sub-microsecond copies: never.
        assert!(!offload_pays(&[4_000.0, 5_000.0], 3_000.0, 200.0));
    }
}
