//! MPI_T performance-variable sessions and handles, with the value semantics MPI 3.1 §14.3.7
//! gives each class:
//! * **counter, timer**: start at 0 when the handle is allocated and grow only while the handle
//!   is started; reset returns to 0, write sets the value.
//! * **level, generic**: the current value while started; when stopped, the value at the stop.
//! * **high watermark**: the highest level since the handle was allocated, started or reset.
//!
//! The engine keeps one high watermark; a handle's interval may start later. So whenever a
//! handle starts a new interval, every other started handle first takes the engine's watermark
//! into its own, then the engine's restarts at the current level: a handle's value is the larger
//! of its own and the engine's.

// The safety contract of the MPI_T_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_void};

use super::pvars::{PerformanceVariable, Sample, FLUSH_NAME_MAX, PVARS};
use super::{call, counter_values, index_argument, job_rank, required, restart_unexpected_high_watermark, ToolResult, Tools};
use crate::consts::*;

/// How a handle's value follows the variable's readings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Behaviour {
    /// Counters and timers.
    Accumulating,
    /// Levels and other instantaneous values.
    Current,
    /// High watermarks.
    Watermark,
}

impl Behaviour {
    fn of(variable: &PerformanceVariable) -> Behaviour {
        match variable.class {
            MPI_T_PVAR_CLASS_COUNTER | MPI_T_PVAR_CLASS_TIMER | MPI_T_PVAR_CLASS_AGGREGATE => Behaviour::Accumulating,
            MPI_T_PVAR_CLASS_HIGHWATERMARK => Behaviour::Watermark,
            _ => Behaviour::Current,
        }
    }
}

/// The state of one handle to a numeric variable, `count` elements wide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NumberState {
    behaviour: Behaviour,
    started: bool,
    /// Accumulating: the value gathered in earlier started stretches (or written). Current: the
    /// value at the last stop. Watermark: the highest level of the interval up to the engine's
    /// last restart.
    held: Vec<u64>,
    /// Accumulating: the readings when the current stretch started.
    base: Vec<u64>,
}

/// `numbers` cut or padded with zeros to `count` elements (the count a handle was allocated
/// with is kept even if the readings change length).
fn fitted(mut numbers: Vec<u64>, count: usize) -> Vec<u64> {
    numbers.resize(count, 0);
    numbers
}

impl NumberState {
    /// A new handle: `now` are the readings (for a watermark: the current level, its interval
    /// having just restarted); a continuous variable's handle starts at once.
    pub(crate) fn new(behaviour: Behaviour, now: Vec<u64>, started: bool) -> NumberState {
        match behaviour {
            Behaviour::Accumulating => NumberState { behaviour, started, held: vec![0; now.len()], base: now },
            Behaviour::Current | Behaviour::Watermark => NumberState { behaviour, started, held: now, base: Vec::new() },
        }
    }

    pub(crate) fn value(&self, now: &[u64]) -> Vec<u64> {
        if !self.started {
            return self.held.clone();
        }
        match self.behaviour {
            Behaviour::Accumulating => self.held.iter().zip(now.iter().zip(&self.base)).map(|(held, (now, base))| held.wrapping_add(now.wrapping_sub(*base))).collect(),
            Behaviour::Current => now.to_vec(),
            Behaviour::Watermark => self.held.iter().zip(now).map(|(held, now)| *held.max(now)).collect(),
        }
    }

    /// Starts the handle (a watermark's `now` is the level its new interval starts at).
    pub(crate) fn start(&mut self, now: Vec<u64>) {
        if self.started {
            return;
        }
        match self.behaviour {
            Behaviour::Accumulating => self.base = now,
            Behaviour::Watermark => self.held = now,
            Behaviour::Current => {}
        }
        self.started = true;
    }

    pub(crate) fn stop(&mut self, now: &[u64]) {
        if self.started {
            self.held = self.value(now);
            self.started = false;
        }
    }

    /// Back to the starting value: 0, or for a watermark the level `now`.
    pub(crate) fn reset(&mut self, now: Vec<u64>) {
        match self.behaviour {
            Behaviour::Accumulating => {
                self.held = vec![0; now.len()];
                self.base = now;
            }
            Behaviour::Watermark | Behaviour::Current => self.held = now,
        }
    }

