//! Small blocking collectives straight on the node's flag segment.
//!
//! Once a one-node communicator's flag segment is made, a small blocking collective is a few
//! copies and flag words: building a schedule, a port and a driver for it costs more than the
//! collective itself, and a rank that starts late makes the others wait that much longer. Here
//! the flag forms of [`algorithms::flags`] run at once, waiting on the engine in place, for the
//! calls whose buffers are each one run of memory. The choice is the schedule's (the same limits,
//! from arguments every rank shares), and the call takes its tags as the schedule would, so ranks
//! may take either path call by call. Anything else (derived datatypes, argument errors, a
//! segment not made yet) is left to the schedule.

use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::future::Future;
use std::pin::pin;

use braid_engine::{Engine, EngineError};

use super::super::algorithms::flags::{self, Waiter};
use super::super::port::poll_once;
use super::super::CollTuning;
use super::{bytes, bytes_mut, combiner, direct_on_runtime, distinct_buffers, is_in_place, reduction_of, root_of, same_signature, times, typed, typed_elements, Typed};
use crate::comm::CommShared;
use crate::consts::{MPI_Comm, MPI_Datatype, MPI_Op};
use crate::error::MpiResult;
use crate::large_count::Count;
use crate::runtime::{engine_error, Runtime};

/// A rank running a flag form inside a blocking call: it waits on the engine (which moves
/// everything else meanwhile, and spins, yields or sleeps per the wait policy) and rings the
/// node's doorbells as soon as it publishes.
struct OnEngine<'e> {
    engine: RefCell<&'e mut Engine>,
    shared: &'e CommShared,
    /// The first engine failure in a wait: the waits after it end at once, and the call fails.
    failure: Cell<Option<EngineError>>,
}

impl Waiter for OnEngine<'_> {
    fn rank(&self) -> usize {
        self.shared.rank as usize
    }

    fn size(&self) -> usize {
        self.shared.size()
    }

    fn until<C: Fn() -> bool>(&self, condition: C) -> impl Future<Output = ()> {
        if !condition() {
            self.wait(&condition);
        }
        std::future::ready(())
    }

    fn ring_node(&self) {
        let engine = self.engine.borrow();
        let me = self.shared.members[self.rank()];
        for &job in self.shared.members.iter().filter(|&&job| job != me) {
            engine.ring_node_peer(job);
        }
    }
}

impl<'e> OnEngine<'e> {
    fn new(engine: &'e mut Engine, shared: &'e CommShared) -> OnEngine<'e> {
        // The tags a blocking collective takes, taken as the schedule would take them, so that
        // the ranks' sequences stay in step whichever path each call takes.
        shared.next_blocking_coll_tag();
        OnEngine { engine: RefCell::new(engine), shared, failure: Cell::new(None) }
    }

    #[inline(never)]
    fn wait(&self, condition: &dyn Fn() -> bool) {
        let failed = self.failure.take();
        let outcome = match failed {
            Some(failure) => Err(failure),
            None => self.engine.borrow_mut().wait_until(|_| condition()),
        };
        self.failure.set(outcome.err());
    }

    /// Runs `algorithm` (built on this waiter) to its end: its waits are over when they return.
    fn run(&self, comm: MPI_Comm, algorithm: impl Future<Output = ()>) -> MpiResult<()> {
        let mut algorithm = pin!(algorithm);
        while poll_once(algorithm.as_mut()).is_pending() {}
        match self.failure.take() {
            None => Ok(()),
            Some(failure) => Err(engine_error(comm, failure)),
        }
    }
}

/// A blocking collective on `comm` whose flag form could run now: the engine, the communicator
/// and its flag segment's cell, the tuning. None: several threads may call MPI (the schedule
/// then advances in steps), or `comm` has no flag segment.
fn on_node(rt: &mut Runtime, comm: MPI_Comm) -> Option<(&mut Engine, &CommShared, &flags::FlagsCell, &CollTuning)> {
    let Runtime { engine, comms, tuning, .. } = rt;
    let shared = &comms.get(comm).ok()?.shared;
    Some((engine, shared, shared.node_flags_known()?, tuning))
}

