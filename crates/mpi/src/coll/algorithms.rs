//! Collective algorithms, on contiguous bytes: `async fn`s over a [`Port`], each `.await` a round
//! of sends and receives (see [`super::port`]), so that one algorithm serves the blocking and the
//! non-blocking call.
//!
//! Every member of a communicator runs the same algorithm with matching sizes. Messages between
//! one pair are matched in order (MPI's non-overtaking rule), so an algorithm only has to make
//! both sides of every pair agree on the sequence and the sizes of their messages. A send may
//! not end until it is matched, so every exchange in which both sides send goes through
//! `sendrecv`, and no rank ever sends to itself.
//!
//! Reductions use [`Combine`] (`inout = input op inout`). Non-commutative operations are always
//! applied in rank order: the result is `x0 op x1 op ... op x(n-1)`.

use std::ops::Range;

use super::hierarchy::{Collective, Hierarchy};
use super::port::Port;
use super::{Combine, SMALL_ALLREDUCE_RANKS};
use crate::consts::{MPI_ERR_ARG, MPI_ERR_BUFFER, MPI_ERR_ROOT};

type Outcome = Result<(), i32>;

fn require(condition: bool, class: i32) -> Outcome {
    if condition {
        Ok(())
    } else {
        Err(class)
    }
}

fn check_root(root: usize, size: usize) -> Outcome {
    require(root < size, MPI_ERR_ROOT)
}

fn check_elements(len: usize, element_size: usize) -> Outcome {
    require(element_size > 0 && len.is_multiple_of(element_size), MPI_ERR_ARG)
}

fn check_blocks(blocks: &[Range<usize>], size: usize, buffer_len: usize) -> Outcome {
    require(blocks.len() == size, MPI_ERR_ARG)?;
    require(blocks.iter().all(|block| block.start <= block.end && block.end <= buffer_len), MPI_ERR_BUFFER)
}

/// A range to send from and a disjoint range to receive into, both in `buffer`.
fn split_pair(buffer: &mut [u8], send: Range<usize>, receive: Range<usize>) -> Result<(&[u8], &mut [u8]), i32> {
    if send.is_empty() {
        return Ok((&[], &mut buffer[receive]));
    }
    if receive.is_empty() {
        return Ok((&buffer[send], &mut []));
    }
    let (send, receive) = two_blocks(buffer, send, receive)?;
    Ok((send, receive))
}

/// Rank `relative` positions after `root`, modulo `size`.
fn absolute(relative: usize, root: usize, size: usize) -> usize {
    (relative + root) % size
}

/// Lowest set bit of a non-zero relative rank: the number of binomial-tree slots it heads.
fn lowest_bit(relative: usize) -> usize {
    relative & relative.wrapping_neg()
}

/// A non-root rank's place in the binomial tree rooted at `root`.
struct TreeNode {
    /// Rank relative to the root.
    relative: usize,
    /// Blocks in this rank's subtree, its own included.
    span: usize,
    /// The rank it exchanges its subtree's blocks with.
    parent: usize,
}

fn tree_node(rank: usize, size: usize, root: usize) -> TreeNode {
    let relative = (rank + size - root) % size;
    TreeNode { relative, span: lowest_bit(relative).min(size - relative), parent: (rank + size - lowest_bit(relative)) % size }
}

/// Dissemination barrier: ceil(log2 n) rounds of empty messages.
pub async fn barrier(port: &Port) -> Result<(), i32> {
    if let Some(flags) = flags::for_bytes(port, 0).await? {
        flags::barrier(port, flags).await;
        return Ok(());
    }
    if let Some(hierarchy) = port.hierarchy_for(Collective::Barrier, 0) {
        return Box::pin(hier::barrier(port, &hierarchy.layout)).await;
    }
    let (rank, size) = (port.rank(), port.size());
    let mut distance = 1;
    while distance < size {
        port.sendrecv((rank + distance) % size, &[], (rank + size - distance) % size, &mut []).await?;
        distance *= 2;
    }
    Ok(())
}

/// Broadcasts `buffer` from `root`: a binomial tree, or for large buffers on a communicator that
/// spans nodes a binomial scatter of one chunk per rank followed by a ring allgather (van de
/// Geijn).
pub async fn bcast(port: &Port, buffer: &mut [u8], root: usize) -> Result<(), i32> {
    let size = port.size();
    check_root(root, size)?;
    if size == 1 {
        return Ok(());
    }
    if let Some(flags) = flags::for_broadcast(port, buffer.len()).await? {
        flags::bcast(port, flags, buffer, root).await;
        return Ok(());
    }
    if let Some(hierarchy) = port.hierarchy_for(Collective::Bcast, buffer.len()) {
        return Box::pin(hier::bcast(port, &hierarchy.layout, buffer, root)).await;
    }
    // Within one node the tree's messages are single copies that the receivers make in
    // parallel: splitting only adds rounds.
    if buffer.len() >= port.tuning().bcast_split_min && buffer.len() >= size && !port.on_one_node() {
        bcast_scatter_allgather(port, buffer, root).await
    } else if !port.spans_nodes() && buffer.len().saturating_mul(size - 1) <= port.tuning().bcast_flat_max {
        bcast_flat(port, buffer, root).await
    } else {
        bcast_binomial(port, buffer, root).await
    }
}

