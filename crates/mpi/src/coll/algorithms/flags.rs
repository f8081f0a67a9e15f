//! The flag forms of small blocking collectives on a communicator whose ranks all share one
//! node: each rank puts what it contributes into its slot of a node-wide segment, publishes a
//! phase in its cache-line arrival word, and reads the others' slots once their words say they
//! are there: no message matching, no per-peer frames, one copy in and one out.
//!
//! The protocol is [`braid_transport::shm::reduction::arrival`]'s (checked with loom): call after
//! call in alternating banks, a rank that writes publishes `written`, every rank publishes
//! `finished` once it has read what it needs, and a rank writes its slot again only once every
//! rank has finished with the call that last used the bank. A rank waits in place
//! ([`Port::until`], so only in blocking calls), and after each publication the driver rings
//! the doorbells of the node's ranks ([`Port::ring_node`]), so that a rank asleep in a wait
//! (ranks outnumbering cores) wakes as it would for a message.
//!
//! The forms take up to `BRAID_COLL_SHM_MAX` bytes per rank: above that, messages do better,
//! as their copies in and out overlap. Where the ranks outnumber the cores, a broadcast takes
//! the form up to a whole slot (`BRAID_COLL_SHM_SLOT`): the root copies in once and no rank
//! forwards, so none waits for another's turn on a core.
//!
//! The segment is made at the first such collective on the communicator (see [`make_shared`]),
//! its slot as large as `BRAID_COLL_SHM_SLOT` says then; if some rank cannot map it, or cannot
//! be woken by a ring, every rank agrees to pass messages instead.

use std::fmt;
use std::future::Future;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use braid_transport::shm::reduction::arrival::{bank, finished, reusable, written};
use braid_transport::shm::reduction::{ReductionSegment, Slots};

use super::shared_file::make_shared;
use crate::coll::port::Port;
use crate::coll::{CollTuning, Combine};

/// What a flag form needs of the rank that runs it: its place in the group, a wait for a
/// condition another rank makes true, and a ring of the node's doorbells after it publishes.
/// A schedule's [`Port`] waits by returning to its driver; a blocking call's direct path
/// ([`crate::coll::abi`]) waits on the engine at once.
pub trait Waiter {
    fn rank(&self) -> usize;
    fn size(&self) -> usize;
    /// Ready once `condition` holds.
    fn until<C: Fn() -> bool>(&self, condition: C) -> impl Future<Output = ()>;
    /// Wakes the ranks of the node that may sleep in a wait.
    fn ring_node(&self);
}

impl Waiter for Port {
    fn rank(&self) -> usize {
        Port::rank(self)
    }

    fn size(&self) -> usize {
        Port::size(self)
    }

    fn until<C: Fn() -> bool>(&self, condition: C) -> impl Future<Output = ()> {
        Port::until(self, condition)
    }

    fn ring_node(&self) {
        Port::ring_node(self)
    }
}

/// A one-node communicator's flag segment, made at first use: what every rank of it holds.
#[derive(Debug)]
pub struct FlagsCell {
    made: OnceLock<Option<NodeFlags>>,
    /// Whether this rank's waits end when a rank of its node rings it.
    wakes_on_ring: bool,
    /// Whether the ranks on this machine outnumber its CPUs (every rank of the node knows the
    /// same: it comes from all their CPU sets).
    oversubscribed: bool,
}

impl FlagsCell {
    pub fn new(wakes_on_ring: bool, oversubscribed: bool) -> FlagsCell {
        FlagsCell { made: OnceLock::new(), wakes_on_ring, oversubscribed }
    }

    /// Whether an allreduce of `bytes` among `ranks` goes as messages although a flag form could
    /// take it: two ranks, each with a CPU of its own, exchange one message each way, one copy
    /// and one flag looked at, where the flag form publishes twice
    /// (`BRAID_COLL_PAIR_EXCHANGE_MAX`; 0: never, whatever the size). Every rank gets the same
    /// answer.
    pub fn allreduce_by_exchange(&self, ranks: usize, bytes: usize, tuning: &CollTuning) -> bool {
        ranks == 2 && !self.oversubscribed && tuning.pair_exchange_max > 0 && bytes <= tuning.pair_exchange_max
    }

    /// Most bytes per slot a blocking collective takes its flag form for: `BRAID_COLL_SHM_MAX`,
    /// or for a broadcast where ranks share cores the whole slot (`BRAID_COLL_SHM_SLOT`; the
    /// root copies in once and its part is over, no rank forwards, each leaf copies out when it
    /// runs).
    fn limit(&self, broadcast: bool, tuning: &CollTuning) -> usize {
        if broadcast && self.oversubscribed {
            tuning.shm_slot
        } else {
            tuning.shm_max.min(tuning.shm_slot)
        }
    }

