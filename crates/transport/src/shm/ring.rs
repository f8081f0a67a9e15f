//! The single-producer / single-consumer frame ring of one ordered pair of ranks.
//!
//! The ring is `capacity` cells of 64 bytes (8 words), a power of two, plus a padded "consumed"
//! position written by the consumer. Positions count cells forever (u64, never wrapping in
//! practice); the cell of position `p` is `p & (capacity - 1)`.
//!
//! A frame occupies consecutive positions (it may wrap past the end of the array):
//!
//! ```text
//! first cell:        [stamp = position + 1][meta = tag << 32 | data_len][data words 0..6 ]
//! continuation cell: [reserved, never written][data words (7 per cell)               ]
//! ```
//!
//! The producer writes the data words and the meta word with relaxed stores, then the stamp with
//! a Release store. The consumer loads the stamp of the cell at its position with Acquire: equal to
//! `position + 1` means a complete frame. Word 0 of a cell only ever holds 0 or the stamp of a
//! frame that started there in an earlier lap (`position - k * capacity + 1`), never data, so a
//! stale cell can never pass for the next frame. The consumer copies the data out with relaxed
//! loads, then publishes its new position with Release; the producer re-reads that position (with
//! Acquire) only when its cached copy says the ring is full.
//!
//! Every access is atomic, so the protocol is checked by loom:
//! `RUSTFLAGS="--cfg loom" cargo test -p braid-transport --release --target-dir target/loom ring`
//! (a separate target directory keeps the loom build from evicting the normal one).

#[cfg(loom)]
use loom::sync::atomic::{AtomicU64, Ordering};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicU64, Ordering};

use std::ptr::NonNull;

/// Bytes per ring cell: one cache line.
pub const CELL_BYTES: usize = 64;
const CELL_WORDS: usize = CELL_BYTES / 8;
/// The first cell carries the stamp and meta words, then data.
const FIRST_DATA_WORD: usize = 2;
const FIRST_CELL_DATA_WORDS: usize = CELL_WORDS - FIRST_DATA_WORD;
/// Data bytes a one-cell frame holds.
pub const ONE_CELL_BYTES: usize = FIRST_CELL_DATA_WORDS * 8;
/// Continuation cells keep word 0 reserved (see the module comment).
const NEXT_CELL_DATA_WORDS: usize = CELL_WORDS - 1;

/// One 64-byte ring cell. All-zero bytes are a valid empty cell.
#[repr(C, align(64))]
pub struct Cell {
    words: [AtomicU64; CELL_WORDS],
}

impl Cell {
    pub fn new() -> Cell {
        Cell { words: std::array::from_fn(|_| AtomicU64::new(0)) }
    }
}

impl Default for Cell {
    fn default() -> Self {
        Cell::new()
    }
}

/// The consumer's published position, alone on its cache line, and the pair's share word (see
/// [`RingView::offer_share`]). All-zero bytes mean position 0 and nothing offered.
#[repr(C, align(64))]
pub struct Consumed {
    position: AtomicU64,
    share: AtomicU64,
}

impl Consumed {
    pub fn new() -> Consumed {
        Consumed { position: AtomicU64::new(0), share: AtomicU64::new(0) }
    }
}

/// States of the share word, in its two low bits; the rest is the offer's token.
const SHARE_OFFERED: u64 = 1;
const SHARE_CLAIMED: u64 = 2;
const SHARE_REVOKED: u64 = 3;

impl Default for Consumed {
    fn default() -> Self {
        Consumed::new()
    }
}

/// Cells a frame carrying `data_len` bytes occupies.
pub const fn frame_cells(data_len: usize) -> usize {
    let words = data_len.div_ceil(8);
    if words <= FIRST_CELL_DATA_WORDS {
        1
    } else {
        1 + (words - FIRST_CELL_DATA_WORDS).div_ceil(NEXT_CELL_DATA_WORDS)
    }
}

/// Where a ring lives. Copies are shared by exactly one producer and one consumer.
#[derive(Clone, Copy)]
pub struct RingView {
    cells: NonNull<Cell>,
    mask: u64,
    consumed: NonNull<Consumed>,
}

// SAFETY: a view is two pointers to memory that is only accessed through atomics; the creator
// guarantees (see `RingView::new`) that the memory outlives every use, on any thread.
unsafe impl Send for RingView {}