    /// Sets the value to `wanted` (it then grows from there).
    pub(crate) fn write(&mut self, wanted: Vec<u64>, now: Vec<u64>) {
        self.held = wanted;
        if self.behaviour == Behaviour::Accumulating {
            self.base = now;
        }
    }

    /// A watermark that is running takes the engine's watermark `high` into its own before the
    /// engine's restarts.
    pub(crate) fn absorb(&mut self, high: &[u64]) {
        if self.started && self.behaviour == Behaviour::Watermark {
            self.held = self.value(high);
        }
    }
}

/// One handle: the variable and the elements it was allocated with.
pub(crate) struct Handle {
    pvar: usize,
    count: usize,
    /// For a variable bound to a communicator: the job rank of each of its ranks.
    binding: Option<Vec<u32>>,
    /// `None` for a string variable, which is always read as it is now.
    numbers: Option<NumberState>,
}

#[derive(Default)]
pub(crate) struct Session {
    handles: BTreeMap<u64, Handle>,
}

/// The readings of `variable` now, fitted to `count` elements; a variable bound to a
/// communicator reads the monitoring's counts of its ranks (`binding`: their job ranks).
fn readings(tools: &Tools, variable: &PerformanceVariable, binding: Option<&[u32]>, count: usize) -> ToolResult<Vec<u64>> {
    let Some(ranks) = binding else {
        return match variable.sample(&counter_values()?) {
            Sample::Numbers(numbers) => Ok(fitted(numbers, count)),
            Sample::Text(_) => Err(MPI_T_ERR_INVALID),
        };
    };
    match variable.sample(&tools.monitoring.since_reset(counter_values()?)) {
        Sample::Numbers(numbers) => Ok(fitted(ranks.iter().map(|&rank| numbers.get(rank as usize).copied().unwrap_or(0)).collect(), count)),
        Sample::Text(_) => Err(MPI_T_ERR_INVALID),
    }
}

/// What the level of a watermark variable starts a new interval at: restarts the engine's
/// watermark after every started watermark handle took it in.
fn restart_watermarks(tools: &mut Tools, count: usize) -> ToolResult<Vec<u64>> {
    let values = counter_values()?;
    let high = [values.unexpected_high_watermark];
    for handle in tools.sessions.values_mut().flat_map(|session| session.handles.values_mut()) {
        if let Some(state) = handle.numbers.as_mut() {
            state.absorb(&high);
        }
    }
    restart_unexpected_high_watermark()?;
    Ok(fitted(vec![values.unexpected_level], count))
}

/// The starting readings of a handle's new interval: for a watermark the current level (after a
/// restart), else the readings.
fn fresh_readings(tools: &mut Tools, variable: &PerformanceVariable, binding: Option<&[u32]>, count: usize) -> ToolResult<Vec<u64>> {
    if variable.is_watermark() {
        restart_watermarks(tools, count)
    } else {
        readings(tools, variable, binding, count)
    }
}

fn session_mut(tools: &mut Tools, session: MPI_T_pvar_session) -> ToolResult<&mut Session> {
    tools.sessions.get_mut(&(session as u64)).ok_or(MPI_T_ERR_INVALID_SESSION)
}

/// The handle ids of `session` an operation on `handle` applies to (all of them for
/// MPI_T_PVAR_ALL_HANDLES), checked to belong to it.
fn targets(tools: &mut Tools, session: MPI_T_pvar_session, handle: MPI_T_pvar_handle) -> ToolResult<Vec<u64>> {
    let session = session_mut(tools, session)?;
    if handle == MPI_T_PVAR_ALL_HANDLES {
        return Ok(session.handles.keys().copied().collect());
    }
    let id = handle as u64;
    if session.handles.contains_key(&id) {
        Ok(vec![id])
    } else {
        Err(MPI_T_ERR_INVALID_HANDLE)
    }
}

fn handle_mut(tools: &mut Tools, session: MPI_T_pvar_session, handle: u64) -> ToolResult<&mut Handle> {
    session_mut(tools, session)?.handles.get_mut(&handle).ok_or(MPI_T_ERR_INVALID_HANDLE)
}