/// The elements' bytes, when they are one run of memory.
///
/// # Safety
/// The elements must be readable, and not written, for the returned lifetime.
unsafe fn run_of<'a>(data: &Typed) -> Option<&'a [u8]> {
    let (offset, len) = data.run?;
    // SAFETY: the run lies within the caller's elements.
    Some(unsafe { bytes(data.start(offset), len) })
}

/// [`run_of`], writable.
///
/// # Safety
/// The elements must be writable, and used by nothing else, for the returned lifetime.
unsafe fn run_of_mut<'a>(data: &Typed) -> Option<&'a mut [u8]> {
    let (offset, len) = data.run?;
    // SAFETY: the run lies within the caller's elements.
    Some(unsafe { bytes_mut(data.start(offset), len) })
}

/// # Safety
/// MPI_Barrier's arguments.
pub(super) unsafe fn barrier((): (), comm: MPI_Comm) -> Option<MpiResult<()>> {
    direct_on_runtime(|rt| {
        let (engine, shared, cell, tuning) = on_node(rt, comm)?;
        let flags = cell.made_for(0, false, tuning)?;
        let waiter = OnEngine::new(engine, shared);
        Some(waiter.run(comm, flags::barrier(&waiter, flags)))
    })
}

/// # Safety
/// MPI_Bcast's arguments.
pub(super) unsafe fn bcast((buffer, count, datatype, root): (*mut c_void, impl Count, MPI_Datatype, i32), comm: MPI_Comm) -> Option<MpiResult<()>> {
    direct_on_runtime(|rt| {
        let (engine, shared, cell, tuning) = on_node(rt, comm)?;
        let root = root_of(comm, root, shared.size()).ok()?;
        // SAFETY: the caller's buffer holds the elements; only this call uses it.
        let data = unsafe { run_of_mut(&typed(comm, buffer, count, datatype).ok()?)? };
        let flags = cell.made_for(data.len(), true, tuning)?;
        let waiter = OnEngine::new(engine, shared);
        Some(waiter.run(comm, flags::bcast(&waiter, flags, data, root)))
    })
}

/// # Safety
/// MPI_Reduce's arguments.
pub(super) unsafe fn reduce((sendbuf, recvbuf, count, datatype, op, root): (*const c_void, *mut c_void, impl Count, MPI_Datatype, MPI_Op, i32), comm: MPI_Comm) -> Option<MpiResult<()>> {
    direct_on_runtime(|rt| {
        let (engine, shared, cell, tuning) = on_node(rt, comm)?;
        let root = root_of(comm, root, shared.size()).ok()?;
        let reduction = reduction_of(comm, op, datatype).ok()?;
        let at_root = shared.rank as usize == root;
        let in_place = at_root && is_in_place(sendbuf);
        // SAFETY: the caller's buffers hold the elements (the receive buffer at the root only,
        // where only this call uses it); they do not overlap (checked below).
        let (input, out) = unsafe {
            let input = if in_place { None } else { Some(run_of(&typed(comm, sendbuf, count, datatype).ok()?)?) };
            let out: &mut [u8] = if at_root { run_of_mut(&typed(comm, recvbuf, count, datatype).ok()?)? } else { &mut [] };
            (input, out)
        };
        if at_root {
            distinct_buffers(comm, sendbuf, recvbuf, || !out.is_empty()).ok()?;
        }
        let (combine, element_size, _) = combiner(&reduction);
        let len = input.map_or(out.len(), <[u8]>::len);
        if !len.is_multiple_of(element_size) {
            return None;
        }
        let flags = cell.made_for(len, false, tuning)?;
        let waiter = OnEngine::new(engine, shared);
        Some(waiter.run(comm, flags::reduce(&waiter, flags, input, out, &combine, root)))
    })
}

