//! The I/O-free side of a collective's schedule.
//!
//! A collective algorithm is an `async fn` over a [`Port`]: each `.await` on a port operation ends
//! a round of sends and receives, and the code between two awaits is the round's local work
//! (copies, reductions). The port only records what a round asks for; a driver carries the
//! transfers out and reports each one's end (`coll::drive` on a real process, a simulated group in
//! the tests). So one algorithm serves both uses: a blocking collective starts its schedule and
//! drives it to the end, a non-blocking one is driven by progress inside any MPI call.
//!
//! A driver must drive a schedule to its end before the memory its transfers name is released:
//! the transfers hold raw pointers into the buffers the algorithm lent them.

use std::cell::{Cell, RefCell, RefMut};
use std::future::Future;
use std::marker::PhantomData;
use std::ops::Range;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use braid_config::HierarchyMode;

use super::algorithms::flags::FlagsCell;
use super::hierarchy::{Collective, Form, Hierarchy};
use super::CollTuning;
use crate::consts::{MPI_ERR_ARG, MPI_ERR_BUFFER};

/// One point-to-point transfer of a round, between communicator ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transfer {
    Send { peer: usize, data: *const u8, len: usize },
    Recv { peer: usize, buffer: *mut u8, len: usize },
}

/// The transfers of the round in progress.
#[derive(Debug, Default)]
struct Round {
    transfers: Vec<Transfer>,
    /// How many of `transfers` the driver has taken.
    taken: usize,
    /// Transfers taken or not whose end has not been reported.
    outstanding: usize,
    /// The first failure reported in this round (an MPI error class).
    failure: Option<i32>,
}

/// What an algorithm talks to: its rank, the group's size, the switch points, and the round.
///
/// On an intercommunicator the port names both groups: ranks `0..size` are the local group (so
/// every algorithm of one group runs unchanged as a local step) and `size + j` is remote rank j.
///
/// An algorithm may run another one on a subgroup (a node's ranks, the nodes' leaders) inside
/// [`Port::within`]: there `rank()` and `size()` are those of the subgroup, and its ranks are
/// translated to the port's when a transfer is posted.
#[derive(Debug)]
pub struct Port {
    /// This rank and the group size, in the subgroup when inside [`Port::within`].
    rank: Cell<usize>,
    size: Cell<usize>,
    /// Inside [`Port::within`]: the subgroup's members as port ranks, in subgroup rank order.
    members: RefCell<Option<Vec<usize>>>,
    /// The remote group's size on an intercommunicator, 0 otherwise.
    remote_size: usize,
    tuning: CollTuning,
    /// The communicator's nodes and links, when a hierarchical form may pay.
    hierarchy: Option<Arc<Hierarchy>>,
    /// The flag segment of a communicator whose ranks share one node.
    flags: Option<Arc<FlagsCell>>,
    /// Set when the algorithm has published a flag: the driver rings the node's ranks.
    ring: Cell<bool>,
    round: RefCell<Round>,
    /// Scratch bytes for the algorithm, kept with the port so that a reused port allocates none.
    scratch: RefCell<Vec<u8>>,
    /// Whether the driver lets the algorithm wait for conditions ([`Port::until`]).
    waits_in_place: Cell<bool>,
    /// Set by a pending [`Until`]: the algorithm waits for a condition, not for transfers.
    watching: Cell<bool>,
    /// Set by a pending [`Started`]: the algorithm resumes once its transfers are started.
    resume_when_started: Cell<bool>,
}

impl Port {
    pub fn new(rank: usize, size: usize, tuning: CollTuning) -> Port {
        Port::between_groups(rank, size, 0, tuning)
    }

    /// A port of an intercommunicator whose remote group has `remote_size` ranks.
    pub fn between_groups(rank: usize, size: usize, remote_size: usize, tuning: CollTuning) -> Port {
        Port {
            rank: Cell::new(rank),
            size: Cell::new(size),
            members: RefCell::new(None),
            remote_size,
            tuning,
            hierarchy: None,
            flags: None,
            ring: Cell::new(false),
            round: RefCell::new(Round::default()),
            scratch: RefCell::new(Vec::new()),
            waits_in_place: Cell::new(false),
            watching: Cell::new(false),
            resume_when_started: Cell::new(false),
        }
    }

