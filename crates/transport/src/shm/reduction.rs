//! A node-wide reduction segment: the ranks of one node copy their vectors into their slots and
//! reduce disjoint slices of them in parallel, in place of passing the vectors as messages.
//!
//! Layout: one 64-byte arrival line per rank (its arrival word, its outcome word, and a short
//! slot per bank), then two banks (alternate chunks use alternate banks, so a rank may fill its
//! slot for the next chunk while the last one is being read) of one `slot_bytes` slot per rank,
//! page aligned. The protocol that orders the accesses is the caller's:
//! each rank publishes its progress in its arrival word ([`ReductionSegment::arrive`], release) and
//! waits until the others have published theirs ([`ReductionSegment::reached`], acquire) before it
//! touches what they wrote; see [`arrival`] for the word protocol alone (checked with loom).

use std::io;
use std::ops::Range;

use braid_sys::shm::SharedMapping;

const PAGE: usize = 4096;
/// Bytes of one rank's arrival word (a cache line, so that ranks do not share one).
const ARRIVAL_STRIDE: usize = 64;
/// Where a rank's outcome word sits in its arrival stride.
const OUTCOME_OFFSET: usize = 8;
/// Banks of slots.
pub const BANKS: usize = 2;
/// Where the short slots begin in a rank's arrival stride (after its arrival and outcome words).
const LINE_SLOTS_OFFSET: usize = 16;
/// Bytes of a short slot: one per bank in each rank's arrival line, so that a reader that sees a
/// rank's arrival has what it wrote in the same cache line (one transfer between cores, not two).
pub const LINE_SLOT_BYTES: usize = (ARRIVAL_STRIDE - LINE_SLOTS_OFFSET) / BANKS;

/// Which slots an access means: those of bank `bank` in the slot region, or, `short`, the
/// bank's short slots in the arrival lines ([`LINE_SLOT_BYTES`] each). Writers and readers of a
/// call must agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slots {
    pub bank: usize,
    pub short: bool,
}

impl Slots {
    /// The slots of bank `bank` in the slot region.
    pub fn bank(bank: usize) -> Slots {
        Slots { bank, short: false }
    }

    /// Bank `bank`'s slots for a call that puts `bytes` in each: the short ones when they fit.
    pub fn for_bytes(bank: usize, bytes: usize) -> Slots {
        Slots { bank, short: bytes <= LINE_SLOT_BYTES }
    }
}

/// The arrival words' protocol: a rank stores a growing count of the phases it has finished
/// (release: what it wrote before is visible to whoever sees the count), and a rank that needs a
/// phase finished everywhere loads the counts (acquire) until each has reached it.
///
/// Checked with loom: `RUSTFLAGS="--cfg loom" cargo test -p braid-transport --release --target-dir target/loom arrival`.
pub mod arrival {
    #[cfg(loom)]
    use loom::sync::atomic::{AtomicU64, Ordering};
    #[cfg(not(loom))]
    use std::sync::atomic::{AtomicU64, Ordering};

    /// An arrival word (loom's model of one under loom, where only this module's tests run).
    pub type Word = AtomicU64;

    /// Publishes that this rank has finished phase `phase` (and every one before it).
    pub fn arrive(word: &AtomicU64, phase: u64) {
        word.store(phase, Ordering::Release);
    }

    /// Stores a value that the next `arrive` on the same rank publishes.
    pub fn record(word: &AtomicU64, value: u32) {
        word.store(u64::from(value), Ordering::Relaxed);
    }

    /// A value recorded before an arrival this rank has seen through `reached`.
    pub fn recorded(word: &AtomicU64) -> u32 {
        word.load(Ordering::Relaxed) as u32
    }

