//! Partitioned sends and receives on the engine: a send posts each partition as its own message
//! when the program marks it ready; a receive learns the sender's partitions from its setup and
//! posts one receive per sent partition straight into its buffer (or into a packed copy for a
//! non-contiguous datatype, unpacked partition by partition as they arrive).

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use braid_engine::{Engine, EngineError, ProgressAgent, RequestId, Source, TagSelector};

use super::matcher::{Matcher, SetupSlot};
use super::wire::{chunk_tag, covering, Setup, CHANNELS, SETUP_BYTES, SETUP_TAG};
use crate::coll::drive::Outcome;
use crate::consts::*;
use crate::datatype::DatatypeRef;

/// What partitioned operations share in a process: the matcher, the setup receive posted for each
/// source whose receives wait, the setup sends not finished, and the channel ids in use.
#[derive(Default)]
pub struct Registry {
    matcher: Matcher,
    fetches: HashMap<(u32, u32), Fetch>,
    setups_sent: Vec<(RequestId, Box<[u8; SETUP_BYTES]>)>,
    /// The channel ids of live sends, by collective context.
    channels: HashMap<u32, Vec<u32>>,
}

/// A posted receive of the next setup message from one source.
struct Fetch {
    request: RequestId,
    frame: Box<[u8; SETUP_BYTES]>,
}

impl Registry {
    /// A channel id free on `context`; None when all are in use.
    fn take_channel(&mut self, context: u32) -> Option<u32> {
        let used = self.channels.entry(context).or_default();
        let free = (1..CHANNELS).find(|id| !used.contains(id))?;
        used.push(free);
        Some(free)
    }

    fn give_back_channel(&mut self, context: u32, channel: u32) {
        if let Some(used) = self.channels.get_mut(&context) {
            used.retain(|&id| id != channel);
        }
    }

    /// Sends a setup; its frame stays here until the engine is done with it.
    fn send_setup(&mut self, engine: &mut Engine, dest: u32, context: u32, setup: Setup) -> Result<(), EngineError> {
        self.reap_setups(engine);
        let frame = Box::new(setup.encode());
        // SAFETY: the frame is boxed and kept in `setups_sent` until its send completes.
        let data: &'static [u8] = unsafe { std::slice::from_raw_parts(frame.as_ptr(), SETUP_BYTES) };
        if let Some(request) = engine.send_or_start(data, dest, SETUP_TAG, context)? {
            self.setups_sent.push((request, frame));
        }
        Ok(())
    }

    fn reap_setups(&mut self, engine: &mut Engine) {
        self.setups_sent.retain(|(request, _)| engine.take_if_complete(*request).is_none());
    }

    /// Receives setups from `source` on `context` while a receive from it waits for one: each goes
    /// to its receive through the matcher. A posted receive nobody needs any more is withdrawn.
    fn fetch(&mut self, engine: &mut Engine, context: u32, source: u32) -> Result<bool, EngineError> {
        let mut moved = false;
        loop {
            let key = (context, source);
            if let Some(fetch) = self.fetches.get(&key) {
                let Some(status) = engine.take_if_complete(fetch.request) else {
                    if !self.matcher.awaits(context, source) && engine.cancel(fetch.request) {
                        let _ = engine.take_if_complete(fetch.request);
                        self.fetches.remove(&key);
                    }
                    return Ok(moved);
                };
                let fetch = self.fetches.remove(&key).expect("looked up above");
                if !status.cancelled {
                    moved = true;
                    match Setup::decode(&fetch.frame[..status.count.min(SETUP_BYTES)]) {
                        Some(setup) if status.count == SETUP_BYTES => self.matcher.deliver(context, source, setup),
                        _ => return Err(EngineError::Transport(format!("rank {source} sent a malformed partitioned setup"))),
                    }
                }
            }
            if !self.matcher.awaits(context, source) {
                return Ok(moved);
            }
            let mut frame = Box::new([0u8; SETUP_BYTES]);
            // SAFETY: the frame is boxed and kept in `fetches` until the receive completes or is
            // cancelled.
            let buffer: &'static mut [u8] = unsafe { std::slice::from_raw_parts_mut(frame.as_mut_ptr(), SETUP_BYTES) };
            let request = engine.irecv(buffer, Source::Rank(source), TagSelector::Tag(SETUP_TAG), context)?;
            self.fetches.insert(key, Fetch { request, frame });
        }
    }
}

