//! One rank's shared-memory segment: header, doorbell, incoming rings, send pool (layout in the
//! `shm` module comment).

use std::io;
use std::mem::size_of;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use braid_sys::futex::Doorbell;
use braid_sys::shm::SharedMapping;

use super::pool::{BufferState, PoolView};
use super::ring::{Cell, Consumed, RingView, CELL_BYTES};

const MAGIC: u64 = u64::from_le_bytes(*b"BRAIDSH1");
const PAGE: usize = 4096;

/// The segment's first cache line: what a peer checks before trusting the rest.
#[repr(C, align(64))]
struct Header {
    magic: AtomicU64,
    ring_cells: AtomicU64,
    rings: AtomicU64,
    pool_buffers: AtomicU64,
    pool_buffer_size: AtomicU64,
    inline_max: AtomicU64,
    owner_pid: AtomicU64,
}

/// The shape of a segment; every rank of a node computes the same one from the shared settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub ring_cells: usize,
    /// One incoming ring per other rank on the node.
    pub rings: usize,
    pub pool_buffers: usize,
    pub pool_buffer_size: usize,
    /// Not part of the geometry, but a receiver's scratch buffer is sized by it.
    pub inline_max: usize,
}

impl Layout {
    const DOORBELL: usize = size_of::<Header>();
    const RINGS: usize = Self::DOORBELL + size_of::<Doorbell>();

    fn ring_stride(&self) -> usize {
        size_of::<Consumed>() + self.ring_cells * CELL_BYTES
    }

    fn ring_offset(&self, slot: usize) -> usize {
        Self::RINGS + slot * self.ring_stride()
    }

    fn pool_states_offset(&self) -> usize {
        self.ring_offset(self.rings)
    }

    fn pool_buffers_offset(&self) -> usize {
        (self.pool_states_offset() + self.pool_buffers * size_of::<BufferState>()).next_multiple_of(PAGE)
    }

    /// Total bytes, or None if the settings overflow the address space.
    pub fn total_len(&self) -> Option<usize> {
        let stride = self.ring_cells.checked_mul(CELL_BYTES)?.checked_add(size_of::<Consumed>())?;
        let rings = stride.checked_mul(self.rings)?.checked_add(Self::RINGS)?;
        let states = rings.checked_add(self.pool_buffers.checked_mul(size_of::<BufferState>())?)?;
        states.checked_next_multiple_of(PAGE)?.checked_add(self.pool_buffers.checked_mul(self.pool_buffer_size)?)
    }
}

/// A mapped segment (this rank's own, or a peer's).
pub struct Segment {
    mapping: SharedMapping,
    layout: Layout,
}

/// A thread sleeping on its rank's doorbell holds the segment mapped for as long as it sleeps.
impl crate::SharedDoorbell for Segment {
    fn sleep(&self, token: u32, timeout: std::time::Duration) {
        self.doorbell().sleep(token, timeout);
    }

    fn futex(&self) -> Option<&braid_sys::futex::Doorbell> {
        Some(self.doorbell())
    }
}

