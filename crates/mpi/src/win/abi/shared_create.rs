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

/// The pages holding `size` bytes at `base`: their start and length.
fn page_span(base: usize, size: usize, page: usize) -> (usize, usize) {
    let start = base - base % page;
    (start, (base + size).next_multiple_of(page) - start)
}

fn file_name(pid: i32, context: u32) -> String {
    format!("braid-winmem-{pid}-{context}")
}

/// Whether this rank's memory may move (see the module's description).
fn qualifies(base: *mut c_void, size: usize) -> bool {
    if size == 0 {
        return true;
    }
    let (start, len) = page_span(base as usize, size, memory_map::page_size());
    let whole_pages = start == base as usize && len == size;
    memory_map::in_private_anonymous_memory(start, start + len).unwrap_or(false) && (whole_pages || memory_map::thread_count().is_ok_and(|threads| threads == 1))
}

/// Shares the memory of every rank of a created window on one node (collective over `dup`):
/// the memory and each rank's base address mapped here, or None (nothing changed) when some rank's
/// memory does not qualify or a step failed somewhere.
#[allow(clippy::too_many_arguments)]
pub fn share(dup: MPI_Comm, rank: usize, context: u32, base: *mut c_void, size: usize, pids: &[i32], addresses: &[u64], sizes: &[usize]) -> MpiResult<Option<(SharedCreated, Bases)>> {
    if !everyone(dup, qualifies(base, size), "agreeing on sharing the window memory")? {
        return Ok(None);
    }
    let page = memory_map::page_size();
    let own_name = file_name(pids[rank], context);
    let own = if size == 0 {
        Ok(None)
    } else {
        let (start, len) = page_span(base as usize, size, page);
        // SAFETY: the span is private anonymous memory of this process (checked above); with
        // whole pages nothing but the window is in it, else this process has one thread, which
        // is here; the window's memory stays allocated while the window exists (MPI's rule).
        unsafe { SharedInPlace::new(&own_name, start as *mut u8, len, start == base as usize && len == size) }.map(Some)
    };
    if let Err(error) = &own {
        eprintln!("Braid: the memory of a created window cannot be shared in place ({error}): its operations use single copies");
    }
    let moved = own.is_ok();
    if !everyone(dup, moved, "agreeing on the window memory moved")? {
        if moved && size > 0 {
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
    if size > 0 {
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
        assert_eq!(page_span(4096, 4096, 4096), (4096, 4096));
        assert_eq!(page_span(4100, 8, 4096), (4096, 4096));
        assert_eq!(page_span(8190, 4, 4096), (4096, 8192));
        assert_eq!(page_span(8192, 1, 4096), (8192, 4096));
    }
}