    /// Makes a finished port ready for another collective, keeping its storage.
    pub fn reset(&mut self, rank: usize, size: usize, remote_size: usize, tuning: CollTuning) {
        let round = self.round.get_mut();
        debug_assert_eq!(round.outstanding, 0, "a port is reused only once its schedule has ended");
        round.transfers.clear();
        round.taken = 0;
        round.failure = None;
        debug_assert!(self.members.get_mut().is_none(), "a port is reused only outside every subgroup");
        (self.rank, self.size, self.remote_size, self.tuning) = (Cell::new(rank), Cell::new(size), remote_size, tuning);
        self.hierarchy = None;
        self.flags = None;
        self.ring.set(false);
        self.waits_in_place.set(false);
        self.watching.set(false);
    }

    #[inline]
    pub fn rank(&self) -> usize {
        self.rank.get()
    }

    #[inline]
    pub fn size(&self) -> usize {
        self.size.get()
    }

    /// Runs the rest of an algorithm's rounds, until the guard is dropped, in the subgroup of
    /// `members` (ranks of the current group, in subgroup rank order; this rank must be one).
    /// Subgroups nest. Every rank of the subgroup must enter it for the same steps.
    pub fn within(&self, members: &[usize]) -> Within<'_> {
        let rank = members.iter().position(|&member| member == self.rank()).expect("a rank enters only subgroups it belongs to");
        let translated: Vec<usize> = members.iter().map(|&member| self.port_rank(member)).collect();
        let outer = Within { port: self, rank: self.rank(), size: self.size(), members: self.members.replace(Some(translated)) };
        self.rank.set(rank);
        self.size.set(members.len());
        outer
    }

    /// The port rank of `peer`, a rank of the current (sub)group.
    #[inline]
    fn port_rank(&self, peer: usize) -> usize {
        match &*self.members.borrow() {
            Some(members) => members[peer],
            None => peer,
        }
    }

    #[inline]
    pub fn remote_size(&self) -> usize {
        self.remote_size
    }

    /// The port's name for remote rank `rank`.
    #[inline]
    pub fn remote(&self, rank: usize) -> usize {
        self.size() + rank
    }

    #[inline]
    pub fn tuning(&self) -> CollTuning {
        self.tuning
    }

    /// Lets the collectives run in their hierarchical forms where the cost model predicts they
    /// pay (see [`super::hierarchy`]).
    pub fn set_hierarchy(&mut self, hierarchy: Option<Arc<Hierarchy>>) {
        self.hierarchy = hierarchy.filter(|hierarchy| hierarchy.layout.is_hierarchical());
    }

    /// Lets the blocking collectives take their flag forms (see [`super::algorithms::flags`]).
    pub fn set_flags(&mut self, flags: Option<Arc<FlagsCell>>) {
        self.flags = flags;
    }

    /// The flag segment, if a collective that puts `bytes` in each slot may take its flag form:
    /// in a blocking call, outside subgroups, within the slot.
    #[inline]
    pub fn node_flags(&self, bytes: usize) -> Option<&FlagsCell> {
        let flags = self.flags.as_deref()?;
        let fits = bytes <= self.tuning.shm_slot && self.waits_in_place.get() && self.members.borrow().is_none();
        (fits && flags.has_room(bytes)).then_some(flags)
    }

    /// Whether every rank of the communicator shares this rank's node (an intracommunicator of
    /// several ranks): its messages are shared-memory copies, whatever the call.
    pub fn on_one_node(&self) -> bool {
        self.flags.is_some() && self.members.borrow().is_none()
    }

    /// Asks the driver to ring the doorbells of the node's ranks: this rank has published a
    /// flag one of them may be asleep waiting for.
    pub fn ring_node(&self) {
        self.ring.set(true);
    }

    /// Driver side: whether the algorithm asked for a ring (and clears the mark).
    pub fn take_ring(&self) -> bool {
        self.ring.replace(false)
    }

    /// The hierarchy, if `collective` on `bytes` should take a hierarchical form (either, for a
    /// reduction that has two): never inside a subgroup (whose steps are the flat ones).
    pub fn hierarchy_for(&self, collective: Collective, bytes: usize) -> Option<&Hierarchy> {
        self.hierarchy_if(|hierarchy, mode| match mode {
            HierarchyMode::Auto => hierarchy.pick(collective, bytes, self.tuning),
            _ => Form::Hierarchical,
        })
    }

    /// The hierarchy, if `collective` on `bytes` should take its node segment form: only in a
    /// schedule that waits in place (see [`Port::until`]).
    pub fn node_segment_for(&self, collective: Collective, bytes: usize) -> Option<&Hierarchy> {
        if !self.waits_in_place.get() {
            return None;
        }
        let mut chosen = Form::Flat;
        let hierarchy = self.hierarchy_if(|hierarchy, mode| {
            chosen = match mode {
                HierarchyMode::Auto => hierarchy.pick(collective, bytes, self.tuning),
                HierarchyMode::Segment => Form::NodeSegment,
                _ => hierarchy.best_hierarchical(collective, bytes, self.tuning).0,
            };
            chosen
        })?;
        (chosen == Form::NodeSegment).then_some(hierarchy)
    }

    /// Whether the communicator spans nodes with several ranks on some (it has a hierarchy,
    /// whatever the forms chosen).
    pub fn spans_nodes(&self) -> bool {
        self.hierarchy.is_some()
    }

    /// The hierarchy, if `collective`, whose sizes not every rank knows, should take its
    /// hierarchical form whatever its sizes (see [`Hierarchy::pick_for_any_size`]).
    pub fn hierarchy_for_any_size(&self, collective: Collective) -> Option<&Hierarchy> {
        self.hierarchy_if(|hierarchy, mode| match mode {
            HierarchyMode::Auto => hierarchy.pick_for_any_size(collective, self.tuning),
            _ => Form::Hierarchical,
        })
    }

    /// The hierarchy, unless the mode is off or `model` (given the mode) picks the flat form.
    fn hierarchy_if(&self, model: impl FnOnce(&Hierarchy, HierarchyMode) -> Form) -> Option<&Hierarchy> {
        let hierarchy = self.hierarchy.as_deref()?;
        if self.members.borrow().is_some() || self.tuning.hierarchy == HierarchyMode::Off {
            return None;
        }
        (model(hierarchy, self.tuning.hierarchy) != Form::Flat).then_some(hierarchy)
    }

    /// Lets the algorithms wait for a condition in place ([`Port::until`]): a blocking
    /// collective's driver polls it between progress steps; a non-blocking one's never sets it, so
    /// its forms wait only for transfers.
    pub fn set_waits_in_place(&self, waits: bool) {
        self.waits_in_place.set(waits);
    }

    /// Ready once `condition` holds (a flag in shared memory that another rank sets); the driver
    /// polls it again after each progress step. Only where the port waits in place.
    pub fn until<C: Fn() -> bool>(&self, condition: C) -> Until<'_, C> {
        debug_assert!(self.waits_in_place.get(), "only a schedule that waits in place waits for conditions");
        Until { port: self, condition }
    }

    /// Driver side: whether the algorithm is waiting for a condition (and clears the mark).
    pub fn take_watching(&self) -> bool {
        self.watching.replace(false)
    }

    /// Resumes the algorithm as soon as the engine has started the transfers posted so far, so
    /// that it can do local work (a copy) while they move, before it awaits their round.
    pub fn started(&self) -> Started<'_> {
        Started { port: self, asked: false }
    }

    /// Whether a pending [`Started`] asks to be polled again now (and clears the mark).
    pub fn take_resume_when_started(&self) -> bool {
        self.resume_when_started.replace(false)
    }

    /// `len` bytes of scratch (their contents are undefined), for as long as the result lives; an
    /// algorithm holds at most one scratch at a time.
    pub fn scratch(&self, len: usize) -> RefMut<'_, [u8]> {
        let mut scratch = self.scratch.borrow_mut();
        if scratch.len() < len {
            scratch.resize(len, 0);
        }
        RefMut::map(scratch, |scratch| &mut scratch[..len])
    }

    fn post(&self, mut transfer: Transfer) {
        match &mut transfer {
            Transfer::Send { peer, .. } | Transfer::Recv { peer, .. } => *peer = self.port_rank(*peer),
        }
        let mut round = self.round.borrow_mut();
        round.transfers.push(transfer);
        round.outstanding += 1;
    }

    fn post_send(&self, dest: usize, data: &[u8]) {
        self.post(Transfer::Send { peer: dest, data: data.as_ptr(), len: data.len() });
    }

    fn post_recv(&self, source: usize, buffer: &mut [u8]) {
        self.post(Transfer::Recv { peer: source, buffer: buffer.as_mut_ptr(), len: buffer.len() });
    }

    /// Sends `data` to `dest`; done once the transfer has ended (for a large message, once the
    /// receiver has taken it).
    pub fn send<'a>(&'a self, dest: usize, data: &'a [u8]) -> Settle<'a> {
        self.post_send(dest, data);
        Settle::new(self)
    }

    /// Sends `data` to each rank of `dests`, all in one round.
    pub fn send_each<'a>(&'a self, dests: impl IntoIterator<Item = usize>, data: &'a [u8]) -> Settle<'a> {
        for dest in dests {
            self.post_send(dest, data);
        }
        Settle::new(self)
    }

    /// Receives exactly `buffer.len()` bytes from `source`.
    pub fn recv<'a>(&'a self, source: usize, buffer: &'a mut [u8]) -> Settle<'a> {
        self.post_recv(source, buffer);
        Settle::new(self)
    }

    /// Receives from `source` and sends to `dest` in the same round (never deadlocks on a
    /// pairwise exchange).
    pub fn sendrecv<'a>(&'a self, dest: usize, data: &'a [u8], source: usize, buffer: &'a mut [u8]) -> Settle<'a> {
        self.post_recv(source, buffer);
        self.post_send(dest, data);
        Settle::new(self)
    }

    /// Sends `data` to every other rank and receives rank r's equally long data into block r of
    /// `all` (this rank's block is left as it is), in one round for groups of up to
    /// `EXCHANGE_ALL_MAX` ranks and in pairwise rounds above.
    pub async fn exchange_all(&self, data: &[u8], all: &mut [u8]) -> Result<(), i32> {
        let (rank, size, len) = (self.rank(), self.size(), data.len());
        if all.len() != len * size {
            return Err(MPI_ERR_ARG);
        }
        if size <= EXCHANGE_ALL_MAX {
            for source in (0..size).filter(|&source| source != rank) {
                self.post_recv(source, &mut all[source * len..(source + 1) * len]);
            }
            for step in 1..size {
                self.post_send((rank + step) % size, data);
            }
            return Settle::new(self).await;
        }
        for step in 1..size {
            let dest = (rank + step) % size;
            let source = (rank + size - step) % size;
            self.sendrecv(dest, data, source, &mut all[source * len..(source + 1) * len]).await?;
        }
        Ok(())
    }

    /// Receives block i of `recv` from `sources[i]` and sends block j of `send` to
    /// `destinations[j]`, all in one round; a `None` peer (MPI_PROC_NULL) moves nothing. A rank may
    /// be its own neighbour, and the same neighbour may appear more than once: its messages are
    /// matched in the order of the lists. Receive blocks must not overlap (MPI_ERR_BUFFER).
    pub fn exchange_with<'a>(
        &'a self,
        sources: &[Option<usize>],
        recv: &'a mut [u8],
        recv_blocks: &[Range<usize>],
        destinations: &[Option<usize>],
        send: &'a [u8],
        send_blocks: &[Range<usize>],
    ) -> Result<Settle<'a>, i32> {
        // Carve the receive blocks off in address order, then post them in list order.
        let mut order: Vec<usize> = (0..sources.len().min(recv_blocks.len())).filter(|&i| !recv_blocks[i].is_empty()).collect();
        order.sort_by_key(|&i| recv_blocks[i].start);
        let mut carved: Vec<Option<&'a mut [u8]>> = (0..sources.len()).map(|_| None).collect();
        let mut rest = recv;
        let mut consumed = 0;
        for &i in &order {
            let block = &recv_blocks[i];
            if block.start < consumed || block.end - consumed > rest.len() {
                return Err(MPI_ERR_BUFFER);
            }
            let (_, tail) = std::mem::take(&mut rest).split_at_mut(block.start - consumed);
            let (into, tail) = tail.split_at_mut(block.len());
            rest = tail;
            consumed = block.end;
            carved[i] = Some(into);
        }
        for (source, into) in sources.iter().zip(carved) {
            if let Some(source) = *source {
                self.post_recv(source, into.unwrap_or_default());
            }
        }
        for (dest, block) in destinations.iter().zip(send_blocks) {
            if let Some(dest) = *dest {
                self.post_send(dest, &send[block.clone()]);
            }
        }
        Ok(Settle::new(self))
    }

    /// Driver side: the next transfer to start, if the round has one not yet taken.
    pub fn take_transfer(&self) -> Option<Transfer> {
        let mut round = self.round.borrow_mut();
        let next = round.transfers.get(round.taken).copied()?;
        round.taken += 1;
        Some(next)
    }

    /// Driver side: a taken transfer has ended, with an MPI error class on failure.
    pub fn finish_transfer(&self, outcome: Result<(), i32>) {
        let mut round = self.round.borrow_mut();
        debug_assert!(round.outstanding > 0, "more transfers finished than were posted");
        round.outstanding -= 1;
        if let Err(class) = outcome {
            round.failure.get_or_insert(class);
        }
    }

    /// Driver side: whether every transfer of the round has ended (the algorithm can go on).
    pub fn is_settled(&self) -> bool {
        self.round.borrow().outstanding == 0
    }
}