impl RingView {
    /// # Safety
    /// `cells` must point to `capacity` (a power of two) cells and `consumed` to one `Consumed`,
    /// both valid for as long as the view or any copy of it is used, and either all zero or used
    /// before only by this protocol with the same capacity and the same current positions.
    pub unsafe fn new(cells: NonNull<Cell>, capacity: usize, consumed: NonNull<Consumed>) -> RingView {
        debug_assert!(capacity.is_power_of_two());
        RingView { cells, mask: capacity as u64 - 1, consumed }
    }

    pub fn capacity(&self) -> usize {
        self.mask as usize + 1
    }

    #[inline]
    fn cell(&self, position: u64) -> &Cell {
        // SAFETY: the index is masked to the array's length; `new`'s contract keeps it alive.
        unsafe { &*self.cells.as_ptr().add((position & self.mask) as usize) }
    }

    #[inline]
    fn consumed(&self) -> &AtomicU64 {
        // SAFETY: valid per `new`'s contract.
        unsafe { &self.consumed.as_ref().position }
    }

    #[inline]
    fn share(&self) -> &AtomicU64 {
        // SAFETY: valid per `new`'s contract.
        unsafe { &self.consumed.as_ref().share }
    }

    /// Receiver: offers the sender part of a copy under `token` (new for every offer, below
    /// 2^62). A shared copy is finished by exactly one side: the sender if it claims the offer
    /// before the receiver revokes it, else the receiver. The receiver offers again only once the
    /// previous offer is settled, so a stale claim (an older token) always fails.
    pub fn offer_share(&self, token: u64) {
        self.share().store(token << 2 | SHARE_OFFERED, Ordering::Release);
    }

    /// Sender: takes the offer `token`; false if the receiver revoked it.
    pub fn claim_share(&self, token: u64) -> bool {
        self.share().compare_exchange(token << 2 | SHARE_OFFERED, token << 2 | SHARE_CLAIMED, Ordering::AcqRel, Ordering::Acquire).is_ok()
    }

    /// Receiver: withdraws the offer `token`; false if the sender has claimed it (and so copies
    /// its part).
    pub fn revoke_share(&self, token: u64) -> bool {
        self.share().compare_exchange(token << 2 | SHARE_OFFERED, token << 2 | SHARE_REVOKED, Ordering::AcqRel, Ordering::Acquire).is_ok()
    }
}

/// The sending end: the only writer of the cells.
pub struct Producer {
    ring: RingView,
    tail: u64,
    cached_head: u64,
}

impl Producer {
    /// Starts at position 0 (a fresh ring).
    pub fn new(ring: RingView) -> Producer {
        Producer { ring, tail: 0, cached_head: 0 }
    }

    /// The ring written to.
    pub fn ring(&self) -> &RingView {
        &self.ring
    }

    /// Whether a frame of `cells` cells fits now.
    #[inline]
    pub fn has_room(&mut self, cells: usize) -> bool {
        let capacity = self.ring.capacity() as u64;
        if self.tail + cells as u64 - self.cached_head <= capacity {
            return true;
        }
        self.cached_head = self.ring.consumed().load(Ordering::Acquire);
        self.tail + cells as u64 - self.cached_head <= capacity
    }

    /// Whether the consumer has released every frame published so far (it is likely waiting).
    pub fn is_drained(&mut self) -> bool {
        self.cached_head = self.ring.consumed().load(Ordering::Acquire);
        self.cached_head == self.tail
    }

