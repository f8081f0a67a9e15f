//! The MPI_* collective entry points, blocking and non-blocking.
//!
//! Each collective has one builder: it checks the arguments, views the user buffers as packed
//! bytes (the memory itself when the data is one contiguous run, otherwise a staging buffer packed
//! before and unpacked after) and returns the collective as a schedule: a future that runs an
//! algorithm of [`super::algorithms`] and then stores what it received. The blocking call drives
//! that schedule to its end; the non-blocking call hands it to the engine's progress and returns a
//! request. Arguments that MPI declares significant only at the root are only checked there.
//!
//! Safety of every entry point: the buffers, counts and arrays must be those the MPI standard
//! describes for the call, and no other thread may use the buffers until it completes (for a
//! non-blocking call, until its request completes).

#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::borrow::Cow;
use std::ffi::{c_int, c_void};
use std::future::Future;
use std::ops::Range;
use std::pin::{pin, Pin};
use std::rc::Rc;
use std::sync::Arc;

use super::algorithms;
use super::drive::{self, Driver, Route};
use super::port::Port;
use super::retained;
use crate::comm::CommShared;
use crate::consts::*;
use crate::datatype;
use crate::error::{error, finish, MpiError, MpiResult};
use crate::large_count::{Count, Offset};
use crate::op::{reduction, Reduction};
use crate::request::Pending;
use crate::runtime::{self, engine_error, Runtime};
use crate::topo::Neighbors;

mod direct;
mod inter;
mod on_node;

/// What a collective's schedule returns: an MPI error class on failure.
type Outcome = Result<(), i32>;

