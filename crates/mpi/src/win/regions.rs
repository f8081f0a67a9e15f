//! A dynamic window's attached regions, published in the window's shared segment so that
//! `SingleCopy` origins check their accesses without asking the target: one table per rank,
//! written only by its rank (MPI_Win_attach/detach) under a sequence lock, read by origins.
//! A rank with more regions than a table holds marks it overflowed; origins then send their
//! operations to it as messages, and the target checks them itself.

use std::sync::atomic::{fence, AtomicU64, Ordering};

/// Regions one table holds.
pub const REGIONS: usize = 63;
/// Bytes of one table: the sequence word, the count, then (address, length) pairs.
pub const TABLE_LEN: usize = 16 + REGIONS * 16;
/// The count of an overflowed table.
const OVERFLOW: u64 = u64::MAX;

#[repr(C)]
pub struct Table {
    /// Odd while its rank writes.
    sequence: AtomicU64,
    count: AtomicU64,
    regions: [[AtomicU64; 2]; REGIONS],
}

/// A consistent copy of a table's regions.
pub struct Snapshot {
    regions: [(usize, usize); REGIONS],
    used: usize,
}

impl Snapshot {
    pub fn regions(&self) -> &[(usize, usize)] {
        &self.regions[..self.used]
    }
}

impl Table {
    /// Publishes `regions` (its rank only).
    pub fn publish(&self, regions: &[(usize, usize)]) {
        let sequence = self.sequence.load(Ordering::Relaxed);
        self.sequence.store(sequence.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        if regions.len() > REGIONS {
            self.count.store(OVERFLOW, Ordering::Relaxed);
        } else {
            for (slot, &(address, len)) in self.regions.iter().zip(regions) {
                slot[0].store(address as u64, Ordering::Relaxed);
                slot[1].store(len as u64, Ordering::Relaxed);
            }
            self.count.store(regions.len() as u64, Ordering::Relaxed);
        }
        self.sequence.store(sequence.wrapping_add(2), Ordering::Release);
    }

    /// A consistent copy of the table; None when it overflowed.
    pub fn read(&self) -> Option<Snapshot> {
        loop {
            let before = self.sequence.load(Ordering::Acquire);
            if before % 2 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let count = self.count.load(Ordering::Relaxed);
            let mut regions = [(0usize, 0usize); REGIONS];
            let used = count.min(REGIONS as u64) as usize;
            for (out, slot) in regions.iter_mut().zip(&self.regions).take(used) {
                *out = (slot[0].load(Ordering::Relaxed) as usize, slot[1].load(Ordering::Relaxed) as usize);
            }
            fence(Ordering::Acquire);
            if self.sequence.load(Ordering::Relaxed) == before {
                return (count != OVERFLOW).then_some(Snapshot { regions, used });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_regions_read_back_and_too_many_overflow() {
        // SAFETY: all-zero bytes are a valid empty table (atomics of zero).
        let table: Table = unsafe { std::mem::zeroed() };
        assert!(table.read().unwrap().regions().is_empty());
        table.publish(&[(0x1000, 64), (0x2000, 8)]);
        assert_eq!(table.read().expect("two regions fit").regions(), &[(0x1000, 64), (0x2000, 8)]);
        table.publish(&vec![(0x1000, 1); REGIONS + 1]);
        assert!(table.read().is_none());
        table.publish(&[]);
        assert!(table.read().unwrap().regions().is_empty());
        assert_eq!(std::mem::size_of::<Table>(), TABLE_LEN);
    }
}