    /// The segment, once made, if a blocking collective that puts `bytes` in a slot takes its
    /// flag form (`broadcast`: a broadcast): the choice [`for_bytes`] and [`for_broadcast`] make.
    pub fn made_for(&self, bytes: usize, broadcast: bool, tuning: &CollTuning) -> Option<&NodeFlags> {
        self.made.get()?.as_ref().filter(|flags| bytes <= self.limit(broadcast, tuning) && bytes <= flags.segment.slot_bytes())
    }

    /// Whether a collective that puts `bytes` in a slot may take its flag form: not known yet
    /// (the segment is made at the first), or the segment exists with room for them.
    pub fn has_room(&self, bytes: usize) -> bool {
        match self.made.get() {
            None => true,
            Some(made) => made.as_ref().is_some_and(|flags| bytes <= flags.segment.slot_bytes()),
        }
    }
}

/// The segment as this rank has it mapped, the calls it has made in it, and the least phase it
/// has seen every other rank reach (so that it need not look again: the phases only grow).
pub struct NodeFlags {
    segment: ReductionSegment,
    calls: AtomicU64,
    seen: AtomicU64,
}

impl fmt::Debug for NodeFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeFlags").field("ranks", &self.segment.ranks()).field("slot_bytes", &self.segment.slot_bytes()).field("calls", &self.calls).finish()
    }
}

/// The flag segment for a collective that puts `bytes` in a slot, up to `BRAID_COLL_SHM_MAX`,
/// if the port offers one with room (made now by the group together if this is the first):
/// every rank gets the same answer.
pub async fn for_bytes(port: &Port, bytes: usize) -> Result<Option<&NodeFlags>, i32> {
    segment_for(port, bytes, false).await
}

/// [`for_bytes`] for an allreduce, unless two ranks do better by exchanging messages
/// ([`FlagsCell::allreduce_by_exchange`]).
pub async fn for_allreduce(port: &Port, bytes: usize) -> Result<Option<&NodeFlags>, i32> {
    if port.node_flags(bytes).is_some_and(|cell| cell.allreduce_by_exchange(port.size(), bytes, &port.tuning())) {
        return Ok(None);
    }
    for_bytes(port, bytes).await
}

/// [`for_bytes`] for a broadcast, which takes a whole slot where ranks share cores
/// ([`FlagsCell::limit`]).
pub async fn for_broadcast(port: &Port, bytes: usize) -> Result<Option<&NodeFlags>, i32> {
    segment_for(port, bytes, true).await
}

async fn segment_for(port: &Port, bytes: usize, broadcast: bool) -> Result<Option<&NodeFlags>, i32> {
    let Some(cell) = port.node_flags(bytes).filter(|cell| bytes <= cell.limit(broadcast, &port.tuning())) else { return Ok(None) };
    if cell.made.get().is_none() {
        let slot = port.tuning().shm_slot;
        let refuse = || std::io::Error::new(std::io::ErrorKind::Unsupported, "this rank's waits do not wake on a ring");
        let size = port.size();
        // Inside a subgroup of every rank, the making's own collectives pass messages.
        let everyone: Vec<usize> = (0..size).collect();
        let _everyone = port.within(&everyone);
        let made = Box::pin(make_shared(
            port,
            "braid-flags",
            |name| if cell.wakes_on_ring { ReductionSegment::create(name, size, slot) } else { Err(refuse()) },
            |name| if cell.wakes_on_ring { ReductionSegment::open(name, size, slot) } else { Err(refuse()) },
        ))
        .await?;
        let _ = cell.made.set(made.map(|segment| NodeFlags { segment, calls: AtomicU64::new(0), seen: AtomicU64::new(0) }));
    }
    Ok(cell.made_for(bytes, broadcast, &port.tuning()))
}

/// One call of a flag form, as one rank runs it.
struct Call<'a, W: Waiter> {
    port: &'a W,
    flags: &'a NodeFlags,
    segment: &'a ReductionSegment,
    number: u64,
    slots: Slots,
    me: usize,
    ranks: usize,
}

