//! Carries a collective's rounds out on the engine.
//!
//! A [`Driver`] starts each transfer a [`Port`] records as an engine request on the communicator's
//! collective context, under the collective's own tag (its sequence number on the communicator, so
//! that collectives in flight together never take each other's messages), and reports each one's
//! end. On an intercommunicator, the steps inside the local group go on that group's own context,
//! under its own sequence number. [`run_blocking`] drives a schedule to its end inside the engine's wait (which spins, yields
//! or sleeps per the wait policy); [`launch`] hands it to the engine as a progress agent, which
//! every later progress step advances, and returns what the MPI request watches. A blocking
//! collective whose whole algorithm is a few pairwise exchanges may skip the schedule:
//! [`exchange_now`] carries one out on the engine at once.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::Poll;

use braid_engine::{Engine, EngineError, ProgressAgent, RequestId, Source, Status, TagSelector};

use super::algorithms::flags::FlagsCell;
use super::hierarchy::Hierarchy;
use super::port::{poll_once, Port, Transfer};
use super::CollTuning;
use crate::comm::CommShared;
use crate::consts::{MPI_ERR_OTHER, MPI_ERR_TRUNCATE};

/// Where a collective's messages go: the communicator's members and context, and this
/// collective's tag.
#[derive(Clone)]
pub struct Route {
    pub shared: Arc<CommShared>,
    pub tag: i32,
    /// Set for a collective on an intercommunicator: the tag of its steps inside the local group.
    /// Port ranks below the local size then name the local group, on its own context; the others
    /// the remote group (see [`Port`]). Unset, port ranks are the point-to-point ranks.
    pub local_tag: Option<i32>,
}

impl Route {
    /// Port ranks are the point-to-point ranks of `shared`.
    pub fn new(shared: Arc<CommShared>, tag: i32) -> Route {
        Route { shared, tag, local_tag: None }
    }

    /// The route of the next blocking collective on `shared` (its tags from a sequence of their
    /// own, see [`CommShared::next_blocking_coll_tag`]).
    pub fn next_blocking(shared: Arc<CommShared>) -> Route {
        let tag = shared.next_blocking_coll_tag();
        let local_tag = shared.local.as_ref().map(|local| local.next_blocking_coll_tag());
        Route { shared, tag, local_tag }
    }

    /// The route of the next collective on `shared`: every member starts the communicator's
    /// collectives in the same order, so the n-th one has the same tag everywhere (on an
    /// intercommunicator, one tag between the groups and one within each group).
    pub fn next_collective(shared: Arc<CommShared>) -> Route {
        let tag = shared.next_coll_tag();
        let local_tag = shared.local.as_ref().map(|local| local.next_coll_tag());
        Route { shared, tag, local_tag }
    }

    /// The job rank, context and tag of a transfer with port rank `peer`.
    #[inline]
    fn address(&self, peer: usize) -> (u32, u32, i32) {
        match self.local_tag {
            None => (self.shared.job_rank(peer as u32), self.shared.coll_context, self.tag),
            Some(local_tag) => self.address_between_groups(peer, local_tag),
        }
    }

    fn address_between_groups(&self, peer: usize, local_tag: i32) -> (u32, u32, i32) {
        let local = self.shared.local.as_deref().expect("a route between groups is an intercommunicator's");
        match peer.checked_sub(local.size()) {
            None => (local.members[peer], local.coll_context, local_tag),
            Some(remote) => (self.shared.peers[remote], self.shared.coll_context, self.tag),
        }
    }
}

/// A transfer the engine is carrying out.
struct InFlight {
    request: RequestId,
    /// For a receive, the bytes expected (a different length means the ranks disagree).
    expected: Option<usize>,
}

/// The engine side of one schedule.
pub struct Driver {
    port: Rc<Port>,
    route: Route,
    in_flight: Vec<InFlight>,
}

impl Driver {
    pub fn new(port: Rc<Port>, route: Route) -> Driver {
        Driver { port, route, in_flight: Vec::new() }
    }

    /// Starts every transfer the algorithm has posted and not yet handed over.
    fn start(&mut self, engine: &mut Engine) -> Result<(), EngineError> {
        while let Some(transfer) = self.port.take_transfer() {
            match transfer {
                Transfer::Send { peer, data, len } => {
                    let (job, context, tag) = self.route.address(peer);
                    // SAFETY: the port's contract: the algorithm keeps `data` alive and unchanged
                    // until the round ends, and the driver runs the schedule to its end.
                    let data: &'static [u8] = unsafe { lent(data, len) };
                    // A small message the transport takes at once needs no request.
                    match engine.send_or_start(data, job, tag, context)? {
                        Some(request) => self.in_flight.push(InFlight { request, expected: None }),
                        None => self.port.finish_transfer(Ok(())),
                    }
                }
                Transfer::Recv { peer, buffer, len } => {
                    let (job, context, tag) = self.route.address(peer);
                    // SAFETY: as above; the algorithm lends `buffer` to this round alone.
                    let buffer: &'static mut [u8] = unsafe { lent_mut(buffer, len) };
                    let request = engine.irecv(buffer, Source::Rank(job), TagSelector::Tag(tag), context)?;
                    self.in_flight.push(InFlight { request, expected: Some(len) });
                }
            }
        }
        Ok(())
    }

