//! The neighbourhood collectives (MPI_Neighbor_* and MPI_Ineighbor_*): one round in which each
//! rank exchanges blocks with the sources and destinations of its communicator's topology.

use super::*;
use crate::large_count::{Count, Offset};

/// A neighbour list as the port takes it: MPI_PROC_NULL moves nothing.
fn neighbor_ranks(ranks: &[c_int]) -> Vec<Option<usize>> {
    ranks.iter().map(|&rank| usize::try_from(rank).ok()).collect()
}

/// Packed data going to the neighbours, each block's bytes in it.
struct Outgoing {
    bytes: Cow<'static, [u8]>,
    ranges: Vec<Range<usize>>,
}

/// Where the neighbours' blocks land, and how they reach the user's memory afterwards.
enum Incoming {
    Spread(Spread),
    Mixed(Mixed),
}

/// The neighbourhood collectives: one round in which block i arrives from `sources[i]` and block j
/// leaves for `destinations[j]`.
fn neighbor_exchange(start: &Start, outgoing: Outgoing, incoming: Incoming) -> MpiResult<impl Future<Output = Outcome> + 'static> {
    let neighbors = start.neighbors.as_ref().expect("a neighbourhood collective starts with its neighbours");
    let sources = neighbor_ranks(&neighbors.sources);
    let order = neighbors.send_order();
    let all_destinations = neighbor_ranks(&neighbors.destinations);
    let destinations: Vec<Option<usize>> = order.iter().map(|&index| all_destinations[index]).collect();
    let send_ranges: Vec<Range<usize>> = order.iter().filter_map(|&index| outgoing.ranges.get(index).cloned()).collect();
    let port = start.port();
    Ok(async move {
        let (mut landing, ranges) = match &incoming {
            // SAFETY: the caller's receive buffer holds the blocks; only this collective uses it.
            Incoming::Spread(recv) => (unsafe { recv.landing(None) }, recv.ranges.clone()),
            Incoming::Mixed(recv) => (Landing::Staged(vec![0u8; recv.ranges.last().map_or(0, |range| range.end)]), recv.ranges.clone()),
        };
        port.exchange_with(&sources, landing.bytes(), &ranges, &destinations, &outgoing.bytes, &send_ranges)?.await?;
        match &incoming {
            // SAFETY: as above.
            Incoming::Spread(recv) => unsafe { recv.store(&landing, None) },
            // SAFETY: as above.
            Incoming::Mixed(recv) => unsafe { recv.store(landing.bytes()) },
        }
        Ok(())
    })
}

/// The allgathers' outgoing data: the same block for each of `outdegree` destinations.
///
/// # Safety
/// `sendbuf` must hold `sendcount` elements of `sendtype`.
unsafe fn one_block_for_all(comm: MPI_Comm, sendbuf: *const c_void, sendcount: impl Count, sendtype: MPI_Datatype, outdegree: usize) -> MpiResult<Outgoing> {
    let send = typed(comm, sendbuf, sendcount, sendtype)?;
    // SAFETY: the caller's send buffer holds the elements.
    let bytes = unsafe { send.read() };
    Ok(Outgoing { ranges: vec![0..bytes.len(); outdegree], bytes })
}

/// Equal blocks of `count` elements, one per neighbour, one after the other.
fn equal_blocks(count: impl Count, neighbors: usize) -> (Vec<MPI_Count>, Vec<MPI_Aint>) {
    let count: MPI_Count = count.into();
    (vec![count; neighbors], (0..neighbors).map(|index| (index as MPI_Aint).saturating_mul(count as MPI_Aint)).collect())
}

fn neighbor_counts(start: &Start) -> (usize, usize) {
    let neighbors = start.neighbors.as_ref().expect("a neighbourhood collective starts with its neighbours");
    (neighbors.sources.len(), neighbors.destinations.len())
}

collective!(
    #[allow(clippy::too_many_arguments)]
    MPI_Neighbor_allgather / MPI_Ineighbor_allgather / MPI_Neighbor_allgather_init(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype) => neighbor_allgather, intra only, Start::with_neighbors
);
collective!(
    #[allow(clippy::too_many_arguments)]
    MPI_Neighbor_allgather_c / MPI_Ineighbor_allgather_c / MPI_Neighbor_allgather_init_c(sendbuf: *const c_void, sendcount: MPI_Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: MPI_Count, recvtype: MPI_Datatype) => neighbor_allgather, intra only, Start::with_neighbors
);

unsafe fn neighbor_allgather(
    start: &Start,
    sendbuf: *const c_void,
    sendcount: impl Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: impl Count,
    recvtype: MPI_Datatype,
) -> MpiResult<impl Future<Output = Outcome> + 'static> {
    let (counts, displs) = equal_blocks(recvcount, neighbor_counts(start).0);
    // SAFETY: the arrays hold one entry per source; the caller vouches for the rest.
    unsafe { neighbor_allgatherv(start, sendbuf, sendcount, sendtype, recvbuf, counts.as_ptr(), displs.as_ptr(), recvtype) }
}

collective!(
    #[allow(clippy::too_many_arguments)]
    MPI_Neighbor_allgatherv / MPI_Ineighbor_allgatherv / MPI_Neighbor_allgatherv_init(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: MPI_Datatype) => neighbor_allgatherv, intra only, Start::with_neighbors
);
collective!(
    #[allow(clippy::too_many_arguments)]
    MPI_Neighbor_allgatherv_c / MPI_Ineighbor_allgatherv_c / MPI_Neighbor_allgatherv_init_c(sendbuf: *const c_void, sendcount: MPI_Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const MPI_Count, displs: *const MPI_Aint, recvtype: MPI_Datatype) => neighbor_allgatherv, intra only, Start::with_neighbors
);

