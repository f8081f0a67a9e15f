//! MPI_T categories: the control and performance variables grouped by what they concern, under
//! one root category, `braid`. The set never changes while the process runs.

// The safety contract of the MPI_T_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int};

use super::cvars::CVARS;
use super::pvars::PVARS;
use super::{c_count, call, index_argument, name_argument, put, put_string, required, ToolResult};
use crate::consts::*;

/// One category: the names of its variables and subcategories.
pub(crate) struct Category {
    name: &'static str,
    description: &'static str,
    cvars: &'static [&'static str],
    pvars: &'static [&'static str],
    categories: &'static [&'static str],
}

pub(crate) static CATEGORIES: [Category; 10] = [
    Category {
        name: "braid",
        description: "Braid: its settings and the traffic counters of its engine",
        cvars: &[],
        pvars: &[],
        categories: &[
            "braid_traffic",
            "braid_protocol",
            "braid_waiting",
            "braid_shared_memory",
            "braid_collectives",
            "braid_network",
            "braid_launch",
            "braid_diagnostics",
            "braid_open_mpi_monitoring",
        ],
    },
    Category {
        name: "braid_traffic",
        description: "MPI messages and bytes per peer, and frames and bytes per transport",
        cvars: &[],
        pvars: &[
            "braid_messages_sent",
            "braid_bytes_sent",
            "braid_messages_received",
            "braid_bytes_received",
            "braid_transport_names",
            "braid_peer_transport",
            "braid_transport_frames_sent",
            "braid_transport_bytes_sent",
            "braid_transport_frames_received",
            "braid_transport_bytes_received",
        ],
        categories: &[],
    },
    Category {
        name: "braid_protocol",
        description: "eager and rendezvous protocols, and the queue of messages that arrive before their receive",
        cvars: &["BRAID_EAGER_MAX"],
        pvars: &["braid_eager_sends", "braid_rendezvous_sends", "braid_unexpected_messages", "braid_unexpected_queue_length", "braid_unexpected_queue_high_watermark"],
        categories: &[],
    },
    Category {
        name: "braid_waiting",
        description: "how a rank waits for messages: polling, yielding its core, sleeping on the doorbell",
        cvars: &["BRAID_WAIT", "BRAID_SPIN_COUNT", "BRAID_YIELD_US", "BRAID_RAIL_SPIN_US", "BRAID_RAIL_REPLY_SPIN_US", "BRAID_BLOCK_TIMEOUT_MS", "BRAID_PEER_CHECK_MS"],
        pvars: &["braid_wait_blocked_time", "braid_wait_sleeps"],
        categories: &[],
    },
    Category {
        name: "braid_shared_memory",
        description: "the shared-memory transport between the ranks of one node, and single-copy transfers (CMA)",
        cvars: &[
            "BRAID_SHM",
            "BRAID_SHM_RING_CELLS",
            "BRAID_SHM_INLINE_MAX",
            "BRAID_SHM_POOL_BUFFERS",
            "BRAID_SHM_POOL_BUFFER_SIZE",
            "BRAID_SHM_HANDOVER_MIN",
            "BRAID_SHM_HANDOVER_CHUNK",
            "BRAID_CMA",
            "BRAID_WIN_CREATE_SHARE",
            "BRAID_COPY_ASSIST",
            "BRAID_COPY_ASSIST_MIN",
            "BRAID_COPY_ASSIST_SPIN_US",
            "BRAID_CMA_CHUNK",
            "BRAID_CMA_SHARE_MIN",
            "BRAID_CMA_SHARE_MAX",
            "BRAID_SHM_PIPELINE_MAX",
        ],
        pvars: &[],
        categories: &[],
    },
    Category {
        name: "braid_collectives",
        description: "the thresholds between collective algorithms (writable while MPI runs; equal on every rank)",
        cvars: &[
            "BRAID_COLL_BCAST_SPLIT_MIN",
            "BRAID_COLL_BCAST_FLAT_MAX",
            "BRAID_COLL_SHM_SLOT",
            "BRAID_COLL_SHM_MAX",
            "BRAID_COLL_PAIR_EXCHANGE_MAX",
            "BRAID_COLL_ALLREDUCE_SPLIT_MIN",
            "BRAID_COLL_ALLREDUCE_EXCHANGE_MAX",
            "BRAID_COLL_ALLTOALL_BATCH",
            "BRAID_COLL_HIERARCHY",
            "BRAID_PROGRESS_THREAD",
        ],
        pvars: &[],
        categories: &[],
    },
    Category {
        name: "braid_network",
        description: "the network rails between nodes and how messages are spread over them",
        cvars: &[
            "BRAID_RAILS",
            "BRAID_STRATEGY",
            "BRAID_PROFILE_DIR",
            "BRAID_SAMPLE_MS",
            "BRAID_SPLIT_MIN",
            "BRAID_RAIL_TIMEOUT_MS",
            "BRAID_RAIL_KEEPALIVE_S",
            "BRAID_RAIL_CONGESTION",
            "BRAID_RAIL_DELAY_FRESH_MS",
            "BRAID_RAIL_RECEIVE_BLOCK",
            "BRAID_RATE_SMOOTHING",
            "BRAID_RAIL_QUEUE_US",
            "BRAID_RAIL_REFILL",
            "BRAID_RAIL_HEDGE",
            "BRAID_OFFLOAD",
            "BRAID_OFFLOAD_COST_US",
        ],
        pvars: &[],
        categories: &[],
    },
    Category {
        name: "braid_launch",
        description: "how braid run treats the job's ranks, and how long jobs being connected wait for each other",
        cvars: &["BRAID_UNFINALIZED_WAIT_S", "BRAID_CONNECT_TIMEOUT_S"],
        pvars: &[],
        categories: &[],
    },
    Category { name: "braid_diagnostics", description: "diagnostic output, and the events tools can register for", cvars: &["BRAID_UNEXPECTED_MARK", "BRAID_DEBUG"], pvars: &[], categories: &[] },
    Category {
        name: "braid_open_mpi_monitoring",
        description: "Open MPI's monitoring variables, under Open MPI's names, for the MPI_T tools written for them",
        cvars: &[],
        pvars: &["pml_monitoring_messages_count", "pml_monitoring_messages_size", "pml_monitoring_flush"],
        categories: &[],
    },
];