impl<'a, W: Waiter> Call<'a, W> {
    /// The next call, which puts up to `slot_len` bytes in a slot (every rank passes the same).
    fn next(port: &'a W, flags: &'a NodeFlags, slot_len: usize) -> Call<'a, W> {
        let number = flags.calls.fetch_add(1, Ordering::Relaxed);
        Call { port, flags, segment: &flags.segment, number, slots: Slots::for_bytes(bank(number), slot_len), me: port.rank(), ranks: port.size() }
    }

    /// Waits until this rank may write its slot in this call's bank.
    async fn claim(&self) {
        let phase = reusable(self.number);
        if phase <= self.flags.seen.load(Ordering::Relaxed) {
            return;
        }
        self.port.until(|| self.segment.reached(0..self.ranks, phase)).await;
        self.flags.seen.fetch_max(phase, Ordering::Relaxed);
    }

    fn publish(&self, phase: u64) {
        self.segment.arrive(self.me, phase);
        self.port.ring_node();
    }

    /// Publishes that this rank's slot holds its part of the call.
    fn written(&self) {
        self.publish(written(self.number));
    }

    /// Publishes that this rank has read all it needs in this call.
    fn finished(&self) {
        self.publish(finished(self.number));
    }

    /// Waits until the ranks `ranks` (this one skipped) have written their slots.
    async fn await_written(&self, ranks: Range<usize>) {
        let phase = written(self.number);
        let (below, above) = (ranks.start..ranks.end.min(self.me), ranks.start.max(self.me + 1)..ranks.end);
        self.port.until(|| self.segment.reached(below.clone(), phase) && self.segment.reached(above.clone(), phase)).await;
        if ranks == (0..self.ranks) {
            self.flags.seen.fetch_max(phase, Ordering::Relaxed);
        }
    }

    /// Waits until rank `rank` has finished this call.
    async fn await_finished(&self, rank: usize) {
        let phase = finished(self.number);
        self.port.until(|| self.segment.reached(rank..rank + 1, phase)).await;
    }

    fn put(&self, at: usize, data: &[u8]) {
        self.segment.put(self.slots, self.me, at, data);
    }

    fn get(&self, rank: usize, at: usize, out: &mut [u8]) {
        self.segment.get(self.slots, rank, at, out);
    }

    /// `out` becomes `x(first) op ... op x(last)` of the slots' bytes `range` (`last` >= `first`).
    fn reduce(&self, ranks: Range<usize>, range: Range<usize>, out: &mut [u8], combine: Combine<'_>) {
        let last = ranks.end - 1;
        self.get(last, range.start, out);
        for rank in (ranks.start..last).rev() {
            self.segment.read_slot(self.slots, rank, range.clone(), |input| combine(input, out));
        }
    }
}

/// Rank 0 waits for every rank to arrive, then releases them: each of the others reads one
/// word (not every rank's), and rank 0 leaves first, ready for what it does next (the root of a
/// broadcast that follows has its data out before the others look).
pub async fn barrier(port: &impl Waiter, flags: &NodeFlags) {
    let call = Call::next(port, flags, 0);
    if call.me == 0 {
        call.await_written(0..call.ranks).await;
        call.finished();
    } else {
        // Arrived, and (reading no slot) finished too.
        call.finished();
        call.await_finished(0).await;
        // Rank 0 finished only once every rank had arrived: the calls before this one are over
        // everywhere, so the next call's claim need not look at the others' words again.
        flags.seen.fetch_max(written(call.number), Ordering::Relaxed);
    }
}

pub async fn bcast(port: &impl Waiter, flags: &NodeFlags, buffer: &mut [u8], root: usize) {
    let call = Call::next(port, flags, buffer.len());
    if call.me == root {
        call.claim().await;
        call.put(0, buffer);
    } else {
        call.await_written(root..root + 1).await;
        call.get(root, 0, buffer);
    }
    call.finished();
}

/// Every rank's `input` (None: its `data`) reduced in rank order into the root's `data` (only
/// the root's is written, and only its length matters).
pub async fn reduce(port: &impl Waiter, flags: &NodeFlags, input: Option<&[u8]>, data: &mut [u8], combine: Combine<'_>, root: usize) {
    let call = Call::next(port, flags, input.map_or(data.len(), <[u8]>::len));
    call.claim().await;
    call.put(0, input.unwrap_or(data));
    if call.me == root {
        call.await_written(0..call.ranks).await;
        call.reduce(0..call.ranks, 0..data.len(), data, combine);
    }
    call.finished();
}

/// Every rank's `input` (None: its `data`, as long) reduced in rank order into every rank's
/// `data`. In place is free: the input is copied into the slot before `data` is written.
pub async fn allreduce(port: &impl Waiter, flags: &NodeFlags, input: Option<&[u8]>, data: &mut [u8], combine: Combine<'_>) {
    let call = Call::next(port, flags, data.len());
    call.claim().await;
    call.put(0, input.unwrap_or(data));
    call.written();
    call.await_written(0..call.ranks).await;
    call.reduce(0..call.ranks, 0..data.len(), data, combine);
    call.finished();
}