/// A subgroup entered by [`Port::within`]; dropping it returns to the enclosing group.
#[must_use = "the subgroup ends when this is dropped"]
pub struct Within<'a> {
    port: &'a Port,
    rank: usize,
    size: usize,
    members: Option<Vec<usize>>,
}

impl Drop for Within<'_> {
    fn drop(&mut self) {
        self.port.rank.set(self.rank);
        self.port.size.set(self.size);
        *self.port.members.borrow_mut() = self.members.take();
    }
}

/// Most ranks [`Port::exchange_all`] exchanges with in one round.
pub const EXCHANGE_ALL_MAX: usize = 16;

/// The end of a round: ready once every transfer posted so far has ended.
#[must_use = "a round does nothing until it is awaited"]
pub struct Settle<'a> {
    port: &'a Port,
    /// The buffers lent to the round stay borrowed until it ends.
    _lent: PhantomData<&'a mut [u8]>,
}

impl<'a> Settle<'a> {
    fn new(port: &'a Port) -> Settle<'a> {
        Settle { port, _lent: PhantomData }
    }
}

impl Future for Settle<'_> {
    type Output = Result<(), i32>;

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Self::Output> {
        let mut round = self.port.round.borrow_mut();
        if round.outstanding > 0 {
            return Poll::Pending;
        }
        round.transfers.clear();
        round.taken = 0;
        Poll::Ready(round.failure.take().map_or(Ok(()), Err))
    }
}

