//! A file view as arithmetic: which bytes of the file a process sees. The filetype is tiled from
//! the displacement, each tile `extent` bytes after the previous, and the process sees the data
//! bytes of its type map, in order: a stream of visible bytes. Data access positions are etypes
//! of that stream; [`View::segments`] maps a stretch of the stream to the file's byte ranges.
//! No I/O here.

/// One view of one process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct View {
    /// Byte where the first tile starts.
    pub disp: u64,
    /// Data bytes of one etype (positions count these).
    pub etype_size: u64,
    /// The filetype's runs of data bytes in one tile: (offset from the tile's start, length),
    /// offsets nondecreasing, adjacent runs merged.
    runs: Vec<(u64, u64)>,
    /// Data bytes before each run within a tile.
    before: Vec<u64>,
    /// Data bytes of one tile.
    tile_bytes: u64,
    /// Bytes from one tile's start to the next's.
    extent: u64,
}

/// Why a filetype cannot be a view's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ViewError {
    /// A displacement before the tile's start, or smaller than one before it.
    Decreasing,
    /// Tiles that would overlap: data past the extent.
    Overlapping,
    /// The filetype's data is not a whole number of etypes.
    NotEtypes,
}

impl View {
    /// The view every file opens with: displacement 0, bytes, every byte visible.
    pub fn bytes() -> View {
        View::new(0, 1, &[(0, 1)], 1).expect("the byte view is valid")
    }

    /// A view from the filetype's runs (its type map's data, in order, as offsets from the
    /// start of a tile: `(offset, length)`) and extent.
    pub fn new(disp: u64, etype_size: u64, filetype_runs: &[(isize, usize)], extent: isize) -> Result<View, ViewError> {
        let mut runs: Vec<(u64, u64)> = Vec::with_capacity(filetype_runs.len());
        for &(offset, len) in filetype_runs.iter().filter(|(_, len)| *len > 0) {
            let offset = u64::try_from(offset).map_err(|_| ViewError::Decreasing)?;
            let len = len as u64;
            match runs.last_mut() {
                Some((last, last_len)) if offset < *last + *last_len => return Err(ViewError::Decreasing),
                Some((last, last_len)) if offset == *last + *last_len => *last_len += len,
                _ => runs.push((offset, len)),
            }
        }
        let tile_bytes: u64 = runs.iter().map(|(_, len)| len).sum();
        let extent = u64::try_from(extent).unwrap_or(0);
        if runs.last().is_some_and(|(offset, len)| offset + len > extent) {
            return Err(ViewError::Overlapping);
        }
        if etype_size > 0 && !tile_bytes.is_multiple_of(etype_size) {
            return Err(ViewError::NotEtypes);
        }
        let before = runs
            .iter()
            .scan(0u64, |sum, (_, len)| {
                let at = *sum;
                *sum += len;
                Some(at)
            })
            .collect();
        Ok(View { disp, etype_size: etype_size.max(1), runs, before, tile_bytes, extent })
    }

    /// Whether the visible bytes are the file's bytes from the displacement on, without holes.
    fn is_linear(&self) -> bool {
        self.runs.len() == 1 && self.runs[0] == (0, self.extent)
    }

    /// Calls `visit(file offset, length)` for the file's byte ranges behind `len` visible bytes
    /// from visible byte `start`, in stream order, ranges that continue one another merged.
    pub fn segments(&self, start: u64, len: u64, mut visit: impl FnMut(u64, u64)) {
        if len == 0 || self.tile_bytes == 0 {
            return;
        }
        if self.is_linear() {
            visit(self.disp + start, len);
            return;
        }
        let mut pending: Option<(u64, u64)> = None;
        let mut emit = |offset: u64, length: u64| match &mut pending {
            Some((at, run)) if *at + *run == offset => *run += length,
            _ => {
                if let Some((at, run)) = pending.replace((offset, length)) {
                    visit(at, run);
                }
            }
        };
        let (mut tile, mut within) = (start / self.tile_bytes, start % self.tile_bytes);
        let mut left = len;
        // The run holding the first byte: the last whose data starts at or before it.
        let mut index = self.before.partition_point(|&before| before <= within) - 1;
        while left > 0 {
            let (offset, run_len) = self.runs[index];
            let skip = within - self.before[index];
            let take = (run_len - skip).min(left);
            emit(self.disp + tile * self.extent + offset + skip, take);
            left -= take;
            within += take;
            index += 1;
            if index == self.runs.len() {
                (tile, within, index) = (tile + 1, 0, 0);
            }
        }
        if let Some((at, run)) = pending {
            visit(at, run);
        }
    }

