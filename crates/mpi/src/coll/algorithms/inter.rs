//! Collectives on an intercommunicator (MPI 3.1 §5.2.2): data flows from one group to the other.
//!
//! The port names the local group `0..size` and remote rank j `port.remote(j)`, so each algorithm
//! is the local group's algorithms (the parent module's, run unchanged as local steps) joined by
//! transfers between the groups: the leaders (local rank 0 of each group) swap what their groups
//! gathered or reduced, or a root talks to the other group's leader. Where a group cannot gather
//! locally (varying sizes that only the other group knows), its members send to the remote leader
//! directly, all in one round.
//!
//! Both groups run their side at once, so every exchange between the leaders is one `sendrecv`.

use std::ops::Range;
use std::slice;

use super::{bcast as local_bcast, check_blocks, check_elements, check_root, gather as local_gather, reduce as local_reduce, require, scatter as local_scatter, scatterv as local_scatterv, Outcome};
use crate::coll::port::Port;
use crate::coll::Combine;
use crate::consts::MPI_ERR_ARG;

/// A process's part in a rooted collective.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The root (MPI_ROOT).
    Root,
    /// Another member of the root's group (MPI_PROC_NULL): takes no part.
    Idle,
    /// A member of the other group; the root is its remote rank `root`.
    Remote { root: usize },
}

fn is_leader(port: &Port) -> bool {
    port.rank() == 0
}

fn check_role(port: &Port, role: Role) -> Outcome {
    match role {
        Role::Remote { root } => check_root(root, port.remote_size()),
        Role::Root | Role::Idle => Ok(()),
    }
}

/// No member leaves before every member of the other group has entered: each group fans in to
/// its leader, the leaders swap, each leader releases its group.
pub async fn barrier(port: &Port) -> Result<(), i32> {
    local_gather(port, Some(&[]), &mut [], 0).await?;
    if is_leader(port) {
        let leader = port.remote(0);
        port.sendrecv(leader, &[], leader, &mut []).await?;
    }
    local_bcast(port, &mut [], 0).await
}

/// The root sends `buffer` to the other group's leader, which broadcasts it in its group.
pub async fn bcast(port: &Port, buffer: &mut [u8], role: Role) -> Result<(), i32> {
    check_role(port, role)?;
    match role {
        Role::Root => port.send(port.remote(0), buffer).await,
        Role::Idle => Ok(()),
        Role::Remote { root } => {
            if is_leader(port) {
                port.recv(port.remote(root), buffer).await?;
            }
            local_bcast(port, buffer, 0).await
        }
    }
}

/// Gathers the other group's equal blocks `mine` into the root's `all` (remote rank j's at block
/// j): the group gathers to its leader, which sends the whole to the root.
pub async fn gather(port: &Port, mine: &[u8], all: &mut [u8], role: Role) -> Result<(), i32> {
    check_role(port, role)?;
    match role {
        Role::Root => {
            require(all.len().is_multiple_of(port.remote_size()), MPI_ERR_ARG)?;
            port.recv(port.remote(0), all).await
        }
        Role::Idle => Ok(()),
        Role::Remote { root } if is_leader(port) => {
            let mut gathered = vec![0u8; mine.len() * port.size()];
            local_gather(port, Some(mine), &mut gathered, 0).await?;
            port.send(port.remote(root), &gathered).await
        }
        Role::Remote { .. } => local_gather(port, Some(mine), &mut [], 0).await,
    }
}

/// Gathers blocks of varying sizes: remote rank j's `mine` lands in the root's `all[blocks[j]]`,
/// every block in one round.
pub async fn gatherv(port: &Port, mine: &[u8], all: &mut [u8], blocks: &[Range<usize>], role: Role) -> Result<(), i32> {
    check_role(port, role)?;
    match role {
        Role::Root => {
            check_blocks(blocks, port.remote_size(), all.len())?;
            let sources: Vec<Option<usize>> = (0..port.remote_size()).map(|rank| Some(port.remote(rank))).collect();
            port.exchange_with(&sources, all, blocks, &[], &[], &[])?.await
        }
        Role::Idle => Ok(()),
        Role::Remote { root } => port.send(port.remote(root), mine).await,
    }
}

/// Scatters the root's equal blocks of `all` to the other group (block j to remote rank j's
/// `mine`): the root sends the whole to the group's leader, which scatters it in its group.
pub async fn scatter(port: &Port, all: &[u8], mine: &mut [u8], role: Role) -> Result<(), i32> {
    check_role(port, role)?;
    match role {
        Role::Root => {
            require(all.len().is_multiple_of(port.remote_size()), MPI_ERR_ARG)?;
            port.send(port.remote(0), all).await
        }
        Role::Idle => Ok(()),
        Role::Remote { root } if is_leader(port) => {
            let mut whole = vec![0u8; mine.len() * port.size()];
            port.recv(port.remote(root), &mut whole).await?;
            local_scatter(port, &whole, Some(mine), 0).await
        }
        Role::Remote { .. } => local_scatter(port, &[], Some(mine), 0).await,
    }
}