    /// Writes one frame of `data_len` bytes, which `fill` supplies through the writer, and
    /// publishes it. `has_room(frame_cells(data_len))` must have returned true.
    #[inline]
    pub fn push(&mut self, tag: u32, data_len: usize, fill: impl FnOnce(&mut FrameWriter<'_>)) {
        debug_assert!(data_len <= u32::MAX as usize);
        let start = self.tail;
        let mut writer = FrameWriter { ring: &self.ring, position: start, word: FIRST_DATA_WORD, pending: 0, pending_bytes: 0, written: 0 };
        fill(&mut writer);
        writer.flush();
        debug_assert_eq!(writer.written, data_len, "frame data shorter or longer than announced");
        self.publish(start, tag, data_len);
    }

    /// Writes and publishes a frame of `header` then `payload` that fits in one cell
    /// (`ONE_CELL_BYTES`). The bytes are staged on the stack and stored as whole words: the
    /// commonest frame, a small message, skips the streaming writer. `has_room(1)` must have
    /// returned true.
    #[inline(always)]
    pub fn push_one_cell(&mut self, tag: u32, header: &[u8], payload: &[u8]) {
        let data_len = header.len() + payload.len();
        assert!(data_len <= ONE_CELL_BYTES, "a {data_len}-byte frame does not fit in one cell");
        let mut staged = [0u8; ONE_CELL_BYTES];
        staged[..header.len()].copy_from_slice(header);
        staged[header.len()..data_len].copy_from_slice(payload);
        let start = self.tail;
        let cell = self.ring.cell(start);
        for (word, chunk) in cell.words[FIRST_DATA_WORD..].iter().zip(staged.chunks_exact(8)).take(data_len.div_ceil(8)) {
            word.store(u64::from_le_bytes(chunk.try_into().expect("8-byte chunk")), Ordering::Relaxed);
        }
        self.publish(start, tag, data_len);
    }

    /// Writes the meta word of the frame written at `start`, then its stamp (Release, last), and
    /// moves the tail past it.
    #[inline(always)]
    fn publish(&mut self, start: u64, tag: u32, data_len: usize) {
        let first = self.ring.cell(start);
        first.words[1].store(u64::from(tag) << 32 | data_len as u64, Ordering::Relaxed);
        first.words[0].store(start + 1, Ordering::Release);
        self.tail = start + frame_cells(data_len) as u64;
    }
}

/// Streams a frame's bytes into ring words (little-endian), skipping the reserved words.
pub struct FrameWriter<'a> {
    ring: &'a RingView,
    position: u64,
    word: usize,
    pending: u64,
    pending_bytes: usize,
    written: usize,
}

impl FrameWriter<'_> {
    /// Appends `bytes` to the frame data. Bytes left over from an earlier part (a header whose
    /// length is not a multiple of 8) are merged by shifting whole words, not byte by byte.
    /// Always inlined: the writer then lives in registers for the few words of a small frame.
    #[inline(always)]
    pub fn put(&mut self, bytes: &[u8]) {
        self.written += bytes.len();
        let carried = self.pending_bytes;
        let mut chunks = bytes.chunks_exact(8);
        if carried == 0 {
            for chunk in &mut chunks {
                self.emit(u64::from_le_bytes(chunk.try_into().expect("8-byte chunk")));
            }
        } else {
            let shift = 8 * carried as u32;
            for chunk in &mut chunks {
                let value = u64::from_le_bytes(chunk.try_into().expect("8-byte chunk"));
                let word = self.pending | value << shift;
                self.pending = value >> (64 - shift);
                self.emit(word);
            }
        }
        let tail = chunks.remainder();
        let value = load_short(tail);
        let total = carried + tail.len();
        if carried == 0 {
            self.pending = value;
        } else {
            self.pending |= value << (8 * carried as u32);
        }
        if total >= 8 {
            let word = self.pending;
            // carried >= 1 here, so the shift is below 64.
            self.pending = value >> (64 - 8 * carried as u32);
            self.emit(word);
        }
        self.pending_bytes = total % 8;
    }

    #[inline(always)]
    fn emit(&mut self, word: u64) {
        self.ring.cell(self.position).words[self.word].store(word, Ordering::Relaxed);
        self.word += 1;
        if self.word == CELL_WORDS {
            self.position += 1;
            self.word = CELL_WORDS - NEXT_CELL_DATA_WORDS;
        }
    }

    #[inline(always)]
    fn flush(&mut self) {
        if self.pending_bytes != 0 {
            let word = std::mem::take(&mut self.pending);
            self.pending_bytes = 0;
            self.emit(word);
        }
    }
}