/// Defines the blocking entry point `$blocking`, the non-blocking `$nonblocking` (the same
/// arguments, then the communicator, and the request last) and the persistent `$persistent`
/// (the communicator, an info and the request last) over the builder `$builder`, and
/// `inter::$builder` on an intercommunicator. A collective that MPI defines on
/// intracommunicators alone says `intra only` and how it starts; one with a direct path for some
/// blocking calls says `direct` and the function that tries it (None: the schedule runs). The
/// builders capture nothing:
/// the arguments travel once, as a tuple.
macro_rules! collective {
    ($(#[$attr:meta])* $blocking:ident / $nonblocking:ident / $persistent:ident($($arg:ident: $ty:ty),* $(,)?) => $builder:ident) => {
        collective!(@define $(#[$attr])* $blocking / $nonblocking / $persistent($($arg: $ty),*) => $builder, Start::new, |start, ($($arg,)*)| inter::$builder(start, $($arg),*), no_direct_path);
    };
    ($(#[$attr:meta])* $blocking:ident / $nonblocking:ident / $persistent:ident($($arg:ident: $ty:ty),* $(,)?) => $builder:ident, direct $direct:path) => {
        collective!(@define $(#[$attr])* $blocking / $nonblocking / $persistent($($arg: $ty),*) => $builder, Start::new, |start, ($($arg,)*)| inter::$builder(start, $($arg),*), $direct);
    };
    ($(#[$attr:meta])* $blocking:ident / $nonblocking:ident / $persistent:ident($($arg:ident: $ty:ty),* $(,)?) => $builder:ident, intra only, $begin:expr) => {
        collective!(@define $(#[$attr])* $blocking / $nonblocking / $persistent($($arg: $ty),*) => $builder, $begin, |start, _| undefined_on_intercomm(start), no_direct_path);
    };
    (@define $(#[$attr:meta])* $blocking:ident / $nonblocking:ident / $persistent:ident($($arg:ident: $ty:ty),*) => $builder:ident, $begin:expr, $inter:expr, $direct:path) => {
        #[no_mangle]
        $(#[$attr])*
        pub unsafe extern "C" fn $blocking($($arg: $ty,)* comm: MPI_Comm) -> c_int {
            // SAFETY: the module's contract: the caller passes the buffers, counts and arrays
            // that MPI describes for this call.
            if let Some(outcome) = unsafe { $direct(($($arg,)*), comm) } {
                return finish(stringify!($blocking), outcome);
            }
            // SAFETY: as above.
            finish(stringify!($blocking), unsafe { run(comm, $begin, ($($arg,)*), |start, ($($arg,)*)| $builder(start, $($arg),*), $inter) })
        }

        #[no_mangle]
        $(#[$attr])*
        pub unsafe extern "C" fn $nonblocking($($arg: $ty,)* comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
            // SAFETY: as above, with the buffers kept until the request completes.
            finish(stringify!($nonblocking), unsafe { launch(comm, request, $begin, ($($arg,)*), |start, ($($arg,)*)| $builder(start, $($arg),*), $inter) })
        }

        #[no_mangle]
        $(#[$attr])*
        pub unsafe extern "C" fn $persistent($($arg: $ty,)* comm: MPI_Comm, info: MPI_Info, request: *mut MPI_Request) -> c_int {
            // SAFETY: as above, with the buffers kept for as long as the request lives.
            finish(stringify!($persistent), unsafe { prepare(comm, info, request, $begin, ($($arg,)*), |start, ($($arg,)*)| $builder(start, $($arg),*), $inter) })
        }
    };
}

/// The blocking call's way around the schedule, for collectives that have none: the schedule
/// always runs.
///
/// # Safety
/// None: it looks at nothing.
#[inline(always)]
unsafe fn no_direct_path<A>(_args: A, _comm: MPI_Comm) -> Option<MpiResult<()>> {
    None
}

/// Runs a blocking call's direct path `call` on the state, unless several threads may call MPI
/// (the schedule then advances in steps): None where it declines.
fn direct_on_runtime(call: impl FnOnce(&mut Runtime) -> Option<MpiResult<()>>) -> Option<MpiResult<()>> {
    if runtime::is_locking() {
        return None;
    }
    runtime::with(|rt| Ok(call(rt))).ok().flatten()
}

/// A collective about to start on a communicator.
pub(crate) struct Start {
    comm: MPI_Comm,
    shared: Arc<CommShared>,
    port: Rc<Port>,
    /// The communicator's neighbours, for neighbourhood collectives.
    neighbors: Option<Neighbors>,
}

/// How a collective starts: [`Start::new`], or [`Start::with_neighbors`] (a generic, not a
/// function pointer, so that the call is direct).
trait Begin: FnOnce(&mut Runtime, MPI_Comm) -> MpiResult<Start> {}

impl<T: FnOnce(&mut Runtime, MPI_Comm) -> MpiResult<Start>> Begin for T {}

impl Start {
    fn new(rt: &mut Runtime, comm: MPI_Comm) -> MpiResult<Start> {
        let shared = rt.comms.get(comm).map_err(|e| error(comm, e.class, e.detail))?.shared.clone();
        let remote_size = if shared.is_inter() { shared.peer_count() } else { 0 };
        let hierarchy = shared.hierarchy(&rt.engine, rt.config.debug);
        let flags = shared.node_flags(&rt.engine);
        let port = rt.coll_spare.port(shared.rank as usize, shared.size(), remote_size, rt.tuning, hierarchy, flags);
        Ok(Start { comm, shared, port, neighbors: None })
    }

    /// A neighbourhood collective: with the neighbours of the communicator's topology.
    fn with_neighbors(rt: &mut Runtime, comm: MPI_Comm) -> MpiResult<Start> {
        if rt.comms.get(comm).is_ok_and(|entry| entry.shared.is_inter()) {
            return Err(undefined_on_intercomm_error(comm));
        }
        let neighbors = crate::topo::neighbors(rt, comm)?;
        let mut start = Start::new(rt, comm)?;
        start.neighbors = Some(neighbors);
        Ok(start)
    }

    fn is_inter(&self) -> bool {
        self.shared.is_inter()
    }

    /// This process's rank in its (local) group.
    fn rank(&self) -> usize {
        self.port.rank()
    }

    /// The size of the (local) group.
    fn size(&self) -> usize {
        self.port.size()
    }

    /// The size of an intercommunicator's remote group.
    fn remote_size(&self) -> usize {
        self.port.remote_size()
    }

    fn port(&self) -> Rc<Port> {
        self.port.clone()
    }

    /// Takes the collective's tags ([`Route::next_collective`]), only once the arguments passed.
    fn into_route(self) -> (Rc<Port>, Route) {
        (self.port, Route::next_collective(self.shared))
    }

    /// [`Start::into_route`] of a blocking collective.
    fn into_blocking_route(self) -> (Rc<Port>, Route) {
        (self.port, Route::next_blocking(self.shared))
    }
}

/// Runs a collective to its end: the schedule `build` makes from `args`, or on an
/// intercommunicator the one `build_inter` makes.
fn run<A: Copy, F, G>(comm: MPI_Comm, begin: impl Begin, args: A, build: impl FnOnce(&Start, A) -> MpiResult<F>, build_inter: impl FnOnce(&Start, A) -> MpiResult<G>) -> MpiResult<()>
where
    F: Future<Output = Outcome>,
    G: Future<Output = Outcome>,
{
    if runtime::is_locking() {
        return run_unlocked(comm, begin, args, build, build_inter);
    }
    runtime::with(|rt| {
        let start = begin(rt, comm)?;
        if start.is_inter() {
            return run_apart(rt, start, |start| build_inter(start, args));
        }
        run_schedule(rt, start, |start| build(start, args))
    })
}

#[inline(always)]
fn run_schedule<F: Future<Output = Outcome>>(rt: &mut Runtime, start: Start, build: impl FnOnce(&Start) -> MpiResult<F>) -> MpiResult<()> {
    let comm = start.comm;
    // The schedule is pinned where `build` put it: taking it out of the Result first would copy
    // the whole future (hundreds of bytes), a good part of a small collective's cost.
    let mut built = pin!(build(&start));
    // SAFETY: `built` stays pinned; only the future inside it is handed on, pinned too, and an
    // error holds no future to move.
    let schedule = match unsafe { built.as_mut().get_unchecked_mut() } {
        // SAFETY: as above: the future lives, unmoved, inside the pinned Result.
        Ok(future) => unsafe { Pin::new_unchecked(future) },
        Err(failure) => return Err(failure.clone()),
    };
    let (port, route) = start.into_blocking_route();
    let outcome = drive::run_blocking(&mut rt.engine, &mut rt.coll_spare, port, route, schedule).map_err(|e| engine_error(comm, e))?;
    outcome.map_err(failed(comm))
}

/// [`run_schedule`] out of line, so that the intercommunicator schedule does not weigh on the
/// intracommunicator path.
#[inline(never)]
fn run_apart<F: Future<Output = Outcome>>(rt: &mut Runtime, start: Start, build: impl FnOnce(&Start) -> MpiResult<F>) -> MpiResult<()> {
    run_schedule(rt, start, build)
}

/// [`run`] when several threads may call MPI: the schedule advances in short steps, each holding
/// the state, so that the other threads' calls go on meanwhile.
#[cold]
fn run_unlocked<A: Copy, F, G>(comm: MPI_Comm, begin: impl Begin, args: A, build: impl FnOnce(&Start, A) -> MpiResult<F>, build_inter: impl FnOnce(&Start, A) -> MpiResult<G>) -> MpiResult<()>
where
    F: Future<Output = Outcome>,
    G: Future<Output = Outcome>,
{
    let start = runtime::with(|rt| begin(rt, comm))?;
    if start.is_inter() {
        return run_schedule_unlocked(start, |start| build_inter(start, args));
    }
    run_schedule_unlocked(start, |start| build(start, args))
}

fn run_schedule_unlocked<F: Future<Output = Outcome>>(start: Start, build: impl FnOnce(&Start) -> MpiResult<F>) -> MpiResult<()> {
    let comm = start.comm;
    let (schedule, port, route) = runtime::with(|_| {
        let schedule = build(&start)?;
        let (port, route) = start.into_blocking_route();
        Ok((schedule, port, route))
    })?;
    run_in_steps(comm, port, route, pin!(schedule))?.map_err(failed(comm))
}

/// Drives `schedule` to its end in short steps, each entering the state (advance, progress,
/// advance again), so that other threads' calls go on between them; engine failures are
/// reported on `comm`.
pub(crate) fn run_in_steps<T>(comm: MPI_Comm, port: Rc<Port>, route: Route, mut schedule: Pin<&mut dyn Future<Output = T>>) -> MpiResult<T> {
    // A blocking call, as on a single-threaded rank: the same forms (the flag forms included),
    // so that ranks at different thread levels run the same algorithms. A wait for a flag ends
    // the step; between steps the thread parks on the doorbell that the publisher rings.
    port.set_waits_in_place(true);
    let mut driver = Driver::new(port, route);
    crate::threaded::wait_unlocked(|rt| {
        let engine = &mut rt.engine;
        let mut step = || {
            if let Some(outcome) = driver.advance(engine, schedule.as_mut())? {
                return Ok(Some(outcome));
            }
            engine.progress()?;
            driver.advance(engine, schedule.as_mut())
        };
        step().map_err(|e| engine_error(comm, e))
    })
}

/// Starts a collective (the schedule `build` makes from `args`, or on an intercommunicator the
/// one `build_inter` makes) and stores the request that completes with it in `*request`.
///
/// # Safety
/// `request` must be NULL (an error) or point to a request handle.
unsafe fn launch<A: Copy, F, G>(
    comm: MPI_Comm,
    request: *mut MPI_Request,
    begin: impl Begin,
    args: A,
    build: impl FnOnce(&Start, A) -> MpiResult<F>,
    build_inter: impl FnOnce(&Start, A) -> MpiResult<G>,
) -> MpiResult<()>
where
    F: Future<Output = Outcome> + 'static,
    G: Future<Output = Outcome> + 'static,
{
    if request.is_null() {
        return Err(error(comm, MPI_ERR_ARG, "request must not be NULL"));
    }
    let handle = runtime::with(|rt| {
        let start = begin(rt, comm)?;
        if start.is_inter() {
            return launch_schedule(rt, start, |start| build_inter(start, args));
        }
        launch_schedule(rt, start, |start| build(start, args))
    })?;
    // SAFETY: checked non-null; points to the caller's handle.
    unsafe { *request = handle };
    Ok(())
}

fn launch_schedule<F: Future<Output = Outcome> + 'static>(rt: &mut Runtime, start: Start, build: impl FnOnce(&Start) -> MpiResult<F>) -> MpiResult<MPI_Request> {
    let comm = start.comm;
    let outcome = launch_outcome(rt, start, build)?;
    Ok(rt.requests.insert(Pending::collective(comm, outcome)))
}

/// Starts the schedule `build` makes and hands it to the engine's progress; the outcome fills in
/// when it ends.
fn launch_outcome<F: Future<Output = Outcome> + 'static>(rt: &mut Runtime, start: Start, build: impl FnOnce(&Start) -> MpiResult<F>) -> MpiResult<Rc<drive::Outcome>> {
    let comm = start.comm;
    let schedule = build(&start)?;
    let (port, route) = start.into_route();
    drive::launch(&mut rt.engine, port, route, schedule).map_err(|e| engine_error(comm, e))
}

/// Makes the inactive persistent request of a collective (MPI_Bcast_init and its kin) and stores
/// it in `*request`. The arguments are checked now, by building the schedule once and dropping
/// it unstarted, which also copies the argument arrays; each MPI_Start builds the schedule again
/// from the arguments and those copies and launches it, as the non-blocking call does (a
/// collective on the communicator, in the order of the starts).
///
/// # Safety
/// `request` must be NULL (an error) or point to a request handle; the buffers must stay valid
/// while the request lives.
unsafe fn prepare<A, F, G>(
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
    begin: impl Begin + Copy + 'static,
    args: A,
    build: impl Fn(&Start, A) -> MpiResult<F> + Copy + 'static,
    build_inter: impl Fn(&Start, A) -> MpiResult<G> + Copy + 'static,
) -> MpiResult<()>
where
    A: Copy + 'static,
    F: Future<Output = Outcome> + 'static,
    G: Future<Output = Outcome> + 'static,
{
    if request.is_null() {
        return Err(error(comm, MPI_ERR_ARG, "request must not be NULL"));
    }
    let handle = runtime::with(|rt| {
        crate::comm::abi::hints_of(comm, info)?;
        let start = begin(rt, comm)?;
        // The argument arrays are read now, and their copies kept for every start (see
        // `retained.rs`).
        let (built, copies) = retained::record(|| if start.is_inter() { build_inter(&start, args).map(drop) } else { build(&start, args).map(drop) });
        built?;
        rt.coll_spare.keep(start.port());
        let restart = move |rt: &mut dyn std::any::Any| {
            let rt = rt.downcast_mut::<Runtime>().expect("a persistent collective starts with the runtime");
            let start = begin(rt, comm)?;
            if start.is_inter() {
                return retained::replay(&copies, || launch_outcome(rt, start, |start| build_inter(start, args)));
            }
            retained::replay(&copies, || launch_outcome(rt, start, |start| build(start, args)))
        };
        Ok(rt.requests.insert(Pending::persistent_collective(comm, Box::new(restart))))
    })?;
    // SAFETY: checked non-null; points to the caller's handle.
    unsafe { *request = handle };
    Ok(())
}

/// The intercommunicator side of a collective that MPI defines on intracommunicators alone.
fn undefined_on_intercomm(start: &Start) -> MpiResult<std::future::Ready<Outcome>> {
    Err(undefined_on_intercomm_error(start.comm))
}

#[cold]
fn undefined_on_intercomm_error(comm: MPI_Comm) -> MpiError {
    error(comm, MPI_ERR_COMM, "this collective is not defined on intercommunicators")
}

fn failed(comm: MPI_Comm) -> impl Fn(i32) -> MpiError {
    move |class| {
        let detail = match class {
            MPI_ERR_OTHER | MPI_ERR_TRUNCATE => "a message of the collective did not have the length this rank expects: the ranks' arguments do not match",
            _ => "the collective's communication failed",
        };
        error(comm, class, detail)
    }
}

fn count_of(comm: MPI_Comm, count: impl Count) -> MpiResult<usize> {
    let count: MPI_Count = count.into();
    usize::try_from(count).map_err(|_| error(comm, MPI_ERR_COUNT, format!("count {count} is negative")))
}

fn root_of(comm: MPI_Comm, root: c_int, size: usize) -> MpiResult<usize> {
    usize::try_from(root).ok().filter(|&root| root < size).ok_or_else(|| error(comm, MPI_ERR_ROOT, format!("root {root} is not a rank of a communicator of size {size}")))
}

fn times(comm: MPI_Comm, count: usize, size: usize) -> MpiResult<usize> {
    count.checked_mul(size).ok_or_else(|| error(comm, MPI_ERR_COUNT, "count times communicator size overflows"))
}

fn reduction_of(comm: MPI_Comm, op: MPI_Op, dt: MPI_Datatype) -> MpiResult<Reduction> {
    reduction(op, dt).map_err(|class| error(comm, class, format!("operation {op} cannot reduce datatype {dt}")))
}

fn is_in_place(buffer: *const c_void) -> bool {
    buffer == MPI_IN_PLACE
}

/// MPI forbids a send buffer that is also the receive buffer (MPI_IN_PLACE is how a program says
/// that): the same address on both sides, with data to receive, is reported rather than read while
/// it is overwritten. MPI_BOTTOM on both sides is no alias: absolute displacements place the data.
fn distinct_buffers(comm: MPI_Comm, sendbuf: *const c_void, recvbuf: *const c_void, receives_data: impl FnOnce() -> bool) -> MpiResult<()> {
    if sendbuf == recvbuf.cast() && !sendbuf.is_null() && !is_in_place(sendbuf) && receives_data() {
        return Err(error(comm, MPI_ERR_BUFFER, "the send buffer is the receive buffer (MPI_IN_PLACE says that)"));
    }
    Ok(())
}

fn same_signature(comm: MPI_Comm, sent: usize, received: usize) -> MpiResult<()> {
    if sent == received {
        Ok(())
    } else {
        Err(error(comm, MPI_ERR_TRUNCATE, format!("this rank sends {sent} bytes to itself but expects {received}")))
    }
}

/// Reads `len` bytes at `start`.
///
/// # Safety
/// When `len > 0`, the bytes must be readable and not written for the returned lifetime.
unsafe fn bytes<'a>(start: *const u8, len: usize) -> &'a [u8] {
    if len == 0 {
        return &[];
    }
    // SAFETY: forwarded from this function's contract; len > 0 so `start` is a real address.
    unsafe { std::slice::from_raw_parts(start, len) }
}

/// Writes `len` bytes at `start`.
///
/// # Safety
/// When `len > 0`, the bytes must be writable and used by nothing else for the returned lifetime.
unsafe fn bytes_mut<'a>(start: *mut u8, len: usize) -> &'a mut [u8] {
    if len == 0 {
        return &mut [];
    }
    // SAFETY: forwarded from this function's contract; len > 0 so `start` is a real address.
    unsafe { std::slice::from_raw_parts_mut(start, len) }
}

/// Where an algorithm writes packed bytes: the user's memory, or a staging buffer to unpack.
enum Landing<'a> {
    Direct(&'a mut [u8]),
    Staged(Vec<u8>),
}

impl Landing<'_> {
    fn bytes(&mut self) -> &mut [u8] {
        match self {
            Landing::Direct(memory) => memory,
            Landing::Staged(staging) => staging,
        }
    }
}

/// `count` elements of a committed `datatype` at `buffer`.
#[derive(Clone, Copy)]
struct Typed {
    buffer: *mut u8,
    count: usize,
    datatype: MPI_Datatype,
    packed_len: usize,
    /// The elements' bytes as one run of memory: (offset from `buffer`, length).
    run: Option<(isize, usize)>,
}

fn typed(comm: MPI_Comm, buffer: *const c_void, count: impl Count, datatype: MPI_Datatype) -> MpiResult<Typed> {
    typed_elements(comm, buffer, count_of(comm, count)?, datatype)
}

fn typed_elements(comm: MPI_Comm, buffer: *const c_void, count: usize, datatype: MPI_Datatype) -> MpiResult<Typed> {
    let type_error = |class| error(comm, class, format!("datatype {datatype} is not valid or not committed"));
    // One lookup serves every question below (a derived type's costs a lock).
    let info = datatype::lookup_committed(datatype).map_err(type_error)?;
    if is_in_place(buffer) {
        return Err(error(comm, MPI_ERR_BUFFER, "MPI_IN_PLACE is not allowed for this buffer"));
    }
    let packed_len = info.size.checked_mul(count).ok_or_else(|| error(comm, MPI_ERR_COUNT, "message too large"))?;
    if buffer.is_null() && packed_len > 0 && (1..=BRAID_PREDEFINED_DATATYPE_LAST).contains(&datatype) {
        return Err(error(comm, MPI_ERR_BUFFER, "the buffer is NULL"));
    }
    let run = info.contiguous_run(count);
    Ok(Typed { buffer: buffer as *mut u8, count, datatype, packed_len, run })
}

impl Typed {
    fn start(&self, offset: isize) -> *mut u8 {
        self.buffer.wrapping_offset(offset)
    }

    /// The data as packed bytes, borrowed from user memory when it is one run.
    ///
    /// # Safety
    /// The elements must be readable and not written while the result lives.
    unsafe fn read<'a>(&self) -> Cow<'a, [u8]> {
        match self.run {
            // SAFETY: the run lies within the caller's elements.
            Some((offset, len)) => Cow::Borrowed(unsafe { bytes(self.start(offset), len) }),
            // SAFETY: as above.
            None => Cow::Owned(unsafe { self.packed() }),
        }
    }

    /// A packed copy of the data.
    ///
    /// # Safety
    /// As for [`Typed::read`].
    unsafe fn packed(&self) -> Vec<u8> {
        if let Some((offset, len)) = self.run {
            // One run: a plain copy, without zeroing the buffer first.
            // SAFETY: the run lies within the caller's elements.
            return unsafe { bytes(self.start(offset), len) }.to_vec();
        }
        let mut packed = vec![0u8; self.packed_len];
        if self.packed_len > 0 {
            // SAFETY: the datatype was validated and the caller's elements are readable.
            unsafe { datatype::pack(self.datatype, self.count, self.buffer, &mut packed) };
        }
        packed
    }

    /// Where to write the packed data; `preload` keeps the current contents (for in-place
    /// calls).
    ///
    /// # Safety
    /// The elements must be writable and used by nothing else while the result lives.
    unsafe fn landing<'a>(&self, preload: bool) -> Landing<'a> {
        match self.run {
            // SAFETY: the run lies within the caller's elements.
            Some((offset, len)) => Landing::Direct(unsafe { bytes_mut(self.start(offset), len) }),
            // SAFETY: as above.
            None if preload => Landing::Staged(unsafe { self.packed() }),
            None => Landing::Staged(vec![0u8; self.packed_len]),
        }
    }

    /// Unpacks a staged landing into the user's elements.
    ///
    /// # Safety
    /// As for [`Typed::landing`].
    unsafe fn store(&self, landing: &Landing) {
        if let Landing::Staged(staging) = landing {
            if self.packed_len > 0 {
                // SAFETY: the datatype was validated; the elements are writable and distinct from
                // the staging buffer.
                unsafe { datatype::unpack(self.datatype, self.count, staging, self.buffer) };
            }
        }
    }
}

/// A v-variant buffer: block i holds `counts[i]` elements at `buffer + displs[i]` extents.
struct Spread {
    blocks: Vec<Typed>,
    /// When every block is one run of memory: the lowest address of any block, and the length
    /// that covers them all.
    direct: Option<(*mut u8, usize)>,
    /// Each block's bytes, relative to the direct base or in the packed staging buffer.
    ranges: Vec<Range<usize>>,
}

/// # Safety
/// `counts` and `displs` must point to `size` integers each (or be NULL, which is an error).
unsafe fn spread(comm: MPI_Comm, buffer: *const c_void, counts: *const impl Count, displs: *const impl Offset, datatype: MPI_Datatype, size: usize) -> MpiResult<Spread> {
    if is_in_place(buffer) {
        return Err(error(comm, MPI_ERR_BUFFER, "MPI_IN_PLACE is not allowed for this buffer"));
    }
    if counts.is_null() || displs.is_null() {
        return Err(error(comm, MPI_ERR_ARG, "the counts or displacements array is NULL"));
    }
    // SAFETY: the caller passes arrays of one integer per rank, as MPI requires.
    let (counts, displs) = unsafe { (retained::read(counts, size), retained::read(displs, size)) };
    let extent = datatype::type_extent(datatype).map_err(|class| error(comm, class, format!("datatype {datatype} is not valid")))?;
    let mut blocks = Vec::with_capacity(size);
    for (&count, &displacement) in counts.iter().zip(&displs) {
        let offset = displacement.value().checked_mul(extent).ok_or_else(|| error(comm, MPI_ERR_ARG, "displacement overflows"))?;
        let start = (buffer as *const u8).wrapping_offset(offset);
        blocks.push(typed(comm, start.cast(), count, datatype)?);
    }
    let runs: Option<Vec<(*mut u8, usize)>> = blocks
        .iter()
        .map(|block| match block.run {
            _ if block.packed_len == 0 => Some((std::ptr::null_mut(), 0)),
            Some((offset, len)) => Some((block.start(offset), len)),
            None => None,
        })
        .collect();
    if let Some(runs) = runs {
        let filled = || runs.iter().filter(|run| run.1 > 0);
        let base = filled().map(|run| run.0).min_by_key(|&start| start as usize).unwrap_or(std::ptr::null_mut());
        let end = filled().map(|run| run.0 as usize + run.1).max().unwrap_or(base as usize);
        let ranges = runs.iter().map(|&(start, len)| if len == 0 { 0..0 } else { start as usize - base as usize..start as usize - base as usize + len }).collect();
        return Ok(Spread { blocks, direct: Some((base, end - base as usize)), ranges });
    }
    let mut ranges = Vec::with_capacity(size);
    let mut offset = 0;
    for block in &blocks {
        ranges.push(offset..offset + block.packed_len);
        offset += block.packed_len;
    }
    Ok(Spread { blocks, direct: None, ranges })
}

impl Spread {
    fn staging_len(&self) -> usize {
        self.ranges.last().map_or(0, |range| range.end)
    }

    /// Every block's data as bytes laid out as `ranges` says.
    ///
    /// # Safety
    /// The blocks must be readable and not written while the result lives.
    unsafe fn read<'a>(&self) -> Cow<'a, [u8]> {
        match self.direct {
            // SAFETY: the span from the lowest to the highest block is the caller's buffer.
            Some((base, len)) => Cow::Borrowed(unsafe { bytes(base, len) }),
            None => {
                let mut staging = vec![0u8; self.staging_len()];
                for (block, range) in self.blocks.iter().zip(&self.ranges) {
                    if !range.is_empty() {
                        // SAFETY: the datatype was validated and the block is readable.
                        unsafe { datatype::pack(block.datatype, block.count, block.buffer, &mut staging[range.clone()]) };
                    }
                }
                Cow::Owned(staging)
            }
        }
    }

    /// Where to write every block; block `preload` keeps its current contents (in place).
    ///
    /// # Safety
    /// The blocks must be writable and used by nothing else while the result lives.
    unsafe fn landing<'a>(&self, preload: Option<usize>) -> Landing<'a> {
        match self.direct {
            // SAFETY: the span from the lowest to the highest block is the caller's buffer.
            Some((base, len)) => Landing::Direct(unsafe { bytes_mut(base, len) }),
            None => {
                let mut staging = vec![0u8; self.staging_len()];
                if let Some(index) = preload {
                    let block = &self.blocks[index];
                    if block.packed_len > 0 {
                        // SAFETY: the datatype was validated and the block is readable.
                        unsafe { datatype::pack(block.datatype, block.count, block.buffer, &mut staging[self.ranges[index].clone()]) };
                    }
                }
                Landing::Staged(staging)
            }
        }
    }

    /// Unpacks a staged landing into every block but `skip`.
    ///
    /// # Safety
    /// As for [`Spread::landing`].
    unsafe fn store(&self, landing: &Landing, skip: Option<usize>) {
        if let Landing::Staged(staging) = landing {
            for (index, (block, range)) in self.blocks.iter().zip(&self.ranges).enumerate() {
                if Some(index) != skip && !range.is_empty() {
                    // SAFETY: the datatype was validated; the block is writable and distinct from
                    // the staging buffer.
                    unsafe { datatype::unpack(block.datatype, block.count, &staging[range.clone()], block.buffer) };
                }
            }
        }
    }
}

/// This rank's own block for a gather: `None` in place (it is already in recvbuf), otherwise
/// its send data, packed, which must be the `expected` number of bytes.
unsafe fn own_block<'a>(comm: MPI_Comm, sendbuf: *const c_void, sendcount: impl Count, sendtype: MPI_Datatype, expected: usize) -> MpiResult<Option<Cow<'a, [u8]>>> {
    if is_in_place(sendbuf) {
        return Ok(None);
    }
    let send = typed(comm, sendbuf, sendcount, sendtype)?;
    same_signature(comm, send.packed_len, expected)?;
    // SAFETY: the caller's send buffer holds the elements.
    Ok(Some(unsafe { send.read() }))
}

/// Copies the packed input of a reduction into `work`, which the algorithm then overwrites.
///
/// # Safety
/// `send` must describe the caller's readable send buffer, distinct from `work`.
unsafe fn reduction_input(send: &Typed, work: &mut [u8]) {
    // SAFETY: forwarded from this function's contract.
    let input = unsafe { send.read() };
    work.copy_from_slice(&input);
}

/// The reduction and its element size, moved into a schedule.
fn combiner(reduction: &Reduction) -> (impl Fn(&[u8], &mut [u8]) + '_, usize, bool) {
    (move |input: &[u8], inout: &mut [u8]| reduction.apply(input, inout), reduction.element_size().max(1), reduction.commutative())
}

fn barrier(start: &Start) -> MpiResult<impl Future<Output = Outcome> + 'static> {
    let port = start.port();
    Ok(async move { algorithms::barrier(&port).await })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Barrier(comm: MPI_Comm) -> c_int {
    // SAFETY: no arguments but the communicator.
    if let Some(outcome) = unsafe { on_node::barrier((), comm) } {
        return finish("MPI_Barrier", outcome);
    }
    finish("MPI_Barrier", run(comm, Start::new, (), |start, ()| barrier(start), |start, ()| inter::barrier(start)))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ibarrier(comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    // SAFETY: the caller passes a request pointer, as MPI requires.
    finish("MPI_Ibarrier", unsafe { launch(comm, request, Start::new, (), |start, ()| barrier(start), |start, ()| inter::barrier(start)) })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Barrier_init(comm: MPI_Comm, info: MPI_Info, request: *mut MPI_Request) -> c_int {
    // SAFETY: the caller passes a request pointer, as MPI requires.
    finish("MPI_Barrier_init", unsafe { prepare(comm, info, request, Start::new, (), |start, ()| barrier(start), |start, ()| inter::barrier(start)) })
}

unsafe fn bcast(start: &Start, buffer: *mut c_void, count: impl Count, datatype: MPI_Datatype, root: c_int) -> MpiResult<impl Future<Output = Outcome> + 'static> {
    let comm = start.comm;
    let root = root_of(comm, root, start.size())?;
    let data = typed(comm, buffer, count, datatype)?;
    let at_root = start.rank() == root;
    let port = start.port();
    Ok(async move {
        // SAFETY: the caller's buffer holds the elements; only this collective uses it.
        let mut landing = unsafe { data.landing(at_root) };
        algorithms::bcast(&port, landing.bytes(), root).await?;
        if !at_root {
            // SAFETY: as above.
            unsafe { data.store(&landing) };
        }
        Ok(())
    })
}

collective!(MPI_Bcast / MPI_Ibcast / MPI_Bcast_init(buffer: *mut c_void, count: c_int, datatype: MPI_Datatype, root: c_int) => bcast, direct on_node::bcast);
collective!(MPI_Bcast_c / MPI_Ibcast_c / MPI_Bcast_init_c(buffer: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, root: c_int) => bcast, direct on_node::bcast);

unsafe fn reduce(
    start: &Start,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: impl Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    root: c_int,
) -> MpiResult<impl Future<Output = Outcome> + 'static> {
    let comm = start.comm;
    let root = root_of(comm, root, start.size())?;
    let reduction = reduction_of(comm, op, datatype)?;
    let port = start.port();
    let at_root = start.rank() == root;
    let in_place = at_root && is_in_place(sendbuf);
    let recv = if at_root { Some(typed(comm, recvbuf, count, datatype)?) } else { None };
    let send = if in_place { None } else { Some(typed(comm, sendbuf, count, datatype)?) };
    if let Some(recv) = &recv {
        distinct_buffers(comm, sendbuf, recvbuf, || recv.packed_len > 0)?;
    }
    Ok(async move {
        let (combine, element_size, commutative) = combiner(&reduction);
        let Some(recv) = recv else {
            // SAFETY: the caller's send buffer holds the elements.
            let mut work = unsafe { send.expect("checked above").packed() };
            return algorithms::reduce(&port, &mut work, element_size, &combine, commutative, root).await;
        };
        // SAFETY: the caller's receive buffer holds the elements; only this collective uses it.
        let mut landing = unsafe { recv.landing(in_place) };
        if let Some(send) = send {
            // SAFETY: the caller's send buffer holds the elements and does not overlap recvbuf.
            unsafe { reduction_input(&send, landing.bytes()) };
        }
        algorithms::reduce(&port, landing.bytes(), element_size, &combine, commutative, root).await?;
        // SAFETY: as above.
        unsafe { recv.store(&landing) };
        Ok(())
    })
}

collective!(MPI_Reduce / MPI_Ireduce / MPI_Reduce_init(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype, op: MPI_Op, root: c_int) => reduce, direct on_node::reduce);
collective!(MPI_Reduce_c / MPI_Ireduce_c / MPI_Reduce_init_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, op: MPI_Op, root: c_int) => reduce, direct on_node::reduce);

collective!(MPI_Allreduce / MPI_Iallreduce / MPI_Allreduce_init(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype, op: MPI_Op) => allreduce, direct on_node::allreduce);
collective!(MPI_Allreduce_c / MPI_Iallreduce_c / MPI_Allreduce_init_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, op: MPI_Op) => allreduce, direct on_node::allreduce);
collective!(MPI_Scan / MPI_Iscan / MPI_Scan_init(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype, op: MPI_Op) => scan, intra only, Start::new);
collective!(MPI_Scan_c / MPI_Iscan_c / MPI_Scan_init_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, op: MPI_Op) => scan, intra only, Start::new);
collective!(MPI_Exscan / MPI_Iexscan / MPI_Exscan_init(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype, op: MPI_Op) => exscan, intra only, Start::new);
collective!(MPI_Exscan_c / MPI_Iexscan_c / MPI_Exscan_init_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, op: MPI_Op) => exscan, intra only, Start::new);

unsafe fn allreduce(start: &Start, sendbuf: *const c_void, recvbuf: *mut c_void, count: impl Count, datatype: MPI_Datatype, op: MPI_Op) -> MpiResult<impl Future<Output = Outcome> + 'static> {
    // SAFETY: forwarded.
    unsafe { in_place_reduction(start, sendbuf, recvbuf, count, datatype, op, ReduceKind::Allreduce) }
}

unsafe fn scan(start: &Start, sendbuf: *const c_void, recvbuf: *mut c_void, count: impl Count, datatype: MPI_Datatype, op: MPI_Op) -> MpiResult<impl Future<Output = Outcome> + 'static> {
    // SAFETY: forwarded.
    unsafe { in_place_reduction(start, sendbuf, recvbuf, count, datatype, op, ReduceKind::Scan) }
}

unsafe fn exscan(start: &Start, sendbuf: *const c_void, recvbuf: *mut c_void, count: impl Count, datatype: MPI_Datatype, op: MPI_Op) -> MpiResult<impl Future<Output = Outcome> + 'static> {
    // SAFETY: forwarded.
    unsafe { in_place_reduction(start, sendbuf, recvbuf, count, datatype, op, ReduceKind::Exscan) }
}

/// Which reduction [`in_place_reduction`] runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ReduceKind {
    Allreduce,
    Scan,
    Exscan,
}

/// The operands of a reduction whose result lands in the receive buffer (allreduce, scan,
/// exscan): the reduction, the receive buffer, and the send buffer unless it is MPI_IN_PLACE.
fn reduction_operands(comm: MPI_Comm, sendbuf: *const c_void, recvbuf: *mut c_void, count: impl Count, datatype: MPI_Datatype, op: MPI_Op) -> MpiResult<(Reduction, Typed, Option<Typed>)> {
    let reduction = reduction_of(comm, op, datatype)?;
    let recv = typed(comm, recvbuf, count, datatype)?;
    let send = if is_in_place(sendbuf) { None } else { Some(typed(comm, sendbuf, count, datatype)?) };
    distinct_buffers(comm, sendbuf, recvbuf, || recv.packed_len > 0)?;
    Ok((reduction, recv, send))
}

unsafe fn in_place_reduction(
    start: &Start,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: impl Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    kind: ReduceKind,
) -> MpiResult<impl Future<Output = Outcome> + 'static> {
    let (reduction, recv, send) = reduction_operands(start.comm, sendbuf, recvbuf, count, datatype, op)?;
    let in_place = send.is_none();
    let port = start.port();
    Ok(async move {
        let (combine, element_size, commutative) = combiner(&reduction);
        // SAFETY: the caller's receive buffer holds the elements; only this collective uses it.
        let mut landing = unsafe { recv.landing(in_place) };
        // An allreduce reads its input where it lies (the algorithm copies what it needs).
        let input = match (send, kind) {
            // SAFETY: the caller's send buffer holds the elements and does not overlap recvbuf.
            (Some(send), ReduceKind::Allreduce) => Some(unsafe { send.read() }),
            (Some(send), _) => {
                // SAFETY: as above.
                unsafe { reduction_input(&send, landing.bytes()) };
                None
            }
            (None, _) => None,
        };
        let data = landing.bytes();
        match kind {
            ReduceKind::Allreduce => match &input {
                Some(input) => algorithms::allreduce_from(&port, input, data, element_size, &combine, commutative).await,
                None => algorithms::allreduce(&port, data, element_size, &combine, commutative).await,
            },
            ReduceKind::Scan => algorithms::scan(&port, data, element_size, &combine).await,
            ReduceKind::Exscan => algorithms::exscan(&port, data, element_size, &combine).await,
        }?;
        // SAFETY: as above.
        unsafe { recv.store(&landing) };
        Ok(())
    })
}

collective!(MPI_Reduce_scatter_block / MPI_Ireduce_scatter_block / MPI_Reduce_scatter_block_init(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: c_int, datatype: MPI_Datatype, op: MPI_Op) => reduce_scatter_block);
collective!(MPI_Reduce_scatter_block_c / MPI_Ireduce_scatter_block_c / MPI_Reduce_scatter_block_init_c(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: MPI_Count, datatype: MPI_Datatype, op: MPI_Op) => reduce_scatter_block);
collective!(MPI_Reduce_scatter / MPI_Ireduce_scatter / MPI_Reduce_scatter_init(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const c_int, datatype: MPI_Datatype, op: MPI_Op) => reduce_scatter_v);
collective!(MPI_Reduce_scatter_c / MPI_Ireduce_scatter_c / MPI_Reduce_scatter_init_c(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const MPI_Count, datatype: MPI_Datatype, op: MPI_Op) => reduce_scatter_v);

unsafe fn reduce_scatter_block(
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

unsafe fn reduce_scatter_v(
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

enum Counts<C: Count> {
    Same(C),
    PerRank(*const C),
}

impl<C: Count> Counts<C> {
    /// The count of each of `size` ranks.
    ///
    /// # Safety
    /// `PerRank` must point to `size` integers (or be NULL, an error).
    unsafe fn per_rank(self, comm: MPI_Comm, size: usize) -> MpiResult<Vec<usize>> {
        match self {
            Counts::Same(count) => Ok(vec![count_of(comm, count)?; size]),
            Counts::PerRank(counts) if counts.is_null() => Err(error(comm, MPI_ERR_ARG, "recvcounts is NULL")),
            Counts::PerRank(counts) => {
                // SAFETY: the caller passes one count per rank.
                let counts = unsafe { retained::read(counts, size) };
                counts.iter().map(|&count| count_of(comm, count)).collect()
            }
        }
    }
}

unsafe fn reduce_scatter(
    start: &Start,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    counts: Counts<impl Count>,
    datatype: MPI_Datatype,
    op: MPI_Op,
) -> MpiResult<impl Future<Output = Outcome> + 'static> {
    let comm = start.comm;
    let (rank, size) = (start.rank(), start.size());
    // SAFETY: the caller passes one count per rank.
    let counts = unsafe { counts.per_rank(comm, size)? };
    let total = counts.iter().try_fold(0usize, |sum, &count| sum.checked_add(count)).ok_or_else(|| error(comm, MPI_ERR_COUNT, "the counts' sum overflows"))?;
    let reduction = reduction_of(comm, op, datatype)?;
    let input_buffer = if is_in_place(sendbuf) { recvbuf.cast_const() } else { sendbuf };
    let input = typed_elements(comm, input_buffer, total, datatype)?;
    let recv = typed_elements(comm, recvbuf, counts[rank], datatype)?;
    distinct_buffers(comm, sendbuf, recvbuf, || input.packed_len > 0)?;
    let port = start.port();
    Ok(async move {
        let (combine, element_size, commutative) = combiner(&reduction);
        // SAFETY: the input holds the sum of the counts in elements; the copy is taken before the
        // receive buffer (which it may be, in place) is written.
        let mut work = unsafe { input.packed() };
        // SAFETY: the caller's receive buffer holds its count of elements; only this collective
        // uses it.
        let mut landing = unsafe { recv.landing(false) };
        algorithms::reduce_scatter(&port, &mut work, &counts, element_size, &combine, commutative, landing.bytes()).await?;
        // SAFETY: as above.
        unsafe { recv.store(&landing) };
        Ok(())
    })
}

collective!(
    #[allow(clippy::too_many_arguments)]
    MPI_Gather / MPI_Igather / MPI_Gather_init(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, root: c_int) => gather, direct on_node::gather
);
collective!(
    #[allow(clippy::too_many_arguments)]
    MPI_Gather_c / MPI_Igather_c / MPI_Gather_init_c(sendbuf: *const c_void, sendcount: MPI_Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: MPI_Count, recvtype: MPI_Datatype, root: c_int) => gather, direct on_node::gather
);

#[allow(clippy::too_many_arguments)]
unsafe fn gather(
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
    let (rank, size) = (start.rank(), start.size());
    let root = root_of(comm, root, size)?;
    let port = start.port();
    let mut recv = None;
    let mine = if rank != root {
        let send = typed(comm, sendbuf, sendcount, sendtype)?;
        // SAFETY: the caller's send buffer holds the elements.
        Some(unsafe { send.read() })
    } else {
        let all = typed_elements(comm, recvbuf, times(comm, count_of(comm, recvcount)?, size)?, recvtype)?;
        distinct_buffers(comm, sendbuf, recvbuf, || all.packed_len > 0)?;
        recv = Some(all);
        // SAFETY: the caller's send buffer, unless in place, holds the elements and does not
        // overlap recvbuf.
        unsafe { own_block(comm, sendbuf, sendcount, sendtype, all.packed_len / size)? }
    };
    let in_place = rank == root && is_in_place(sendbuf);
    Ok(async move {
        let Some(recv) = recv else {
            return algorithms::gather(&port, mine.as_deref(), &mut [], root).await;
        };
        // SAFETY: the caller's receive buffer holds the elements; only this collective uses it.
        let mut landing = unsafe { recv.landing(in_place) };
        algorithms::gather(&port, mine.as_deref(), landing.bytes(), root).await?;
        // SAFETY: as above.
        unsafe { recv.store(&landing) };
        Ok(())
    })
}

collective!(
    #[allow(clippy::too_many_arguments)]
    MPI_Gatherv / MPI_Igatherv / MPI_Gatherv_init(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: MPI_Datatype, root: c_int) => gatherv
);
collective!(
    #[allow(clippy::too_many_arguments)]
    MPI_Gatherv_c / MPI_Igatherv_c / MPI_Gatherv_init_c(sendbuf: *const c_void, sendcount: MPI_Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const MPI_Count, displs: *const MPI_Aint, recvtype: MPI_Datatype, root: c_int) => gatherv
);

#[allow(clippy::too_many_arguments)]
unsafe fn gatherv(
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
    let (rank, size) = (start.rank(), start.size());
    let root = root_of(comm, root, size)?;
    let port = start.port();
    let mut recv = None;
    let mine = if rank != root {
        let send = typed(comm, sendbuf, sendcount, sendtype)?;
        // SAFETY: the caller's send buffer holds the elements.
        Some(unsafe { send.read() })
    } else {
        // SAFETY: the caller passes one count and one displacement per rank.
        let all = unsafe { spread(comm, recvbuf, recvcounts, displs, recvtype, size)? };
        distinct_buffers(comm, sendbuf, recvbuf, || all.blocks.iter().any(|block| block.packed_len > 0))?;
        // SAFETY: the caller's send buffer, unless in place, holds the elements and does not
        // overlap recvbuf.
        let mine = unsafe { own_block(comm, sendbuf, sendcount, sendtype, all.blocks[root].packed_len)? };
        recv = Some(all);
        mine
    };
    let in_place = (rank == root && is_in_place(sendbuf)).then_some(root);
    Ok(async move {
        let Some(recv) = recv else {
            return algorithms::gatherv(&port, mine.as_deref(), &mut [], &[], root).await;
        };
        // SAFETY: the caller's receive buffer holds the blocks; only this collective uses it.
        let mut landing = unsafe { recv.landing(in_place) };
        algorithms::gatherv(&port, mine.as_deref(), landing.bytes(), &recv.ranges, root).await?;
        // SAFETY: as above.
        unsafe { recv.store(&landing, in_place) };
        Ok(())
    })
}

/// The receive side of MPI_Scatter(v) at one rank: where its block lands, or nothing at a root
/// that keeps its block in place (MPI_IN_PLACE).
struct ScatterTarget<'a> {
    recv: Option<Typed>,
    landing: Option<Landing<'a>>,
}

impl ScatterTarget<'_> {
    /// # Safety
    /// `recvbuf` must hold `recvcount` elements of `recvtype`, used by nothing else during the call.
    unsafe fn new(comm: MPI_Comm, recvbuf: *mut c_void, recvcount: impl Count, recvtype: MPI_Datatype, in_place: bool) -> MpiResult<Self> {
        let recv = if in_place { None } else { Some(typed(comm, recvbuf, recvcount, recvtype)?) };
        Ok(ScatterTarget { recv, landing: None })
    }

    /// Packed bytes this rank expects, unless the block stays in place.
    fn packed_len(&self) -> Option<usize> {
        self.recv.as_ref().map(|recv| recv.packed_len)
    }

    /// Where the block lands, taken when the schedule starts.
    ///
    /// # Safety
    /// As for [`ScatterTarget::new`].
    unsafe fn bytes(&mut self) -> Option<&mut [u8]> {
        if self.landing.is_none() {
            // SAFETY: per the caller.
            self.landing = self.recv.as_ref().map(|recv| unsafe { recv.landing(false) });
        }
        self.landing.as_mut().map(Landing::bytes)
    }

    /// Moves a staged block into the caller's elements.
    ///
    /// # Safety
    /// As for [`ScatterTarget::new`].
    unsafe fn finish(&self) {
        if let (Some(recv), Some(landing)) = (&self.recv, &self.landing) {
            // SAFETY: per the caller.
            unsafe { recv.store(landing) };
        }
    }
}