#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_allgatherv(
    start: &Start,
    sendbuf: *const c_void,
    sendcount: impl Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const impl Count,
    displs: *const impl Offset,
    recvtype: MPI_Datatype,
) -> MpiResult<impl Future<Output = Outcome> + 'static> {
    let comm = start.comm;
    let (indegree, outdegree) = neighbor_counts(start);
    // SAFETY: the caller's send buffer holds the elements.
    let outgoing = unsafe { one_block_for_all(comm, sendbuf, sendcount, sendtype, outdegree)? };
    // SAFETY: the caller passes one count and one displacement per source.
    let recv = unsafe { spread(comm, recvbuf, recvcounts, displs, recvtype, indegree)? };
    neighbor_exchange(start, outgoing, Incoming::Spread(recv))
}

collective!(
    #[allow(clippy::too_many_arguments)]
    MPI_Neighbor_alltoall / MPI_Ineighbor_alltoall / MPI_Neighbor_alltoall_init(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype) => neighbor_alltoall, intra only, Start::with_neighbors
);
collective!(
    #[allow(clippy::too_many_arguments)]
    MPI_Neighbor_alltoall_c / MPI_Ineighbor_alltoall_c / MPI_Neighbor_alltoall_init_c(sendbuf: *const c_void, sendcount: MPI_Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: MPI_Count, recvtype: MPI_Datatype) => neighbor_alltoall, intra only, Start::with_neighbors
);

unsafe fn neighbor_alltoall(
    start: &Start,
    sendbuf: *const c_void,
    sendcount: impl Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: impl Count,
    recvtype: MPI_Datatype,
) -> MpiResult<impl Future<Output = Outcome> + 'static> {
    let (indegree, outdegree) = neighbor_counts(start);
    let (send_counts, send_displs) = equal_blocks(sendcount, outdegree);
    let (recv_counts, recv_displs) = equal_blocks(recvcount, indegree);
    // SAFETY: the arrays hold one entry per destination and per source; the caller vouches for
    // the rest.
    unsafe { neighbor_alltoallv(start, sendbuf, send_counts.as_ptr(), send_displs.as_ptr(), sendtype, recvbuf, recv_counts.as_ptr(), recv_displs.as_ptr(), recvtype) }
}

collective!(
    #[allow(clippy::too_many_arguments)]
    MPI_Neighbor_alltoallv / MPI_Ineighbor_alltoallv / MPI_Neighbor_alltoallv_init(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: MPI_Datatype) => neighbor_alltoallv, intra only, Start::with_neighbors
);
collective!(
    #[allow(clippy::too_many_arguments)]
    MPI_Neighbor_alltoallv_c / MPI_Ineighbor_alltoallv_c / MPI_Neighbor_alltoallv_init_c(sendbuf: *const c_void, sendcounts: *const MPI_Count, sdispls: *const MPI_Aint, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const MPI_Count, rdispls: *const MPI_Aint, recvtype: MPI_Datatype) => neighbor_alltoallv, intra only, Start::with_neighbors
);

#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_alltoallv(
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
    let comm = start.comm;
    let (indegree, outdegree) = neighbor_counts(start);
    // SAFETY: the caller passes one count and displacement per destination and per source.
    let send = unsafe { spread(comm, sendbuf, sendcounts, sdispls, sendtype, outdegree)? };
    // SAFETY: the caller's send buffer holds the blocks.
    let outgoing = Outgoing { bytes: unsafe { send.read() }, ranges: send.ranges };
    // SAFETY: as above.
    let recv = unsafe { spread(comm, recvbuf, recvcounts, rdispls, recvtype, indegree)? };
    neighbor_exchange(start, outgoing, Incoming::Spread(recv))
}

collective!(
    #[allow(clippy::too_many_arguments)]
    MPI_Neighbor_alltoallw / MPI_Ineighbor_alltoallw / MPI_Neighbor_alltoallw_init(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const MPI_Aint, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const MPI_Aint, recvtypes: *const MPI_Datatype) => neighbor_alltoallw, intra only, Start::with_neighbors
);
collective!(
    #[allow(clippy::too_many_arguments)]
    MPI_Neighbor_alltoallw_c / MPI_Ineighbor_alltoallw_c / MPI_Neighbor_alltoallw_init_c(sendbuf: *const c_void, sendcounts: *const MPI_Count, sdispls: *const MPI_Aint, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const MPI_Count, rdispls: *const MPI_Aint, recvtypes: *const MPI_Datatype) => neighbor_alltoallw, intra only, Start::with_neighbors
);

#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_alltoallw(
    start: &Start,
    sendbuf: *const c_void,
    sendcounts: *const impl Count,
    sdispls: *const MPI_Aint,
    sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const impl Count,
    rdispls: *const MPI_Aint,
    recvtypes: *const MPI_Datatype,
) -> MpiResult<impl Future<Output = Outcome> + 'static> {
    let comm = start.comm;
    let (indegree, outdegree) = neighbor_counts(start);
    // SAFETY: the caller passes one count and type per destination and per source.
    let send = unsafe { mixed(comm, sendbuf, sendcounts, sdispls, sendtypes, outdegree)? };
    // SAFETY: the caller's send buffer holds the blocks.
    let outgoing = Outgoing { bytes: Cow::Owned(unsafe { send.packed() }), ranges: send.ranges };
    // SAFETY: as above.
    let recv = unsafe { mixed(comm, recvbuf, recvcounts, rdispls, recvtypes, indegree)? };
    neighbor_exchange(start, outgoing, Incoming::Mixed(recv))
}
