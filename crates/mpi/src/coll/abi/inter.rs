//! The schedules of the collectives on an intercommunicator (MPI 3.1 §5.2.2): the same entry
//! points as on an intracommunicator, with the intercommunicator meanings of the arguments.
//!
//! Counts and arrays that describe the other group's data are per remote rank; a rooted call
//! names the root with MPI_ROOT at the root, MPI_PROC_NULL at the rest of its group and the
//! root's remote rank in the other group, and only the arguments that MPI declares significant
//! for a process's part are checked. MPI_IN_PLACE is not allowed (MPI_ERR_BUFFER, as MPICH).

use std::borrow::Cow;
use std::ffi::{c_int, c_void};
use std::future::Future;

use super::{combiner, count_of, mixed, reduction_input, reduction_of, spread, times, typed, typed_elements, Counts, Landing, Outcome, Start, Typed};
use crate::coll::algorithms::inter::{self as algorithms, Role};
use crate::coll::port::Port;
use crate::consts::*;
use crate::error::{error, MpiResult};
use crate::large_count::{Count, Offset};

fn role_of(start: &Start, root: c_int) -> MpiResult<Role> {
    match root {
        MPI_ROOT => Ok(Role::Root),
        MPI_PROC_NULL => Ok(Role::Idle),
        _ => usize::try_from(root).ok().filter(|&root| root < start.remote_size()).map(|root| Role::Remote { root }).ok_or_else(|| {
            let detail = format!("root {root} is not MPI_ROOT, MPI_PROC_NULL or a rank of the remote group (size {})", start.remote_size());
            error(start.comm, MPI_ERR_ROOT, detail)
        }),
    }
}

fn not_in_place(start: &Start, buffer: *const c_void) -> MpiResult<()> {
    if buffer == MPI_IN_PLACE {
        return Err(error(start.comm, MPI_ERR_BUFFER, "MPI_IN_PLACE is not allowed on an intercommunicator"));
    }
    Ok(())
}

/// Send data: checked, not in place.
fn typed_send(start: &Start, buffer: *const c_void, count: impl Count, datatype: MPI_Datatype) -> MpiResult<Typed> {
    not_in_place(start, buffer)?;
    typed(start.comm, buffer, count, datatype)
}

/// Where a schedule writes what it receives, and how it reaches the caller's elements.
struct Arrival {
    recv: Typed,
    landing: Landing<'static>,
}

impl Arrival {
    /// # Safety
    /// The caller's elements must be writable and used by nothing else until the collective ends.
    unsafe fn new(recv: Typed) -> Arrival {
        // SAFETY: per the caller.
        Arrival { recv, landing: unsafe { recv.landing(false) } }
    }

    fn bytes(&mut self) -> &mut [u8] {
        self.landing.bytes()
    }

    /// # Safety
    /// As for [`Arrival::new`].
    unsafe fn finish(&self) {
        // SAFETY: per the caller.
        unsafe { self.recv.store(&self.landing) };
    }
}

/// A rooted collective between the groups that moves one typed buffer each way (gather, scatter):
/// the side with `send` passes its elements to `algorithm`, the side with `recv` gets its bytes
/// unpacked, and a rank with neither takes no part.
fn rooted(start: &Start, send: Option<Typed>, recv: Option<Typed>, role: Role, algorithm: impl AsyncFn(&Port, &[u8], &mut [u8], Role) -> Outcome + 'static) -> impl Future<Output = Outcome> + 'static {
    let port = start.port();
    async move {
        if let Some(send) = send {
            // SAFETY: the caller's send buffer holds the elements.
            return algorithm(&port, &unsafe { send.read() }, &mut [], role).await;
        }
        let Some(recv) = recv else {
            return Ok(());
        };
        // SAFETY: the caller's receive buffer holds the elements; only this collective uses it.
        let mut arrival = unsafe { Arrival::new(recv) };
        algorithm(&port, &[], arrival.bytes(), role).await?;
        // SAFETY: as above.
        unsafe { arrival.finish() };
        Ok(())
    }
}

pub(super) fn barrier(start: &Start) -> MpiResult<impl Future<Output = Outcome> + 'static> {
    let port = start.port();
    Ok(async move { algorithms::barrier(&port).await })
}