/// # Safety
/// MPI_Allreduce's arguments.
pub(super) unsafe fn allreduce(args: (*const c_void, *mut c_void, impl Count, MPI_Datatype, MPI_Op), comm: MPI_Comm) -> Option<MpiResult<()>> {
    let (sendbuf, recvbuf, count, datatype, op) = args;
    let on_flags = direct_on_runtime(|rt| {
        let (engine, shared, cell, tuning) = on_node(rt, comm)?;
        let reduction = reduction_of(comm, op, datatype).ok()?;
        // SAFETY: the caller's buffers hold the elements, only this call writes the receive
        // buffer, and they do not overlap (checked below).
        let (input, data) = unsafe {
            let data = run_of_mut(&typed(comm, recvbuf, count, datatype).ok()?)?;
            let input = if is_in_place(sendbuf) { None } else { Some(run_of(&typed(comm, sendbuf, count, datatype).ok()?)?) };
            (input, data)
        };
        distinct_buffers(comm, sendbuf, recvbuf, || !data.is_empty()).ok()?;
        let (combine, element_size, _) = combiner(&reduction);
        if !data.len().is_multiple_of(element_size) || cell.allreduce_by_exchange(shared.size(), data.len(), tuning) {
            return None;
        }
        let flags = cell.made_for(data.len(), false, tuning)?;
        let waiter = OnEngine::new(engine, shared);
        Some(waiter.run(comm, flags::allreduce(&waiter, flags, input, data, &combine)))
    });
    // SAFETY: forwarded.
    on_flags.or_else(|| unsafe { super::direct::allreduce(args, comm) })
}

/// The buffers of a call in which every rank sends `send_blocks` blocks of `send`'s count and
/// receives a block from every rank into `recv` (`recv`'s count per rank): both one run of
/// memory, apart, and not in place. None where the schedule must check them.
///
/// # Safety
/// The buffers hold the elements, and only this call writes the receive buffer, for the returned
/// lifetime.
unsafe fn exchanged<'a>(
    comm: MPI_Comm,
    size: usize,
    (sendbuf, sendcount, sendtype): (*const c_void, impl Count, MPI_Datatype),
    send_blocks: usize,
    (recvbuf, recvcount, recvtype): (*mut c_void, impl Count, MPI_Datatype),
) -> Option<(&'a [u8], &'a mut [u8])> {
    if is_in_place(sendbuf) {
        return None;
    }
    let recv = typed_elements(comm, recvbuf, times(comm, super::count_of(comm, recvcount).ok()?, size).ok()?, recvtype).ok()?;
    let send = typed_elements(comm, sendbuf, times(comm, super::count_of(comm, sendcount).ok()?, send_blocks).ok()?, sendtype).ok()?;
    same_signature(comm, send.packed_len, recv.packed_len / size * send_blocks).ok()?;
    distinct_buffers(comm, sendbuf, recvbuf, || recv.packed_len > 0).ok()?;
    // SAFETY: per the caller; they do not overlap (checked above).
    unsafe { Some((run_of(&send)?, run_of_mut(&recv)?)) }
}

/// # Safety
/// MPI_Allgather's arguments.
pub(super) unsafe fn allgather(
    (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype): (*const c_void, impl Count, MPI_Datatype, *mut c_void, impl Count, MPI_Datatype),
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    direct_on_runtime(|rt| {
        let (engine, shared, cell, tuning) = on_node(rt, comm)?;
        // SAFETY: forwarded.
        let (mine, all) = unsafe { exchanged(comm, shared.size(), (sendbuf, sendcount, sendtype), 1, (recvbuf, recvcount, recvtype))? };
        let flags = cell.made_for(mine.len(), false, tuning)?;
        let waiter = OnEngine::new(engine, shared);
        Some(waiter.run(comm, flags::allgather(&waiter, flags, mine, all)))
    })
}

/// A rooted call's buffers (gather's or scatter's): this rank's block (None: in place at the
/// root) and, at the root, every rank's blocks, with the block's bytes; `own` and `every` are
/// (buffer, count, datatype), `every`'s count per rank. None where the schedule must check them.
struct Rooted {
    root: usize,
    mine: Option<Typed>,
    all: Option<Typed>,
    block: usize,
}