    /// Whether every word has reached `phase`: the counts only grow, so a rank a phase ahead
    /// counts as arrived.
    pub fn reached<'a>(words: impl IntoIterator<Item = &'a AtomicU64>, phase: u64) -> bool {
        words.into_iter().all(|word| word.load(Ordering::Acquire) >= phase)
    }

    /// The phases of the small collectives that meet in a segment through these words, call
    /// after call (numbered from 0, the same on every rank): in call `call` a rank that writes
    /// its slot publishes [`written`] once it has, and every rank publishes [`finished`] once it
    /// has read all it needs of the others' slots. Call `call` uses bank [`bank`]; the bank was
    /// last used by call `call - 2`, so a rank writes its slot only once every rank has
    /// [`reached`] [`reusable`] (all of them have finished reading that call).
    pub fn written(call: u64) -> u64 {
        2 * call + 1
    }

    /// See [`written`]. A rank that reads nothing publishes this at once: it covers `written`.
    pub fn finished(call: u64) -> u64 {
        2 * call + 2
    }

    /// The bank of slots call `call` uses.
    pub fn bank(call: u64) -> usize {
        (call % super::BANKS as u64) as usize
    }

    /// The phase every rank must have reached before a rank writes its slot in call `call`.
    pub fn reusable(call: u64) -> u64 {
        call.checked_sub(super::BANKS as u64).map_or(0, finished)
    }

    #[cfg(all(test, loom))]
    mod tests {
        use super::*;
        use loom::sync::Arc;

        /// Two ranks each write their slot and arrive; each then reads the other's slot and must
        /// see what was written before the arrival.
        #[test]
        fn an_arrival_publishes_what_was_written_before_it() {
            loom::model(|| {
                let words = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
                let slots = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
                let spawn = |me: usize| {
                    let (words, slots) = (words.clone(), slots.clone());
                    loom::thread::spawn(move || {
                        slots[me].store(10 + me as u64, Ordering::Relaxed);
                        arrive(&words[me], 1);
                        while !reached(words.iter(), 1) {
                            loom::thread::yield_now();
                        }
                        slots[1 - me].load(Ordering::Relaxed)
                    })
                };
                let (first, second) = (spawn(0), spawn(1));
                assert_eq!(first.join().unwrap(), 11);
                assert_eq!(second.join().unwrap(), 10);
            });
        }

        /// A root broadcasts three calls' values through its slot in alternating banks to a
        /// reader; the third call reuses the first call's bank only once the reader has
        /// finished reading it, so the reader sees each call's value and never a later one.
        #[test]
        fn a_bank_is_written_again_only_after_every_reader_has_finished_with_it() {
            loom::model(|| {
                const CALLS: u64 = 3;
                let words = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
                let banks = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
                let root = {
                    let (words, banks) = (words.clone(), banks.clone());
                    loom::thread::spawn(move || {
                        for call in 0..CALLS {
                            while !reached(words.iter(), reusable(call)) {
                                loom::thread::yield_now();
                            }
                            banks[bank(call)].store(100 + call, Ordering::Relaxed);
                            arrive(&words[0], finished(call));
                        }
                    })
                };
                for call in 0..CALLS {
                    while !reached(&words[..1], written(call)) {
                        loom::thread::yield_now();
                    }
                    assert_eq!(banks[bank(call)].load(Ordering::Relaxed), 100 + call);
                    arrive(&words[1], finished(call));
                }
                root.join().unwrap();
            });
        }
    }
}

/// A mapped reduction segment of `ranks` slots per bank.
pub struct ReductionSegment {
    mapping: SharedMapping,
    ranks: usize,
    slot_bytes: usize,
}

impl ReductionSegment {
    fn slots_offset(ranks: usize) -> usize {
        (ranks * ARRIVAL_STRIDE).next_multiple_of(PAGE)
    }

    /// Total bytes of a segment, or None if they overflow the address space.
    pub fn total_len(ranks: usize, slot_bytes: usize) -> Option<usize> {
        ranks.checked_mul(slot_bytes)?.checked_mul(BANKS)?.checked_add(Self::slots_offset(ranks))
    }

