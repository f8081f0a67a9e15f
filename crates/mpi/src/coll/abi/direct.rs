//! Small blocking reductions straight on the engine.
//!
//! A blocking allreduce of a short vector among a power of two of ranks is a few pairwise
//! exchanges (recursive doubling). Run as a schedule, its fixed costs (building and polling the
//! future, the port's round bookkeeping, the driver's list of transfers) are most of a two-rank
//! call. Here the same exchanges, under the same tag and in the same order, go to the engine at
//! once. Every rank passes the same count, datatype and operation, so every rank takes the same
//! path. Anything else, errors included, is left to the schedule.

use std::ffi::c_void;

use super::super::algorithms::{self, AllreduceForm};
use super::super::drive;
use super::{bytes_mut, combiner, direct_on_runtime, failed, reduction_input, reduction_operands, Start};
use crate::consts::{MPI_Comm, MPI_Datatype, MPI_Op};
use crate::error::MpiResult;
use crate::large_count::Count;
use crate::runtime::{engine_error, Runtime};

/// MPI_Allreduce by recursive doubling on the engine, when that is the form the schedule would
/// take, no larger than a single exchange of the whole vector, and the receive buffer is one run
/// of memory. None: the schedule runs.
///
/// # Safety
/// MPI_Allreduce's arguments, as the caller passes them.
pub(super) unsafe fn allreduce(args: (*const c_void, *mut c_void, impl Count, MPI_Datatype, MPI_Op), comm: MPI_Comm) -> Option<MpiResult<()>> {
    // SAFETY: forwarded.
    direct_on_runtime(|rt| unsafe { allreduce_on(rt, args, comm) })
}

/// # Safety
/// As for [`allreduce`].
unsafe fn allreduce_on(rt: &mut Runtime, (sendbuf, recvbuf, count, datatype, op): (*const c_void, *mut c_void, impl Count, MPI_Datatype, MPI_Op), comm: MPI_Comm) -> Option<MpiResult<()>> {
    // On one node, a short vector passes through the node's flag segment (unless it could not
    // be made), the schedule's form, except between two ranks that exchange it as messages.
    let shared = &rt.comms.get(comm).ok()?.shared;
    let flag_form = if rt.tuning.shm_max.min(rt.tuning.shm_slot) > 0 { shared.node_flags(&rt.engine).filter(|flags| flags.has_room(0)) } else { None };
    // Asked for the smallest vector first, before any argument is looked at: if not even that
    // goes as messages, none does (the exact length is asked below).
    if flag_form.as_ref().is_some_and(|flags| !flags.allreduce_by_exchange(shared.size(), 0, &rt.tuning)) {
        return None;
    }
    let start = Start::new(rt, comm).ok()?;
    // Where the schedule runs after all, it takes the same port again.
    let decline = |rt: &mut Runtime, start: Start| {
        rt.coll_spare.keep(start.port());
        None
    };
    let size = start.size();
    if start.is_inter() || !size.is_power_of_two() {
        return decline(rt, start);
    }
    let Ok((reduction, recv, send)) = reduction_operands(comm, sendbuf, recvbuf, count, datatype, op) else { return decline(rt, start) };
    let Some((offset, len)) = recv.run else { return decline(rt, start) };
    if flag_form.as_ref().is_some_and(|flags| !flags.allreduce_by_exchange(size, len, &rt.tuning)) {
        return decline(rt, start);
    }
    let (combine, element_size, commutative) = combiner(&reduction);
    let port = start.port();
    // The schedule's choice, made as a blocking schedule makes it.
    port.set_waits_in_place(true);
    if !matches!(algorithms::allreduce_form(&port, len, element_size, commutative), AllreduceForm::Doubling { split: false }) {
        return decline(rt, start);
    }
    // SAFETY: the run lies within the caller's receive buffer, which only this call uses.
    let data = unsafe { bytes_mut(recv.start(offset), len) };
    if let Some(send) = send {
        // SAFETY: the caller's send buffer holds the elements and does not overlap recvbuf.
        unsafe { reduction_input(&send, data) };
    }
    let (port, route) = start.into_blocking_route();
    let rank = port.rank();
    let mut outcome = Ok(());
    {
        let mut incoming = port.scratch(len);
        let mut mask = 1;
        while mask < size {
            match drive::exchange_now(&mut rt.engine, &route, rank ^ mask, data, &mut incoming) {
                Ok(Ok(())) => combine(&incoming, data),
                Ok(Err(class)) => outcome = Err(failed(comm)(class)),
                Err(failure) => outcome = Err(engine_error(comm, failure)),
            }
            if outcome.is_err() {
                break;
            }
            mask <<= 1;
        }
    }
    rt.coll_spare.keep(port);
    Some(outcome)
}
