//! What this process's memory map (`/proc/self/maps`) and status say about a range of its memory:
//! whether memory may be moved under a shared mapping in place (see [`crate::shm::SharedInPlace`]).

use std::io;

/// The size of a page.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).ok().filter(|&size| size > 0).unwrap_or(4096)
}

/// Whether `[start, end)` lies in private, anonymous, readable and writable memory of this
/// process other than the main thread's stack (the heap, or memory from `mmap`).
pub fn in_private_anonymous_memory(start: usize, end: usize) -> io::Result<bool> {
    Ok(maps_hold_private_anonymous(&std::fs::read_to_string("/proc/self/maps")?, start, end))
}

/// The number of threads of this process.
pub fn thread_count() -> io::Result<usize> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    status.lines().find_map(|line| line.strip_prefix("Threads:")).and_then(|count| count.trim().parse().ok()).ok_or_else(|| io::Error::other("/proc/self/status has no thread count"))
}

/// [`in_private_anonymous_memory`] on the text of a maps file (its lines in address order): the
/// range must be covered by qualifying mappings that follow each other with no gap.
fn maps_hold_private_anonymous(maps: &str, start: usize, end: usize) -> bool {
    if start >= end {
        return false;
    }
    let mut covered = start;
    for line in maps.lines() {
        let Some((low, high, qualifies)) = parse_line(line) else { continue };
        if high <= covered {
            continue;
        }
        if low > covered || !qualifies {
            return false;
        }
        covered = high;
        if covered >= end {
            return true;
        }
    }
    false
}

/// A maps line's range, and whether it is private, anonymous, readable and writable memory other
/// than the stack.
fn parse_line(line: &str) -> Option<(usize, usize, bool)> {
    let mut fields = line.split_whitespace();
    let (range, perms, _offset, _device, inode) = (fields.next()?, fields.next()?, fields.next()?, fields.next()?, fields.next()?);
    let path = fields.next().unwrap_or("");
    let (low, high) = range.split_once('-')?;
    let (low, high) = (usize::from_str_radix(low, 16).ok()?, usize::from_str_radix(high, 16).ok()?);
    Some((low, high, perms.starts_with("rw") && perms.ends_with('p') && inode == "0" && (path.is_empty() || path == "[heap]")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
55d0a0000000-55d0a0021000 rw-p 00000000 00:00 0                          [heap]
7effff000000-7f0000000000 rw-p 00000000 00:00 0 
7f0000000000-7f0000400000 rw-p 00000000 00:00 0 
7f0000400000-7f0000500000 rw-s 00000000 00:1a 12345                      /dev/shm/braid-x
7f0000500000-7f0000600000 r--p 00000000 08:01 777                        /usr/lib/libc.so.6
7f0000600000-7f0000700000 rw-p 00001000 08:01 777                        /usr/lib/libc.so.6
7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0                          [stack]
";

    #[test]
    fn the_heap_and_anonymous_memory_qualify() {
        assert!(maps_hold_private_anonymous(MAPS, 0x55d0a0001000, 0x55d0a0002008));
        assert!(maps_hold_private_anonymous(MAPS, 0x7f0000000000, 0x7f0000400000));
        assert!(maps_hold_private_anonymous(MAPS, 0x7effffff0000, 0x7f0000010000), "two adjacent mappings");
    }

    #[test]
    fn shared_file_backed_stack_and_straddling_ranges_do_not() {
        assert!(!maps_hold_private_anonymous(MAPS, 0x7f0000400000, 0x7f0000401000), "shared");
        assert!(!maps_hold_private_anonymous(MAPS, 0x7f0000600000, 0x7f0000601000), "file-backed");
        assert!(!maps_hold_private_anonymous(MAPS, 0x7f0000500000, 0x7f0000501000), "read-only");
        assert!(!maps_hold_private_anonymous(MAPS, 0x7ffc00001000, 0x7ffc00002000), "stack");
        assert!(!maps_hold_private_anonymous(MAPS, 0x7f00003ff000, 0x7f0000401000), "into a shared mapping");
        assert!(!maps_hold_private_anonymous(MAPS, 0x55d0a0020000, 0x7effff001000), "across a gap");
        assert!(!maps_hold_private_anonymous(MAPS, 0x1000, 0x2000), "unmapped");
        assert!(!maps_hold_private_anonymous(MAPS, 0x7f0000001000, 0x7f0000001000), "empty");
        assert!(!maps_hold_private_anonymous("garbage line\n", 0x1000, 0x2000));
    }

    #[test]
    fn this_process_has_threads_and_its_heap_is_found() {
        assert!(thread_count().unwrap() >= 1);
        let boxed = Box::new([0u8; 64]);
        let start = boxed.as_ptr() as usize;
        // Small allocations come from the heap or from an arena's anonymous mapping.
        assert!(in_private_anonymous_memory(start, start + 64).unwrap());
    }
}
