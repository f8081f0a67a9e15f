//! A rank's shared send-buffer pool: fixed-size buffers in the sender's own segment, for frames too
//! large for the ring cells. Each buffer has a state word on its own cache line: only the sender
//! marks a buffer busy, only the receiver of the frame that carried it marks it free again, so no
//! read-modify-write is needed.
//!
//! A large payload may be handed over before it is written: the sender publishes the descriptor,
//! then copies the payload in chunks and after each one stores how many bytes are written (the
//! buffer's `written` word, Release); the receiver copies out what is written (Acquire) while the
//! sender writes the rest, so the two copies overlap.

use std::io::IoSlice;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

const FREE: u32 = 0;
const BUSY: u32 = 1;

/// One buffer's state, alone on its cache line. All-zero bytes mean free.
#[repr(C, align(64))]
pub struct BufferState {
    busy: AtomicU32,
    /// Bytes of a payload being handed over while written (see `fill_handed_over`).
    written: AtomicU32,
}

/// Polls of a `written` word that saw no progress before a waiting receiver yields its core: the
/// writer may have been descheduled (an oversubscribed node).
const SPINS_BEFORE_YIELD: u32 = 1 << 12;

/// Where a pool lives (in a mapped segment).
#[derive(Clone, Copy)]
pub struct PoolView {
    states: NonNull<BufferState>,
    buffers: NonNull<u8>,
    count: usize,
    buffer_size: usize,
}

// SAFETY: a view is pointers into a shared mapping that its creator keeps alive (see `new`); the
// states are atomics and buffer bytes are handed over by the busy/free protocol.
unsafe impl Send for PoolView {}

impl PoolView {
    /// # Safety
    /// `states` must point to `count` states and `buffers` to `count * buffer_size` bytes, valid
    /// for as long as the view or any copy is used, zeroed or used only by this protocol.
    pub unsafe fn new(states: NonNull<BufferState>, buffers: NonNull<u8>, count: usize, buffer_size: usize) -> PoolView {
        PoolView { states, buffers, count, buffer_size }
    }

    fn buffer_state(&self, index: usize) -> &BufferState {
        assert!(index < self.count, "pool buffer {index} out of range");
        // SAFETY: index checked against the array length given to `new`.
        unsafe { &*self.states.as_ptr().add(index) }
    }

    fn state(&self, index: usize) -> &AtomicU32 {
        &self.buffer_state(index).busy
    }

    /// Sender: takes a free buffer, searching from `cursor` (advanced past the one taken).
    #[inline]
    pub fn acquire(&self, cursor: &mut usize) -> Option<usize> {
        for step in 0..self.count {
            let index = (*cursor + step) % self.count;
            let state = self.state(index);
            // Acquire: the receiver's reads of the buffer's previous contents happen before our
            // writes to it.
            if state.load(Ordering::Acquire) == FREE {
                state.store(BUSY, Ordering::Relaxed);
                *cursor = (index + 1) % self.count;
                return Some(index);
            }
        }
        None
    }

    /// First byte of buffer `index`.
    fn buffer_start(&self, index: usize) -> *mut u8 {
        assert!(index < self.count, "pool buffer {index} out of range");
        // SAFETY: index checked; the buffers region holds `count` buffers (see `new`).
        unsafe { self.buffers.as_ptr().add(index * self.buffer_size) }
    }