pub(super) unsafe fn bcast(start: &Start, buffer: *mut c_void, count: impl Count, datatype: MPI_Datatype, root: c_int) -> MpiResult<impl Future<Output = Outcome> + 'static> {
    let role = role_of(start, root)?;
    let data = if role == Role::Idle { None } else { Some(typed(start.comm, buffer, count, datatype)?) };
    let port = start.port();
    Ok(async move {
        let Some(data) = data else {
            return Ok(());
        };
        let at_root = role == Role::Root;
        // SAFETY: the caller's buffer holds the elements; only this collective uses it.
        let mut landing = unsafe { data.landing(at_root) };
        algorithms::bcast(&port, landing.bytes(), role).await?;
        if !at_root {
            // SAFETY: as above.
            unsafe { data.store(&landing) };
        }
        Ok(())
    })
}

pub(super) unsafe fn reduce(
    start: &Start,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: impl Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    root: c_int,
) -> MpiResult<impl Future<Output = Outcome> + 'static> {
    let comm = start.comm;
    let role = role_of(start, root)?;
    let reduction = if role == Role::Idle { None } else { Some(reduction_of(comm, op, datatype)?) };
    let recv = if role == Role::Root { Some(typed(comm, recvbuf, count, datatype)?) } else { None };
    let send = if matches!(role, Role::Remote { .. }) { Some(typed_send(start, sendbuf, count, datatype)?) } else { None };
    let port = start.port();
    Ok(async move {
        let Some(reduction) = reduction else {
            return Ok(());
        };
        let (combine, element_size, commutative) = combiner(&reduction);
        if let Some(send) = send {
            // SAFETY: the caller's send buffer holds the elements.
            let mut work = unsafe { send.packed() };
            return algorithms::reduce(&port, &mut work, element_size, &combine, commutative, role).await;
        }
        // SAFETY: the caller's receive buffer holds the elements; only this collective uses it.
        let mut arrival = unsafe { Arrival::new(recv.expect("the root receives")) };
        algorithms::reduce(&port, arrival.bytes(), element_size, &combine, commutative, role).await?;
        // SAFETY: as above.
        unsafe { arrival.finish() };
        Ok(())
    })
}

pub(super) unsafe fn allreduce(
    start: &Start,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: impl Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
) -> MpiResult<impl Future<Output = Outcome> + 'static> {
    let comm = start.comm;
    let reduction = reduction_of(comm, op, datatype)?;
    let send = typed_send(start, sendbuf, count, datatype)?;
    let recv = typed(comm, recvbuf, count, datatype)?;
    let port = start.port();
    Ok(async move {
        let (combine, element_size, commutative) = combiner(&reduction);
        // SAFETY: the caller's receive buffer holds the elements; only this collective uses it.
        let mut arrival = unsafe { Arrival::new(recv) };
        // SAFETY: the caller's send buffer holds the elements and does not overlap recvbuf.
        unsafe { reduction_input(&send, arrival.bytes()) };
        algorithms::allreduce(&port, arrival.bytes(), element_size, &combine, commutative).await?;
        // SAFETY: as above.
        unsafe { arrival.finish() };
        Ok(())
    })
}

pub(super) unsafe fn reduce_scatter_block(
    start: &Start,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: impl Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
) -> MpiResult<impl Future<Output = Outcome> + 'static> {
    // SAFETY: forwarded.
    unsafe { reduce_scatter(start, sendbuf, recvbuf, Counts::Same(recvcount), datatype, op) }
}

pub(super) unsafe fn reduce_scatter_v(
    start: &Start,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const impl Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
) -> MpiResult<impl Future<Output = Outcome> + 'static> {
    // SAFETY: forwarded.
    unsafe { reduce_scatter(start, sendbuf, recvbuf, Counts::PerRank(recvcounts), datatype, op) }
}