collective!(
    #[allow(clippy::too_many_arguments)]
    MPI_Scatter / MPI_Iscatter / MPI_Scatter_init(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, root: c_int) => scatter, direct on_node::scatter
);
collective!(
    #[allow(clippy::too_many_arguments)]
    MPI_Scatter_c / MPI_Iscatter_c / MPI_Scatter_init_c(sendbuf: *const c_void, sendcount: MPI_Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: MPI_Count, recvtype: MPI_Datatype, root: c_int) => scatter, direct on_node::scatter
);

#[allow(clippy::too_many_arguments)]
unsafe fn scatter(
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
    let (rank, size) = (start.rank(), start.size());
    let root = root_of(comm, root, size)?;
    // SAFETY: the caller's receive buffer holds the elements; only this collective uses it.
    let mut target = unsafe { ScatterTarget::new(comm, recvbuf, recvcount, recvtype, rank == root && is_in_place(recvbuf))? };
    let all: Cow<'static, [u8]> = if rank == root {
        let send = typed_elements(comm, sendbuf, times(comm, count_of(comm, sendcount)?, size)?, sendtype)?;
        if let Some(expected) = target.packed_len() {
            same_signature(comm, send.packed_len / size, expected)?;
            distinct_buffers(comm, sendbuf, recvbuf, || expected > 0)?;
        }
        // SAFETY: the caller's send buffer holds the elements and does not overlap recvbuf.
        unsafe { send.read() }
    } else {
        Cow::Borrowed(&[])
    };
    let port = start.port();
    Ok(async move {
        // SAFETY: as above.
        algorithms::scatter(&port, &all, unsafe { target.bytes() }, root).await?;
        // SAFETY: as above.
        unsafe { target.finish() };
        Ok(())
    })
}