fn rooted(comm: MPI_Comm, shared: &CommShared, root: i32, own: (*const c_void, impl Count, MPI_Datatype), every: (*const c_void, impl Count, MPI_Datatype)) -> Option<Rooted> {
    let size = shared.size();
    let root = root_of(comm, root, size).ok()?;
    let at_root = shared.rank as usize == root;
    let mine = if at_root && is_in_place(own.0) { None } else { Some(typed(comm, own.0, own.1, own.2).ok()?) };
    let all = if at_root { Some(typed_elements(comm, every.0, times(comm, super::count_of(comm, every.1).ok()?, size).ok()?, every.2).ok()?) } else { None };
    let block = match (&mine, &all) {
        (_, Some(all)) => all.packed_len / size,
        (Some(mine), None) => mine.packed_len,
        (None, None) => return None,
    };
    if let (Some(mine), Some(_)) = (&mine, &all) {
        same_signature(comm, mine.packed_len, block).ok()?;
        distinct_buffers(comm, own.0, every.0, || block > 0).ok()?;
    }
    Some(Rooted { root, mine, all, block })
}

/// # Safety
/// MPI_Gather's arguments.
pub(super) unsafe fn gather(
    (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root): (*const c_void, impl Count, MPI_Datatype, *mut c_void, impl Count, MPI_Datatype, i32),
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    direct_on_runtime(|rt| {
        let (engine, shared, cell, tuning) = on_node(rt, comm)?;
        let Rooted { root, mine, all, block } = rooted(comm, shared, root, (sendbuf, sendcount, sendtype), (recvbuf.cast_const(), recvcount, recvtype))?;
        // SAFETY: the caller's buffers hold the elements (the receive buffer at the root only,
        // where only this call uses it), and they do not overlap (checked by `rooted`).
        let (mine, all): (Option<&[u8]>, &mut [u8]) = unsafe {
            let mine = match &mine {
                Some(mine) => Some(run_of(mine)?),
                None => None,
            };
            (mine, all.as_ref().map_or(Some(&mut [][..]), |all| run_of_mut(all))?)
        };
        let flags = cell.made_for(block, false, tuning)?;
        let waiter = OnEngine::new(engine, shared);
        Some(waiter.run(comm, flags::gather(&waiter, flags, mine, all, block, root)))
    })
}

/// # Safety
/// MPI_Scatter's arguments.
pub(super) unsafe fn scatter(
    (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root): (*const c_void, impl Count, MPI_Datatype, *mut c_void, impl Count, MPI_Datatype, i32),
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    direct_on_runtime(|rt| {
        let (engine, shared, cell, tuning) = on_node(rt, comm)?;
        let Rooted { root, mine, all, block } = rooted(comm, shared, root, (recvbuf.cast_const(), recvcount, recvtype), (sendbuf, sendcount, sendtype))?;
        // SAFETY: the caller's buffers hold the elements (the send buffer at the root only), only
        // this call writes the receive buffer, and they do not overlap (checked by `rooted`).
        let (all, mine): (&[u8], Option<&mut [u8]>) = unsafe {
            let mine = match &mine {
                Some(mine) => Some(run_of_mut(mine)?),
                None => None,
            };
            (all.as_ref().map_or(Some(&[][..]), |all| run_of(all))?, mine)
        };
        let flags = cell.made_for(block.checked_mul(shared.size())?, false, tuning)?;
        let waiter = OnEngine::new(engine, shared);
        Some(waiter.run(comm, flags::scatter(&waiter, flags, all, mine, block, root)))
    })
}

/// # Safety
/// MPI_Alltoall's arguments.
pub(super) unsafe fn alltoall(
    (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype): (*const c_void, impl Count, MPI_Datatype, *mut c_void, impl Count, MPI_Datatype),
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    direct_on_runtime(|rt| {
        let (engine, shared, cell, tuning) = on_node(rt, comm)?;
        // SAFETY: forwarded.
        let (outgoing, incoming) = unsafe { exchanged(comm, shared.size(), (sendbuf, sendcount, sendtype), shared.size(), (recvbuf, recvcount, recvtype))? };
        let flags = cell.made_for(outgoing.len(), false, tuning)?;
        let waiter = OnEngine::new(engine, shared);
        Some(waiter.run(comm, flags::alltoall(&waiter, flags, outgoing, incoming)))
    })
}