/// The little-endian value of up to 7 bytes, read as two overlapping loads (the bytes both loads
/// cover land on the same bits) rather than a byte loop or a variable-length copy.
#[inline(always)]
fn load_short(bytes: &[u8]) -> u64 {
    let n = bytes.len();
    debug_assert!(n < 8);
    if n >= 4 {
        let low = u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes"));
        let high = u32::from_le_bytes(bytes[n - 4..].try_into().expect("4 bytes"));
        u64::from(low) | u64::from(high) << (8 * (n - 4))
    } else if n >= 2 {
        let low = u16::from_le_bytes(bytes[..2].try_into().expect("2 bytes"));
        let high = u16::from_le_bytes(bytes[n - 2..].try_into().expect("2 bytes"));
        u64::from(low) | u64::from(high) << (8 * (n - 2))
    } else {
        bytes.first().map_or(0, |&byte| u64::from(byte))
    }
}

/// A complete frame found by [`Consumer::read`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameInfo {
    /// The producer's tag, opaque to the ring.
    pub tag: u32,
    /// Data bytes now at the start of the scratch buffer.
    pub data_len: usize,
    cells: usize,
}

/// The receiving end: reads frames in order and frees their cells.
pub struct Consumer {
    ring: RingView,
    head: u64,
}

impl Consumer {
    /// Starts at position 0 (a fresh ring).
    pub fn new(ring: RingView) -> Consumer {
        Consumer { ring, head: 0 }
    }

    /// The ring read from.
    pub fn ring(&self) -> &RingView {
        &self.ring
    }

    /// Scratch bytes needed to read frames of up to `data_len` bytes.
    pub const fn scratch_len(data_len: usize) -> usize {
        data_len.div_ceil(8) * 8
    }

    /// Whether the next frame is complete (one load of its stamp).
    #[inline]
    pub fn has_frame(&self) -> bool {
        self.ring.cell(self.head).words[0].load(Ordering::Acquire) == self.head + 1
    }

    /// If the next frame is complete, copies its data to the start of `scratch` and describes it.
    /// The frame stays in the ring until [`Consumer::release`].
    #[inline]
    pub fn read(&self, scratch: &mut [u8]) -> Option<FrameInfo> {
        let first = self.ring.cell(self.head);
        if first.words[0].load(Ordering::Acquire) != self.head + 1 {
            return None;
        }
        let meta = first.words[1].load(Ordering::Relaxed);
        let data_len = meta as u32 as usize;
        let words = data_len.div_ceil(8);
        assert!(words * 8 <= scratch.len(), "ring frame of {data_len} bytes exceeds the agreed maximum");
        let mut position = self.head;
        let mut word = FIRST_DATA_WORD;
        for chunk in scratch[..words * 8].chunks_exact_mut(8) {
            let value = self.ring.cell(position).words[word].load(Ordering::Relaxed);
            chunk.copy_from_slice(&value.to_le_bytes());
            word += 1;
            if word == CELL_WORDS {
                position += 1;
                word = CELL_WORDS - NEXT_CELL_DATA_WORDS;
            }
        }
        Some(FrameInfo { tag: (meta >> 32) as u32, data_len, cells: frame_cells(data_len) })
    }

