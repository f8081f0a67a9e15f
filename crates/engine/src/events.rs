//! Events the engine records for tools (MPI_T events above it): a rail failed over, the unexpected
//! queue grew past a mark. Recorded with a timestamp on the engine's own monotonic clock, kept in
//! a bounded log that the layer above drains; what does not fit is counted as dropped.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Whether this process's engine holds events not taken yet: a process-wide flag, so that the
/// layer above can ask after every call with one relaxed load, without the engine at hand.
static PENDING: AtomicBool = AtomicBool::new(false);

/// Whether events wait to be taken ([`crate::Engine::take_events`]).
#[inline(always)]
pub fn pending() -> bool {
    PENDING.load(Ordering::Relaxed)
}

/// Marks events as waiting (or taken).
#[inline]
pub(crate) fn set_pending(pending: bool) {
    PENDING.store(pending, Ordering::Relaxed);
}

/// The most events the log keeps before it counts the newest as dropped.
pub const EVENT_LOG_CAPACITY: usize = 1024;

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// A rail stopped reaching `peer`; its traffic moved to the other rails.
    RailFailedOver { peer: u32, rail: u32 },
    /// The unexpected queue reached `level` messages (a growth mark).
    UnexpectedQueueGrew { level: u64 },
}

/// One event and when it happened, in nanoseconds of the engine's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    pub at_ns: u64,
    pub kind: EventKind,
}

/// The events not yet taken.
#[derive(Debug)]
pub struct EventLog {
    origin: Instant,
    entries: VecDeque<Event>,
    dropped: u64,
    capacity: usize,
}

impl EventLog {
    pub fn new(origin: Instant, capacity: usize) -> EventLog {
        EventLog { origin, entries: VecDeque::new(), dropped: 0, capacity }
    }

    /// Nanoseconds since the engine started, as events are stamped.
    pub fn now_ns(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    #[cold]
    pub fn record(&mut self, kind: EventKind) {
        let at_ns = self.now_ns();
        if self.entries.len() >= self.capacity {
            self.dropped += 1;
            return;
        }
        self.entries.push_back(Event { at_ns, kind });
    }

    /// The events in the order they happened, and how many were dropped since the last take.
    pub fn take(&mut self) -> (Vec<Event>, u64) {
        (self.entries.drain(..).collect(), std::mem::take(&mut self.dropped))
    }
}

/// When the unexpected queue's growth is reported: at `first` messages, then each time it doubles
/// past the last mark reported. A queue that drains and grows again reports the same marks again.
#[derive(Debug, Clone, Copy)]
pub struct GrowthMarks {
    first: u64,
    next: u64,
}

impl GrowthMarks {
    /// Marks from `first` (0: never).
    pub fn new(first: u64) -> GrowthMarks {
        GrowthMarks { first, next: first }
    }

    /// The queue holds `level` messages: the mark it reached, if it just reached one.
    #[inline]
    pub fn reached(&mut self, level: u64) -> Option<u64> {
        if self.first == 0 {
            return None;
        }
        if level < self.first {
            self.next = self.first;
            return None;
        }
        if level < self.next {
            return None;
        }
        let mark = self.next;
        self.next = self.next.saturating_mul(2);
        Some(mark)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_keeps_order_and_counts_what_it_could_not_hold() {
        let mut log = EventLog::new(Instant::now(), 2);
        assert_eq!(log.take(), (vec![], 0));
        log.record(EventKind::UnexpectedQueueGrew { level: 64 });
        log.record(EventKind::RailFailedOver { peer: 3, rail: 1 });
        log.record(EventKind::UnexpectedQueueGrew { level: 128 });
        let (events, dropped) = log.take();
        assert_eq!(events.iter().map(|event| event.kind).collect::<Vec<_>>(), [EventKind::UnexpectedQueueGrew { level: 64 }, EventKind::RailFailedOver { peer: 3, rail: 1 }]);
        assert!(events[0].at_ns <= events[1].at_ns);
        assert_eq!(dropped, 1);
        assert_eq!(log.take(), (vec![], 0), "taken: nothing is left");
    }

    #[test]
    fn growth_is_reported_at_the_first_mark_then_at_each_doubling_and_again_after_draining() {
        let mut marks = GrowthMarks::new(4);
        let reached: Vec<u64> = (1..=20).filter_map(|level| marks.reached(level)).collect();
        assert_eq!(reached, [4, 8, 16]);
        assert_eq!(marks.reached(3), None);
        assert_eq!(marks.reached(4), Some(4));
        let mut never = GrowthMarks::new(0);
        assert!((0..100).all(|level| never.reached(level).is_none()));
    }
}