collective!(
    #[allow(clippy::too_many_arguments)]
    MPI_Scatterv / MPI_Iscatterv / MPI_Scatterv_init(sendbuf: *const c_void, sendcounts: *const c_int, displs: *const c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, root: c_int) => scatterv
);
collective!(
    #[allow(clippy::too_many_arguments)]
    MPI_Scatterv_c / MPI_Iscatterv_c / MPI_Scatterv_init_c(sendbuf: *const c_void, sendcounts: *const MPI_Count, displs: *const MPI_Aint, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: MPI_Count, recvtype: MPI_Datatype, root: c_int) => scatterv
);

#[allow(clippy::too_many_arguments)]
unsafe fn scatterv(
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
    let (rank, size) = (start.rank(), start.size());
    let root = root_of(comm, root, size)?;
    // SAFETY: the caller's receive buffer holds the elements; only this collective uses it.
    let mut target = unsafe { ScatterTarget::new(comm, recvbuf, recvcount, recvtype, rank == root && is_in_place(recvbuf))? };
    let (all, ranges): (Cow<'static, [u8]>, Vec<Range<usize>>) = if rank == root {
        // SAFETY: the caller passes one count and one displacement per rank.
        let send = unsafe { spread(comm, sendbuf, sendcounts, displs, sendtype, size)? };
        if let Some(expected) = target.packed_len() {
            same_signature(comm, send.blocks[root].packed_len, expected)?;
            distinct_buffers(comm, sendbuf, recvbuf, || expected > 0)?;
        }
        // SAFETY: the caller's send buffer holds the blocks and does not overlap recvbuf.
        (unsafe { send.read() }, send.ranges)
    } else {
        (Cow::Borrowed(&[]), Vec::new())
    };
    let port = start.port();
    Ok(async move {
        // SAFETY: as above.
        algorithms::scatterv(&port, &all, &ranges, unsafe { target.bytes() }, root).await?;
        // SAFETY: as above.
        unsafe { target.finish() };
        Ok(())
    })
}