/// MPI_Reduce_scatter(_block): the counts are per local rank; the send buffer holds their sum,
/// which the other group's must equal.
unsafe fn reduce_scatter(
    start: &Start,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    counts: Counts<impl Count>,
    datatype: MPI_Datatype,
    op: MPI_Op,
) -> MpiResult<impl Future<Output = Outcome> + 'static> {
    let comm = start.comm;
    // SAFETY: forwarded: the caller passes one count per local rank.
    let counts = unsafe { counts.per_rank(comm, start.size())? };
    let total = counts.iter().try_fold(0usize, |sum, &count| sum.checked_add(count)).ok_or_else(|| error(comm, MPI_ERR_COUNT, "the counts' sum overflows"))?;
    let reduction = reduction_of(comm, op, datatype)?;
    not_in_place(start, sendbuf)?;
    let input = typed_elements(comm, sendbuf, total, datatype)?;
    let recv = typed_elements(comm, recvbuf, counts[start.rank()], datatype)?;
    let port = start.port();
    Ok(async move {
        let (combine, element_size, commutative) = combiner(&reduction);
        // SAFETY: the caller's send buffer holds the sum of the counts in elements.
        let mut work = unsafe { input.packed() };
        // SAFETY: the caller's receive buffer holds its count of elements; only this collective
        // uses it.
        let mut arrival = unsafe { Arrival::new(recv) };
        algorithms::reduce_scatter(&port, &mut work, &counts, element_size, &combine, commutative, arrival.bytes()).await?;
        // SAFETY: as above.
        unsafe { arrival.finish() };
        Ok(())
    })
}

#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn gather(
    start: &Start,
    sendbuf: *const c_void,
    sendcount: impl Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: impl Count,
    recvtype: MPI_Datatype,
    root: c_int,
) -> MpiResult<impl Future<Output = Outcome> + 'static> {
    let comm = start.comm;
    let role = role_of(start, root)?;
    let recv = if role == Role::Root { Some(typed_elements(comm, recvbuf, times(comm, count_of(comm, recvcount)?, start.remote_size())?, recvtype)?) } else { None };
    let send = if matches!(role, Role::Remote { .. }) { Some(typed_send(start, sendbuf, sendcount, sendtype)?) } else { None };
    Ok(rooted(start, send, recv, role, algorithms::gather))
}

#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn gatherv(
    start: &Start,
    sendbuf: *const c_void,
    sendcount: impl Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const impl Count,
    displs: *const impl Offset,
    recvtype: MPI_Datatype,
    root: c_int,
) -> MpiResult<impl Future<Output = Outcome> + 'static> {
    let comm = start.comm;
    let role = role_of(start, root)?;
    // SAFETY: at the root, the caller passes one count and one displacement per remote rank.
    let recv = if role == Role::Root { Some(unsafe { spread(comm, recvbuf, recvcounts, displs, recvtype, start.remote_size())? }) } else { None };
    let send = if matches!(role, Role::Remote { .. }) { Some(typed_send(start, sendbuf, sendcount, sendtype)?) } else { None };
    let port = start.port();
    Ok(async move {
        if let Some(send) = send {
            // SAFETY: the caller's send buffer holds the elements.
            return algorithms::gatherv(&port, &unsafe { send.read() }, &mut [], &[], role).await;
        }
        let Some(recv) = recv else {
            return Ok(());
        };
        // SAFETY: the caller's receive buffer holds the blocks; only this collective uses it.
        let mut landing = unsafe { recv.landing(None) };
        algorithms::gatherv(&port, &[], landing.bytes(), &recv.ranges, role).await?;
        // SAFETY: as above.
        unsafe { recv.store(&landing, None) };
        Ok(())
    })
}