/// Positions of `names` among `all` (every name is there: the tests check it).
fn indices(names: &[&str], all: impl Fn(&str) -> Option<usize>) -> Vec<c_int> {
    names.iter().filter_map(|name| all(name)).map(c_count).collect()
}

impl Category {
    fn cvar_indices(&self) -> Vec<c_int> {
        indices(self.cvars, |name| CVARS.iter().position(|variable| variable.name == name))
    }

    fn pvar_indices(&self) -> Vec<c_int> {
        indices(self.pvars, |name| PVARS.iter().position(|variable| variable.name == name))
    }

    fn category_indices(&self) -> Vec<c_int> {
        indices(self.categories, |name| CATEGORIES.iter().position(|category| category.name == name))
    }
}

/// Copies up to `len` of `all` into `indices`.
///
/// # Safety
/// `indices` must be valid for `len` writes when `len` is positive.
unsafe fn put_indices(all: &[c_int], len: c_int, indices: *mut c_int) -> ToolResult<()> {
    let len = usize::try_from(len).map_err(|_| MPI_T_ERR_INVALID)?;
    if len == 0 {
        return Ok(());
    }
    if indices.is_null() {
        return Err(MPI_T_ERR_INVALID);
    }
    let wanted = len.min(all.len());
    // SAFETY: the caller guarantees `len >= wanted` writable ints.
    unsafe { std::ptr::copy_nonoverlapping(all.as_ptr(), indices, wanted) };
    Ok(())
}

impl Category {
    pub(crate) fn name(&self) -> &'static str {
        self.name
    }
}

