//! MPI_T events (MPI 4.0 §15.3.8): what the engine records for tools (a rail failed over, the
//! unexpected queue grew past a mark) reaches the callbacks tools register. The engine keeps the
//! events in a bounded log; every MPI call that leaves events behind delivers them as it returns,
//! once the library's state is released, so a callback may call any MPI function. Events lost to
//! a full log reach the dropped handlers.

use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_void};

use braid_engine::events::{Event, EventKind};

use super::{c_count, call, index_argument, lock, name_argument, put, put_string, required, ToolResult, TOOLS};
use crate::consts::*;

/// One kind of event: its name, what it means, and the elements of its data.
struct EventType {
    name: &'static str,
    description: &'static str,
    /// Each element's datatype and byte offset in the event's data.
    elements: &'static [(MPI_Datatype, MPI_Aint)],
    /// Bytes of the event's data (what MPI_T_event_copy writes).
    size: usize,
}

static EVENT_TYPES: [EventType; 2] = [
    EventType {
        name: "braid_rail_failover",
        description: "a network rail stopped reaching a peer and its traffic moved to the other rails; data: the peer's job rank, the rail's index (both unsigned int)",
        elements: &[(MPI_UNSIGNED, 0), (MPI_UNSIGNED, 4)],
        size: 8,
    },
    EventType {
        name: "braid_unexpected_queue_growth",
        description: "this rank's queue of unexpected messages reached a growth mark (BRAID_UNEXPECTED_MARK, then each doubling): a sender runs ahead of its receiver; data: the mark (uint64_t)",
        elements: &[(MPI_UINT64_T, 0)],
        size: 8,
    },
];

/// The category the events belong to.
pub(super) const EVENT_CATEGORY: &str = "braid_diagnostics";

/// The one source of timestamps: the engine's monotonic clock, in nanoseconds.
const SOURCE_NAME: &str = "braid_engine_clock";
const SOURCE_DESCRIPTION: &str = "the engine's monotonic clock, in nanoseconds since MPI started; every event is stamped by it";

/// A callback a tool registered: the function, its user data (an address) and its info.
struct Callback {
    function: MPI_T_event_cb_function,
    user_data: usize,
    info: Vec<(String, String)>,
}

/// A registration for one kind of event.
pub(super) struct Registration {
    event: usize,
    /// The callbacks by safety level (MPI_T_CB_REQUIRE_NONE ... ASYNC_SIGNAL_SAFE).
    callbacks: [Option<Callback>; 4],
    dropped: Option<MPI_T_event_dropped_cb_function>,
    info: Vec<(String, String)>,
}

/// What an MPI_T_event_instance points to while a callback runs.
#[derive(Clone, Copy)]
struct Instance {
    event: usize,
    at_ns: u64,
    data: [u8; 8],
}

/// The data bytes of `kind`, laid out as its type's elements say.
fn data_of(kind: EventKind) -> (usize, [u8; 8]) {
    let mut data = [0u8; 8];
    match kind {
        EventKind::RailFailedOver { peer, rail } => {
            data[..4].copy_from_slice(&peer.to_ne_bytes());
            data[4..].copy_from_slice(&rail.to_ne_bytes());
            (0, data)
        }
        EventKind::UnexpectedQueueGrew { level } => (1, level.to_ne_bytes()),
    }
}

/// The handle that carries registration number `id`.
fn registration_handle(id: u64) -> MPI_T_event_registration {
    id as usize as MPI_T_event_registration
}

fn registration_id(handle: MPI_T_event_registration) -> u64 {
    handle as usize as u64
}

fn event_type(event_index: c_int) -> ToolResult<&'static EventType> {
    Ok(&EVENT_TYPES[index_argument(event_index, EVENT_TYPES.len())?])
}