/// Scatters the root's `all[blocks[j]]` to remote rank j's `mine`, every block in one round.
pub async fn scatterv(port: &Port, all: &[u8], blocks: &[Range<usize>], mine: &mut [u8], role: Role) -> Result<(), i32> {
    check_role(port, role)?;
    match role {
        Role::Root => {
            check_blocks(blocks, port.remote_size(), all.len())?;
            let destinations: Vec<Option<usize>> = (0..port.remote_size()).map(|rank| Some(port.remote(rank))).collect();
            port.exchange_with(&[], &mut [], &[], &destinations, all, blocks)?.await
        }
        Role::Idle => Ok(()),
        Role::Remote { root } => port.recv(port.remote(root), mine).await,
    }
}

/// Every member receives the other group's equal blocks into `all` (remote rank j's at block j):
/// each group gathers to its leader, the leaders swap, each leader broadcasts in its group.
pub async fn allgather(port: &Port, mine: &[u8], all: &mut [u8]) -> Result<(), i32> {
    require(all.len().is_multiple_of(port.remote_size()), MPI_ERR_ARG)?;
    if is_leader(port) {
        let mut gathered = vec![0u8; mine.len() * port.size()];
        local_gather(port, Some(mine), &mut gathered, 0).await?;
        let leader = port.remote(0);
        port.sendrecv(leader, &gathered, leader, all).await?;
    } else {
        local_gather(port, Some(mine), &mut [], 0).await?;
    }
    local_bcast(port, all, 0).await
}

/// Every member receives remote rank j's `mine` in `all[blocks[j]]`. Only the receiving group
/// knows the sizes, so every member sends to the remote leader (one round, both ways at once),
/// and each leader broadcasts the blocks, packed, in its group.
pub async fn allgatherv(port: &Port, mine: &[u8], all: &mut [u8], blocks: &[Range<usize>]) -> Result<(), i32> {
    check_blocks(blocks, port.remote_size(), all.len())?;
    let leader = port.remote(0);
    if is_leader(port) {
        let sources: Vec<Option<usize>> = (0..port.remote_size()).map(|rank| Some(port.remote(rank))).collect();
        let whole = 0..mine.len();
        port.exchange_with(&sources, all, blocks, &[Some(leader)], mine, slice::from_ref(&whole))?.await?;
    } else {
        port.send(leader, mine).await?;
    }
    if port.size() == 1 {
        return Ok(());
    }
    let mut packed = vec![0u8; blocks.iter().map(|block| block.len()).sum()];
    if is_leader(port) {
        pack(all, blocks, &mut packed);
    }
    local_bcast(port, &mut packed, 0).await?;
    if !is_leader(port) {
        unpack(&packed, all, blocks);
    }
    Ok(())
}

fn pack(all: &[u8], blocks: &[Range<usize>], packed: &mut [u8]) {
    let mut offset = 0;
    for block in blocks {
        packed[offset..offset + block.len()].copy_from_slice(&all[block.clone()]);
        offset += block.len();
    }
}

fn unpack(packed: &[u8], all: &mut [u8], blocks: &[Range<usize>]) {
    let mut offset = 0;
    for block in blocks {
        all[block.clone()].copy_from_slice(&packed[offset..offset + block.len()]);
        offset += block.len();
    }
}

/// Personalized exchange of equal blocks with the other group: block j of `send` goes to remote
/// rank j, block j of `recv` comes from it.
pub async fn alltoall(port: &Port, send: &[u8], recv: &mut [u8]) -> Result<(), i32> {
    let remote_size = port.remote_size();
    require(remote_size > 0 && send.len().is_multiple_of(remote_size) && recv.len().is_multiple_of(remote_size), MPI_ERR_ARG)?;
    let (send_block, recv_block) = (send.len() / remote_size, recv.len() / remote_size);
    let send_blocks: Vec<Range<usize>> = (0..remote_size).map(|index| index * send_block..(index + 1) * send_block).collect();
    let recv_blocks: Vec<Range<usize>> = (0..remote_size).map(|index| index * recv_block..(index + 1) * recv_block).collect();
    alltoallv(port, send, &send_blocks, recv, &recv_blocks).await
}