/// A single handle (not MPI_T_PVAR_ALL_HANDLES) of `session`.
fn single(tools: &mut Tools, session: MPI_T_pvar_session, handle: MPI_T_pvar_handle) -> ToolResult<u64> {
    if handle == MPI_T_PVAR_ALL_HANDLES {
        return Err(MPI_T_ERR_INVALID_HANDLE);
    }
    targets(tools, session, handle).map(|ids| ids[0])
}

fn variable_of(tools: &mut Tools, session: MPI_T_pvar_session, handle: u64) -> ToolResult<(&'static PerformanceVariable, usize, Option<Vec<u32>>)> {
    let handle = handle_mut(tools, session, handle)?;
    Ok((&PVARS[handle.pvar], handle.count, handle.binding.clone()))
}

fn start(tools: &mut Tools, session: MPI_T_pvar_session, id: u64) -> ToolResult<()> {
    let (variable, count, binding) = variable_of(tools, session, id)?;
    if variable.continuous {
        return Err(MPI_T_ERR_PVAR_NO_STARTSTOP);
    }
    if variable.datatype() == MPI_CHAR {
        // Strings have no interval; a flush handle is started to be stopped.
        return Ok(());
    }
    let now = fresh_readings(tools, variable, binding.as_deref(), count)?;
    if let Some(state) = handle_mut(tools, session, id)?.numbers.as_mut() {
        state.start(now);
    }
    Ok(())
}

fn stop(tools: &mut Tools, session: MPI_T_pvar_session, id: u64) -> ToolResult<()> {
    let (variable, count, binding) = variable_of(tools, session, id)?;
    if variable.continuous {
        return Err(MPI_T_ERR_PVAR_NO_STARTSTOP);
    }
    if variable.is_flush() {
        return tools.monitoring.flush(job_rank()?, counter_values()?).map_err(|_| MPI_T_ERR_INVALID);
    }
    let now = readings(tools, variable, binding.as_deref(), count)?;
    if let Some(state) = handle_mut(tools, session, id)?.numbers.as_mut() {
        state.stop(&now);
    }
    Ok(())
}

fn reset(tools: &mut Tools, session: MPI_T_pvar_session, id: u64) -> ToolResult<()> {
    let (variable, count, binding) = variable_of(tools, session, id)?;
    if variable.readonly {
        return Err(MPI_T_ERR_PVAR_NO_WRITE);
    }
    if variable.is_flush() {
        tools.monitoring.reset(counter_values()?);
        return Ok(());
    }
    let now = fresh_readings(tools, variable, binding.as_deref(), count)?;
    if let Some(state) = handle_mut(tools, session, id)?.numbers.as_mut() {
        state.reset(now);
    }
    Ok(())
}

/// Applies `operation` to every target; with MPI_T_PVAR_ALL_HANDLES, handles it does not apply
/// to (`skipped` errors: continuous for start and stop, read-only for reset) are left alone.
fn apply(tools: &mut Tools, session: MPI_T_pvar_session, handle: MPI_T_pvar_handle, skipped: c_int, operation: fn(&mut Tools, MPI_T_pvar_session, u64) -> ToolResult<()>) -> ToolResult<()> {
    for id in targets(tools, session, handle)? {
        match operation(tools, session, id) {
            Err(code) if code == skipped && handle == MPI_T_PVAR_ALL_HANDLES => {}
            result => result?,
        }
    }
    Ok(())
}

/// Writes a handle's value into a C buffer of `count` elements of the variable's type.
///
/// # Safety
/// `buf` must be valid for writes of `count` elements of `variable`'s type.
unsafe fn store(variable: &PerformanceVariable, value: &Sample, buf: *mut c_void, count: usize) {
    match value {
        Sample::Text(text) => {
            // SAFETY: `count` bytes by the caller's guarantee; the string is cut to fit.
            unsafe { crate::error::write_c_string(text, buf.cast::<c_char>(), count) };
        }
        Sample::Numbers(numbers) if variable.datatype() == MPI_DOUBLE => {
            for (index, nanoseconds) in numbers.iter().take(count).enumerate() {
                // SAFETY: `count` doubles by the caller's guarantee.
                unsafe { buf.cast::<f64>().add(index).write_unaligned(*nanoseconds as f64 * 1e-9) };
            }
        }
        Sample::Numbers(numbers) => {
            for (index, number) in numbers.iter().take(count).enumerate() {
                // SAFETY: `count` unsigned long longs by the caller's guarantee.
                unsafe { buf.cast::<u64>().add(index).write_unaligned(*number) };
            }
        }
    }
}

