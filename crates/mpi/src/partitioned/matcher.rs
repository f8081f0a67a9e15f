//! Which partitioned receive a setup message belongs to. Partitioned operations match in the
//! order they were initialized: a receive is registered at MPI_Precv_init, and each setup from
//! its source with its tag on its communicator goes to the oldest registered receive still
//! waiting, or waits itself for the next one registered. Pure bookkeeping; the engine side is in
//! `channel`.

use std::cell::Cell;
use std::collections::{HashMap, VecDeque};
use std::rc::{Rc, Weak};

use super::wire::Setup;

/// Where a receive's setup lands once matched.
pub type SetupSlot = Rc<Cell<Option<Setup>>>;

/// A collective context, a source's job rank, and the program's tag.
type Key = (u32, u32, i32);

#[derive(Default)]
pub struct Matcher {
    /// Registered receives without a setup, oldest first (a freed one is skipped).
    waiting: HashMap<Key, VecDeque<Weak<Cell<Option<Setup>>>>>,
    /// Setups that arrived before their receive was registered, oldest first.
    unexpected: HashMap<Key, VecDeque<Setup>>,
}

impl Matcher {
    /// Registers a receive from `source` with `tag` on `context`; an unexpected setup is its own at
    /// once.
    pub fn register(&mut self, context: u32, source: u32, tag: i32, slot: &SetupSlot) {
        let key = (context, source, tag);
        if let Some(setup) = self.unexpected.get_mut(&key).and_then(VecDeque::pop_front) {
            slot.set(Some(setup));
            self.unexpected.retain(|_, setups| !setups.is_empty());
            return;
        }
        self.waiting.entry(key).or_default().push_back(Rc::downgrade(slot));
    }

    /// A setup arrived from `source` on `context`.
    pub fn deliver(&mut self, context: u32, source: u32, setup: Setup) {
        let key = (context, source, setup.tag);
        if let Some(queue) = self.waiting.get_mut(&key) {
            while let Some(waiting) = queue.pop_front() {
                if let Some(slot) = waiting.upgrade() {
                    slot.set(Some(setup));
                    if queue.is_empty() {
                        self.waiting.remove(&key);
                    }
                    return;
                }
            }
            self.waiting.remove(&key);
        }
        self.unexpected.entry(key).or_default().push_back(setup);
    }

    /// Whether a live receive from `source` on `context` still waits for its setup.
    pub fn awaits(&self, context: u32, source: u32) -> bool {
        self.waiting.iter().any(|(&(c, s, _), queue)| c == context && s == source && queue.iter().any(|slot| slot.strong_count() > 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(tag: i32, channel: u32) -> Setup {
        Setup { tag, channel, partitions: 4, bytes: 64 }
    }

    fn slot() -> SetupSlot {
        Rc::new(Cell::new(None))
    }

    #[test]
    fn setups_go_to_receives_in_the_order_they_were_registered() {
        let mut matcher = Matcher::default();
        let (first, second) = (slot(), slot());
        matcher.register(7, 1, 5, &first);
        matcher.register(7, 1, 5, &second);
        assert!(matcher.awaits(7, 1) && !matcher.awaits(7, 2) && !matcher.awaits(9, 1));
        matcher.deliver(7, 1, setup(5, 3));
        matcher.deliver(7, 1, setup(5, 4));
        assert_eq!((first.get().unwrap().channel, second.get().unwrap().channel), (3, 4));
        assert!(!matcher.awaits(7, 1));
    }

    #[test]
    fn an_early_setup_waits_for_its_receive_and_others_are_not_taken() {
        let mut matcher = Matcher::default();
        matcher.deliver(7, 1, setup(6, 2));
        let (other_tag, other_source, other_context, own) = (slot(), slot(), slot(), slot());
        matcher.register(7, 1, 5, &other_tag);
        matcher.register(7, 0, 6, &other_source);
        matcher.register(8, 1, 6, &other_context);
        assert!(other_tag.get().is_none() && other_source.get().is_none() && other_context.get().is_none());
        matcher.register(7, 1, 6, &own);
        assert_eq!(own.get(), Some(setup(6, 2)));
    }

    #[test]
    fn a_freed_receive_is_skipped() {
        let mut matcher = Matcher::default();
        let freed = slot();
        matcher.register(7, 1, 5, &freed);
        drop(freed);
        assert!(!matcher.awaits(7, 1));
        let live = slot();
        matcher.register(7, 1, 5, &live);
        matcher.deliver(7, 1, setup(5, 9));
        assert_eq!(live.get().unwrap().channel, 9);
    }
}