collective!(
    #[allow(clippy::too_many_arguments)]
    MPI_Allgather / MPI_Iallgather / MPI_Allgather_init(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype) => allgather, direct on_node::allgather
);
collective!(
    #[allow(clippy::too_many_arguments)]
    MPI_Allgather_c / MPI_Iallgather_c / MPI_Allgather_init_c(sendbuf: *const c_void, sendcount: MPI_Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: MPI_Count, recvtype: MPI_Datatype) => allgather, direct on_node::allgather
);

unsafe fn allgather(
    start: &Start,
    sendbuf: *const c_void,
    sendcount: impl Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: impl Count,
    recvtype: MPI_Datatype,
) -> MpiResult<impl Future<Output = Outcome> + 'static> {
    let comm = start.comm;
    let size = start.size();
    let recv = typed_elements(comm, recvbuf, times(comm, count_of(comm, recvcount)?, size)?, recvtype)?;
    let block = recv.packed_len / size;
    let in_place = is_in_place(sendbuf);
    let mine = if in_place {
        None
    } else {
        let send = typed(comm, sendbuf, sendcount, sendtype)?;
        same_signature(comm, send.packed_len, block)?;
        distinct_buffers(comm, sendbuf, recvbuf, || recv.packed_len > 0)?;
        // SAFETY: the caller's send buffer holds the elements and does not overlap recvbuf.
        Some(unsafe { send.read() })
    };
    let port = start.port();
    Ok(async move {
        // SAFETY: the caller's receive buffer holds the elements; only this collective uses it.
        let mut landing = unsafe { recv.landing(in_place) };
        match mine {
            None => {
                let blocks: Vec<Range<usize>> = (0..size).map(|index| index * block..(index + 1) * block).collect();
                algorithms::allgatherv(&port, None, landing.bytes(), &blocks).await?;
            }
            Some(mine) => algorithms::allgather(&port, &mine, landing.bytes()).await?,
        }
        // SAFETY: as above.
        unsafe { recv.store(&landing) };
        Ok(())
    })
}