/// Reads `count` elements of a numeric variable's type from a C buffer, in the variable's unit.
///
/// # Safety
/// `buf` must be valid for reads of `count` elements of `variable`'s type.
unsafe fn load(variable: &PerformanceVariable, buf: *const c_void, count: usize) -> Vec<u64> {
    (0..count)
        .map(|index| {
            if variable.datatype() == MPI_DOUBLE {
                // SAFETY: `count` doubles by the caller's guarantee.
                let seconds = unsafe { buf.cast::<f64>().add(index).read_unaligned() };
                // Negative and NaN times saturate to 0, as `as` does.
                (seconds * 1e9).round() as u64
            } else {
                // SAFETY: `count` unsigned long longs by the caller's guarantee.
                unsafe { buf.cast::<u64>().add(index).read_unaligned() }
            }
        })
        .collect()
}

/// The text of a C string of at most `max` bytes (NUL included), or `None` when it has no NUL
/// there or is not UTF-8.
///
/// # Safety
/// `text` must be readable up to its NUL or `max` bytes, whichever comes first.
unsafe fn bounded_c_string(text: *const u8, max: usize) -> Option<String> {
    let mut bytes = Vec::new();
    for index in 0..max {
        // SAFETY: within the string or the `max` bytes, by the caller's guarantee.
        match unsafe { text.add(index).read() } {
            0 => return String::from_utf8(bytes).ok(),
            byte => bytes.push(byte),
        }
    }
    None
}

/// The handle's value now.
fn value(tools: &mut Tools, session: MPI_T_pvar_session, id: u64) -> ToolResult<Sample> {
    let (variable, count, binding) = variable_of(tools, session, id)?;
    if variable.is_flush() {
        return Ok(Sample::Text(tools.monitoring.file_name().to_owned()));
    }
    // A string variable's handle keeps no state: it reads as it is now.
    if variable.datatype() == MPI_CHAR {
        return Ok(variable.sample(&counter_values()?));
    }
    let now = readings(tools, variable, binding.as_deref(), count)?;
    let state = handle_mut(tools, session, id)?.numbers.as_ref().ok_or(MPI_T_ERR_INVALID)?;
    Ok(Sample::Numbers(state.value(&now)))
}