    /// Reports the end of every transfer the engine has completed.
    fn reap(&mut self, engine: &mut Engine) {
        let port = &self.port;
        self.in_flight.retain(|transfer| match engine.take_if_complete(transfer.request) {
            Some(status) => {
                port.finish_transfer(check(&status, transfer.expected));
                false
            }
            None => true,
        });
    }

    /// Runs the algorithm as far as the transfers allow: polls it whenever its round has ended and
    /// starts what it posts next. Returns its result once it has finished.
    pub fn advance<T>(&mut self, engine: &mut Engine, algorithm: Pin<&mut dyn Future<Output = T>>) -> Result<Option<T>, EngineError> {
        let mut algorithm = algorithm;
        loop {
            if !self.in_flight.is_empty() {
                self.reap(engine);
            }
            // An algorithm that asked to resume once its transfers started runs on before they end.
            if !self.port.is_settled() && !self.port.take_resume_when_started() {
                return Ok(None);
            }
            let polled = poll_once(algorithm.as_mut());
            if self.port.take_ring() {
                self.ring_node(engine);
            }
            if let Poll::Ready(result) = polled {
                return Ok(Some(result));
            }
            self.start(engine)?;
            if self.port.take_watching() {
                // The algorithm waits for another rank of its node (only in a blocking call):
                // the caller's wait moves everything else meanwhile, and spins, yields or
                // sleeps per the wait policy (that rank rings this one when it publishes).
                return Ok(None);
            }
        }
    }

    /// Rings the doorbell of every other rank of the communicator on this node.
    #[cold]
    fn ring_node(&self, engine: &Engine) {
        let me = engine.rank();
        for &job in self.route.shared.members.iter() {
            if job != me {
                engine.ring_node_peer(job);
            }
        }
    }
}

/// A received message must be exactly as long as the algorithm expects: both sides compute the
/// length from the arguments MPI requires to match, so a difference means they do not.
fn check(status: &Status, expected: Option<usize>) -> Result<(), i32> {
    match expected {
        _ if status.truncated => Err(MPI_ERR_TRUNCATE),
        Some(expected) if status.count != expected => Err(MPI_ERR_OTHER),
        _ => Ok(()),
    }
}

/// # Safety
/// `len` bytes at `data` stay readable until the engine request that uses them completes.
unsafe fn lent(data: *const u8, len: usize) -> &'static [u8] {
    if len == 0 {
        return &[];
    }
    // SAFETY: per the caller; len > 0 so `data` is a real address.
    unsafe { std::slice::from_raw_parts(data, len) }
}

/// # Safety
/// `len` bytes at `buffer` stay writable, and used by nothing else, until the engine request that
/// uses them completes.
unsafe fn lent_mut(buffer: *mut u8, len: usize) -> &'static mut [u8] {
    if len == 0 {
        return &mut [];
    }
    // SAFETY: per the caller; len > 0 so `buffer` is a real address.
    unsafe { std::slice::from_raw_parts_mut(buffer, len) }
}

/// What blocking collectives reuse from one call to the next, so that a small one allocates
/// nothing: a port and the driver's list of transfers in flight.
#[derive(Default)]
pub struct Spare {
    port: Option<Rc<Port>>,
    in_flight: Vec<InFlight>,
}

impl Spare {
    /// A port for a new collective (`remote_size` 0 outside intercommunicators): the spare one
    /// when nothing else holds it.
    pub fn port(&mut self, rank: usize, size: usize, remote_size: usize, tuning: CollTuning, hierarchy: Option<Arc<Hierarchy>>, flags: Option<Arc<FlagsCell>>) -> Rc<Port> {
        if let Some(mut port) = self.port.take() {
            if let Some(unshared) = Rc::get_mut(&mut port) {
                unshared.reset(rank, size, remote_size, tuning);
                unshared.set_hierarchy(hierarchy);
                unshared.set_flags(flags);
                return port;
            }
        }
        let mut port = Port::between_groups(rank, size, remote_size, tuning);
        port.set_hierarchy(hierarchy);
        port.set_flags(flags);
        Rc::new(port)
    }

    /// Takes back a port a collective used without a driver (see [`exchange_now`]).
    pub fn keep(&mut self, port: Rc<Port>) {
        if port.is_settled() {
            self.port = Some(port);
        }
    }
}