collective!(
    #[allow(clippy::too_many_arguments)]
    MPI_Allgatherv / MPI_Iallgatherv / MPI_Allgatherv_init(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: MPI_Datatype) => allgatherv
);
collective!(
    #[allow(clippy::too_many_arguments)]
    MPI_Allgatherv_c / MPI_Iallgatherv_c / MPI_Allgatherv_init_c(sendbuf: *const c_void, sendcount: MPI_Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const MPI_Count, displs: *const MPI_Aint, recvtype: MPI_Datatype) => allgatherv
);

#[allow(clippy::too_many_arguments)]
unsafe fn allgatherv(
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
    let (rank, size) = (start.rank(), start.size());
    // SAFETY: the caller passes one count and one displacement per rank.
    let recv = unsafe { spread(comm, recvbuf, recvcounts, displs, recvtype, size)? };
    let in_place = is_in_place(sendbuf).then_some(rank);
    distinct_buffers(comm, sendbuf, recvbuf, || recv.blocks.iter().any(|block| block.packed_len > 0))?;
    // SAFETY: the caller's send buffer, unless in place, holds the elements and does not overlap
    // recvbuf.
    let mine = unsafe { own_block(comm, sendbuf, sendcount, sendtype, recv.blocks[rank].packed_len)? };
    let port = start.port();
    Ok(async move {
        // SAFETY: the caller's receive buffer holds the blocks; only this collective uses it.
        let mut landing = unsafe { recv.landing(in_place) };
        algorithms::allgatherv(&port, mine.as_deref(), landing.bytes(), &recv.ranges).await?;
        // SAFETY: as above.
        unsafe { recv.store(&landing, in_place) };
        Ok(())
    })
}