    /// Copies `payload` into buffer `index` in parts of at most `part_max` bytes, calling
    /// `after_part(bytes copied so far)` after each; returns the number of bytes.
    #[inline]
    fn copy_in(&self, index: usize, payload: &[IoSlice<'_>], part_max: usize, mut after_part: impl FnMut(usize)) -> usize {
        let len: usize = payload.iter().map(|slice| slice.len()).sum();
        assert!(len <= self.buffer_size, "payload exceeds the pool buffer");
        let start = self.buffer_start(index);
        let mut offset = 0;
        for slice in payload {
            let mut done = 0;
            while done < slice.len() {
                let part = (slice.len() - done).min(part_max);
                // SAFETY: the destination lies inside buffer `index` (the total was checked
                // above), which this sender owns between `acquire` and the receiver's release;
                // a receiver of a handed-over payload reads only what `after_part` published.
                // The source is a caller's slice, never a busy pool buffer: no overlap.
                unsafe { std::ptr::copy_nonoverlapping(slice.as_ptr().add(done), start.add(offset), part) };
                done += part;
                offset += part;
                after_part(offset);
            }
        }
        offset
    }

    /// Sender: copies `payload` into buffer `index` (acquired, not yet handed over); returns the
    /// number of bytes, which must fit in a buffer.
    pub fn fill(&self, index: usize, payload: &[IoSlice<'_>]) -> usize {
        assert_eq!(self.state(index).load(Ordering::Relaxed), BUSY, "filling a buffer that was not acquired");
        self.copy_in(index, payload, usize::MAX, |_| {})
    }

    /// Sender: before the descriptor of a payload handed over while written is published.
    pub fn start_handover(&self, index: usize) {
        assert_eq!(self.state(index).load(Ordering::Relaxed), BUSY, "handing over a buffer that was not acquired");
        // Relaxed: the descriptor's publication (Release) orders it before the receiver's reads.
        self.buffer_state(index).written.store(0, Ordering::Relaxed);
    }

    /// Sender: after `start_handover` and the descriptor's publication, copies `payload` into
    /// buffer `index` in chunks of `chunk` bytes, publishing the count written after each.
    pub fn fill_handed_over(&self, index: usize, payload: &[IoSlice<'_>], chunk: usize) -> usize {
        self.fill_handed_over_paced(index, payload, chunk, |_| {})
    }

    /// `fill_handed_over`, calling `after_chunk(bytes written)` after each publication (tests
    /// pace the writer with it).
    fn fill_handed_over_paced(&self, index: usize, payload: &[IoSlice<'_>], chunk: usize, mut after_chunk: impl FnMut(usize)) -> usize {
        assert!(payload.iter().map(|slice| slice.len()).sum::<usize>() <= u32::MAX as usize, "payload exceeds the pool buffer");
        let written = &self.buffer_state(index).written;
        self.copy_in(index, payload, chunk.max(1), |offset| {
            // Release: the bytes below `offset` are written before the count says so.
            written.store(offset as u32, Ordering::Release);
            after_chunk(offset);
        })
    }

    /// Receiver: buffer `index`, carrying a payload of `len` bytes that its sender is still
    /// writing.
    ///
    /// # Safety
    /// As for [`PoolView::payload`]: the descriptor was read, and the handle is not used after
    /// the buffer's release.
    pub unsafe fn handed_over(&self, index: usize, len: usize) -> HandedOver<'_> {
        assert!(len <= self.buffer_size, "pool descriptor out of range");
        HandedOver { start: self.buffer_start(index), len, written: &self.buffer_state(index).written, _pool: std::marker::PhantomData }
    }

    /// Receiver: the first `len` bytes of buffer `index`, carried by a frame just read.
    ///
    /// # Safety
    /// The frame that named `index` must have been read (Acquire on its stamp) and the slice must
    /// not be used after [`PoolView::release`] of the same buffer.
    pub unsafe fn payload(&self, index: usize, len: usize) -> &[u8] {
        assert!(len <= self.buffer_size, "pool descriptor out of range");
        // SAFETY: in bounds (`buffer_start` checks the index, the length is checked above); the
        // sender does not write the buffer until it is released.
        unsafe { std::slice::from_raw_parts(self.buffer_start(index), len) }
    }

    /// Receiver: hands buffer `index` back to its sender.
    #[inline]
    pub fn release(&self, index: usize) {
        self.state(index).store(FREE, Ordering::Release);
    }
}

/// A payload in a pool buffer that its sender is still writing (see the module comment).
pub struct HandedOver<'a> {
    start: *const u8,
    len: usize,
    written: &'a AtomicU32,
    _pool: std::marker::PhantomData<&'a PoolView>,
}

impl crate::Filling for HandedOver<'_> {
    fn len(&self) -> usize {
        self.len
    }

    fn written(&self, at_least: usize) -> &[u8] {
        let at_least = at_least.min(self.len);
        let mut idle = 0u32;
        loop {
            // Acquire: the bytes below the count were written before it was published.
            let written = (self.written.load(Ordering::Acquire) as usize).min(self.len);
            if written >= at_least {
                // SAFETY: the first `written` bytes are in the buffer (`handed_over` checked the
                // length) and their writer published them and no longer touches them.
                return unsafe { std::slice::from_raw_parts(self.start, written) };
            }
            idle += 1;
            if idle >= SPINS_BEFORE_YIELD {
                std::thread::yield_now();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct HeapPool {
        states: Vec<BufferState>,
        bytes: Vec<u8>,
    }

    impl HeapPool {
        fn new(count: usize, size: usize) -> HeapPool {
            HeapPool { states: (0..count).map(|_| BufferState { busy: AtomicU32::new(FREE), written: AtomicU32::new(0) }).collect(), bytes: vec![0; count * size] }
        }

        fn view(&mut self, size: usize) -> PoolView {
            let count = self.states.len();
            // SAFETY: both vectors outlive the view within each test and are never reallocated.
            unsafe { PoolView::new(NonNull::new(self.states.as_mut_ptr()).unwrap(), NonNull::new(self.bytes.as_mut_ptr()).unwrap(), count, size) }
        }
    }

    #[test]
    fn buffers_cycle_between_busy_and_free() {
        let mut memory = HeapPool::new(3, 16);
        let pool = memory.view(16);
        let mut cursor = 0;
        let taken: Vec<usize> = (0..3).map(|_| pool.acquire(&mut cursor).unwrap()).collect();
        assert_eq!(taken, vec![0, 1, 2]);
        assert_eq!(pool.acquire(&mut cursor), None);
        assert_eq!(pool.fill(1, &[IoSlice::new(b"abc"), IoSlice::new(b"defgh")]), 8);
        // SAFETY: buffer 1 was filled above and is released only after the read.
        assert_eq!(unsafe { pool.payload(1, 8) }, b"abcdefgh");
        pool.release(1);
        assert_eq!(pool.acquire(&mut cursor), Some(1));
        assert_eq!(pool.acquire(&mut cursor), None);
    }

    #[test]
    fn a_handed_over_payload_is_read_while_it_is_written() {
        use crate::Filling;
        use std::sync::atomic::AtomicBool;
        const SIZE: usize = 1 << 16;
        const CHUNK: usize = 64;
        let mut memory = HeapPool::new(1, SIZE);
        let pool = memory.view(SIZE);
        for (round, len) in [65usize, 4096, 40_000, SIZE].into_iter().enumerate() {
            let message: Vec<u8> = (0..len).map(|i| (i * 7 + round) as u8).collect();
            let index = pool.acquire(&mut 0).unwrap();
            pool.start_handover(index);
            let (published, first_look_taken) = (&AtomicBool::new(false), &AtomicBool::new(false));
            let (first_look, received) = std::thread::scope(|scope| {
                let receiver = scope.spawn(move || {
                    while !published.load(Ordering::Acquire) {
                        std::thread::yield_now();
                    }
                    // SAFETY: the "descriptor" (published) was read; the handle is dropped
                    // before the release below.
                    let filling = unsafe { pool.handed_over(index, len) };
                    let first_look = filling.written(1).len();
                    first_look_taken.store(true, Ordering::Release);
                    let mut out = Vec::new();
                    crate::Payload::Filling(&filling).append_to(&mut out);
                    (first_look, out)
                });
                published.store(true, Ordering::Release);
                // The writer stops after its first chunk until the reader has looked, then goes
                // on slowly, so the reader's copy runs into bytes not yet written.
                let mut publications = 0;
                let pace = |written: usize| {
                    publications += 1;
                    if publications == 1 {
                        while !first_look_taken.load(Ordering::Acquire) {
                            std::thread::yield_now();
                        }
                    } else if written.is_multiple_of(8 * CHUNK) {
                        std::thread::sleep(std::time::Duration::from_micros(50));
                    }
                };
                let parts = [IoSlice::new(&message[..len / 3]), IoSlice::new(&message[len / 3..])];
                assert_eq!(pool.fill_handed_over_paced(index, &parts, CHUNK, pace), len);
                receiver.join().unwrap()
            });
            assert_eq!(first_look, CHUNK.min(len / 3), "round {round}: the reader saw more than was written");
            assert!(received == message, "round {round}: {len} bytes arrived altered");
            pool.release(index);
        }
    }

    #[test]
    #[should_panic(expected = "exceeds the pool buffer")]
    fn an_oversized_fill_is_refused() {
        let mut memory = HeapPool::new(1, 4);
        let pool = memory.view(4);
        let index = pool.acquire(&mut 0).unwrap();
        pool.fill(index, &[IoSlice::new(b"12345")]);
    }
}