/// The root sends to every rank itself: no rank forwards, so none waits for another to run.
async fn bcast_flat(port: &Port, buffer: &mut [u8], root: usize) -> Outcome {
    let (rank, size) = (port.rank(), port.size());
    if rank != root {
        return port.recv(root, buffer).await;
    }
    port.send_each((0..size).filter(|&peer| peer != root), buffer).await
}

async fn bcast_binomial(port: &Port, buffer: &mut [u8], root: usize) -> Outcome {
    let (rank, size) = (port.rank(), port.size());
    let relative = (rank + size - root) % size;
    let mut mask = 1;
    while mask < size {
        if relative & mask != 0 {
            port.recv((rank + size - mask) % size, buffer).await?;
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    while mask > 0 {
        if relative + mask < size {
            port.send((rank + mask) % size, buffer).await?;
        }
        mask >>= 1;
    }
    Ok(())
}

/// Bytes of chunk `index` when `len` bytes are cut into `parts` nearly equal chunks.
fn chunk(len: usize, parts: usize, index: usize) -> Range<usize> {
    let chunk_len = len.div_ceil(parts);
    (index * chunk_len).min(len)..((index + 1) * chunk_len).min(len)
}

async fn bcast_scatter_allgather(port: &Port, buffer: &mut [u8], root: usize) -> Outcome {
    let (rank, size) = (port.rank(), port.size());
    let len = buffer.len();
    let relative = (rank + size - root) % size;
    // Chunks are numbered by relative rank, so every subtree's chunks are one contiguous range.
    let chunks = |first: usize, end: usize| chunk(len, size, first).start..chunk(len, size, end - 1).end;
    let mut mask = 1;
    while mask < size {
        if relative & mask != 0 {
            let end = (relative + mask).min(size);
            port.recv((rank + size - mask) % size, &mut buffer[chunks(relative, end)]).await?;
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    while mask > 0 {
        if relative + mask < size {
            let end = (relative + 2 * mask).min(size);
            port.send((rank + mask) % size, &buffer[chunks(relative + mask, end)]).await?;
        }
        mask >>= 1;
    }
    ring_allgather(port, buffer, &|index| chunk(len, size, (index + size - root) % size)).await
}

/// Ring allgather in place: rank r owns `block(r)` of `buffer` and receives every other rank's.
async fn ring_allgather(port: &Port, buffer: &mut [u8], block: &dyn Fn(usize) -> Range<usize>) -> Outcome {
    ring_allgather_from(port, buffer, block, 0).await
}

/// The ring allgather's steps from `first` on.
async fn ring_allgather_from(port: &Port, buffer: &mut [u8], block: &dyn Fn(usize) -> Range<usize>, first: usize) -> Outcome {
    let (rank, size) = (port.rank(), port.size());
    let next = (rank + 1) % size;
    let previous = (rank + size - 1) % size;
    for step in first..size - 1 {
        let outgoing = block((rank + size - step) % size);
        let incoming = block((rank + 2 * size - step - 1) % size);
        let (data, into) = split_pair(buffer, outgoing, incoming)?;
        port.sendrecv(next, data, previous, into).await?;
    }
    Ok(())
}

/// Gathers equal blocks: `all` (n * `mine.len()` bytes) receives rank r's `mine` at block r.
pub async fn allgather(port: &Port, mine: &[u8], all: &mut [u8]) -> Result<(), i32> {
    let (rank, size) = (port.rank(), port.size());
    let block = mine.len();
    require(all.len() == block * size, MPI_ERR_ARG)?;
    if let Some(flags) = flags::for_bytes(port, block).await? {
        flags::allgather(port, flags, mine, all).await;
        return Ok(());
    }
    if let Some(hierarchy) = port.hierarchy_for(Collective::Allgather, block) {
        let blocks: Vec<Range<usize>> = (0..size).map(|index| index * block..(index + 1) * block).collect();
        return Box::pin(hier::allgatherv(port, &hierarchy.layout, Some(mine), all, &blocks)).await;
    }
    if size == 1 {
        all.copy_from_slice(mine);
        return Ok(());
    }
    // The first step sends this rank's block from `mine`, so its copy into place runs while the
    // step's transfers move.
    let previous = (rank + size - 1) % size;
    let (own, incoming) = two_blocks(all, rank * block..(rank + 1) * block, previous * block..(previous + 1) * block)?;
    let first = port.sendrecv((rank + 1) % size, mine, previous, incoming);
    port.started().await;
    own.copy_from_slice(mine);
    first.await?;
    ring_allgather_from(port, all, &|index| index * block..(index + 1) * block, 1).await
}

/// Two disjoint ranges of `buffer`, both writable.
fn two_blocks(buffer: &mut [u8], first: Range<usize>, second: Range<usize>) -> Result<(&mut [u8], &mut [u8]), i32> {
    if first.end <= second.start {
        let (low, high) = buffer.split_at_mut(second.start);
        Ok((&mut low[first], &mut high[..second.len()]))
    } else if second.end <= first.start {
        let (low, high) = buffer.split_at_mut(first.start);
        Ok((&mut high[..first.len()], &mut low[second]))
    } else {
        Err(MPI_ERR_BUFFER)
    }
}

/// Gathers blocks of varying sizes: rank r's data lands in `all[blocks[r]]` everywhere.
/// `mine` is `None` when this rank's block is already in place.
pub async fn allgatherv(port: &Port, mine: Option<&[u8]>, all: &mut [u8], blocks: &[Range<usize>]) -> Result<(), i32> {
    let (rank, size) = (port.rank(), port.size());
    check_blocks(blocks, size, all.len())?;
    if let Some(mine) = mine {
        require(mine.len() == blocks[rank].len(), MPI_ERR_ARG)?;
    }
    // Every rank knows every block's size, so all make the same choice.
    let largest = blocks.iter().map(|block| block.len()).max().unwrap_or(0);
    if let Some(flags) = flags::for_bytes(port, largest).await? {
        flags::allgatherv(port, flags, mine, all, blocks).await;
        return Ok(());
    }
    let mean = blocks.iter().map(|block| block.len()).sum::<usize>() / size;
    if let Some(hierarchy) = port.hierarchy_for(Collective::Allgather, mean) {
        return Box::pin(hier::allgatherv(port, &hierarchy.layout, mine, all, blocks)).await;
    }
    if let Some(mine) = mine {
        require(mine.len() == blocks[rank].len(), MPI_ERR_ARG)?;
        all[blocks[rank].clone()].copy_from_slice(mine);
    }
    ring_allgather(port, all, &|index| blocks[index].clone()).await
}

/// Gathers equal blocks to `root` along a binomial tree. At the root, `all` holds n blocks and
/// `mine` is `None` when the root's block is already in place; elsewhere `all` is unused.
pub async fn gather(port: &Port, mine: Option<&[u8]>, all: &mut [u8], root: usize) -> Result<(), i32> {
    let (rank, size) = (port.rank(), port.size());
    check_root(root, size)?;
    let block = if rank == root { all.len() / size } else { mine.map_or(0, <[u8]>::len) };
    if rank != root || all.len() == block * size {
        if let Some(flags) = flags::for_bytes(port, block).await? {
            flags::gather(port, flags, mine, all, block, root).await;
            return Ok(());
        }
    }
    if let Some(hierarchy) = port.hierarchy_for(Collective::Gather, block) {
        if rank == root {
            require(all.len().is_multiple_of(size), MPI_ERR_ARG)?;
        }
        return Box::pin(hier::gather(port, &hierarchy.layout, mine, all, block, root)).await;
    }
    if rank != root {
        let mine = mine.ok_or(MPI_ERR_BUFFER)?;
        let TreeNode { relative, span, parent } = tree_node(rank, size, root);
        if span == 1 {
            return port.send(parent, mine).await;
        }
        let block = mine.len();
        let mut staging = vec![0u8; span * block];
        staging[..block].copy_from_slice(mine);
        gather_from_children(port, relative, lowest_bit(relative), block, &mut staging).await?;
        return port.send(parent, &staging).await;
    }
    require(all.len().is_multiple_of(size), MPI_ERR_ARG)?;
    let block = all.len() / size;
    let own = root * block..(root + 1) * block;
    if let Some(mine) = mine {
        require(mine.len() == block, MPI_ERR_ARG)?;
        all[own.clone()].copy_from_slice(mine);
    }
    if root == 0 {
        return gather_from_children(port, 0, usize::MAX, block, all).await;
    }
    // The tree delivers blocks in relative order; rotate them into rank order afterwards.
    let mut staging = vec![0u8; all.len()];
    staging[..block].copy_from_slice(&all[own]);
    gather_from_children(port, 0, usize::MAX, block, &mut staging).await?;
    let wrap = (size - root) * block;
    all[root * block..].copy_from_slice(&staging[..wrap]);
    all[..root * block].copy_from_slice(&staging[wrap..]);
    Ok(())
}

/// Receives the subtrees below `relative` (children `relative + mask` for `mask < limit`) into
/// `staging`, whose block 0 is this rank's.
async fn gather_from_children(port: &Port, relative: usize, limit: usize, block: usize, staging: &mut [u8]) -> Outcome {
    let (rank, size) = (port.rank(), port.size());
    let mut mask = 1;
    while mask < limit && relative + mask < size {
        let span = mask.min(size - relative - mask);
        port.recv((rank + mask) % size, &mut staging[mask * block..(mask + span) * block]).await?;
        mask <<= 1;
    }
    Ok(())
}

/// Scatters equal blocks from `root` along a binomial tree. At the root, `all` holds n blocks
/// and `mine` is `None` when the root keeps its block in place; elsewhere `all` is unused.
pub async fn scatter(port: &Port, all: &[u8], mine: Option<&mut [u8]>, root: usize) -> Result<(), i32> {
    let (rank, size) = (port.rank(), port.size());
    check_root(root, size)?;
    let block = if rank == root { all.len() / size } else { mine.as_deref().map_or(0, <[u8]>::len) };
    if rank != root || all.len() == block * size {
        if let Some(flags) = flags::for_bytes(port, block.saturating_mul(size)).await? {
            flags::scatter(port, flags, all, mine, block, root).await;
            return Ok(());
        }
    }
    if let Some(hierarchy) = port.hierarchy_for(Collective::Scatter, block) {
        if rank == root {
            require(all.len().is_multiple_of(size), MPI_ERR_ARG)?;
        }
        return Box::pin(hier::scatter(port, &hierarchy.layout, all, mine, block, root)).await;
    }
    if rank != root {
        let mine = mine.ok_or(MPI_ERR_BUFFER)?;
        let TreeNode { relative, span, parent } = tree_node(rank, size, root);
        if span == 1 {
            return port.recv(parent, mine).await;
        }
        let block = mine.len();
        let mut staging = vec![0u8; span * block];
        port.recv(parent, &mut staging).await?;
        scatter_to_children(port, relative, lowest_bit(relative), block, &staging).await?;
        mine.copy_from_slice(&staging[..block]);
        return Ok(());
    }
    require(all.len().is_multiple_of(size), MPI_ERR_ARG)?;
    let block = all.len() / size;
    let own = root * block..(root + 1) * block;
    let top = size.next_power_of_two();
    if root == 0 {
        scatter_to_children(port, 0, top, block, all).await?;
    } else {
        let mut staging = Vec::with_capacity(all.len());
        staging.extend_from_slice(&all[root * block..]);
        staging.extend_from_slice(&all[..root * block]);
        scatter_to_children(port, 0, top, block, &staging).await?;
    }
    if let Some(mine) = mine {
        require(mine.len() == block, MPI_ERR_ARG)?;
        mine.copy_from_slice(&all[own]);
    }
    Ok(())
}

/// Sends each subtree below `relative` its blocks of `staging` (relative order), largest first.
async fn scatter_to_children(port: &Port, relative: usize, limit: usize, block: usize, staging: &[u8]) -> Outcome {
    let (rank, size) = (port.rank(), port.size());
    let mut mask = limit >> 1;
    while mask > 0 {
        if relative + mask < size {
            let span = mask.min(size - relative - mask);
            port.send((rank + mask) % size, &staging[mask * block..(mask + span) * block]).await?;
        }
        mask >>= 1;
    }
    Ok(())
}

/// Gathers blocks of varying sizes to `root`: rank r's `mine` lands in `all[blocks[r]]`.
/// `blocks` and `all` matter at the root only; the root's `mine` is `None` when in place. The
/// root receives every block in one round.
pub async fn gatherv(port: &Port, mine: Option<&[u8]>, all: &mut [u8], blocks: &[Range<usize>], root: usize) -> Result<(), i32> {
    let (rank, size) = (port.rank(), port.size());
    check_root(root, size)?;
    if let Some(hierarchy) = port.hierarchy_for_any_size(Collective::Gatherv) {
        return Box::pin(hier::gatherv(port, &hierarchy.layout, mine, all, blocks, root)).await;
    }
    if rank != root {
        return port.send(root, mine.ok_or(MPI_ERR_BUFFER)?).await;
    }
    check_blocks(blocks, size, all.len())?;
    if let Some(mine) = mine {
        require(mine.len() == blocks[root].len(), MPI_ERR_ARG)?;
        all[blocks[root].clone()].copy_from_slice(mine);
    }
    let sources: Vec<Option<usize>> = (0..size).map(|source| (source != root).then_some(source)).collect();
    port.exchange_with(&sources, all, blocks, &[], &[], &[])?.await
}

/// Scatters `all[blocks[r]]` from `root` to rank r's `mine`. `blocks` and `all` matter at the
/// root only; the root's `mine` is `None` when it keeps its block in place. The root sends every
/// block in one round.
pub async fn scatterv(port: &Port, all: &[u8], blocks: &[Range<usize>], mine: Option<&mut [u8]>, root: usize) -> Result<(), i32> {
    let (rank, size) = (port.rank(), port.size());
    check_root(root, size)?;
    if let Some(hierarchy) = port.hierarchy_for_any_size(Collective::Scatterv) {
        return Box::pin(hier::scatterv(port, &hierarchy.layout, all, blocks, mine, root)).await;
    }
    if rank != root {
        return port.recv(root, mine.ok_or(MPI_ERR_BUFFER)?).await;
    }
    check_blocks(blocks, size, all.len())?;
    if let Some(mine) = mine {
        require(mine.len() == blocks[root].len(), MPI_ERR_ARG)?;
        mine.copy_from_slice(&all[blocks[root].clone()]);
    }
    let destinations: Vec<Option<usize>> = (0..size).map(|dest| (dest != root).then_some(dest)).collect();
    port.exchange_with(&[], &mut [], &[], &destinations, all, blocks)?.await
}

/// Personalized exchange of equal blocks: block d of `send` goes to rank d, block s of `recv`
/// comes from rank s. Pairwise exchange, its steps in batches (`alltoallv_batched`).
pub async fn alltoall(port: &Port, send: &[u8], recv: &mut [u8]) -> Result<(), i32> {
    let size = port.size();
    require(send.len() == recv.len() && send.len().is_multiple_of(size), MPI_ERR_ARG)?;
    let block = send.len() / size;
    if let Some(flags) = flags::for_bytes(port, send.len()).await? {
        flags::alltoall(port, flags, send, recv).await;
        return Ok(());
    }
    if let Some(hierarchy) = port.hierarchy_for(Collective::Alltoall, block) {
        return Box::pin(hier::alltoall(port, &hierarchy.layout, send, recv)).await;
    }
    let blocks: Vec<Range<usize>> = (0..size).map(|index| index * block..(index + 1) * block).collect();
    alltoallv_batched(port, send, &blocks, recv, &blocks).await
}

/// Personalized exchange of varying blocks: `send[send_blocks[d]]` goes to rank d and arrives
/// in its `recv[recv_blocks[me]]`. Pairwise exchange, its steps in batches (`alltoallv_batched`).
pub async fn alltoallv(port: &Port, send: &[u8], send_blocks: &[Range<usize>], recv: &mut [u8], recv_blocks: &[Range<usize>]) -> Result<(), i32> {
    if let Some(hierarchy) = port.hierarchy_for_any_size(Collective::Alltoallv) {
        return Box::pin(hier::alltoallv(port, &hierarchy.layout, send, send_blocks, recv, recv_blocks)).await;
    }
    alltoallv_batched(port, send, send_blocks, recv, recv_blocks).await
}

/// The pairwise exchange (at step s, send to rank + s and receive from rank - s) with
/// `alltoall_batch` steps posted at once: a rank then moves the blocks of a batch in whatever
/// order its partners are ready, instead of waiting on each in turn.
async fn alltoallv_batched(port: &Port, send: &[u8], send_blocks: &[Range<usize>], recv: &mut [u8], recv_blocks: &[Range<usize>]) -> Outcome {
    let (rank, size) = (port.rank(), port.size());
    check_blocks(send_blocks, size, send.len())?;
    check_blocks(recv_blocks, size, recv.len())?;
    require(send_blocks[rank].len() == recv_blocks[rank].len(), MPI_ERR_ARG)?;
    recv[recv_blocks[rank].clone()].copy_from_slice(&send[send_blocks[rank].clone()]);
    let steps: Vec<usize> = (1..size).collect();
    for batch in steps.chunks(port.tuning().alltoall_batch.max(1)) {
        if let [step] = batch {
            let (dest, source) = ((rank + step) % size, (rank + size - step) % size);
            port.sendrecv(dest, &send[send_blocks[dest].clone()], source, &mut recv[recv_blocks[source].clone()]).await?;
            continue;
        }
        let destinations: Vec<Option<usize>> = batch.iter().map(|step| Some((rank + step) % size)).collect();
        let outgoing: Vec<Range<usize>> = batch.iter().map(|step| send_blocks[(rank + step) % size].clone()).collect();
        let sources: Vec<Option<usize>> = batch.iter().map(|step| Some((rank + size - step) % size)).collect();
        let incoming: Vec<Range<usize>> = batch.iter().map(|step| recv_blocks[(rank + size - step) % size].clone()).collect();
        port.exchange_with(&sources, recv, &incoming, &destinations, send, &outgoing)?.await?;
    }
    Ok(())
}

/// Reduces every rank's `data` to `root`, where `data` ends holding the result; elsewhere
/// `data` is scratch. Binomial tree; a non-commutative operation is reduced to rank 0 in rank
/// order, then sent to the root.
pub async fn reduce(port: &Port, data: &mut [u8], element_size: usize, combine: Combine<'_>, commutative: bool, root: usize) -> Result<(), i32> {
    let (rank, size) = (port.rank(), port.size());
    check_root(root, size)?;
    check_elements(data.len(), element_size)?;
    if size == 1 {
        return Ok(());
    }
    if let Some(flags) = flags::for_bytes(port, data.len()).await? {
        flags::reduce(port, flags, None, data, combine, root).await;
        return Ok(());
    }
    if commutative {
        if let Some(hierarchy) = port.hierarchy_for(Collective::Reduce, data.len()) {
            return Box::pin(hier::reduce(port, &hierarchy.layout, data, element_size, combine, root)).await;
        }
        return reduce_commutative(port, data, combine, root).await;
    }
    reduce_in_rank_order(port, data, combine).await?;
    if root != 0 {
        if rank == 0 {
            port.send(root, data).await?;
        } else if rank == root {
            port.recv(0, data).await?;
        }
    }
    Ok(())
}

// The port's scratch stays borrowed across the rounds: it is this algorithm's alone.
#[allow(clippy::await_holding_refcell_ref)]
async fn reduce_commutative(port: &Port, data: &mut [u8], combine: Combine<'_>, root: usize) -> Outcome {
    let (rank, size) = (port.rank(), port.size());
    let relative = (rank + size - root) % size;
    if relative & 1 != 0 {
        return port.send(absolute(relative - 1, root, size), data).await;
    }
    let mut scratch = port.scratch(data.len());
    let incoming = &mut scratch[..];
    let mut mask = 1;
    while mask < size {
        if relative & mask != 0 {
            return port.send(absolute(relative - mask, root, size), data).await;
        }
        if relative + mask < size {
            port.recv(absolute(relative + mask, root, size), incoming).await?;
            combine(incoming, data);
        }
        mask <<= 1;
    }
    Ok(())
}

/// Binomial reduction to rank 0 that keeps operands in rank order: rank r accumulates ranks
/// r..r + 2^k, and each child's partial result comes from the ranks just above.
async fn reduce_in_rank_order(port: &Port, data: &mut [u8], combine: Combine<'_>) -> Outcome {
    let (rank, size) = (port.rank(), port.size());
    let mut mask = 1;
    let mut accumulated: Option<Vec<u8>> = None;
    let mut incoming = Vec::new();
    while mask < size {
        if rank & mask != 0 {
            return port.send(rank - mask, accumulated.as_deref().unwrap_or(&*data)).await;
        }
        if rank + mask < size {
            incoming.resize(data.len(), 0);
            port.recv(rank + mask, &mut incoming).await?;
            let lower = accumulated.as_deref().unwrap_or(&*data);
            combine(lower, &mut incoming);
            std::mem::swap(accumulated.get_or_insert_with(Vec::new), &mut incoming);
        }
        mask <<= 1;
    }
    if let Some(result) = accumulated {
        data.copy_from_slice(&result);
    }
    Ok(())
}

/// How [`allreduce`] goes about it: decided alike on every rank from the group, the vector's
/// length and the operation (and, through the port, the node structure and the settings).
pub enum AllreduceForm<'a> {
    /// A group of one: nothing to exchange.
    Alone,
    /// Through the node-wide shared segment.
    NodeSegment(&'a Hierarchy),
    /// Node phase, leaders' phase, node fan-out.
    Hierarchical(&'a Hierarchy),
    /// One all-to-all exchange, reduced in rank order everywhere.
    Exchange,
    /// A non-commutative operation: in-order reduction to rank 0 and a broadcast.
    InRankOrder,
    /// Recursive doubling among a power of two of ranks (extra ranks folded in first); `split`:
    /// reduce-scatter by recursive halving, then allgather by recursive doubling (Rabenseifner).
    Doubling { split: bool },
}

/// The form [`allreduce`] takes for `len` bytes of `element_size`-byte elements.
pub fn allreduce_form(port: &Port, len: usize, element_size: usize, commutative: bool) -> AllreduceForm<'_> {
    let size = port.size();
    if size == 1 {
        return AllreduceForm::Alone;
    }
    if commutative {
        if let Some(hierarchy) = port.node_segment_for(Collective::Allreduce, len) {
            return AllreduceForm::NodeSegment(hierarchy);
        }
        if let Some(hierarchy) = port.hierarchy_for(Collective::Allreduce, len) {
            return AllreduceForm::Hierarchical(hierarchy);
        }
    }
    if (3..=SMALL_ALLREDUCE_RANKS).contains(&size) && len <= port.tuning().allreduce_exchange_max / size {
        return AllreduceForm::Exchange;
    }
    if !commutative {
        return AllreduceForm::InRankOrder;
    }
    let split = len >= port.tuning().allreduce_split_min && len / element_size >= prev_power_of_two(size);
    AllreduceForm::Doubling { split }
}

/// Reduces every rank's `data` and leaves the result in `data` on every rank, in the form
/// [`allreduce_form`] picks.
// The port's scratch stays borrowed across the rounds: it is this algorithm's alone.
#[allow(clippy::await_holding_refcell_ref)]
pub async fn allreduce(port: &Port, data: &mut [u8], element_size: usize, combine: Combine<'_>, commutative: bool) -> Result<(), i32> {
    check_elements(data.len(), element_size)?;
    if let Some(flags) = flags::for_allreduce(port, data.len()).await? {
        flags::allreduce(port, flags, None, data, combine).await;
        return Ok(());
    }
    let split = match allreduce_form(port, data.len(), element_size, commutative) {
        AllreduceForm::Alone => return Ok(()),
        AllreduceForm::NodeSegment(hierarchy) => return Box::pin(segment::allreduce(port, hierarchy, data, element_size, combine)).await,
        AllreduceForm::Hierarchical(hierarchy) => return Box::pin(hier::allreduce(port, &hierarchy.layout, data, element_size, combine)).await,
        AllreduceForm::Exchange => return allreduce_all_to_all(port, data, combine).await,
        AllreduceForm::InRankOrder => {
            reduce_in_rank_order(port, data, combine).await?;
            return bcast(port, data, 0).await;
        }
        AllreduceForm::Doubling { split } => split,
    };
    let size = port.size();
    let participants = prev_power_of_two(size);
    let mut scratch = port.scratch(data.len());
    let incoming = &mut scratch[..];
    let Some(folded_rank) = fold_extra_ranks(port, data, incoming, combine).await? else {
        return unfold_extra_ranks(port, data).await;
    };
    if split {
        allreduce_halving_doubling(port, None, data, incoming, element_size, combine, folded_rank, participants).await?;
    } else {
        let mut mask = 1;
        while mask < participants {
            let partner = unfolded_rank(folded_rank ^ mask, size);
            port.sendrecv(partner, data, partner, incoming).await?;
            combine(incoming, data);
            mask <<= 1;
        }
    }
    unfold_extra_ranks(port, data).await
}

/// [`allreduce`] of `input`, the result in `data` (as long): where the form allows (halving and
/// doubling on a power-of-two group), the first exchange sends from `input` and receives into
/// `data`, and nothing is copied; otherwise `input` is copied first.
// The port's scratch stays borrowed across the rounds: it is this algorithm's alone.
#[allow(clippy::await_holding_refcell_ref)]
pub async fn allreduce_from(port: &Port, input: &[u8], data: &mut [u8], element_size: usize, combine: Combine<'_>, commutative: bool) -> Result<(), i32> {
    require(input.len() == data.len(), MPI_ERR_ARG)?;
    check_elements(data.len(), element_size)?;
    let size = port.size();
    if let Some(flags) = flags::for_allreduce(port, data.len()).await? {
        flags::allreduce(port, flags, Some(input), data, combine).await;
        return Ok(());
    }
    let halving = size.is_power_of_two() && matches!(allreduce_form(port, data.len(), element_size, commutative), AllreduceForm::Doubling { split: true });
    if !halving {
        data.copy_from_slice(input);
        return allreduce(port, data, element_size, combine, commutative).await;
    }
    let mut scratch = port.scratch(data.len());
    allreduce_halving_doubling(port, Some(input), data, &mut scratch[..], element_size, combine, port.rank(), size).await
}

/// Every rank sends its input to every other and reduces all of them itself, in rank order, so
/// every rank computes the same `x0 op x1 op ... op x(n-1)`. One round of messages instead of
/// log2 n dependent ones: fewer wake-ups, which matters most when ranks share cores.
// The port's scratch stays borrowed across the rounds: it is this algorithm's alone.
#[allow(clippy::await_holding_refcell_ref)]
async fn allreduce_all_to_all(port: &Port, data: &mut [u8], combine: Combine<'_>) -> Outcome {
    let (rank, size, len) = (port.rank(), port.size(), data.len());
    let mut scratch = port.scratch(len * size);
    let all = &mut scratch[..];
    port.exchange_all(data, all).await?;
    all[rank * len..(rank + 1) * len].copy_from_slice(data);
    data.copy_from_slice(&all[(size - 1) * len..]);
    for block in all[..(size - 1) * len].chunks_exact(len.max(1)).rev() {
        combine(block, data);
    }
    Ok(())
}

fn prev_power_of_two(value: usize) -> usize {
    1 << (usize::BITS - 1 - value.leading_zeros())
}

/// With n = 2^k + extra ranks, the even ranks below 2 * extra hand their data to the odd rank
/// above and sit out; returns this rank's number among the 2^k that go on, or `None`.
async fn fold_extra_ranks(port: &Port, data: &mut [u8], incoming: &mut [u8], combine: Combine<'_>) -> Result<Option<usize>, i32> {
    let (rank, size) = (port.rank(), port.size());
    let extra = size - prev_power_of_two(size);
    if rank >= 2 * extra {
        return Ok(Some(rank - extra));
    }
    if rank % 2 == 0 {
        port.send(rank + 1, data).await?;
        return Ok(None);
    }
    port.recv(rank - 1, incoming).await?;
    combine(incoming, data);
    Ok(Some(rank / 2))
}

/// The communicator rank of folded rank `folded`.
fn unfolded_rank(folded: usize, size: usize) -> usize {
    let extra = size - prev_power_of_two(size);
    if folded < extra {
        2 * folded + 1
    } else {
        folded + extra
    }
}

/// Gives the ranks that sat out the result.
async fn unfold_extra_ranks(port: &Port, data: &mut [u8]) -> Outcome {
    let (rank, size) = (port.rank(), port.size());
    let extra = size - prev_power_of_two(size);
    if rank < 2 * extra {
        if rank % 2 == 1 {
            port.send(rank - 1, data).await?;
        } else {
            port.recv(rank + 1, data).await?;
        }
    }
    Ok(())
}

/// Recursive halving then doubling among `participants` (a power of two) ranks. With `input`,
/// `data` is not filled yet: the first round sends from `input`, receives the partner's kept
/// half into `data` and combines `input`'s into it (every other byte of `data` is written by the
/// doubling rounds).
#[allow(clippy::too_many_arguments)]
async fn allreduce_halving_doubling(
    port: &Port,
    mut input: Option<&[u8]>,
    data: &mut [u8],
    incoming: &mut [u8],
    element_size: usize,
    combine: Combine<'_>,
    folded_rank: usize,
    participants: usize,
) -> Outcome {
    let size = port.size();
    let elements = data.len() / element_size;
    // Chunk i's bytes; chunks are numbered so that folded rank r ends up owning chunk r.
    let bytes = |first: usize, end: usize| {
        let offset = |index: usize| (index * elements / participants) * element_size;
        offset(first)..offset(end)
    };
    let (mut low, mut high) = (0, participants);
    let mut distance = participants / 2;
    while distance > 0 {
        let partner = unfolded_rank(folded_rank ^ distance, size);
        let middle = low + distance;
        let (keep, give) = if folded_rank & distance == 0 { ((low, middle), (middle, high)) } else { ((middle, high), (low, middle)) };
        let keep = bytes(keep.0, keep.1);
        match input.take() {
            Some(input) => {
                // The partner's half lands where the result goes and this rank's input is
                // combined into it there (the operation commutes), so no half is copied.
                port.sendrecv(partner, &input[bytes(give.0, give.1)], partner, &mut data[keep.clone()]).await?;
                combine(&input[keep.clone()], &mut data[keep]);
            }
            None => {
                port.sendrecv(partner, &data[bytes(give.0, give.1)], partner, &mut incoming[keep.clone()]).await?;
                combine(&incoming[keep.clone()], &mut data[keep]);
            }
        }
        if folded_rank & distance == 0 {
            high = middle;
        } else {
            low = middle;
        }
        distance /= 2;
    }
    let mut distance = 1;
    while distance < participants {
        let partner = unfolded_rank(folded_rank ^ distance, size);
        let theirs = if folded_rank & distance == 0 { (high, high + distance) } else { (low - distance, low) };
        let (mine, into) = split_pair(data, bytes(low, high), bytes(theirs.0, theirs.1))?;
        port.sendrecv(partner, mine, partner, into).await?;
        low = low.min(theirs.0);
        high = high.max(theirs.1);
        distance *= 2;
    }
    Ok(())
}

/// Reduces the full vectors `data` (every rank's, `counts` elements per rank in rank order)
/// and leaves rank r's part of the result, `counts[r]` elements, in its `out`. `data` is
/// scratch afterwards. Commutative: pairwise exchange; otherwise in-order reduce + scatter.
pub async fn reduce_scatter(port: &Port, data: &mut [u8], counts: &[usize], element_size: usize, combine: Combine<'_>, commutative: bool, out: &mut [u8]) -> Result<(), i32> {
    let (rank, size) = (port.rank(), port.size());
    check_elements(data.len(), element_size)?;
    require(counts.len() == size, MPI_ERR_ARG)?;
    let mut blocks = Vec::with_capacity(size);
    let mut offset = 0usize;
    for &count in counts {
        let end = count.checked_mul(element_size).and_then(|len| offset.checked_add(len)).ok_or(MPI_ERR_ARG)?;
        blocks.push(offset..end);
        offset = end;
    }
    require(offset == data.len() && out.len() == blocks[rank].len(), MPI_ERR_ARG)?;
    if let Some(flags) = flags::for_bytes(port, data.len()).await? {
        flags::reduce_scatter(port, flags, data, &blocks, combine, out).await;
        return Ok(());
    }
    if commutative {
        if let Some(hierarchy) = port.hierarchy_for(Collective::ReduceScatter, data.len()) {
            return Box::pin(hier::reduce_scatter(port, &hierarchy.layout, data, &blocks, element_size, combine, out)).await;
        }
    }
    if !commutative {
        reduce_in_rank_order(port, data, combine).await?;
        return scatterv(port, data, &blocks, Some(out), 0).await;
    }
    out.copy_from_slice(&data[blocks[rank].clone()]);
    let mut incoming = vec![0u8; out.len()];
    for step in 1..size {
        let dest = (rank + step) % size;
        let source = (rank + size - step) % size;
        port.sendrecv(dest, &data[blocks[dest].clone()], source, &mut incoming).await?;
        combine(&incoming, out);
    }
    Ok(())
}

/// [`reduce_scatter`] with the same number of elements for every rank: `data` holds n blocks
/// of `out.len()` bytes.
pub async fn reduce_scatter_block(port: &Port, data: &mut [u8], element_size: usize, combine: Combine<'_>, commutative: bool, out: &mut [u8]) -> Result<(), i32> {
    let size = port.size();
    check_elements(out.len(), element_size)?;
    require(data.len() == out.len() * size, MPI_ERR_ARG)?;
    let counts = vec![out.len() / element_size; size];
    reduce_scatter(port, data, &counts, element_size, combine, commutative, out).await
}

/// Inclusive prefix reduction in rank order, in place: rank r's `data` becomes x0 op ... op xr.
/// Recursive doubling, any group size, any operation.
pub async fn scan(port: &Port, data: &mut [u8], element_size: usize, combine: Combine<'_>) -> Result<(), i32> {
    check_elements(data.len(), element_size)?;
    prefix(port, data, combine, true).await
}

/// Exclusive prefix reduction in rank order, in place: rank r > 0's `data` becomes
/// x0 op ... op x(r-1); rank 0's `data` is left as it was.
pub async fn exscan(port: &Port, data: &mut [u8], element_size: usize, combine: Combine<'_>) -> Result<(), i32> {
    check_elements(data.len(), element_size)?;
    prefix(port, data, combine, false).await
}

/// After the exchange at distance 2^k, `partial` holds the reduction of this rank's aligned
/// 2^(k+1) block of ranks, and the result that of the block's ranks below (and, inclusive, at)
/// this one.
async fn prefix(port: &Port, data: &mut [u8], combine: Combine<'_>, inclusive: bool) -> Outcome {
    let (rank, size) = (port.rank(), port.size());
    if size == 1 {
        return Ok(());
    }
    if let Some(flags) = flags::for_bytes(port, data.len()).await? {
        flags::prefix(port, flags, data, combine, inclusive).await;
        return Ok(());
    }
    let mut partial = data.to_vec();
    let mut incoming = vec![0u8; data.len()];
    let mut have_result = inclusive;
    let mut mask = 1;
    while mask < size {
        let partner = rank ^ mask;
        if partner < size {
            port.sendrecv(partner, &partial, partner, &mut incoming).await?;
            if partner < rank {
                if have_result {
                    combine(&incoming, data);
                } else {
                    data.copy_from_slice(&incoming);
                    have_result = true;
                }
                combine(&incoming, &mut partial);
            } else {
                combine(&partial, &mut incoming);
                std::mem::swap(&mut partial, &mut incoming);
            }
        }
        mask <<= 1;
    }
    Ok(())
}

pub mod flags;
pub mod hier;
pub mod inter;
pub mod segment;
pub mod shared_file;

#[cfg(test)]
pub(crate) mod tests;