fn category(cat_index: c_int) -> ToolResult<&'static Category> {
    Ok(&CATEGORIES[index_argument(cat_index, CATEGORIES.len())?])
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_get_num(num_cat: *mut c_int) -> c_int {
    call(|_| {
        // SAFETY: MPI_T's rules: a valid pointer to an int (NULL is refused).
        *unsafe { required(num_cat) }? = c_count(CATEGORIES.len());
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_get_info(
    cat_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    desc: *mut c_char,
    desc_len: *mut c_int,
    num_cvars: *mut c_int,
    num_pvars: *mut c_int,
    num_categories: *mut c_int,
) -> c_int {
    call(|_| {
        let category = category(cat_index)?;
        // SAFETY: MPI_T's rules: each out-argument is NULL or valid; a string buffer holds
        // as many bytes as its length argument says.
        unsafe {
            put_string(category.name, name, name_len);
            put_string(category.description, desc, desc_len);
            put(num_cvars, c_count(category.cvars.len()));
            put(num_pvars, c_count(category.pvars.len()));
            put(num_categories, c_count(category.categories.len()));
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_get_index(name: *const c_char, cat_index: *mut c_int) -> c_int {
    call(|_| {
        // SAFETY: MPI_T's rules: a NUL-terminated name and a valid pointer to an int.
        let (name, cat_index) = unsafe { (name_argument(name)?, required(cat_index)?) };
        let index = CATEGORIES.iter().position(|category| category.name == name).ok_or(MPI_T_ERR_INVALID_NAME)?;
        *cat_index = c_count(index);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_get_cvars(cat_index: c_int, len: c_int, indices: *mut c_int) -> c_int {
    // SAFETY: MPI_T's rules: `indices` holds `len` ints.
    call(|_| unsafe { put_indices(&category(cat_index)?.cvar_indices(), len, indices) })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_get_pvars(cat_index: c_int, len: c_int, indices: *mut c_int) -> c_int {
    // SAFETY: MPI_T's rules: `indices` holds `len` ints.
    call(|_| unsafe { put_indices(&category(cat_index)?.pvar_indices(), len, indices) })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_get_categories(cat_index: c_int, len: c_int, indices: *mut c_int) -> c_int {
    // SAFETY: MPI_T's rules: `indices` holds `len` ints.
    call(|_| unsafe { put_indices(&category(cat_index)?.category_indices(), len, indices) })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_changed(stamp: *mut c_int) -> c_int {
    call(|_| {
        // The categories are fixed: the stamp never changes.
        // SAFETY: MPI_T's rules: a valid pointer to an int (NULL is refused).
        *unsafe { required(stamp) }? = 1;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variable_is_in_exactly_one_category() {
        let mut cvars: Vec<c_int> = CATEGORIES.iter().flat_map(Category::cvar_indices).collect();
        let mut pvars: Vec<c_int> = CATEGORIES.iter().flat_map(Category::pvar_indices).collect();
        assert_eq!(cvars.len(), CATEGORIES.iter().map(|category| category.cvars.len()).sum::<usize>(), "a cvar name does not resolve");
        assert_eq!(pvars.len(), CATEGORIES.iter().map(|category| category.pvars.len()).sum::<usize>(), "a pvar name does not resolve");
        cvars.sort_unstable();
        pvars.sort_unstable();
        assert_eq!(cvars, (0..CVARS.len() as c_int).collect::<Vec<_>>());
        assert_eq!(pvars, (0..PVARS.len() as c_int).collect::<Vec<_>>());
    }

    #[test]
    fn every_category_but_the_root_is_under_the_root() {
        let mut children = CATEGORIES[0].category_indices();
        assert_eq!(children.len(), CATEGORIES[0].categories.len());
        children.sort_unstable();
        assert_eq!(children, (1..CATEGORIES.len() as c_int).collect::<Vec<_>>());
        assert!(CATEGORIES[1..].iter().all(|category| category.categories.is_empty()));
    }

    #[test]
    fn indices_are_cut_to_the_callers_length() {
        let mut out = [-1; 3];
        // SAFETY: room for 3 ints.
        unsafe { put_indices(&[4, 5], 3, out.as_mut_ptr()) }.unwrap();
        assert_eq!(out, [4, 5, -1]);
        // SAFETY: as above.
        unsafe { put_indices(&[7, 8, 9, 10], 1, out.as_mut_ptr()) }.unwrap();
        assert_eq!(out, [7, 5, -1]);
        // SAFETY: nothing is written for a zero length.
        assert_eq!(unsafe { put_indices(&[1], 0, std::ptr::null_mut()) }, Ok(()));
        // SAFETY: a negative length is refused before any write.
        assert_eq!(unsafe { put_indices(&[1], -1, out.as_mut_ptr()) }, Err(MPI_T_ERR_INVALID));
    }
}