impl Segment {
    /// Creates and maps the file `name` (zeroed, faulted in by this thread) and writes its header.
    pub fn create(name: &str, layout: Layout) -> io::Result<Segment> {
        let len = layout.total_len().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "shared-memory settings are too large"))?;
        let segment = Segment { mapping: SharedMapping::create(name, len)?, layout };
        let header = segment.header();
        header.ring_cells.store(layout.ring_cells as u64, Ordering::Relaxed);
        header.rings.store(layout.rings as u64, Ordering::Relaxed);
        header.pool_buffers.store(layout.pool_buffers as u64, Ordering::Relaxed);
        header.pool_buffer_size.store(layout.pool_buffer_size as u64, Ordering::Relaxed);
        header.inline_max.store(layout.inline_max as u64, Ordering::Relaxed);
        header.owner_pid.store(u64::from(std::process::id()), Ordering::Relaxed);
        header.magic.store(MAGIC, Ordering::Release);
        Ok(segment)
    }

    /// Maps a peer's segment and checks that it has the expected shape.
    pub fn open(name: &str, layout: Layout) -> Result<Segment, String> {
        let mapping = SharedMapping::open(name).map_err(|error| format!("cannot open shared memory {name}: {error}"))?;
        let expected_len = layout.total_len().unwrap_or(usize::MAX);
        if mapping.len() != expected_len {
            return Err(format!("shared memory {name} has {} bytes, expected {expected_len}: ranks on this node disagree on the BRAID_SHM_* settings", mapping.len()));
        }
        let segment = Segment { mapping, layout };
        let header = segment.header();
        if header.magic.load(Ordering::Acquire) != MAGIC {
            return Err(format!("shared memory {name} is not a Braid segment"));
        }
        let found = Layout {
            ring_cells: header.ring_cells.load(Ordering::Relaxed) as usize,
            rings: header.rings.load(Ordering::Relaxed) as usize,
            pool_buffers: header.pool_buffers.load(Ordering::Relaxed) as usize,
            pool_buffer_size: header.pool_buffer_size.load(Ordering::Relaxed) as usize,
            inline_max: header.inline_max.load(Ordering::Relaxed) as usize,
        };
        if found != layout {
            return Err(format!("shared memory {name} has layout {found:?}, expected {layout:?}: ranks on this node disagree on the BRAID_SHM_* settings"));
        }
        Ok(segment)
    }

    fn at<T>(&self, offset: usize) -> NonNull<T> {
        debug_assert!(offset + size_of::<T>() <= self.mapping.len() && offset & (std::mem::align_of::<T>() - 1) == 0);
        // SAFETY: the offset lies inside the mapping (the layout fits its length, checked at
        // create/open), so the pointer is in bounds and non-null.
        unsafe { NonNull::new_unchecked(self.mapping.as_ptr().add(offset).cast()) }
    }

    fn header(&self) -> &Header {
        // SAFETY: the mapping starts with a Header (page aligned, zero or initialised by its
        // creator, only accessed atomically) and lives as long as `self`.
        unsafe { self.at::<Header>(0).as_ref() }
    }

    /// The process that created this segment.
    pub fn owner_pid(&self) -> i32 {
        self.header().owner_pid.load(Ordering::Relaxed) as i32
    }

    /// The doorbell of the rank that owns this segment.
    pub fn doorbell(&self) -> &Doorbell {
        // SAFETY: a zero-valid, 64-byte aligned Doorbell at a fixed offset inside the mapping,
        // accessed only through its atomics, living as long as `self`.
        unsafe { self.at::<Doorbell>(Layout::DOORBELL).as_ref() }
    }

    /// The incoming ring `slot` of this segment's owner. The view must not outlive `self`.
    pub fn ring(&self, slot: usize) -> RingView {
        assert!(slot < self.layout.rings);
        let consumed = self.at::<Consumed>(self.layout.ring_offset(slot));
        let cells = self.at::<Cell>(self.layout.ring_offset(slot) + size_of::<Consumed>());
        // SAFETY: `ring_cells` cells and their Consumed line lie inside the mapping at the
        // layout's offsets, zeroed at creation and used only by the ring protocol; the caller
        // keeps the segment mapped while it uses the view.
        unsafe { RingView::new(cells, self.layout.ring_cells, consumed) }
    }

    /// The send pool of this segment's owner. The view must not outlive `self`.
    pub fn pool(&self) -> PoolView {
        let states = self.at::<BufferState>(self.layout.pool_states_offset());
        let buffers = self.at::<u8>(self.layout.pool_buffers_offset());
        // SAFETY: the states and buffers lie inside the mapping at the layout's offsets, zeroed at
        // creation and used only by the pool protocol; the caller keeps the segment mapped.
        unsafe { PoolView::new(states, buffers, self.layout.pool_buffers, self.layout.pool_buffer_size) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_regions_are_aligned_and_disjoint() {
        let layout = Layout { ring_cells: 8, rings: 3, pool_buffers: 5, pool_buffer_size: 5000, inline_max: 256 };
        assert_eq!(Layout::RINGS % 64, 0);
        assert_eq!(layout.ring_offset(1) - layout.ring_offset(0), 64 + 8 * 64);
        assert!(layout.pool_states_offset() >= layout.ring_offset(2) + 64 + 8 * 64);
        assert_eq!(layout.pool_buffers_offset() % PAGE, 0);
        assert_eq!(layout.total_len(), Some(layout.pool_buffers_offset() + 5 * 5000));
        assert_eq!(Layout { ring_cells: usize::MAX / 8, ..layout }.total_len(), None);
    }
}