collective!(
    #[allow(clippy::too_many_arguments)]
    MPI_Alltoall / MPI_Ialltoall / MPI_Alltoall_init(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype) => alltoall, direct on_node::alltoall
);
collective!(
    #[allow(clippy::too_many_arguments)]
    MPI_Alltoall_c / MPI_Ialltoall_c / MPI_Alltoall_init_c(sendbuf: *const c_void, sendcount: MPI_Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: MPI_Count, recvtype: MPI_Datatype) => alltoall, direct on_node::alltoall
);

unsafe fn alltoall(
    start: &Start,
    sendbuf: *const c_void,
    sendcount: impl Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: impl Count,
    recvtype: MPI_Datatype,
) -> MpiResult<impl Future<Output = Outcome> + 'static> {
    let comm = start.comm;
    let size = start.size();
    let recv = typed_elements(comm, recvbuf, times(comm, count_of(comm, recvcount)?, size)?, recvtype)?;
    let send = if is_in_place(sendbuf) {
        None
    } else {
        let send = typed_elements(comm, sendbuf, times(comm, count_of(comm, sendcount)?, size)?, sendtype)?;
        same_signature(comm, send.packed_len, recv.packed_len)?;
        distinct_buffers(comm, sendbuf, recvbuf, || recv.packed_len > 0)?;
        Some(send)
    };
    let port = start.port();
    Ok(async move {
        // In place, the data to send is copied out before the receive buffer is overwritten.
        let outgoing: Cow<[u8]> = match send {
            // SAFETY: the caller's receive buffer holds the elements.
            None => Cow::Owned(unsafe { recv.read() }.into_owned()),
            // SAFETY: the caller's send buffer holds the elements and does not overlap recvbuf.
            Some(send) => unsafe { send.read() },
        };
        // SAFETY: the caller's receive buffer holds the elements; only this collective uses it.
        let mut landing = unsafe { recv.landing(false) };
        algorithms::alltoall(&port, &outgoing, landing.bytes()).await?;
        // SAFETY: as above.
        unsafe { recv.store(&landing) };
        Ok(())
    })
}