/// A partitioned send: MPI_Psend_init's arguments and the state of the current round.
pub struct Sending {
    registry: Rc<RefCell<Registry>>,
    dest: u32,
    context: u32,
    channel: u32,
    /// The bytes of partition i are `source[i * each..][..each]`.
    source: *const u8,
    each: usize,
    partitions: usize,
    /// A non-contiguous datatype's elements, packed partition by partition as they become ready.
    packing: Option<Packing>,
    round: Round,
    ready: Vec<bool>,
    in_flight: Vec<RequestId>,
}

/// How a non-contiguous datatype's partitions are packed or unpacked.
struct Packing {
    copy: Vec<u8>,
    datatype: DatatypeRef,
    /// Elements per partition, and their stride in the user's buffer.
    count: usize,
    stride: isize,
    user: *mut u8,
}

impl Packing {
    /// # Safety
    /// `user` holds `partitions` partitions of `count` elements of `datatype`.
    unsafe fn pack(&mut self, partition: usize, each: usize) {
        let user = self.user.wrapping_offset(partition as isize * self.stride);
        // SAFETY: per the caller; the copy holds every partition's packed bytes.
        unsafe { self.datatype.pack(self.count, user, &mut self.copy[partition * each..][..each]) };
    }

    /// # Safety
    /// As for `pack`, and the partition's bytes have arrived.
    unsafe fn unpack(&self, partition: usize, each: usize) {
        let user = self.user.wrapping_offset(partition as isize * self.stride);
        // SAFETY: per the caller.
        unsafe { self.datatype.unpack(self.count, &self.copy[partition * each..][..each], user) };
    }
}

/// Where a send's or receive's current round stands.
#[derive(Default)]
struct Round {
    /// Set while a round is active: what the MPI request watches.
    outcome: Option<Rc<Outcome>>,
    failure: Option<i32>,
}

impl Round {
    fn is_active(&self) -> bool {
        self.outcome.is_some()
    }

    fn begin(&mut self) -> Rc<Outcome> {
        let outcome = Rc::new(Outcome::default());
        *self = Round { outcome: Some(outcome.clone()), failure: None };
        outcome
    }

    fn end(&mut self) {
        if let Some(outcome) = self.outcome.take() {
            outcome.finish(self.failure.map_or(Ok(()), Err));
        }
    }
}

/// The user's buffer and datatype of a partitioned operation.
pub struct Buffer {
    pub user: *mut u8,
    pub partitions: usize,
    /// Elements per partition.
    pub count: usize,
    pub datatype: DatatypeRef,
}

impl Buffer {
    fn each(&self) -> usize {
        self.count * self.datatype.size
    }

    /// Where partition i's bytes are: the user's buffer (from the returned start) when the whole
    /// message is one contiguous run, else a packed copy.
    fn placement(self) -> (*mut u8, Option<Packing>) {
        let each = self.each();
        match self.datatype.contiguous_run(self.partitions * self.count) {
            Some((offset, _)) => (self.user.wrapping_offset(offset), None),
            None => {
                let stride = self.count as isize * self.datatype.extent;
                let packing = Packing { copy: vec![0u8; each * self.partitions], datatype: self.datatype, count: self.count, stride, user: self.user };
                (std::ptr::null_mut(), Some(packing))
            }
        }
    }
}

impl Sending {
    /// MPI_Psend_init to job rank `dest` on collective context `context`: takes a channel and
    /// tells the receiver the message's shape. None when every channel of the context is taken.
    pub fn new(registry: &Rc<RefCell<Registry>>, engine: &mut Engine, buffer: Buffer, dest: u32, context: u32, tag: i32) -> Result<Option<Sending>, EngineError> {
        let Some(channel) = registry.borrow_mut().take_channel(context) else { return Ok(None) };
        let (partitions, each) = (buffer.partitions, buffer.each());
        let setup = Setup { tag, channel, partitions: partitions as u32, bytes: (partitions * each) as u64 };
        let (source, packing) = buffer.placement();
        let sending = Sending { registry: registry.clone(), dest, context, channel, source, each, partitions, packing, round: Round::default(), ready: vec![false; partitions], in_flight: Vec::new() };
        registry.borrow_mut().send_setup(engine, dest, context, setup)?;
        Ok(Some(sending))
    }