/// The point where an algorithm resumes once its posted transfers are started ([`Port::started`]).
#[must_use = "a wait does nothing until it is awaited"]
pub struct Started<'a> {
    port: &'a Port,
    asked: bool,
}

impl Future for Started<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.asked {
            return Poll::Ready(());
        }
        self.asked = true;
        self.port.resume_when_started.set(true);
        Poll::Pending
    }
}

/// The wait for a condition ([`Port::until`]).
#[must_use = "a wait does nothing until it is awaited"]
pub struct Until<'a, C: Fn() -> bool> {
    port: &'a Port,
    condition: C,
}

impl<C: Fn() -> bool> Future for Until<'_, C> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if (self.condition)() {
            return Poll::Ready(());
        }
        self.port.watching.set(true);
        Poll::Pending
    }
}

/// Polls `future` once; the schedules here need no waker (their driver polls them after each
/// progress step).
pub fn poll_once<F: Future + ?Sized>(future: Pin<&mut F>) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(std::task::Waker::noop()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_ends_when_every_transfer_has_ended() {
        let port = Port::new(0, 3, CollTuning::default());
        let data = [1u8, 2];
        let mut buffer = [0u8; 2];
        let mut round = Box::pin(port.sendrecv(1, &data, 2, &mut buffer));
        assert!(poll_once(round.as_mut()).is_pending());
        let first = port.take_transfer().unwrap();
        assert!(matches!(first, Transfer::Recv { peer: 2, len: 2, .. }));
        assert!(matches!(port.take_transfer(), Some(Transfer::Send { peer: 1, len: 2, .. })));
        assert_eq!(port.take_transfer(), None);
        port.finish_transfer(Ok(()));
        assert!(!port.is_settled());
        assert!(poll_once(round.as_mut()).is_pending());
        port.finish_transfer(Err(14));
        assert!(port.is_settled());
        assert_eq!(poll_once(round.as_mut()), Poll::Ready(Err(14)));
        // The next round starts clean.
        let mut next = Box::pin(port.send(1, &data));
        assert!(matches!(port.take_transfer(), Some(Transfer::Send { peer: 1, .. })));
        port.finish_transfer(Ok(()));
        assert_eq!(poll_once(next.as_mut()), Poll::Ready(Ok(())));
    }

    /// Sends one byte to `dest` (a rank of the current group) and returns the port rank the
    /// transfer named.
    fn port_rank_of_send(port: &Port, dest: usize) -> usize {
        let data = [1u8];
        let mut round = Box::pin(port.send(dest, &data));
        assert!(poll_once(round.as_mut()).is_pending());
        let Some(Transfer::Send { peer, .. }) = port.take_transfer() else { panic!("no send posted") };
        port.finish_transfer(Ok(()));
        assert_eq!(poll_once(round.as_mut()), Poll::Ready(Ok(())));
        peer
    }

    #[test]
    fn a_subgroup_has_its_own_ranks_and_posts_port_ranks() {
        let port = Port::new(5, 8, CollTuning::default());
        {
            let _odd = port.within(&[1, 3, 5, 7]);
            assert_eq!((port.rank(), port.size()), (2, 4));
            {
                // Ranks 2 and 3 of the odd ranks: port ranks 5 and 7.
                let _pair = port.within(&[2, 3]);
                assert_eq!((port.rank(), port.size()), (0, 2));
                assert_eq!(port_rank_of_send(&port, 1), 7);
            }
            assert_eq!((port.rank(), port.size()), (2, 4));
            assert_eq!(port_rank_of_send(&port, 0), 1);
        }
        assert_eq!((port.rank(), port.size()), (5, 8));
    }

    #[test]
    fn an_algorithm_resumes_once_its_transfers_are_started_before_they_end() {
        let port = Port::new(0, 2, CollTuning::default());
        let mut data = [0u8; 4];
        let mut algorithm = Box::pin(async {
            let round = port.recv(1, &mut data);
            port.started().await;
            round.await
        });
        assert!(poll_once(algorithm.as_mut()).is_pending());
        assert!(port.take_resume_when_started(), "the first poll asks to resume once started");
        assert!(!port.take_resume_when_started(), "taking the mark clears it");
        assert!(port.take_transfer().is_some() && !port.is_settled());
        assert!(poll_once(algorithm.as_mut()).is_pending(), "then it waits for the round");
        assert!(!port.take_resume_when_started());
        port.finish_transfer(Ok(()));
        assert_eq!(poll_once(algorithm.as_mut()), Poll::Ready(Ok(())));
    }

    #[test]
    fn a_wait_for_a_condition_marks_the_port_watching_until_it_holds() {
        let port = Port::new(0, 2, CollTuning::default());
        port.set_waits_in_place(true);
        let flag = Cell::new(false);
        let mut wait = Box::pin(port.until(|| flag.get()));
        assert!(poll_once(wait.as_mut()).is_pending());
        assert!(port.take_watching());
        assert!(!port.take_watching(), "taking the mark clears it");
        assert!(port.is_settled() && port.take_transfer().is_none(), "a wait posts no transfer");
        flag.set(true);
        assert_eq!(poll_once(wait.as_mut()), Poll::Ready(()));
        assert!(!port.take_watching());
    }

    #[test]
    fn exchange_all_posts_one_round_in_small_groups() {
        let port = Port::new(1, 4, CollTuning::default());
        let data = [7u8; 3];
        let mut all = [0u8; 12];
        let mut exchange = Box::pin(port.exchange_all(&data, &mut all));
        assert!(poll_once(exchange.as_mut()).is_pending());
        let mut receives = Vec::new();
        let mut sends = Vec::new();
        while let Some(transfer) = port.take_transfer() {
            match transfer {
                Transfer::Recv { peer, len, .. } => receives.push((peer, len)),
                Transfer::Send { peer, len, .. } => sends.push((peer, len)),
            }
        }
        assert_eq!(receives, [(0, 3), (2, 3), (3, 3)]);
        assert_eq!(sends, [(2, 3), (3, 3), (0, 3)]);
    }
}