    /// Creates the shared-memory file `name` (zeroed: every arrival word at phase 0) and maps it.
    pub fn create(name: &str, ranks: usize, slot_bytes: usize) -> io::Result<ReductionSegment> {
        let len =
            Self::total_len(ranks, slot_bytes).filter(|_| ranks > 0 && slot_bytes > 0).ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "a reduction segment of that size does not fit"))?;
        Ok(ReductionSegment { mapping: SharedMapping::create(name, len)?, ranks, slot_bytes })
    }

    /// Maps the segment `name` another rank of the node made with the same shape.
    pub fn open(name: &str, ranks: usize, slot_bytes: usize) -> io::Result<ReductionSegment> {
        let mapping = SharedMapping::open(name)?;
        if Some(mapping.len()) != Self::total_len(ranks, slot_bytes) {
            return Err(io::Error::new(io::ErrorKind::InvalidData, format!("reduction segment {name} has {} bytes, not the expected shape", mapping.len())));
        }
        Ok(ReductionSegment { mapping, ranks, slot_bytes })
    }

    pub fn ranks(&self) -> usize {
        self.ranks
    }

    pub fn slot_bytes(&self) -> usize {
        self.slot_bytes
    }

    fn word(&self, rank: usize) -> &arrival::Word {
        assert!(rank < self.ranks);
        // SAFETY: the mapping starts with `ranks` 64-byte arrival words (page aligned, zeroed at
        // creation), accessed only atomically, and lives as long as `self`.
        unsafe { &*self.mapping.as_ptr().add(rank * ARRIVAL_STRIDE).cast::<arrival::Word>() }
    }

    /// `rank`'s outcome word, in the same line as its arrival word: written before the rank
    /// arrives, so whoever sees the arrival sees it.
    fn outcome_word(&self, rank: usize) -> &arrival::Word {
        assert!(rank < self.ranks);
        // SAFETY: each arrival word's 64-byte stride has room for a second 8-byte word after it
        // (aligned to 8, zeroed at creation), accessed only atomically, living as long as `self`.
        unsafe { &*self.mapping.as_ptr().add(rank * ARRIVAL_STRIDE + OUTCOME_OFFSET).cast::<arrival::Word>() }
    }

    /// Records `rank`'s outcome of the phase it is about to arrive at: 0 for success, else an
    /// error code (ordered by the arrival's release).
    pub fn set_outcome(&self, rank: usize, code: u32) {
        arrival::record(self.outcome_word(rank), code);
    }

    /// The outcome `rank` recorded before the phase this rank has seen it reach.
    pub fn outcome(&self, rank: usize) -> u32 {
        arrival::recorded(self.outcome_word(rank))
    }

    /// Publishes that `rank` has finished phase `phase`.
    pub fn arrive(&self, rank: usize, phase: u64) {
        arrival::arrive(self.word(rank), phase);
    }

    /// Whether every rank of `ranks` has finished phase `phase`.
    pub fn reached(&self, ranks: Range<usize>, phase: u64) -> bool {
        arrival::reached(ranks.map(|rank| self.word(rank)), phase)
    }

    /// The bytes `range` of slot `rank` of `slots`, as a raw pointer (checked in bounds).
    fn slot(&self, slots: Slots, rank: usize, range: &Range<usize>) -> *mut u8 {
        let capacity = if slots.short { LINE_SLOT_BYTES } else { self.slot_bytes };
        assert!(slots.bank < BANKS && rank < self.ranks && range.start <= range.end && range.end <= capacity);
        let offset = match slots.short {
            // Bytes no atomic word uses: the words take the first LINE_SLOTS_OFFSET bytes.
            true => rank * ARRIVAL_STRIDE + LINE_SLOTS_OFFSET + slots.bank * LINE_SLOT_BYTES + range.start,
            false => Self::slots_offset(self.ranks) + (slots.bank * self.ranks + rank) * self.slot_bytes + range.start,
        };
        // SAFETY: the slot and range were checked against the segment's shape, which fits the
        // mapping (checked at create/open).
        unsafe { self.mapping.as_ptr().add(offset) }
    }

    /// Copies `data` into slot `rank` of `slots` from byte `at`. The protocol must keep every
    /// other rank off those bytes until this rank arrives.
    pub fn put(&self, slots: Slots, rank: usize, at: usize, data: &[u8]) {
        let into = self.slot(slots, rank, &(at..at + data.len()));
        // SAFETY: `into` has room for `data` (checked by `slot`); the mapping never overlaps a
        // slice of this process's own memory.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), into, data.len()) };
    }

    /// Copies bytes of slot `rank` of `slots`, from byte `at`, into `out`. The protocol must
    /// keep every rank from writing them meanwhile.
    pub fn get(&self, slots: Slots, rank: usize, at: usize, out: &mut [u8]) {
        let from = self.slot(slots, rank, &(at..at + out.len()));
        // SAFETY: as in `put`, the other way.
        unsafe { std::ptr::copy_nonoverlapping(from, out.as_mut_ptr(), out.len()) };
    }

    /// Hands `f` the bytes `range` of slot `rank` of `slots`. The protocol must keep every rank
    /// from writing them meanwhile.
    pub fn read_slot<R>(&self, slots: Slots, rank: usize, range: Range<usize>, f: impl FnOnce(&[u8]) -> R) -> R {
        let from = self.slot(slots, rank, &range);
        // SAFETY: in bounds (checked by `slot`); per the protocol nothing writes these bytes
        // while `f` reads them.
        f(unsafe { std::slice::from_raw_parts(from.cast_const(), range.len()) })
    }

    /// Reduces `range` of every slot of bank `bank` into slot 0's `range` with `combine(input,
    /// inout)`. The protocol must give this rank `range` of slot 0 alone and keep every rank from
    /// writing `range` of the other slots meanwhile.
    pub fn reduce_into_first(&self, bank: usize, range: Range<usize>, combine: &dyn Fn(&[u8], &mut [u8])) {
        if range.is_empty() {
            return;
        }
        let bank = Slots::bank(bank);
        let first = self.slot(bank, 0, &range);
        // SAFETY: in bounds (checked by `slot`); per the protocol nothing else touches these
        // bytes of slot 0 until this rank arrives.
        let inout = unsafe { std::slice::from_raw_parts_mut(first, range.len()) };
        for rank in 1..self.ranks {
            let other = self.slot(bank, rank, &range);
            // SAFETY: in bounds, in another slot than `inout`; per the protocol nothing writes
            // these bytes meanwhile.
            let input = unsafe { std::slice::from_raw_parts(other.cast_const(), range.len()) };
            combine(input, inout);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Cleanup(String);

    impl Drop for Cleanup {
        fn drop(&mut self) {
            let _ = braid_sys::shm::unlink(&self.0);
        }
    }

    /// A segment named after `test`, as its maker and another rank map it; unlinked when the
    /// first element is dropped.
    fn made_and_opened(test: &str, ranks: usize, slot_bytes: usize) -> (Cleanup, ReductionSegment, ReductionSegment) {
        let name = format!("braid-reduction-{test}-{}", std::process::id());
        let cleanup = Cleanup(name.clone());
        let made = ReductionSegment::create(&name, ranks, slot_bytes).unwrap();
        let opened = ReductionSegment::open(&name, ranks, slot_bytes).unwrap();
        (cleanup, made, opened)
    }

    #[test]
    fn ranks_reduce_their_slices_into_the_first_slot() {
        let (cleanup, made, opened) = made_and_opened("test", 3, 8);
        assert!(ReductionSegment::open(&cleanup.0, 2, 8).is_err());
        for rank in 0..3 {
            made.put(Slots::bank(1), rank, 0, &[rank as u8 + 1; 8]);
        }
        let add = |input: &[u8], inout: &mut [u8]| inout.iter_mut().zip(input).for_each(|(a, b)| *a += b);
        opened.reduce_into_first(1, 0..4, &add);
        made.reduce_into_first(1, 4..8, &add);
        let mut out = [0u8; 8];
        opened.get(Slots::bank(1), 0, 0, &mut out);
        assert_eq!(out, [6; 8]);
        // Bank 0 is untouched.
        opened.get(Slots::bank(0), 0, 0, &mut out);
        assert_eq!(out, [0; 8]);
        assert!(!opened.reached(0..3, 1));
        for rank in 0..3 {
            made.arrive(rank, 1);
        }
        assert!(opened.reached(0..3, 1));
        assert!(!opened.reached(0..3, 2));
    }

    #[test]
    fn short_slots_share_the_arrival_line_and_leave_its_words_alone() {
        let (_cleanup, made, opened) = made_and_opened("short", 2, 8);
        made.set_outcome(1, 9);
        made.arrive(1, 5);
        for bank in 0..BANKS {
            for rank in 0..2 {
                made.put(Slots::for_bytes(bank, LINE_SLOT_BYTES), rank, 0, &[(10 * bank + rank) as u8 + 1; LINE_SLOT_BYTES]);
            }
        }
        let mut out = [0u8; LINE_SLOT_BYTES];
        for bank in 0..BANKS {
            for rank in 0..2 {
                opened.get(Slots::for_bytes(bank, 1), rank, 0, &mut out);
                assert_eq!(out, [(10 * bank + rank) as u8 + 1; LINE_SLOT_BYTES]);
            }
        }
        assert!(opened.reached(1..2, 5) && !opened.reached(1..2, 6) && !opened.reached(0..1, 1));
        assert_eq!((opened.outcome(0), opened.outcome(1)), (0, 9));
        // The slot region is untouched, and a short slot holds no more than its bytes.
        let mut long = [1u8; 8];
        opened.get(Slots::bank(0), 1, 0, &mut long);
        assert_eq!(long, [0; 8]);
        assert!(!Slots::for_bytes(0, LINE_SLOT_BYTES + 1).short);
        let outside = std::panic::catch_unwind(|| made.put(Slots { bank: 0, short: true }, 0, 1, &[0; LINE_SLOT_BYTES]));
        assert!(outside.is_err());
    }

    #[test]
    fn an_outcome_is_per_rank_and_leaves_the_arrival_words_alone() {
        let (_cleanup, made, opened) = made_and_opened("outcome", 2, 8);
        assert_eq!(opened.outcome(0), 0);
        made.set_outcome(0, 17);
        made.arrive(0, 3);
        assert_eq!((opened.outcome(0), opened.outcome(1)), (17, 0));
        assert!(opened.reached(0..1, 3) && !opened.reached(1..2, 1));
        made.set_outcome(0, 0);
        assert_eq!(opened.outcome(0), 0);
    }
}