    pub fn partitions(&self) -> usize {
        self.partitions
    }

    pub fn is_active(&self) -> bool {
        self.round.is_active()
    }

    /// MPI_Start: a new round, in which every partition is to be marked ready.
    pub fn start(&mut self) -> Rc<Outcome> {
        self.ready.fill(false);
        self.round.begin()
    }

    /// MPI_Pready of `partition` (in range, in an active round): sends it. Err with an MPI error
    /// class when it was marked ready already.
    pub fn ready(&mut self, engine: &mut Engine, partition: usize) -> Result<Result<(), i32>, EngineError> {
        if self.ready[partition] {
            return Ok(Err(MPI_ERR_ARG));
        }
        self.ready[partition] = true;
        let data: *const u8 = match &mut self.packing {
            Some(packing) => {
                // SAFETY: MPI_Psend_init's buffer holds every partition until the request is freed.
                unsafe { packing.pack(partition, self.each) };
                packing.copy[partition * self.each..].as_ptr()
            }
            None => self.source.wrapping_add(partition * self.each),
        };
        // SAFETY: the partition's bytes stay unchanged until the round completes (MPI's rule for a
        // ready partition; the packed copy lives as long as this send).
        let data: &'static [u8] = if self.each == 0 { &[] } else { unsafe { std::slice::from_raw_parts(data, self.each) } };
        if let Some(request) = engine.send_or_start(data, self.dest, chunk_tag(self.channel, partition), self.context)? {
            self.in_flight.push(request);
        }
        self.advance(engine);
        Ok(Ok(()))
    }

    /// Takes the sends the engine has completed; the round ends when every partition is ready and
    /// sent. Whether anything moved.
    fn advance(&mut self, engine: &mut Engine) -> bool {
        let before = self.in_flight.len();
        self.in_flight.retain(|&request| engine.take_if_complete(request).is_none());
        let moved = self.in_flight.len() != before;
        if self.round.is_active() && self.in_flight.is_empty() && self.ready.iter().all(|&ready| ready) {
            self.round.end();
            return true;
        }
        moved
    }
}

impl Drop for Sending {
    fn drop(&mut self) {
        if let Ok(mut registry) = self.registry.try_borrow_mut() {
            registry.give_back_channel(self.context, self.channel);
        }
    }
}

/// A partitioned receive: MPI_Precv_init's arguments, its setup once matched, and the state of the
/// current round.
pub struct Receiving {
    registry: Rc<RefCell<Registry>>,
    source: u32,
    context: u32,
    /// Where the bytes land: from `target` on when contiguous, else into the packed copy.
    target: *mut u8,
    packing: Option<Packing>,
    each: usize,
    partitions: usize,
    setup: SetupSlot,
    round: Round,
    /// Per sent partition: its receive while posted; whether it has arrived.
    posted: Vec<Option<RequestId>>,
    arrived: Vec<bool>,
    /// Per receive partition, for a packed copy: whether it has been unpacked.
    unpacked: Vec<bool>,
}

impl Receiving {
    /// MPI_Precv_init from job rank `source` with `tag` on collective context `context`: registered
    /// with the matcher at once, so receives match in the order they were initialized.
    pub fn new(registry: &Rc<RefCell<Registry>>, buffer: Buffer, source: u32, context: u32, tag: i32) -> Receiving {
        let (partitions, each) = (buffer.partitions, buffer.each());
        let (target, packing) = buffer.placement();
        let setup = SetupSlot::default();
        registry.borrow_mut().matcher.register(context, source, tag, &setup);
        Receiving {
            registry: registry.clone(),
            source,
            context,
            target,
            packing,
            each,
            partitions,
            setup,
            round: Round::default(),
            posted: Vec::new(),
            arrived: Vec::new(),
            unpacked: vec![false; partitions],
        }
    }

    pub fn partitions(&self) -> usize {
        self.partitions
    }

    pub fn is_active(&self) -> bool {
        self.round.is_active()
    }

    /// MPI_Start: a new round.
    pub fn start(&mut self, engine: &mut Engine) -> Result<Rc<Outcome>, EngineError> {
        let outcome = self.round.begin();
        self.posted.clear();
        self.arrived.clear();
        self.unpacked.fill(false);
        self.advance(engine)?;
        Ok(outcome)
    }