    /// [`View::segments`] as a list: `(file offset, length)` in stream order.
    pub fn segment_list(&self, start: u64, len: u64) -> Vec<(u64, u64)> {
        let mut segments = Vec::new();
        self.segments(start, len, |offset, length| segments.push((offset, length)));
        segments
    }

    /// The file offset of visible byte `position` (where an access from there starts).
    pub fn file_offset(&self, position: u64) -> u64 {
        let mut found = self.disp;
        self.segments(position, 1, |offset, _| found = offset);
        found
    }

    /// The visible bytes before file offset `offset`: how far the stream has reached once the
    /// file ends there (a read's count at the end of the file).
    pub fn visible_before(&self, offset: u64) -> u64 {
        if offset <= self.disp || self.tile_bytes == 0 {
            return 0;
        }
        let relative = offset - self.disp;
        let (tile, within) = (relative / self.extent.max(1), relative % self.extent.max(1));
        let partial: u64 = self.runs.iter().map(|&(start, len)| len.min(within.saturating_sub(start))).sum();
        tile * self.tile_bytes + partial
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_byte_view_is_the_file_itself() {
        let view = View::bytes();
        assert_eq!(view.segment_list(10, 100), vec![(10, 100)]);
        assert_eq!(view.file_offset(7), 7);
        assert_eq!(view.visible_before(50), 50);
    }

    #[test]
    fn an_interleaved_filetype_shows_every_other_block() {
        // Rank 1 of 2 with blocks of 4 bytes: data at [4, 8) of every 8 bytes, from byte 100.
        let view = View::new(100, 4, &[(4, 4)], 8).unwrap();
        assert_eq!(view.segment_list(0, 12), vec![(104, 4), (112, 4), (120, 4)]);
        assert_eq!(view.segment_list(2, 4), vec![(106, 2), (112, 2)]);
        assert_eq!(view.file_offset(4), 112);
        assert_eq!(view.visible_before(100), 0);
        assert_eq!(view.visible_before(106), 2);
        assert_eq!(view.visible_before(116), 8);
    }

    #[test]
    fn runs_that_meet_merge_and_so_do_tiles_that_meet() {
        // Two runs that touch, filling the whole extent: one contiguous stretch.
        let view = View::new(0, 1, &[(0, 2), (2, 2)], 4).unwrap();
        assert_eq!(view.segment_list(1, 10), vec![(1, 10)]);
        // A hole at the end of each tile.
        let holes = View::new(0, 1, &[(0, 3)], 4).unwrap();
        assert_eq!(holes.segment_list(1, 5), vec![(1, 2), (4, 3)]);
    }

    #[test]
    fn filetypes_a_view_cannot_have_are_refused() {
        assert_eq!(View::new(0, 1, &[(4, 2), (0, 2)], 8), Err(ViewError::Decreasing));
        assert_eq!(View::new(0, 1, &[(-1, 2)], 8), Err(ViewError::Decreasing));
        assert_eq!(View::new(0, 1, &[(0, 10)], 8), Err(ViewError::Overlapping));
        assert_eq!(View::new(0, 4, &[(0, 6)], 8), Err(ViewError::NotEtypes));
    }

    #[test]
    fn segments_cover_exactly_the_bytes_asked_for() {
        // A subarray-like filetype: 3 runs of different lengths in a tile of 20.
        let view = View::new(7, 1, &[(1, 2), (5, 3), (12, 4)], 20).unwrap();
        let mut expected = Vec::new();
        for tile in 0..5u64 {
            for (offset, len) in [(1u64, 2u64), (5, 3), (12, 4)] {
                expected.extend((0..len).map(|i| 7 + tile * 20 + offset + i));
            }
        }
        for start in 0..20u64 {
            for len in 0..25u64 {
                let mut bytes = Vec::new();
                view.segments(start, len, |offset, length| bytes.extend(offset..offset + length));
                assert_eq!(bytes, expected[start as usize..(start + len) as usize], "start {start} len {len}");
            }
        }
    }
}