#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn scatter(
    start: &Start,
    sendbuf: *const c_void,
    sendcount: impl Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: impl Count,
    recvtype: MPI_Datatype,
    root: c_int,
) -> MpiResult<impl Future<Output = Outcome> + 'static> {
    let comm = start.comm;
    let role = role_of(start, root)?;
    let send = if role == Role::Root { Some(typed_elements(comm, sendbuf, times(comm, count_of(comm, sendcount)?, start.remote_size())?, sendtype)?) } else { None };
    let recv = if matches!(role, Role::Remote { .. }) {
        not_in_place(start, recvbuf)?;
        Some(typed(comm, recvbuf, recvcount, recvtype)?)
    } else {
        None
    };
    Ok(rooted(start, send, recv, role, algorithms::scatter))
}

#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn scatterv(
    start: &Start,
    sendbuf: *const c_void,
    sendcounts: *const impl Count,
    displs: *const impl Offset,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: impl Count,
    recvtype: MPI_Datatype,
    root: c_int,
) -> MpiResult<impl Future<Output = Outcome> + 'static> {
    let comm = start.comm;
    let role = role_of(start, root)?;
    // SAFETY: at the root, the caller passes one count and one displacement per remote rank.
    let send = if role == Role::Root { Some(unsafe { spread(comm, sendbuf, sendcounts, displs, sendtype, start.remote_size())? }) } else { None };
    let recv = if matches!(role, Role::Remote { .. }) {
        not_in_place(start, recvbuf)?;
        Some(typed(comm, recvbuf, recvcount, recvtype)?)
    } else {
        None
    };
    let port = start.port();
    Ok(async move {
        if let Some(send) = send {
            // SAFETY: the caller's send buffer holds the blocks.
            return algorithms::scatterv(&port, &unsafe { send.read() }, &send.ranges, &mut [], role).await;
        }
        let Some(recv) = recv else {
            return Ok(());
        };
        // SAFETY: the caller's receive buffer holds the elements; only this collective uses it.
        let mut arrival = unsafe { Arrival::new(recv) };
        algorithms::scatterv(&port, &[], &[], arrival.bytes(), role).await?;
        // SAFETY: as above.
        unsafe { arrival.finish() };
        Ok(())
    })
}

pub(super) unsafe fn allgather(
    start: &Start,
    sendbuf: *const c_void,
    sendcount: impl Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: impl Count,
    recvtype: MPI_Datatype,
) -> MpiResult<impl Future<Output = Outcome> + 'static> {
    let comm = start.comm;
    let send = typed_send(start, sendbuf, sendcount, sendtype)?;
    let recv = typed_elements(comm, recvbuf, times(comm, count_of(comm, recvcount)?, start.remote_size())?, recvtype)?;
    let port = start.port();
    Ok(async move {
        // SAFETY: the caller's send buffer holds the elements and does not overlap recvbuf.
        let mine = unsafe { send.read() };
        // SAFETY: the caller's receive buffer holds the elements; only this collective uses it.
        let mut arrival = unsafe { Arrival::new(recv) };
        algorithms::allgather(&port, &mine, arrival.bytes()).await?;
        // SAFETY: as above.
        unsafe { arrival.finish() };
        Ok(())
    })
}

#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn allgatherv(
    start: &Start,
    sendbuf: *const c_void,
    sendcount: impl Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const impl Count,
    displs: *const impl Offset,
    recvtype: MPI_Datatype,
) -> MpiResult<impl Future<Output = Outcome> + 'static> {
    let send = typed_send(start, sendbuf, sendcount, sendtype)?;
    // SAFETY: the caller passes one count and one displacement per remote rank.
    let recv = unsafe { spread(start.comm, recvbuf, recvcounts, displs, recvtype, start.remote_size())? };
    let port = start.port();
    Ok(async move {
        // SAFETY: the caller's send buffer holds the elements and does not overlap recvbuf.
        let mine = unsafe { send.read() };
        // SAFETY: the caller's receive buffer holds the blocks; only this collective uses it.
        let mut landing = unsafe { recv.landing(None) };
        algorithms::allgatherv(&port, &mine, landing.bytes(), &recv.ranges).await?;
        // SAFETY: as above.
        unsafe { recv.store(&landing, None) };
        Ok(())
    })
}

