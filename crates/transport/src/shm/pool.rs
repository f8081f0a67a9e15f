//! A rank's shared send-buffer pool: fixed-size buffers in the sender's own segment, for frames too
//! large for the ring cells. Each buffer has a state word on its own cache line: only the sender
//! marks a buffer busy, only the receiver of the frame that carried it marks it free again, so no
//! read-modify-write is needed.

use std::io::IoSlice;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

const FREE: u32 = 0;
const BUSY: u32 = 1;

/// One buffer's state, alone on its cache line. All-zero bytes mean free.
#[repr(C, align(64))]
pub struct BufferState {
    busy: AtomicU32,
}

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

    fn state(&self, index: usize) -> &AtomicU32 {
        assert!(index < self.count, "pool buffer {index} out of range");
        // SAFETY: index checked against the array length given to `new`.
        unsafe { &(*self.states.as_ptr().add(index)).busy }
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

    /// Sender: copies `payload` into buffer `index` (acquired, not yet handed over); returns the
    /// number of bytes, which must fit in a buffer.
    pub fn fill(&self, index: usize, payload: &[IoSlice<'_>]) -> usize {
        assert_eq!(self.state(index).load(Ordering::Relaxed), BUSY, "filling a buffer that was not acquired");
        let mut offset = 0;
        for slice in payload {
            assert!(offset + slice.len() <= self.buffer_size, "payload exceeds the pool buffer");
            // SAFETY: the destination range lies inside buffer `index` (checked above), which this
            // sender owns between `acquire` and the frame's publication; the source is a caller's
            // slice, never a busy pool buffer, so the ranges do not overlap.
            unsafe {
                std::ptr::copy_nonoverlapping(slice.as_ptr(), self.buffers.as_ptr().add(index * self.buffer_size + offset), slice.len());
            }
            offset += slice.len();
        }
        offset
    }

    /// Receiver: the first `len` bytes of buffer `index`, carried by a frame just read.
    ///
    /// # Safety
    /// The frame that named `index` must have been read (Acquire on its stamp) and the slice must
    /// not be used after [`PoolView::release`] of the same buffer.
    pub unsafe fn payload(&self, index: usize, len: usize) -> &[u8] {
        assert!(index < self.count && len <= self.buffer_size, "pool descriptor out of range");
        // SAFETY: in bounds (checked); the sender does not write the buffer until it is released.
        unsafe { std::slice::from_raw_parts(self.buffers.as_ptr().add(index * self.buffer_size), len) }
    }

    /// Receiver: hands buffer `index` back to its sender.
    #[inline]
    pub fn release(&self, index: usize) {
        self.state(index).store(FREE, Ordering::Release);
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
            HeapPool { states: (0..count).map(|_| BufferState { busy: AtomicU32::new(FREE) }).collect(), bytes: vec![0; count * size] }
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
    #[should_panic(expected = "exceeds the pool buffer")]
    fn an_oversized_fill_is_refused() {
        let mut memory = HeapPool::new(1, 4);
        let pool = memory.view(4);
        let index = pool.acquire(&mut 0).unwrap();
        pool.fill(index, &[IoSlice::new(b"12345")]);
    }
}
