//! What a message costs beyond its link when the ranks outnumber the CPUs. Then the wait policy
//! makes a waiting rank sleep (on its doorbell, or on the rails'), so each message that a rank
//! waits for also pays for waking it: the sender's futex wake and the scheduler putting the
//! sleeper back on a CPU. The link profiles are sampled by ranks that spin, so they leave this
//! out. It is measured once at start-up, as a futex ping-pong between two threads of this
//! process, each sleeping until the other wakes it: the system calls and scheduler path that a
//! rank's doorbell takes, on this machine under its load at that moment.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use braid_sys::futex;

/// Round trips timed, after `WARM_UP` untimed ones.
const ROUND_TRIPS: usize = 21;
const WARM_UP: usize = 3;
/// Longer than any wake-up: a partner that does not answer within it ends the measurement.
const PATIENCE: Duration = Duration::from_millis(200);
/// Tells the partner thread to end (odd, like a request, so it is seen as one).
const STOP: u32 = u32::MAX;

/// The median time, in nanoseconds, from waking a sleeping thread to its answer (half a round
/// trip), or `None` if no partner thread could be started or it stopped answering.
pub(crate) fn measure() -> Option<f64> {
    let word = Arc::new(AtomicU32::new(0));
    let partner = {
        let word = word.clone();
        std::thread::Builder::new().name("braid-wake-probe".into()).spawn(move || answer(&word)).ok()?
    };
    let mut trips = Vec::with_capacity(ROUND_TRIPS);
    let mut answered = true;
    for trip in 0..(WARM_UP + ROUND_TRIPS) as u32 {
        let request = 2 * trip + 1;
        let start = Instant::now();
        word.store(request, Ordering::Release);
        futex::wake(&word, 1);
        while word.load(Ordering::Acquire) == request {
            if start.elapsed() > PATIENCE {
                answered = false;
                break;
            }
            let _ = futex::wait(&word, request, Some(PATIENCE));
        }
        if !answered {
            break;
        }
        if trip as usize >= WARM_UP {
            trips.push(start.elapsed().as_nanos() as f64);
        }
    }
    word.store(STOP, Ordering::Release);
    futex::wake(&word, 1);
    let _ = partner.join();
    if !answered {
        return None;
    }
    trips.sort_by(f64::total_cmp);
    Some(trips[trips.len() / 2] / 2.0)
}

/// The partner: sleeps until the word holds an odd request, answers it with the next (even)
/// value and a wake, until told to stop.
fn answer(word: &AtomicU32) {
    let mut answered = 0;
    loop {
        let value = word.load(Ordering::Acquire);
        if value == STOP {
            return;
        }
        if value == answered {
            let _ = futex::wait(word, value, Some(PATIENCE));
            continue;
        }
        answered = value.wrapping_add(1);
        word.store(answered, Ordering::Release);
        futex::wake(word, 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wake_up_takes_a_positive_time_well_under_the_patience() {
        let nanos = measure().expect("a partner thread answers");
        assert!(nanos > 0.0 && nanos < PATIENCE.as_nanos() as f64, "{nanos}");
    }
}