collective!(
    #[allow(clippy::too_many_arguments)]
    MPI_Alltoallv / MPI_Ialltoallv / MPI_Alltoallv_init(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: MPI_Datatype) => alltoallv
);
collective!(
    #[allow(clippy::too_many_arguments)]
    MPI_Alltoallv_c / MPI_Ialltoallv_c / MPI_Alltoallv_init_c(sendbuf: *const c_void, sendcounts: *const MPI_Count, sdispls: *const MPI_Aint, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const MPI_Count, rdispls: *const MPI_Aint, recvtype: MPI_Datatype) => alltoallv
);

#[allow(clippy::too_many_arguments)]
unsafe fn alltoallv(
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
    let (rank, size) = (start.rank(), start.size());
    // SAFETY: the caller passes one count and one displacement per rank.
    let recv = unsafe { spread(comm, recvbuf, recvcounts, rdispls, recvtype, size)? };
    let send = if is_in_place(sendbuf) {
        None
    } else {
        // SAFETY: the caller passes one count and one displacement per rank.
        let send = unsafe { spread(comm, sendbuf, sendcounts, sdispls, sendtype, size)? };
        same_signature(comm, send.blocks[rank].packed_len, recv.blocks[rank].packed_len)?;
        distinct_buffers(comm, sendbuf, recvbuf, || recv.blocks.iter().any(|block| block.packed_len > 0))?;
        Some(send)
    };
    let port = start.port();
    Ok(async move {
        // In place, the data to send is copied out before the receive buffer is overwritten.
        let (outgoing, send_ranges): (Cow<[u8]>, &[Range<usize>]) = match &send {
            // SAFETY: the caller's receive buffer holds the blocks.
            None => (Cow::Owned(unsafe { recv.read() }.into_owned()), &recv.ranges),
            // SAFETY: the caller's send buffer holds the blocks and does not overlap recvbuf.
            Some(send) => (unsafe { send.read() }, &send.ranges),
        };
        // SAFETY: the caller's receive buffer holds the blocks; only this collective uses it.
        let mut landing = unsafe { recv.landing(None) };
        algorithms::alltoallv(&port, &outgoing, send_ranges, landing.bytes(), &recv.ranges).await?;
        // SAFETY: as above.
        unsafe { recv.store(&landing, None) };
        Ok(())
    })
}

collective!(
    #[allow(clippy::too_many_arguments)]
    MPI_Alltoallw / MPI_Ialltoallw / MPI_Alltoallw_init(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtypes: *const MPI_Datatype) => alltoallw
);
collective!(
    #[allow(clippy::too_many_arguments)]
    MPI_Alltoallw_c / MPI_Ialltoallw_c / MPI_Alltoallw_init_c(sendbuf: *const c_void, sendcounts: *const MPI_Count, sdispls: *const MPI_Aint, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const MPI_Count, rdispls: *const MPI_Aint, recvtypes: *const MPI_Datatype) => alltoallw
);

/// Blocks of an MPI_Alltoallw buffer: block i holds `counts[i]` elements of `types[i]` at byte
/// displacement `displs[i]`, packed one after the other into a staging buffer.
struct Mixed {
    blocks: Vec<Typed>,
    ranges: Vec<Range<usize>>,
}

/// # Safety
/// `counts`, `displs` and `types` must point to `size` entries each (or be NULL, an error).
unsafe fn mixed(comm: MPI_Comm, buffer: *const c_void, counts: *const impl Count, displs: *const impl Offset, types: *const MPI_Datatype, size: usize) -> MpiResult<Mixed> {
    if counts.is_null() || displs.is_null() || types.is_null() {
        return Err(error(comm, MPI_ERR_ARG, "the counts, displacements or types array is NULL"));
    }
    // SAFETY: the caller passes one entry per rank in each array, as MPI requires.
    let (counts, displs, types) = unsafe { (retained::read(counts, size), retained::read(displs, size), retained::read(types, size)) };
    let mut blocks = Vec::with_capacity(size);
    let mut ranges = Vec::with_capacity(size);
    let mut offset = 0;
    for ((&count, &displacement), &datatype) in counts.iter().zip(&displs).zip(&types) {
        let start = (buffer as *const u8).wrapping_offset(displacement.value());
        let block = typed(comm, start.cast(), count, datatype)?;
        ranges.push(offset..offset + block.packed_len);
        offset += block.packed_len;
        blocks.push(block);
    }
    Ok(Mixed { blocks, ranges })
}

impl Mixed {
    /// # Safety
    /// The blocks must be readable.
    unsafe fn packed(&self) -> Vec<u8> {
        let mut staging = vec![0u8; self.ranges.last().map_or(0, |range| range.end)];
        for (block, range) in self.blocks.iter().zip(&self.ranges) {
            if !range.is_empty() {
                // SAFETY: the datatype was validated and the block is readable.
                unsafe { datatype::pack(block.datatype, block.count, block.buffer, &mut staging[range.clone()]) };
            }
        }
        staging
    }

    /// # Safety
    /// The blocks must be writable and used by nothing else.
    unsafe fn store(&self, staging: &[u8]) {
        for (block, range) in self.blocks.iter().zip(&self.ranges) {
            if !range.is_empty() {
                // SAFETY: the datatype was validated; the block is writable and distinct from the
                // staging buffer.
                unsafe { datatype::unpack(block.datatype, block.count, &staging[range.clone()], block.buffer) };
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
unsafe fn alltoallw(
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
    let comm = start.comm;
    let (rank, size) = (start.rank(), start.size());
    // SAFETY: the caller passes one count, displacement and type per rank.
    let recv = unsafe { mixed(comm, recvbuf, recvcounts, rdispls, recvtypes, size)? };
    let send = if is_in_place(sendbuf) {
        None
    } else {
        // SAFETY: as above.
        let send = unsafe { mixed(comm, sendbuf, sendcounts, sdispls, sendtypes, size)? };
        same_signature(comm, send.blocks[rank].packed_len, recv.blocks[rank].packed_len)?;
        distinct_buffers(comm, sendbuf, recvbuf, || recv.blocks.iter().any(|block| block.packed_len > 0))?;
        Some(send)
    };
    let port = start.port();
    Ok(async move {
        // SAFETY: the caller's buffers hold the blocks; in place, the data to send is copied out
        // before the receive buffer is overwritten.
        let (outgoing, send_ranges) = match &send {
            None => (unsafe { recv.packed() }, &recv.ranges),
            Some(send) => (unsafe { send.packed() }, &send.ranges),
        };
        let mut incoming = vec![0u8; recv.ranges.last().map_or(0, |range| range.end)];
        algorithms::alltoallv(&port, &outgoing, send_ranges, &mut incoming, &recv.ranges).await?;
        // SAFETY: the caller's receive buffer holds the blocks; only this collective uses it.
        unsafe { recv.store(&incoming) };
        Ok(())
    })
}

mod neighbor;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_send_buffer_that_is_the_receive_buffer_is_refused_only_when_data_lands_there() {
        let mut memory = [0i32; 4];
        let buffer: *const c_void = memory.as_mut_ptr().cast();
        let other: *const c_void = memory[2..].as_ptr().cast();
        let refused = distinct_buffers(MPI_COMM_WORLD, buffer, buffer, || true).unwrap_err();
        assert_eq!((refused.comm, refused.class), (MPI_COMM_WORLD, MPI_ERR_BUFFER));
        assert!(distinct_buffers(MPI_COMM_WORLD, buffer, buffer, || false).is_ok(), "nothing is received");
        assert!(distinct_buffers(MPI_COMM_WORLD, buffer, other, || true).is_ok(), "different addresses");
        assert!(distinct_buffers(MPI_COMM_WORLD, MPI_IN_PLACE, MPI_IN_PLACE, || true).is_ok(), "MPI_IN_PLACE");
        assert!(distinct_buffers(MPI_COMM_WORLD, std::ptr::null(), std::ptr::null(), || true).is_ok(), "MPI_BOTTOM on both sides");
    }
}