/// Delivers the events an MPI call left behind (see the module comment): each goes to the
/// callback of every registration for its kind (the one registered for the lowest safety level:
/// this context requires none), then the dropped handlers hear how many were lost.
#[cold]
fn deliver(events: Vec<Event>, dropped: u64) {
    let due: Vec<(MPI_T_event_cb_function, MPI_T_event_registration, usize, Instance)> = {
        let tools = lock(&TOOLS);
        events
            .iter()
            .flat_map(|event| {
                let (index, data) = data_of(event.kind);
                let instance = Instance { event: index, at_ns: event.at_ns, data };
                tools.event_registrations.iter().filter(move |(_, registration)| registration.event == index).filter_map(move |(&id, registration)| {
                    let callback = registration.callbacks.iter().flatten().next()?;
                    Some((callback.function, registration_handle(id), callback.user_data, instance))
                })
            })
            .collect()
    };
    for (function, registration, user_data, mut instance) in due {
        // SAFETY: a callback the tool registered, called as MPI defines; the instance lives on
        // this stack frame for the call, and no lock of this library is held.
        unsafe { function((&mut instance as *mut Instance).cast(), registration, MPI_T_CB_REQUIRE_NONE, user_data as *mut c_void) };
    }
    if dropped > 0 {
        let handlers: Vec<(MPI_T_event_dropped_cb_function, MPI_T_event_registration, usize)> = {
            let tools = lock(&TOOLS);
            tools
                .event_registrations
                .iter()
                .filter_map(|(&id, registration)| Some((registration.dropped?, registration_handle(id), registration.callbacks.iter().flatten().next().map_or(0, |callback| callback.user_data))))
                .collect()
        };
        for (handler, registration, user_data) in handlers {
            // SAFETY: a handler the tool set, called as MPI defines, with no lock held.
            unsafe { handler(dropped as MPI_Count, registration, 0, MPI_T_CB_REQUIRE_NONE, user_data as *mut c_void) };
        }
    }
}

/// The entries of `info` (none for MPI_INFO_NULL), as MPI_T reports a bad one.
fn info_entries(info: MPI_Info) -> ToolResult<Vec<(String, String)>> {
    crate::info::entries(info).map_err(|_| MPI_T_ERR_INVALID)
}

/// A new info object holding `entries`, as MPI_T reports a failure.
fn new_info(entries: Vec<(String, String)>) -> ToolResult<MPI_Info> {
    crate::info::create(entries).map_err(|_| MPI_T_ERR_INVALID)
}