/// Personalized exchange of varying blocks: `send[send_blocks[j]]` goes to remote rank j and
/// `recv[recv_blocks[j]]` comes from it. Pairwise, max(local, remote size) rounds: in round s,
/// local rank r sends to remote rank r + s and receives from remote rank r - s (modulo that
/// maximum), where those exist; the other group's round s pairs the same processes.
pub async fn alltoallv(port: &Port, send: &[u8], send_blocks: &[Range<usize>], recv: &mut [u8], recv_blocks: &[Range<usize>]) -> Result<(), i32> {
    let (rank, remote_size) = (port.rank(), port.remote_size());
    check_blocks(send_blocks, remote_size, send.len())?;
    check_blocks(recv_blocks, remote_size, recv.len())?;
    let rounds = port.size().max(remote_size);
    for step in 0..rounds {
        let dest = (rank + step) % rounds;
        let source = (rank + rounds - step) % rounds;
        let (source, into) = if source < remote_size { (Some(port.remote(source)), recv_blocks[source].clone()) } else { (None, 0..0) };
        let (dest, from) = if dest < remote_size { (Some(port.remote(dest)), send_blocks[dest].clone()) } else { (None, 0..0) };
        port.exchange_with(&[source], recv, slice::from_ref(&into), &[dest], send, slice::from_ref(&from))?.await?;
    }
    Ok(())
}

/// Reduces the other group's `data` (in its rank order) into the root's `data`: the group reduces
/// to its leader, which sends the result to the root. Elsewhere `data` is scratch.
pub async fn reduce(port: &Port, data: &mut [u8], element_size: usize, combine: Combine<'_>, commutative: bool, role: Role) -> Result<(), i32> {
    check_elements(data.len(), element_size)?;
    check_role(port, role)?;
    match role {
        Role::Root => port.recv(port.remote(0), data).await,
        Role::Idle => Ok(()),
        Role::Remote { root } => {
            local_reduce(port, data, element_size, combine, commutative, 0).await?;
            if is_leader(port) {
                port.send(port.remote(root), data).await?;
            }
            Ok(())
        }
    }
}

/// Leaves the reduction of the other group's `data` (in its rank order) in every member's `data`:
/// each group reduces to its leader, the leaders swap, each broadcasts in its group.
pub async fn allreduce(port: &Port, data: &mut [u8], element_size: usize, combine: Combine<'_>, commutative: bool) -> Result<(), i32> {
    check_elements(data.len(), element_size)?;
    swap_reductions(port, data, element_size, combine, commutative).await?;
    local_bcast(port, data, 0).await
}

/// Reduces the group's `data` to its leader and swaps the result with the other leader: the
/// leader's `data` ends holding the other group's reduction; elsewhere it is scratch.
async fn swap_reductions(port: &Port, data: &mut [u8], element_size: usize, combine: Combine<'_>, commutative: bool) -> Outcome {
    local_reduce(port, data, element_size, combine, commutative, 0).await?;
    if is_leader(port) {
        let leader = port.remote(0);
        let mut theirs = vec![0u8; data.len()];
        port.sendrecv(leader, data, leader, &mut theirs).await?;
        data.copy_from_slice(&theirs);
    }
    Ok(())
}

/// Reduces the other group's full vectors `data` (as long as this group's, whose `counts`
/// elements per local rank add up to them) and leaves local rank r's part, `counts[r]` elements,
/// in its `out`: each group reduces to its leader, the leaders swap, each scatters in its group.
/// `data` is scratch afterwards.
pub async fn reduce_scatter(port: &Port, data: &mut [u8], counts: &[usize], element_size: usize, combine: Combine<'_>, commutative: bool, out: &mut [u8]) -> Result<(), i32> {
    check_elements(data.len(), element_size)?;
    require(counts.len() == port.size(), MPI_ERR_ARG)?;
    let mut blocks = Vec::with_capacity(counts.len());
    let mut offset = 0usize;
    for &count in counts {
        let end = count.checked_mul(element_size).and_then(|len| offset.checked_add(len)).ok_or(MPI_ERR_ARG)?;
        blocks.push(offset..end);
        offset = end;
    }
    require(offset == data.len() && out.len() == blocks[port.rank()].len(), MPI_ERR_ARG)?;
    swap_reductions(port, data, element_size, combine, commutative).await?;
    local_scatterv(port, data, &blocks, Some(out), 0).await
}

/// [`reduce_scatter`] with `out.len()` bytes for every local rank.
pub async fn reduce_scatter_block(port: &Port, data: &mut [u8], element_size: usize, combine: Combine<'_>, commutative: bool, out: &mut [u8]) -> Result<(), i32> {
    check_elements(out.len(), element_size)?;
    let counts = vec![out.len() / element_size; port.size()];
    reduce_scatter(port, data, &counts, element_size, combine, commutative, out).await
}