/// The job ranks of the communicator `obj_handle` points to, for a variable bound to one.
///
/// # Safety
/// A non-null `obj_handle` must point to an MPI_Comm.
unsafe fn communicator_binding(obj_handle: *mut c_void) -> ToolResult<Vec<u32>> {
    if obj_handle.is_null() {
        return Err(MPI_T_ERR_INVALID_HANDLE);
    }
    // SAFETY: non-null and pointing to an MPI_Comm by the caller's guarantee.
    let comm = unsafe { obj_handle.cast::<MPI_Comm>().read_unaligned() };
    super::with_runtime(|rt| rt.comms.get(comm).map(|entry| (0..entry.shared.peer_count() as u32).map(|rank| entry.shared.job_rank(rank)).collect()).ok())?.flatten().ok_or(MPI_T_ERR_INVALID_HANDLE)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_session_create(session: *mut MPI_T_pvar_session) -> c_int {
    call(|tools| {
        // SAFETY: MPI_T's rules: a valid pointer to a session handle.
        let session = unsafe { required(session)? };
        let id = tools.new_id()?;
        tools.sessions.insert(id, Session::default());
        *session = id as MPI_T_pvar_session;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_session_free(session: *mut MPI_T_pvar_session) -> c_int {
    call(|tools| {
        // SAFETY: MPI_T's rules: a valid pointer to a session handle.
        let session = unsafe { required(session)? };
        tools.sessions.remove(&(*session as u64)).ok_or(MPI_T_ERR_INVALID_SESSION)?;
        *session = MPI_T_PVAR_SESSION_NULL;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_handle_alloc(session: MPI_T_pvar_session, pvar_index: c_int, obj_handle: *mut c_void, handle: *mut MPI_T_pvar_handle, count: *mut c_int) -> c_int {
    call(|tools| {
        session_mut(tools, session)?;
        let pvar = index_argument(pvar_index, PVARS.len())?;
        // SAFETY: MPI_T's rules: valid pointers to a handle and an int.
        let (handle, count) = unsafe { (required(handle)?, required(count)?) };
        let variable = &PVARS[pvar];
        // A variable bound to no object ignores `obj_handle`, as MPI says.
        let binding = match variable.bind {
            // SAFETY: MPI_T's rules: for a variable bound to a communicator, a pointer to one.
            MPI_T_BIND_MPI_COMM => Some(unsafe { communicator_binding(obj_handle)? }),
            _ => None,
        };
        let elements = match &binding {
            Some(ranks) => ranks.len(),
            None if variable.is_flush() => FLUSH_NAME_MAX,
            None => variable.sample(&counter_values()?).count(),
        };
        if variable.is_flush() {
            // As Open MPI's: a new flush handle starts the monitoring afresh.
            tools.monitoring.reset(counter_values()?);
        }
        let numbers = match variable.datatype() {
            MPI_CHAR => None,
            _ => Some(NumberState::new(Behaviour::of(variable), fresh_readings(tools, variable, binding.as_deref(), elements)?, variable.continuous)),
        };
        let id = tools.new_id()?;
        session_mut(tools, session)?.handles.insert(id, Handle { pvar, count: elements, binding, numbers });
        *handle = id as MPI_T_pvar_handle;
        *count = super::c_count(elements);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_handle_free(session: MPI_T_pvar_session, handle: *mut MPI_T_pvar_handle) -> c_int {
    call(|tools| {
        // SAFETY: MPI_T's rules: a valid pointer to a handle.
        let handle = unsafe { required(handle)? };
        let id = single(tools, session, *handle)?;
        session_mut(tools, session)?.handles.remove(&id);
        *handle = MPI_T_PVAR_HANDLE_NULL;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_start(session: MPI_T_pvar_session, handle: MPI_T_pvar_handle) -> c_int {
    call(|tools| apply(tools, session, handle, MPI_T_ERR_PVAR_NO_STARTSTOP, start))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_stop(session: MPI_T_pvar_session, handle: MPI_T_pvar_handle) -> c_int {
    call(|tools| apply(tools, session, handle, MPI_T_ERR_PVAR_NO_STARTSTOP, stop))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_reset(session: MPI_T_pvar_session, handle: MPI_T_pvar_handle) -> c_int {
    call(|tools| apply(tools, session, handle, MPI_T_ERR_PVAR_NO_WRITE, reset))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_read(session: MPI_T_pvar_session, handle: MPI_T_pvar_handle, buf: *mut c_void) -> c_int {
    call(|tools| {
        let id = single(tools, session, handle)?;
        if buf.is_null() {
            return Err(MPI_T_ERR_INVALID);
        }
        let (variable, count, _) = variable_of(tools, session, id)?;
        let value = value(tools, session, id)?;
        // SAFETY: MPI_T's rules: `buf` holds the `count` elements the allocation reported.
        unsafe { store(variable, &value, buf, count) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_readreset(session: MPI_T_pvar_session, handle: MPI_T_pvar_handle, buf: *mut c_void) -> c_int {
    call(|tools| {
        let id = single(tools, session, handle)?;
        let (variable, count, _) = variable_of(tools, session, id)?;
        if variable.readonly {
            return Err(MPI_T_ERR_PVAR_NO_WRITE);
        }
        if buf.is_null() {
            return Err(MPI_T_ERR_INVALID);
        }
        let value = value(tools, session, id)?;
        reset(tools, session, id)?;
        // SAFETY: as in MPI_T_pvar_read.
        unsafe { store(variable, &value, buf, count) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_write(session: MPI_T_pvar_session, handle: MPI_T_pvar_handle, buf: *const c_void) -> c_int {
    call(|tools| {
        let id = single(tools, session, handle)?;
        let (variable, count, binding) = variable_of(tools, session, id)?;
        if variable.readonly {
            return Err(MPI_T_ERR_PVAR_NO_WRITE);
        }
        if buf.is_null() {
            return Err(MPI_T_ERR_INVALID);
        }
        if variable.is_flush() {
            // SAFETY: MPI_T's rules: a string of the variable, NUL-terminated within its
            // FLUSH_NAME_MAX elements.
            let name = unsafe { bounded_c_string(buf.cast(), FLUSH_NAME_MAX) }.ok_or(MPI_T_ERR_INVALID)?;
            tools.monitoring.set_file_name(&name);
            return Ok(());
        }
        // SAFETY: MPI_T's rules: `buf` holds the `count` elements the allocation reported.
        let wanted = unsafe { load(variable, buf, count) };
        let now = fresh_readings(tools, variable, binding.as_deref(), count)?;
        if let Some(state) = handle_mut(tools, session, id)?.numbers.as_mut() {
            state.write(wanted, now);
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_grow_only_while_started_from_zero() {
        let mut state = NumberState::new(Behaviour::Accumulating, vec![100, 7], false);
        assert_eq!(state.value(&[150, 9]), [0, 0], "a stopped counter starts at 0");
        state.start(vec![150, 9]);
        assert_eq!(state.value(&[160, 9]), [10, 0]);
        state.stop(&[170, 12]);
        assert_eq!(state.value(&[500, 500]), [20, 3], "stopped, it keeps its value");
        state.start(vec![500, 500]);
        assert_eq!(state.value(&[501, 502]), [21, 5], "a restart adds to it");
        state.reset(vec![501, 502]);
        assert_eq!(state.value(&[511, 502]), [10, 0]);
        state.write(vec![1000, 2000], vec![511, 502]);
        assert_eq!(state.value(&[512, 502]), [1001, 2000]);
    }

    #[test]
    fn a_continuous_counter_counts_from_its_allocation() {
        let state = NumberState::new(Behaviour::Accumulating, vec![40], true);
        assert_eq!(state.value(&[42]), [2]);
    }

    #[test]
    fn levels_follow_the_readings_while_started_and_keep_the_last_when_stopped() {
        let mut state = NumberState::new(Behaviour::Current, vec![3], true);
        assert_eq!(state.value(&[5]), [5]);
        state.stop(&[6]);
        assert_eq!(state.value(&[9]), [6]);
        state.start(vec![9]);
        assert_eq!(state.value(&[2]), [2]);
    }

    #[test]
    fn watermarks_keep_their_highest_level_across_engine_restarts() {
        // Allocated at level 2; the engine's watermark then reaches 5.
        let mut early = NumberState::new(Behaviour::Watermark, vec![2], true);
        assert_eq!(early.value(&[5]), [5]);
        // A second handle starts a new interval at level 1: the first takes in 5 first.
        early.absorb(&[5]);
        let mut late = NumberState::new(Behaviour::Watermark, vec![1], true);
        assert_eq!((early.value(&[3]), late.value(&[3])), (vec![5], vec![3]));
        // Reset to the current level 1 after the engine's watermark reached 3.
        early.absorb(&[3]);
        late.absorb(&[3]);
        late.reset(vec![1]);
        assert_eq!((early.value(&[1]), late.value(&[1])), (vec![5], vec![1]));
        late.stop(&[4]);
        assert_eq!(late.value(&[9]), [4], "a stopped watermark keeps its value");
        late.absorb(&[9]);
        assert_eq!(late.value(&[9]), [4], "and takes in nothing more");
    }

    #[test]
    fn readings_keep_the_allocated_width() {
        assert_eq!(fitted(vec![1, 2, 3], 2), [1, 2]);
        assert_eq!(fitted(vec![1], 3), [1, 0, 0]);
    }

    #[test]
    fn timers_are_stored_and_loaded_in_seconds() {
        let timer = PVARS.iter().find(|variable| variable.class == MPI_T_PVAR_CLASS_TIMER).unwrap();
        let mut seconds = [0f64; 1];
        // SAFETY: room for one double.
        unsafe { store(timer, &Sample::Numbers(vec![2_500_000_000]), seconds.as_mut_ptr().cast(), 1) };
        assert_eq!(seconds, [2.5]);
        let written = [0.75f64];
        // SAFETY: one double to read.
        assert_eq!(unsafe { load(timer, written.as_ptr().cast(), 1) }, [750_000_000]);
        let negative = [-1.0f64];
        // SAFETY: as above.
        assert_eq!(unsafe { load(timer, negative.as_ptr().cast(), 1) }, [0]);
    }
}
