//! MPI_Win_create windows on one node reached by loads and stores: each rank's window memory is
//! moved, where it lies and with what it holds, under a shared-memory file
//! ([`braid_sys::shm::SharedInPlace`]), and every rank maps the others' files, so that its
//! targets are `Direct` ones, as in an allocated window, instead of one system call
//! (`SingleCopy`) per operation.
//!
//! Only memory that can move safely qualifies: private anonymous memory (the heap, `malloc`'s or
//! the program's own `mmap`s; not the stack, files or memory already shared), and either exactly
//! whole pages (their bytes are the window's alone; they become private again at MPI_Win_free),
//! or, in a process with one thread, any span: the pages around the window then hold other data
//! of the program, which no other thread can be writing while the pages move. Such a span stays
//! backed by the (removed) file after the window is freed; the only visible difference is that a
//! child made by `fork` would share those pages with its parent. Every rank must qualify, or the
//! window takes the single-copy path. `BRAID_WIN_CREATE_SHARE=off` turns this off.

use std::ffi::c_void;

use braid_sys::memory_map;
use braid_sys::shm::{self, SharedInPlace, SharedMapping};

use super::everyone;
use crate::consts::*;
use crate::error::MpiResult;
use crate::win::table::SharedCreated;

/// Where each rank's window memory is mapped in this process.
type Bases = Vec<Option<*mut u8>>;

/// The pages holding a window's memory.
struct Span {
    start: usize,
    len: usize,
    /// Whether they hold the window's bytes and nothing else.
    whole_pages: bool,
}

impl Span {
    /// The pages holding `size` bytes at `base`; None for no bytes.
    fn of(base: usize, size: usize, page: usize) -> Option<Span> {
        (size > 0).then(|| {
            let start = base - base % page;
            let len = (base + size).next_multiple_of(page) - start;
            Span { start, len, whole_pages: start == base && len == size }
        })
    }

    /// Whether the pages may move (see the module's description).
    fn qualifies(&self) -> bool {
        memory_map::in_private_anonymous_memory(self.start, self.start + self.len).unwrap_or(false) && (self.whole_pages || memory_map::thread_count().is_ok_and(|threads| threads == 1))
    }
}

fn file_name(pid: i32, context: u32) -> String {
    format!("braid-winmem-{pid}-{context}")
}

/// Shares the memory of every rank of a created window on one node (collective over `dup`):
/// the memory and each rank's base address mapped here, or None (nothing changed) when some rank's
/// memory does not qualify or a step failed somewhere.
#[allow(clippy::too_many_arguments)]
pub fn share(dup: MPI_Comm, rank: usize, context: u32, base: *mut c_void, size: usize, pids: &[i32], addresses: &[u64], sizes: &[usize]) -> MpiResult<Option<(SharedCreated, Bases)>> {
    let page = memory_map::page_size();
    let span = Span::of(base as usize, size, page);
    if !everyone(dup, span.as_ref().is_none_or(Span::qualifies), "agreeing on sharing the window memory")? {
        return Ok(None);
    }
    let own_name = file_name(pids[rank], context);
    let own = match &span {
        None => Ok(None),
        // SAFETY: the span is private anonymous memory of this process (checked above); with
        // whole pages nothing but the window is in it, else this process has one thread, which
        // is here; the window's memory stays allocated while the window exists (MPI's rule).
        Some(span) => unsafe { SharedInPlace::new(&own_name, span.start as *mut u8, span.len, span.whole_pages) }.map(Some),
    };
    if let Err(error) = &own {
        eprintln!("Braid: the memory of a created window cannot be shared in place ({error}): its operations use single copies");
    }
    let made_file = matches!(own, Ok(Some(_)));
    if !everyone(dup, own.is_ok(), "agreeing on the window memory moved")? {
        if made_file {
            let _ = shm::unlink(&own_name);
        }
        return Ok(None);
    }
    let mut peers = Vec::new();
    let mut bases: Bases = vec![None; sizes.len()];
    bases[rank] = Some(base.cast());
    let mut opened = true;
    for r in (0..sizes.len()).filter(|&r| r != rank) {
        if sizes[r] == 0 {
            bases[r] = Some(std::ptr::null_mut());
            continue;
        }
        match SharedMapping::open(&file_name(pids[r], context)) {
            Ok(mapping) => {
                let offset = addresses[r] as usize % page;
                bases[r] = Some(mapping.as_ptr().wrapping_add(offset));
                peers.push(mapping);
            }
            Err(error) => {
                eprintln!("Braid: the memory of rank {r} of a created window cannot be mapped ({error}): its operations use single copies");
                opened = false;
                break;
            }
        }
    }
    let all_opened = everyone(dup, opened, "agreeing on the window memory mapped");
    if made_file {
        let _ = shm::unlink(&own_name);
    }
    if !all_opened? {
        return Ok(None);
    }
    let own = own.unwrap_or(None);
    Ok(Some((SharedCreated { own, peers }, bases)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_span_covers_every_page_the_window_touches() {
        let span = |base, size| Span::of(base, size, 4096).map(|span| (span.start, span.len, span.whole_pages));
        assert_eq!(span(4096, 4096), Some((4096, 4096, true)));
        assert_eq!(span(4100, 8), Some((4096, 4096, false)));
        assert_eq!(span(8190, 4), Some((4096, 8192, false)));
        assert_eq!(span(8192, 1), Some((8192, 4096, false)));
        assert_eq!(span(8192, 0), None);
    }
}