/// Rank r's `data` becomes `x0 op ... op xr` (inclusive) or `x0 op ... op x(r-1)` (rank 0's
/// left as it was).
pub async fn prefix(port: &impl Waiter, flags: &NodeFlags, data: &mut [u8], combine: Combine<'_>, inclusive: bool) {
    let call = Call::next(port, flags, data.len());
    call.claim().await;
    call.put(0, data);
    call.written();
    let end = if inclusive { call.me + 1 } else { call.me };
    if end > 0 {
        call.await_written(0..end).await;
        call.reduce(0..end, 0..data.len(), data, combine);
    }
    call.finished();
}

/// Rank r's `mine` lands in block r of every rank's `all`.
pub async fn allgather(port: &impl Waiter, flags: &NodeFlags, mine: &[u8], all: &mut [u8]) {
    let block = mine.len();
    gather_everywhere(port, flags, Some(mine), all, |rank| rank * block..(rank + 1) * block).await;
}

/// Rank r's block lands in `all[blocks[r]]` everywhere; `mine` is None where this rank's block
/// is already in place.
pub async fn allgatherv(port: &impl Waiter, flags: &NodeFlags, mine: Option<&[u8]>, all: &mut [u8], blocks: &[Range<usize>]) {
    gather_everywhere(port, flags, mine, all, |rank| blocks[rank].clone()).await;
}

async fn gather_everywhere(port: &impl Waiter, flags: &NodeFlags, mine: Option<&[u8]>, all: &mut [u8], block: impl Fn(usize) -> Range<usize>) {
    let call = Call::next(port, flags, (0..port.size()).map(|rank| block(rank).len()).max().unwrap_or(0));
    let own = block(call.me);
    if let Some(mine) = mine {
        all[own.clone()].copy_from_slice(mine);
    }
    call.claim().await;
    call.put(0, &all[own]);
    call.written();
    call.await_written(0..call.ranks).await;
    for rank in (0..call.ranks).filter(|&rank| rank != call.me) {
        call.get(rank, 0, &mut all[block(rank)]);
    }
    call.finished();
}

/// Rank r's `mine` lands in block r of the root's `all` (`mine` None at a root whose block is
/// in place); `block` bytes each.
pub async fn gather(port: &impl Waiter, flags: &NodeFlags, mine: Option<&[u8]>, all: &mut [u8], block: usize, root: usize) {
    let call = Call::next(port, flags, block);
    if call.me != root {
        call.claim().await;
        call.put(0, mine.unwrap_or_default());
    } else {
        call.await_written(0..call.ranks).await;
        for rank in 0..call.ranks {
            let into = &mut all[rank * block..(rank + 1) * block];
            match mine {
                Some(mine) if rank == root => into.copy_from_slice(mine),
                _ if rank == root => {}
                _ => call.get(rank, 0, into),
            }
        }
    }
    call.finished();
}

/// Block r of the root's `all` lands in rank r's `mine` (None at a root that keeps its block in
/// place); `block` bytes each.
pub async fn scatter(port: &impl Waiter, flags: &NodeFlags, all: &[u8], mine: Option<&mut [u8]>, block: usize, root: usize) {
    let call = Call::next(port, flags, block * port.size());
    if call.me == root {
        call.claim().await;
        call.put(0, all);
        if let Some(mine) = mine {
            mine.copy_from_slice(&all[root * block..(root + 1) * block]);
        }
    } else {
        call.await_written(root..root + 1).await;
        if let Some(mine) = mine {
            call.get(root, call.me * block, mine);
        }
    }
    call.finished();
}

/// Block d of rank s's `send` lands in block s of rank d's `recv`.
pub async fn alltoall(port: &impl Waiter, flags: &NodeFlags, send: &[u8], recv: &mut [u8]) {
    let call = Call::next(port, flags, send.len());
    let block = send.len() / call.ranks;
    call.claim().await;
    call.put(0, send);
    call.written();
    call.await_written(0..call.ranks).await;
    for rank in 0..call.ranks {
        let into = &mut recv[rank * block..(rank + 1) * block];
        if rank == call.me {
            into.copy_from_slice(&send[rank * block..(rank + 1) * block]);
        } else {
            call.get(rank, call.me * block, into);
        }
    }
    call.finished();
}

/// Every rank's `data` (the full vector) reduced in rank order; rank r's part (`blocks[r]`)
/// lands in its `out`.
pub async fn reduce_scatter(port: &impl Waiter, flags: &NodeFlags, data: &[u8], blocks: &[Range<usize>], combine: Combine<'_>, out: &mut [u8]) {
    let call = Call::next(port, flags, data.len());
    call.claim().await;
    call.put(0, data);
    call.written();
    call.await_written(0..call.ranks).await;
    call.reduce(0..call.ranks, blocks[call.me].clone(), out, combine);
    call.finished();
}