    /// Frees the cells of `frame` (the last one read) for the producer.
    #[inline]
    pub fn release(&mut self, frame: FrameInfo) {
        self.head += frame.cells as u64;
        self.ring.consumed().store(self.head, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_cells_counts_reserved_words() {
        assert_eq!(frame_cells(0), 1);
        assert_eq!(frame_cells(48), 1);
        assert_eq!(frame_cells(49), 2);
        assert_eq!(frame_cells(48 + 56), 2);
        assert_eq!(frame_cells(48 + 57), 3);
        assert_eq!(frame_cells(1024), 19);
    }

    /// A ring in ordinary memory, shared by the two test threads.
    struct HeapRing {
        cells: Box<[Cell]>,
        consumed: Box<Consumed>,
    }

    impl HeapRing {
        fn new(capacity: usize) -> HeapRing {
            HeapRing { cells: (0..capacity).map(|_| Cell::new()).collect(), consumed: Box::new(Consumed::new()) }
        }

        fn view(&self) -> RingView {
            // SAFETY: the boxes are fresh and outlive every view (each test keeps `self` alive
            // until both threads are joined).
            unsafe { RingView::new(NonNull::from(&self.cells[0]), self.cells.len(), NonNull::from(&*self.consumed)) }
        }
    }

    fn pattern(seq: u32, index: usize) -> u8 {
        (seq as usize).wrapping_mul(31).wrapping_add(index.wrapping_mul(7)) as u8
    }

    /// Writes a frame as two parts split at `split` (exercising unaligned packing); every odd
    /// frame that fits in one cell goes through `push_one_cell`, so both writers are checked.
    fn push_pattern(producer: &mut Producer, seq: u32, len: usize, split: usize) {
        let data: Vec<u8> = (0..len).map(|i| pattern(seq, i)).collect();
        let split = split.min(len);
        if seq % 2 == 1 && len <= ONE_CELL_BYTES {
            producer.push_one_cell(seq, &data[..split], &data[split..]);
            return;
        }
        producer.push(seq, len, |writer| {
            writer.put(&data[..split]);
            writer.put(&data[split..]);
        });
    }

    #[cfg(not(loom))]
    mod stress {
        use super::*;
        use std::sync::Arc;

        struct Random(u64);

        impl Random {
            fn next(&mut self) -> u64 {
                self.0 ^= self.0 << 13;
                self.0 ^= self.0 >> 7;
                self.0 ^= self.0 << 17;
                self.0
            }
        }

        #[test]
        fn ring_single_thread_wraps_and_fills() {
            let memory = HeapRing::new(8);
            let mut producer = Producer::new(memory.view());
            let mut consumer = Consumer::new(memory.view());
            let mut scratch = vec![0u8; Consumer::scratch_len(8 * 64)];
            assert!(consumer.read(&mut scratch).is_none());
            for round in 0..50u32 {
                let len = (round as usize * 37) % 300;
                let cells = frame_cells(len);
                assert!(producer.has_room(cells));
                push_pattern(&mut producer, round, len, round as usize % 11);
                let filler = 8 - cells;
                assert!(!producer.has_room(filler + 1), "a full ring must refuse");
                let frame = consumer.read(&mut scratch).expect("frame");
                assert_eq!((frame.tag, frame.data_len), (round, len));
                assert!((0..len).all(|i| scratch[i] == pattern(round, i)));
                consumer.release(frame);
                assert!(consumer.read(&mut scratch).is_none());
            }
        }

        #[test]
        fn a_share_is_settled_once_and_stale_tokens_never_match() {
            let memory = HeapRing::new(2);
            let (receiver, sender) = (memory.view(), memory.view());
            assert!(!sender.claim_share(0), "nothing offered yet");
            receiver.offer_share(1);
            assert!(sender.claim_share(1));
            assert!(!receiver.revoke_share(1) && !sender.claim_share(1));
            receiver.offer_share(2);
            assert!(!sender.claim_share(1), "a stale claim must fail");
            assert!(receiver.revoke_share(2));
            assert!(!sender.claim_share(2) && !receiver.revoke_share(2));
        }

        /// Every way of cutting frames of up to 40 bytes into three parts packs the same bytes.
        #[test]
        fn frames_written_in_three_parts_read_back_whole() {
            let memory = HeapRing::new(4);
            let mut producer = Producer::new(memory.view());
            let mut consumer = Consumer::new(memory.view());
            let mut scratch = vec![0u8; Consumer::scratch_len(64)];
            for (seq, len) in (0..=40usize).enumerate() {
                let seq = seq as u32;
                let data: Vec<u8> = (0..len).map(|i| pattern(seq, i)).collect();
                for first in 0..=len {
                    for second in first..=len {
                        assert!(producer.has_room(frame_cells(len)));
                        producer.push(seq, len, |writer| {
                            writer.put(&data[..first]);
                            writer.put(&data[first..second]);
                            writer.put(&data[second..]);
                        });
                        let frame = consumer.read(&mut scratch).expect("frame");
                        assert_eq!(&scratch[..frame.data_len], &data[..], "len {len}, cuts at {first} and {second}");
                        consumer.release(frame);
                    }
                }
            }
        }

        /// 100k frames of random sizes between two threads, checked byte by byte and by checksum.
        #[test]
        fn ring_stress_two_threads() {
            const FRAMES: u32 = 100_000;
            const MAX_LEN: usize = 500;
            let memory = Arc::new(HeapRing::new(16));
            let producer_memory = Arc::clone(&memory);
            let sender = std::thread::spawn(move || {
                let mut producer = Producer::new(producer_memory.view());
                let mut random = Random(0x9e37_79b9_7f4a_7c15);
                let mut checksum = 0u64;
                for seq in 0..FRAMES {
                    let len = (random.next() % (MAX_LEN as u64 + 1)) as usize;
                    while !producer.has_room(frame_cells(len)) {
                        std::hint::spin_loop();
                        std::thread::yield_now();
                    }
                    push_pattern(&mut producer, seq, len, (random.next() % 17) as usize);
                    checksum = (0..len).fold(checksum, |sum, i| sum.wrapping_mul(131).wrapping_add(u64::from(pattern(seq, i))));
                }
                checksum
            });
            let mut consumer = Consumer::new(memory.view());
            let mut scratch = vec![0u8; Consumer::scratch_len(MAX_LEN)];
            let mut checksum = 0u64;
            for seq in 0..FRAMES {
                let frame = loop {
                    match consumer.read(&mut scratch) {
                        Some(frame) => break frame,
                        None => std::thread::yield_now(),
                    }
                };
                assert_eq!(frame.tag, seq, "frames out of order");
                for (i, &byte) in scratch[..frame.data_len].iter().enumerate() {
                    assert_eq!(byte, pattern(seq, i), "frame {seq} byte {i}");
                    checksum = checksum.wrapping_mul(131).wrapping_add(u64::from(byte));
                }
                consumer.release(frame);
            }
            assert_eq!(sender.join().unwrap(), checksum);
            assert!(consumer.read(&mut scratch).is_none());
        }
    }

    /// Exhaustive model checks of the ring (every interleaving, no preemption bound; see the
    /// module comment for the command). Tiny rings force wrap-around and full-ring back-pressure.
    #[cfg(loom)]
    mod model {
        use super::*;
        use loom::sync::Arc;

        fn check(capacity: usize, lengths: &'static [usize]) {
            let mut builder = loom::model::Builder::new();
            builder.preemption_bound = None;
            builder.check(move || {
                let memory = Arc::new(HeapRing::new(capacity));
                let producer_memory = Arc::clone(&memory);
                let sender = loom::thread::spawn(move || {
                    let mut producer = Producer::new(producer_memory.view());
                    for (seq, &len) in lengths.iter().enumerate() {
                        while !producer.has_room(frame_cells(len)) {
                            loom::thread::yield_now();
                        }
                        push_pattern(&mut producer, seq as u32, len, 3);
                    }
                });
                let mut consumer = Consumer::new(memory.view());
                let mut scratch = vec![0u8; Consumer::scratch_len(200)];
                for (seq, &len) in lengths.iter().enumerate() {
                    let frame = loop {
                        match consumer.read(&mut scratch) {
                            Some(frame) => break frame,
                            None => loom::thread::yield_now(),
                        }
                    };
                    assert_eq!((frame.tag, frame.data_len), (seq as u32, len));
                    assert!((0..len).all(|i| scratch[i] == pattern(seq as u32, i)), "torn frame {seq}");
                    consumer.release(frame);
                }
                sender.join().unwrap();
            });
        }

        #[test]
        fn ring_model_single_cell_frames_wrap() {
            check(2, &[8, 16, 1]);
        }

        #[test]
        fn ring_model_multi_cell_frames_wrap() {
            check(4, &[60, 8, 120]);
        }

        #[test]
        fn ring_model_four_frames_of_mixed_sizes() {
            check(4, &[24, 60, 8, 100]);
        }

        #[test]
        fn ring_model_frame_filling_the_ring() {
            check(2, &[100, 0]);
        }

        /// A claim racing a revoke: exactly one wins, in every interleaving.
        #[test]
        fn share_model_claim_and_revoke_exclude_each_other() {
            let mut builder = loom::model::Builder::new();
            builder.preemption_bound = None;
            builder.check(|| {
                let memory = Arc::new(HeapRing::new(2));
                memory.view().offer_share(5);
                let sender_memory = Arc::clone(&memory);
                let sender = loom::thread::spawn(move || sender_memory.view().claim_share(5));
                let revoked = memory.view().revoke_share(5);
                let claimed = sender.join().unwrap();
                assert!(claimed != revoked, "claimed {claimed}, revoked {revoked}");
            });
        }
    }
}
