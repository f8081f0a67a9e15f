//! `BRAID_DEBUG` lines. Each carries the rank's own wall clock: the lines reach `braid run`
//! through a pipe in batches, so a time taken there cannot place them within a transfer, and a
//! wall clock (not a monotonic one) lines them up with other tools' records (`ss` samples,
//! benchmarks' own start times) on the same machine.

use std::fmt::{self, Write as _};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// `debug_line!(rank, "format", args...)`: prints one stamped `BRAID_DEBUG` line (see [`line`]).
macro_rules! debug_line {
    ($rank:expr, $($message:tt)*) => {
        $crate::debug::print($rank, format_args!($($message)*))
    };
}

#[cold]
pub(crate) fn print(rank: u32, message: fmt::Arguments<'_>) {
    eprintln!("{}", line(rank, SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default(), message));
}

/// `braid: rank R [SECONDS]: MESSAGE`, SECONDS since the epoch to the microsecond.
fn line(rank: u32, since_epoch: Duration, message: fmt::Arguments<'_>) -> String {
    format!("braid: rank {rank} [{}.{:06}]: {message}", since_epoch.as_secs(), since_epoch.subsec_micros())
}

/// Rails chunks received since the last rails receive completed, per rail: bytes and when the
/// last came. Kept only with `BRAID_DEBUG`, so that a completed receive can say which rail
/// brought its end late.
#[derive(Default)]
pub(crate) struct RailArrivals {
    rails: Vec<(u64, Option<Instant>)>,
}

impl RailArrivals {
    #[cold]
    pub(crate) fn note(&mut self, rail: usize, bytes: usize) {
        if self.rails.len() <= rail {
            self.rails.resize(rail + 1, (0, None));
        }
        self.rails[rail].0 += bytes as u64;
        self.rails[rail].1 = Some(Instant::now());
    }

    /// `rail R B bytes, last T ms ago` for each rail that brought any, and forgets them.
    #[cold]
    pub(crate) fn take_summary(&mut self) -> String {
        let now = Instant::now();
        let mut summary = String::new();
        for (rail, (bytes, last)) in self.rails.iter().enumerate() {
            if let Some(last) = last {
                let separator = if summary.is_empty() { "" } else { ", " };
                let _ = write!(summary, "{separator}rail {rail} {bytes} bytes, last {:.3} ms ago", now.duration_since(*last).as_secs_f64() * 1e3);
            }
        }
        self.rails.clear();
        summary
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_names_its_rank_and_its_time_to_the_microsecond() {
        let at = Duration::new(1_764_331_200, 42_999);
        assert_eq!(line(3, at, format_args!("{} bytes", 8)), "braid: rank 3 [1764331200.000042]: 8 bytes");
        assert_eq!(line(0, Duration::from_millis(1500), format_args!("x")), "braid: rank 0 [1.500000]: x");
    }

    #[test]
    fn arrivals_are_summed_per_rail_and_forgotten_once_summarised() {
        let mut arrivals = RailArrivals::default();
        arrivals.note(2, 100);
        arrivals.note(0, 10);
        arrivals.note(2, 5);
        let summary = arrivals.take_summary();
        assert!(summary.starts_with("rail 0 10 bytes, last ") && summary.contains(", rail 2 105 bytes, last "), "{summary}");
        assert!(!summary.contains("rail 1"), "{summary}");
        assert_eq!(arrivals.take_summary(), "");
    }
}