/// One pairwise exchange with port rank `peer`, carried out and waited for at once: a blocking
/// collective's direct path, without a schedule. The receive is posted first, so the two sides
/// never wait for each other; `incoming` must be exactly as long as what the peer sends.
pub fn exchange_now(engine: &mut Engine, route: &Route, peer: usize, data: &[u8], incoming: &mut [u8]) -> Result<Result<(), i32>, EngineError> {
    let (job, context, tag) = route.address(peer);
    let expected = incoming.len();
    // SAFETY: both requests end (completed, or the receive cancelled) before this function
    // returns, so the engine uses the buffers only while they are borrowed here.
    let (data, incoming) = unsafe { (lent(data.as_ptr(), data.len()), lent_mut(incoming.as_mut_ptr(), expected)) };
    let receive = engine.irecv(incoming, Source::Rank(job), TagSelector::Tag(tag), context)?;
    let send = match engine.send_or_start(data, job, tag, context) {
        Ok(send) => send,
        Err(failure) => {
            engine.cancel(receive);
            let _ = engine.wait(receive);
            return Err(failure);
        }
    };
    let status = engine.wait(receive)?;
    if let Some(send) = send {
        engine.wait(send)?;
    }
    Ok(check(&status, Some(expected)))
}

/// Drives `algorithm` to its end: started at once, then advanced inside the engine's wait (which
/// also advances every non-blocking collective in flight).
pub fn run_blocking<T>(engine: &mut Engine, spare: &mut Spare, port: Rc<Port>, route: Route, algorithm: Pin<&mut dyn Future<Output = T>>) -> Result<T, EngineError> {
    port.set_waits_in_place(true);
    let mut driver = Driver { port, route, in_flight: std::mem::take(&mut spare.in_flight) };
    let mut algorithm = algorithm;
    let outcome = match driver.advance(engine, algorithm.as_mut()).transpose() {
        Some(outcome) => outcome,
        None => engine.wait_for(|engine| driver.advance(engine, algorithm.as_mut())),
    };
    // A failed schedule may leave transfers behind; only a clean one's parts are reused.
    if driver.in_flight.is_empty() && driver.port.is_settled() {
        spare.in_flight = driver.in_flight;
        spare.port = Some(driver.port);
    }
    outcome
}

/// The end of a non-blocking collective, as its MPI request sees it: the algorithm's result (an MPI
/// error class on failure) once it has finished.
#[derive(Default)]
pub struct Outcome(Cell<Option<Result<(), i32>>>, Cell<usize>);

impl Outcome {
    pub fn result(&self) -> Option<Result<(), i32>> {
        self.0.get()
    }

    /// Bytes the operation moved, for its status (file I/O's; 0 for collectives).
    pub fn count(&self) -> usize {
        self.1.get()
    }

    /// Records the end of an operation that moved `count` bytes (a non-blocking file access).
    pub(crate) fn finish_counted(&self, result: Result<(), i32>, count: usize) {
        self.1.set(count);
        self.0.set(Some(result));
    }

    /// Records the end of an operation other than a schedule that a request watches (an RMA
    /// operation whose answer arrives in progress).
    pub(crate) fn finish(&self, result: Result<(), i32>) {
        self.0.set(Some(result));
    }
}

/// A non-blocking collective, as the engine advances it.
struct Schedule<F: Future<Output = Result<(), i32>>> {
    driver: Driver,
    algorithm: Pin<Box<F>>,
    outcome: Rc<Outcome>,
}

impl<F: Future<Output = Result<(), i32>>> ProgressAgent for Schedule<F> {
    fn advance(&mut self, engine: &mut Engine) -> Result<bool, EngineError> {
        if self.outcome.result().is_some() {
            return Ok(false);
        }
        let algorithm: Pin<&mut dyn Future<Output = Result<(), i32>>> = self.algorithm.as_mut();
        match self.driver.advance(engine, algorithm) {
            Ok(None) => Ok(false),
            Ok(Some(result)) => {
                self.outcome.0.set(Some(result));
                Ok(true)
            }
            // A failed engine is reported to the caller of progress; the request fails too.
            Err(failure) => {
                self.outcome.0.set(Some(Err(MPI_ERR_OTHER)));
                Err(failure)
            }
        }
    }

    fn is_done(&self) -> bool {
        self.outcome.result().is_some()
    }
}

/// Starts `algorithm` and hands it to the engine's progress; the returned outcome fills in when it
/// finishes.
pub fn launch<F: Future<Output = Result<(), i32>> + 'static>(engine: &mut Engine, port: Rc<Port>, route: Route, algorithm: F) -> Result<Rc<Outcome>, EngineError> {
    let outcome = Rc::new(Outcome::default());
    let mut schedule = Box::new(Schedule { driver: Driver::new(port, route), algorithm: Box::pin(algorithm), outcome: outcome.clone() });
    schedule.advance(engine)?;
    engine.attach_agent(schedule);
    Ok(outcome)
}