fn safety_index(cb_safety: MPI_T_cb_safety) -> ToolResult<usize> {
    usize::try_from(cb_safety).ok().filter(|&index| index < 4).ok_or(MPI_T_ERR_INVALID)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_get_num(num_events: *mut c_int) -> c_int {
    // SAFETY: MPI_T's rules: a valid pointer (NULL is refused).
    call(|_| unsafe { required(num_events) }.map(|num| *num = c_count(EVENT_TYPES.len())))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_get_info(
    event_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    verbosity: *mut c_int,
    array_of_datatypes: *mut MPI_Datatype,
    array_of_displacements: *mut MPI_Aint,
    num_elements: *mut c_int,
    enumtype: *mut MPI_T_enum,
    info: *mut MPI_Info,
    desc: *mut c_char,
    desc_len: *mut c_int,
    bind: *mut c_int,
) -> c_int {
    call(|_| {
        let event = event_type(event_index)?;
        // SAFETY: MPI_T's rules: each out-argument is NULL or valid; the arrays hold
        // `*num_elements` entries on input.
        unsafe {
            put_string(event.name, name, name_len);
            put_string(event.description, desc, desc_len);
            put(verbosity, MPI_T_VERBOSITY_TUNER_BASIC);
            put(enumtype, MPI_T_ENUM_NULL);
            put(bind, MPI_T_BIND_NO_OBJECT);
            if !num_elements.is_null() {
                let room = usize::try_from(*num_elements).unwrap_or(0);
                for (index, &(datatype, displacement)) in event.elements.iter().enumerate().take(room) {
                    if !array_of_datatypes.is_null() {
                        *array_of_datatypes.add(index) = datatype;
                    }
                    if !array_of_displacements.is_null() {
                        *array_of_displacements.add(index) = displacement;
                    }
                }
                *num_elements = c_count(event.elements.len());
            }
            if !info.is_null() {
                *info = new_info(Vec::new())?;
            }
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_get_index(name: *const c_char, event_index: *mut c_int) -> c_int {
    call(|_| {
        // SAFETY: MPI_T's rules: a NUL-terminated name and a valid out-pointer.
        let (name, index) = unsafe { (name_argument(name)?, required(event_index)?) };
        *index = EVENT_TYPES.iter().position(|event| event.name == name).map(|found| found as c_int).ok_or(MPI_T_ERR_INVALID_NAME)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_handle_alloc(event_index: c_int, obj_handle: *mut c_void, info: MPI_Info, event_registration: *mut MPI_T_event_registration) -> c_int {
    let _ = obj_handle;
    call(|tools| {
        let event = index_argument(event_index, EVENT_TYPES.len())?;
        // SAFETY: MPI_T's rules: a valid out-pointer (NULL is refused).
        let out = unsafe { required(event_registration) }?;
        let info = info_entries(info)?;
        let id = tools.new_id()?;
        // From now on the engine's events come here.
        crate::runtime::set_event_sink(deliver);
        tools.event_registrations.insert(id, Registration { event, callbacks: [None, None, None, None], dropped: None, info });
        *out = registration_handle(id);
        Ok(())
    })
}

/// Runs `f` on the registration `handle` names.
fn with_registration(handle: MPI_T_event_registration, f: impl FnOnce(&mut Registration) -> ToolResult<()>) -> c_int {
    call(|tools| f(tools.event_registrations.get_mut(&registration_id(handle)).ok_or(MPI_T_ERR_INVALID_HANDLE)?))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_handle_set_info(event_registration: MPI_T_event_registration, info: MPI_Info) -> c_int {
    with_registration(event_registration, |registration| {
        registration.info = info_entries(info)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_handle_get_info(event_registration: MPI_T_event_registration, info_used: *mut MPI_Info) -> c_int {
    with_registration(event_registration, |registration| {
        // SAFETY: MPI_T's rules: a valid out-pointer (NULL is refused).
        *unsafe { required(info_used) }? = new_info(registration.info.clone())?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_register_callback(
    event_registration: MPI_T_event_registration,
    cb_safety: MPI_T_cb_safety,
    info: MPI_Info,
    user_data: *mut c_void,
    event_cb_function: Option<MPI_T_event_cb_function>,
) -> c_int {
    with_registration(event_registration, |registration| {
        let level = safety_index(cb_safety)?;
        registration.callbacks[level] = match event_cb_function {
            Some(function) => Some(Callback { function, user_data: user_data as usize, info: info_entries(info)? }),
            // A NULL function removes the level's callback.
            None => None,
        };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_callback_set_info(event_registration: MPI_T_event_registration, cb_safety: MPI_T_cb_safety, info: MPI_Info) -> c_int {
    with_registration(event_registration, |registration| {
        let level = safety_index(cb_safety)?;
        let callback = registration.callbacks[level].as_mut().ok_or(MPI_T_ERR_INVALID)?;
        callback.info = info_entries(info)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_callback_get_info(event_registration: MPI_T_event_registration, cb_safety: MPI_T_cb_safety, info_used: *mut MPI_Info) -> c_int {
    with_registration(event_registration, |registration| {
        let level = safety_index(cb_safety)?;
        let callback = registration.callbacks[level].as_ref().ok_or(MPI_T_ERR_INVALID)?;
        // SAFETY: MPI_T's rules: a valid out-pointer (NULL is refused).
        *unsafe { required(info_used) }? = new_info(callback.info.clone())?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_set_dropped_handler(event_registration: MPI_T_event_registration, dropped_cb_function: Option<MPI_T_event_dropped_cb_function>) -> c_int {
    with_registration(event_registration, |registration| {
        registration.dropped = dropped_cb_function;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_handle_free(event_registration: *mut MPI_T_event_registration, user_data: *mut c_void, free_cb_function: Option<MPI_T_event_free_cb_function>) -> c_int {
    let code = call(|tools| {
        // SAFETY: MPI_T's rules: a valid pointer to the handle (NULL is refused).
        let handle = unsafe { required(event_registration) }?;
        tools.event_registrations.remove(&registration_id(*handle)).ok_or(MPI_T_ERR_INVALID_HANDLE)?;
        Ok(())
    });
    if code != MPI_SUCCESS {
        return code;
    }
    // SAFETY: checked above; the caller's handle.
    let handle = unsafe { *event_registration };
    // SAFETY: as above.
    unsafe { *event_registration = MPI_T_EVENT_REGISTRATION_NULL };
    if let Some(free) = free_cb_function {
        // SAFETY: the tool's function, called as MPI defines once no callback can run.
        unsafe { free(handle, MPI_T_CB_REQUIRE_NONE, user_data) };
    }
    MPI_SUCCESS
}

/// The instance a callback was handed.
///
/// # Safety
/// `instance` is NULL or the instance of a callback still running.
unsafe fn instance<'a>(instance: MPI_T_event_instance) -> ToolResult<&'a Instance> {
    // SAFETY: per the caller: the pointer is the `Instance` `deliver` handed the callback.
    unsafe { instance.cast::<Instance>().as_ref() }.ok_or(MPI_T_ERR_INVALID_HANDLE)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_read(event_instance: MPI_T_event_instance, element_index: c_int, buffer: *mut c_void) -> c_int {
    // SAFETY: MPI_T's rules: the instance of the running callback.
    let Ok(instance) = (unsafe { instance(event_instance) }) else { return MPI_T_ERR_INVALID_HANDLE };
    let elements = EVENT_TYPES[instance.event].elements;
    let Some(&(datatype, offset)) = usize::try_from(element_index).ok().and_then(|index| elements.get(index)) else { return MPI_T_ERR_INVALID_ITEM };
    if buffer.is_null() {
        return MPI_T_ERR_INVALID;
    }
    let length = if datatype == MPI_UINT64_T { 8 } else { 4 };
    // SAFETY: the tool's buffer holds one element of the datatype MPI_T_event_get_info gave.
    unsafe { std::ptr::copy_nonoverlapping(instance.data.as_ptr().add(offset as usize), buffer.cast::<u8>(), length) };
    MPI_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_copy(event_instance: MPI_T_event_instance, buffer: *mut c_void) -> c_int {
    // SAFETY: MPI_T's rules: the instance of the running callback.
    let Ok(instance) = (unsafe { instance(event_instance) }) else { return MPI_T_ERR_INVALID_HANDLE };
    if buffer.is_null() {
        return MPI_T_ERR_INVALID;
    }
    // SAFETY: the tool's buffer holds the event's data, as MPI_T_event_get_info laid it out.
    unsafe { std::ptr::copy_nonoverlapping(instance.data.as_ptr(), buffer.cast::<u8>(), EVENT_TYPES[instance.event].size) };
    MPI_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_get_timestamp(event_instance: MPI_T_event_instance, event_timestamp: *mut MPI_Count) -> c_int {
    // SAFETY: MPI_T's rules: the instance of the running callback and a valid out-pointer.
    match unsafe { (instance(event_instance), required(event_timestamp)) } {
        (Ok(instance), Ok(out)) => {
            *out = instance.at_ns as MPI_Count;
            MPI_SUCCESS
        }
        (Err(code), _) | (_, Err(code)) => code,
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_event_get_source(event_instance: MPI_T_event_instance, source_index: *mut c_int) -> c_int {
    // SAFETY: MPI_T's rules: the instance of the running callback and a valid out-pointer.
    match unsafe { (instance(event_instance), required(source_index)) } {
        (Ok(_), Ok(out)) => {
            *out = 0;
            MPI_SUCCESS
        }
        (Err(code), _) | (_, Err(code)) => code,
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_source_get_num(num_sources: *mut c_int) -> c_int {
    // SAFETY: MPI_T's rules: a valid pointer (NULL is refused).
    call(|_| unsafe { required(num_sources) }.map(|num| *num = 1))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_source_get_info(
    source_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    desc: *mut c_char,
    desc_len: *mut c_int,
    ordering: *mut MPI_T_source_order,
    ticks_per_second: *mut MPI_Count,
    max_ticks: *mut MPI_Count,
    info: *mut MPI_Info,
) -> c_int {
    call(|_| {
        index_argument(source_index, 1)?;
        // SAFETY: MPI_T's rules: each out-argument is NULL or valid.
        unsafe {
            put_string(SOURCE_NAME, name, name_len);
            put_string(SOURCE_DESCRIPTION, desc, desc_len);
            put(ordering, MPI_T_SOURCE_ORDERED);
            put(ticks_per_second, 1_000_000_000);
            put(max_ticks, MPI_Count::MAX);
            if !info.is_null() {
                *info = new_info(Vec::new())?;
            }
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_source_get_timestamp(source_index: c_int, timestamp: *mut MPI_Count) -> c_int {
    call(|_| {
        index_argument(source_index, 1)?;
        // SAFETY: MPI_T's rules: a valid pointer (NULL is refused).
        let out = unsafe { required(timestamp) }?;
        // Before MPI starts (or after it ends) there is no clock to read.
        *out = super::with_runtime(|rt| rt.engine.event_clock_ns())?.ok_or(MPI_T_ERR_INVALID)? as MPI_Count;
        Ok(())
    })
}

/// The events of category `cat_index`.
fn category_events(cat_index: c_int) -> ToolResult<Vec<c_int>> {
    let category = &super::categories::CATEGORIES[index_argument(cat_index, super::categories::CATEGORIES.len())?];
    Ok(if category.name() == EVENT_CATEGORY { (0..EVENT_TYPES.len() as c_int).collect() } else { Vec::new() })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_get_num_events(cat_index: c_int, num_events: *mut c_int) -> c_int {
    call(|_| {
        let events = category_events(cat_index)?;
        // SAFETY: MPI_T's rules: a valid pointer (NULL is refused).
        *unsafe { required(num_events) }? = c_count(events.len());
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_get_events(cat_index: c_int, len: c_int, indices: *mut c_int) -> c_int {
    call(|_| {
        let events = category_events(cat_index)?;
        let room = usize::try_from(len).map_err(|_| MPI_T_ERR_INVALID)?;
        for (slot, &event) in events.iter().take(room).enumerate() {
            // SAFETY: MPI_T's rules: `indices` holds `len` ints.
            unsafe { *indices.add(slot) = event };
        }
        Ok(())
    })
}

/// Every registration of the tools, for [`super::Tools`].
pub(super) type Registrations = BTreeMap<u64, Registration>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_data_matches_the_layout_get_info_gives() {
        let (index, data) = data_of(EventKind::RailFailedOver { peer: 7, rail: 2 });
        assert_eq!(EVENT_TYPES[index].name, "braid_rail_failover");
        assert_eq!((u32::from_ne_bytes(data[..4].try_into().unwrap()), u32::from_ne_bytes(data[4..].try_into().unwrap())), (7, 2));
        let (index, data) = data_of(EventKind::UnexpectedQueueGrew { level: 4096 });
        assert_eq!(EVENT_TYPES[index].name, "braid_unexpected_queue_growth");
        assert_eq!(u64::from_ne_bytes(data), 4096);
        for event in &EVENT_TYPES {
            let end = event.elements.iter().map(|&(datatype, offset)| offset as usize + if datatype == MPI_UINT64_T { 8 } else { 4 }).max().unwrap();
            assert_eq!(end, event.size, "{}", event.name);
        }
    }
}