pub(super) unsafe fn alltoall(
    start: &Start,
    sendbuf: *const c_void,
    sendcount: impl Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: impl Count,
    recvtype: MPI_Datatype,
) -> MpiResult<impl Future<Output = Outcome> + 'static> {
    let comm = start.comm;
    let remote_size = start.remote_size();
    not_in_place(start, sendbuf)?;
    let send = typed_elements(comm, sendbuf, times(comm, count_of(comm, sendcount)?, remote_size)?, sendtype)?;
    let recv = typed_elements(comm, recvbuf, times(comm, count_of(comm, recvcount)?, remote_size)?, recvtype)?;
    let port = start.port();
    Ok(async move {
        // SAFETY: the caller's send buffer holds the elements and does not overlap recvbuf.
        let outgoing = unsafe { send.read() };
        // SAFETY: the caller's receive buffer holds the elements; only this collective uses it.
        let mut arrival = unsafe { Arrival::new(recv) };
        algorithms::alltoall(&port, &outgoing, arrival.bytes()).await?;
        // SAFETY: as above.
        unsafe { arrival.finish() };
        Ok(())
    })
}

#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn alltoallv(
    start: &Start,
    sendbuf: *const c_void,
    sendcounts: *const impl Count,
    sdispls: *const impl Offset,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const impl Count,
    rdispls: *const impl Offset,
    recvtype: MPI_Datatype,
) -> MpiResult<impl Future<Output = Outcome> + 'static> {
    let (comm, remote_size) = (start.comm, start.remote_size());
    not_in_place(start, sendbuf)?;
    // SAFETY: the caller passes one count and one displacement per remote rank.
    let send = unsafe { spread(comm, sendbuf, sendcounts, sdispls, sendtype, remote_size)? };
    // SAFETY: as above.
    let recv = unsafe { spread(comm, recvbuf, recvcounts, rdispls, recvtype, remote_size)? };
    let port = start.port();
    Ok(async move {
        // SAFETY: the caller's send buffer holds the blocks and does not overlap recvbuf.
        let outgoing: Cow<[u8]> = unsafe { send.read() };
        // SAFETY: the caller's receive buffer holds the blocks; only this collective uses it.
        let mut landing = unsafe { recv.landing(None) };
        algorithms::alltoallv(&port, &outgoing, &send.ranges, landing.bytes(), &recv.ranges).await?;
        // SAFETY: as above.
        unsafe { recv.store(&landing, None) };
        Ok(())
    })
}

#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn alltoallw(
    start: &Start,
    sendbuf: *const c_void,
    sendcounts: *const impl Count,
    sdispls: *const impl Offset,
    sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const impl Count,
    rdispls: *const impl Offset,
    recvtypes: *const MPI_Datatype,
) -> MpiResult<impl Future<Output = Outcome> + 'static> {
    let (comm, remote_size) = (start.comm, start.remote_size());
    not_in_place(start, sendbuf)?;
    // SAFETY: the caller passes one count, displacement and type per remote rank.
    let send = unsafe { mixed(comm, sendbuf, sendcounts, sdispls, sendtypes, remote_size)? };
    // SAFETY: as above.
    let recv = unsafe { mixed(comm, recvbuf, recvcounts, rdispls, recvtypes, remote_size)? };
    let port = start.port();
    Ok(async move {
        // SAFETY: the caller's send buffer holds the blocks.
        let outgoing = unsafe { send.packed() };
        let mut incoming = vec![0u8; recv.ranges.last().map_or(0, |range| range.end)];
        algorithms::alltoallv(&port, &outgoing, &send.ranges, &mut incoming, &recv.ranges).await?;
        // SAFETY: the caller's receive buffer holds the blocks; only this collective uses it.
        unsafe { recv.store(&incoming) };
        Ok(())
    })
}