    /// MPI_Parrived: whether receive partition `partition` has arrived whole (unpacked into the
    /// user's buffer, then). An inactive request's partitions have all arrived.
    pub fn arrived(&mut self, partition: usize) -> bool {
        if !self.round.is_active() {
            return true;
        }
        let Some(setup) = self.setup.get() else { return false };
        if self.arrived.is_empty() && setup.partitions > 0 {
            return false;
        }
        let range = covering(setup.partitions as usize, setup.bytes_each(), self.each as u64, partition);
        if !self.arrived[range].iter().all(|&arrived| arrived) {
            return false;
        }
        self.unpack(partition);
        true
    }

    fn unpack(&mut self, partition: usize) {
        if let Some(packing) = &self.packing {
            if !self.unpacked[partition] {
                // SAFETY: MPI_Precv_init's buffer holds every partition until the request is
                // freed, and this partition's bytes have all arrived.
                unsafe { packing.unpack(partition, self.each) };
                self.unpacked[partition] = true;
            }
        }
    }

    /// Learns the setup, posts the partitions' receives and takes those that completed; the round
    /// ends when all have. Whether anything moved.
    fn advance(&mut self, engine: &mut Engine) -> Result<bool, EngineError> {
        if !self.round.is_active() {
            return Ok(false);
        }
        let mut moved = false;
        if self.setup.get().is_none() {
            moved |= self.registry.borrow_mut().fetch(engine, self.context, self.source)?;
        }
        let Some(setup) = self.setup.get() else { return Ok(moved) };
        if self.arrived.is_empty() && !self.post(engine, setup)? {
            return Ok(true);
        }
        for (index, posted) in self.posted.iter_mut().enumerate() {
            let Some(request) = *posted else { continue };
            if let Some(status) = engine.take_if_complete(request) {
                *posted = None;
                self.arrived[index] = true;
                moved = true;
                if status.truncated || status.count as u64 != setup.bytes_each() {
                    self.round.failure = Some(MPI_ERR_TRUNCATE);
                }
            }
        }
        if self.arrived.iter().all(|&arrived| arrived) {
            for partition in 0..self.partitions {
                self.unpack(partition);
            }
            self.round.end();
            moved = true;
        }
        Ok(moved)
    }

    /// Posts a receive per sent partition; false (the round failed) when the sender's message is
    /// not as long as this receive.
    fn post(&mut self, engine: &mut Engine, setup: Setup) -> Result<bool, EngineError> {
        let total = (self.partitions * self.each) as u64;
        if setup.bytes != total {
            self.round.failure = Some(if setup.bytes > total { MPI_ERR_TRUNCATE } else { MPI_ERR_OTHER });
            self.round.end();
            return Ok(false);
        }
        let each = setup.bytes_each() as usize;
        let base = match &mut self.packing {
            Some(packing) => packing.copy.as_mut_ptr(),
            None => self.target,
        };
        self.arrived = vec![false; setup.partitions as usize];
        self.posted = Vec::with_capacity(setup.partitions as usize);
        for partition in 0..setup.partitions as usize {
            // SAFETY: the partition's bytes lie within the user's buffer (or the packed copy),
            // which the program keeps until the request is freed and leaves to MPI while a round
            // is active; the round ends only once every receive has completed.
            let buffer: &'static mut [u8] = if each == 0 { &mut [] } else { unsafe { std::slice::from_raw_parts_mut(base.add(partition * each), each) } };
            let request = engine.irecv(buffer, Source::Rank(self.source), TagSelector::Tag(chunk_tag(setup.channel, partition)), self.context)?;
            self.posted.push(Some(request));
        }
        Ok(true)
    }
}

/// Advances a round of a partitioned send or receive in every progress step, until it ends.
pub enum RoundAgent {
    Send(Rc<RefCell<Sending>>),
    Receive(Rc<RefCell<Receiving>>),
}

impl ProgressAgent for RoundAgent {
    fn advance(&mut self, engine: &mut Engine) -> Result<bool, EngineError> {
        match self {
            RoundAgent::Send(sending) => Ok(sending.borrow_mut().advance(engine)),
            RoundAgent::Receive(receiving) => receiving.borrow_mut().advance(engine),
        }
    }

    fn is_done(&self) -> bool {
        match self {
            RoundAgent::Send(sending) => !sending.borrow().is_active(),
            RoundAgent::Receive(receiving) => !receiving.borrow().is_active(),
        }
    }
}
