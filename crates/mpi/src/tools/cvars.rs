//! MPI_T control variables: every `BRAID_` setting of `braid_config::SETTINGS`, in that order,
//! named after its environment variable, described by its documented meaning, valued as the
//! process's settings have it. Settings are read once at MPI_Init, so most are read-only
//! (MPI_T_SCOPE_READONLY; writing them is MPI_T_ERR_CVAR_SET_NEVER). The collective thresholds
//! live in the MPI layer and are read at every collective call: they can be written while MPI
//! runs (MPI_T_SCOPE_ALL_EQ: every rank must set the same value before the next collective).

// The safety contract of the MPI_T_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, c_void};

use braid_config::{Config, Rails, Setting, SETTINGS};

use super::enums::{self, handle_of};
use super::{c_count, call, index_argument, name_argument, put, put_string, required, settings, with_runtime, ToolResult, Tools};
use crate::coll::CollTuning;
use crate::consts::*;

/// A control variable's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// MPI_UNSIGNED.
    Unsigned,
    /// A size or count: MPI_UNSIGNED_LONG_LONG.
    Size,
    /// MPI_DOUBLE.
    Double,
    /// A string: MPI_CHAR, NUL-terminated.
    Text,
    /// One of the items of an enumeration of [`enums::ENUMS`]: MPI_INT.
    Choice(usize),
}

impl Kind {
    pub(crate) fn datatype(self) -> MPI_Datatype {
        match self {
            Kind::Unsigned => MPI_UNSIGNED,
            Kind::Size => MPI_UNSIGNED_LONG_LONG,
            Kind::Double => MPI_DOUBLE,
            Kind::Text => MPI_CHAR,
            Kind::Choice(_) => MPI_INT,
        }
    }

    fn enumeration(self) -> MPI_T_enum {
        match self {
            Kind::Choice(enumeration) => handle_of(enumeration),
            _ => MPI_T_ENUM_NULL,
        }
    }
}

/// A control variable's value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Unsigned(u32),
    Size(u64),
    Double(f64),
    Text(String),
    Choice(c_int),
}

impl Value {
    /// Elements of the variable's type the value takes (a string's NUL included).
    fn count(&self) -> usize {
        match self {
            Value::Text(text) => text.len() + 1,
            _ => 1,
        }
    }
}

/// One control variable.
pub(crate) struct ControlVariable {
    /// The setting's environment variable.
    pub(crate) name: &'static str,
    kind: Kind,
    verbosity: c_int,
    read: fn(&Config, &CollTuning) -> Value,
    /// Sets the value in a running process; `None`: fixed at MPI_Init.
    write: Option<fn(&mut CollTuning, usize)>,
}

fn size(value: usize) -> Value {
    Value::Size(value as u64)
}

fn rails_text(rails: &Rails) -> String {
    match rails {
        Rails::Auto => "auto".to_string(),
        Rails::None => "none".to_string(),
        Rails::Named(names) => names.join(","),
    }
}

fn offload_cost_text(cost_ns: Option<u64>) -> String {
    match cost_ns {
        Some(nanoseconds) => format!("{}", nanoseconds as f64 / 1000.0),
        None => "measured".to_string(),
    }
}

const fn fixed(name: &'static str, kind: Kind, verbosity: c_int, read: fn(&Config, &CollTuning) -> Value) -> ControlVariable {
    ControlVariable { name, kind, verbosity, read, write: None }
}

const fn collective(name: &'static str, read: fn(&Config, &CollTuning) -> Value, write: fn(&mut CollTuning, usize)) -> ControlVariable {
    ControlVariable { name, kind: Kind::Size, verbosity: MPI_T_VERBOSITY_TUNER_BASIC, read, write: Some(write) }
}

/// The control variables, in the order of `SETTINGS` (the index of a variable is its setting's).
pub(crate) static CVARS: [ControlVariable; 54] = [
    fixed("BRAID_WAIT", Kind::Choice(enums::WAIT), MPI_T_VERBOSITY_USER_BASIC, |c, _| Value::Choice(enums::wait_value(c.wait))),
    fixed("BRAID_SPIN_COUNT", Kind::Unsigned, MPI_T_VERBOSITY_TUNER_BASIC, |c, _| Value::Unsigned(c.spin_count)),
    fixed("BRAID_YIELD_US", Kind::Unsigned, MPI_T_VERBOSITY_TUNER_DETAIL, |c, _| Value::Unsigned(c.yield_us)),
    fixed("BRAID_RAIL_SPIN_US", Kind::Unsigned, MPI_T_VERBOSITY_TUNER_DETAIL, |c, _| Value::Unsigned(c.rail_spin_us)),
    fixed("BRAID_RAIL_REPLY_SPIN_US", Kind::Unsigned, MPI_T_VERBOSITY_TUNER_DETAIL, |c, _| Value::Unsigned(c.rail_reply_spin_us)),
    fixed("BRAID_BLOCK_TIMEOUT_MS", Kind::Unsigned, MPI_T_VERBOSITY_TUNER_DETAIL, |c, _| Value::Unsigned(c.block_timeout_ms)),
    fixed("BRAID_PEER_CHECK_MS", Kind::Unsigned, MPI_T_VERBOSITY_TUNER_DETAIL, |c, _| Value::Unsigned(c.peer_check_ms)),
    fixed("BRAID_SHM_RING_CELLS", Kind::Size, MPI_T_VERBOSITY_TUNER_DETAIL, |c, _| size(c.shm_ring_cells)),
    fixed("BRAID_SHM_INLINE_MAX", Kind::Size, MPI_T_VERBOSITY_TUNER_DETAIL, |c, _| size(c.shm_inline_max)),
    fixed("BRAID_SHM_POOL_BUFFERS", Kind::Size, MPI_T_VERBOSITY_TUNER_DETAIL, |c, _| size(c.shm_pool_buffers)),
    fixed("BRAID_SHM_POOL_BUFFER_SIZE", Kind::Size, MPI_T_VERBOSITY_TUNER_DETAIL, |c, _| size(c.shm_pool_buffer_size)),
    fixed("BRAID_SHM_HANDOVER_MIN", Kind::Size, MPI_T_VERBOSITY_TUNER_ALL, |c, _| size(c.shm_handover_min)),
    fixed("BRAID_SHM_HANDOVER_CHUNK", Kind::Size, MPI_T_VERBOSITY_TUNER_ALL, |c, _| size(c.shm_handover_chunk)),
    fixed("BRAID_EAGER_MAX", Kind::Size, MPI_T_VERBOSITY_TUNER_BASIC, |c, _| size(c.eager_max)),
    fixed("BRAID_CMA", Kind::Choice(enums::CMA), MPI_T_VERBOSITY_USER_DETAIL, |c, _| Value::Choice(enums::cma_value(c.cma))),
    fixed("BRAID_WIN_CREATE_SHARE", Kind::Choice(enums::SWITCH), MPI_T_VERBOSITY_USER_DETAIL, |c, _| Value::Choice(enums::switch_value(c.win_create_share))),
    fixed("BRAID_COPY_ASSIST", Kind::Choice(enums::SWITCH), MPI_T_VERBOSITY_USER_DETAIL, |c, _| Value::Choice(enums::switch_value(c.copy_assist))),
    fixed("BRAID_COPY_ASSIST_MIN", Kind::Size, MPI_T_VERBOSITY_TUNER_DETAIL, |c, _| size(c.copy_assist_min)),
    fixed("BRAID_COPY_ASSIST_SPIN_US", Kind::Size, MPI_T_VERBOSITY_TUNER_ALL, |c, _| size(c.copy_assist_spin_us as usize)),
    fixed("BRAID_CMA_CHUNK", Kind::Size, MPI_T_VERBOSITY_TUNER_DETAIL, |c, _| size(c.cma_chunk)),
    fixed("BRAID_CMA_SHARE_MIN", Kind::Size, MPI_T_VERBOSITY_TUNER_ALL, |c, _| size(c.cma_share_min)),
    fixed("BRAID_CMA_SHARE_MAX", Kind::Size, MPI_T_VERBOSITY_TUNER_ALL, |c, _| size(c.cma_share_max)),
    fixed("BRAID_SHM_PIPELINE_MAX", Kind::Size, MPI_T_VERBOSITY_TUNER_DETAIL, |c, _| size(c.shm_pipeline_max)),
    collective("BRAID_COLL_BCAST_SPLIT_MIN", |_, t| size(t.bcast_split_min), |t, value| t.bcast_split_min = value),
    collective("BRAID_COLL_BCAST_FLAT_MAX", |_, t| size(t.bcast_flat_max), |t, value| t.bcast_flat_max = value),
    collective("BRAID_COLL_SHM_SLOT", |_, t| size(t.shm_slot), |t, value| t.shm_slot = value),
    collective("BRAID_COLL_SHM_MAX", |_, t| size(t.shm_max), |t, value| t.shm_max = value),
    collective("BRAID_COLL_PAIR_EXCHANGE_MAX", |_, t| size(t.pair_exchange_max), |t, value| t.pair_exchange_max = value),
    collective("BRAID_COLL_ALLREDUCE_SPLIT_MIN", |_, t| size(t.allreduce_split_min), |t, value| t.allreduce_split_min = value),
    collective("BRAID_COLL_ALLREDUCE_EXCHANGE_MAX", |_, t| size(t.allreduce_exchange_max), |t, value| t.allreduce_exchange_max = value),
    collective("BRAID_COLL_ALLTOALL_BATCH", |_, t| size(t.alltoall_batch), |t, value| t.alltoall_batch = value.max(1)),
    fixed("BRAID_COLL_HIERARCHY", Kind::Choice(enums::HIERARCHY), MPI_T_VERBOSITY_TUNER_BASIC, |_, t| Value::Choice(enums::hierarchy_value(t.hierarchy))),
    fixed("BRAID_PROGRESS_THREAD", Kind::Choice(enums::SWITCH), MPI_T_VERBOSITY_TUNER_BASIC, |c, _| Value::Choice(enums::switch_value(c.progress_thread))),
    fixed("BRAID_SHM", Kind::Choice(enums::SWITCH), MPI_T_VERBOSITY_USER_BASIC, |c, _| Value::Choice(enums::switch_value(c.shm))),
    fixed("BRAID_RAILS", Kind::Text, MPI_T_VERBOSITY_USER_BASIC, |c, _| Value::Text(rails_text(&c.rails))),
    fixed("BRAID_STRATEGY", Kind::Choice(enums::STRATEGY), MPI_T_VERBOSITY_TUNER_BASIC, |c, _| Value::Choice(enums::strategy_value(c.strategy))),
    fixed("BRAID_PROFILE_DIR", Kind::Text, MPI_T_VERBOSITY_USER_DETAIL, |c, _| Value::Text(c.profile_dir.clone())),
    fixed("BRAID_SAMPLE_MS", Kind::Unsigned, MPI_T_VERBOSITY_TUNER_DETAIL, |c, _| Value::Unsigned(c.sample_ms)),
    fixed("BRAID_SPLIT_MIN", Kind::Size, MPI_T_VERBOSITY_TUNER_DETAIL, |c, _| size(c.split_min)),
    fixed("BRAID_RAIL_TIMEOUT_MS", Kind::Size, MPI_T_VERBOSITY_TUNER_DETAIL, |c, _| size(c.rail_timeout_ms)),
    fixed("BRAID_RAIL_KEEPALIVE_S", Kind::Unsigned, MPI_T_VERBOSITY_TUNER_DETAIL, |c, _| Value::Unsigned(c.rail_keepalive_s)),
    fixed("BRAID_RAIL_CONGESTION", Kind::Text, MPI_T_VERBOSITY_TUNER_DETAIL, |c, _| Value::Text(c.rail_congestion.clone().unwrap_or_else(|| "system".to_string()))),
    fixed("BRAID_RAIL_DELAY_FRESH_MS", Kind::Unsigned, MPI_T_VERBOSITY_TUNER_DETAIL, |c, _| Value::Unsigned(c.rail_delay_fresh_ms)),
    fixed("BRAID_RAIL_RECEIVE_BLOCK", Kind::Size, MPI_T_VERBOSITY_TUNER_DETAIL, |c, _| size(c.rail_receive_block)),
    fixed("BRAID_RATE_SMOOTHING", Kind::Double, MPI_T_VERBOSITY_TUNER_ALL, |c, _| Value::Double(c.rate_smoothing)),
    fixed("BRAID_RAIL_QUEUE_US", Kind::Size, MPI_T_VERBOSITY_TUNER_ALL, |c, _| size(c.rail_queue_us)),
    fixed("BRAID_RAIL_REFILL", Kind::Double, MPI_T_VERBOSITY_TUNER_ALL, |c, _| Value::Double(c.rail_refill)),
    fixed("BRAID_RAIL_HEDGE", Kind::Choice(enums::SWITCH), MPI_T_VERBOSITY_TUNER_DETAIL, |c, _| Value::Choice(enums::switch_value(c.rail_hedge))),
    fixed("BRAID_OFFLOAD", Kind::Choice(enums::OFFLOAD), MPI_T_VERBOSITY_TUNER_DETAIL, |c, _| Value::Choice(enums::offload_value(c.offload))),
    fixed("BRAID_OFFLOAD_COST_US", Kind::Text, MPI_T_VERBOSITY_TUNER_ALL, |c, _| Value::Text(offload_cost_text(c.offload_cost_ns))),
    fixed("BRAID_UNFINALIZED_WAIT_S", Kind::Unsigned, MPI_T_VERBOSITY_USER_DETAIL, |c, _| Value::Unsigned(c.unfinalized_wait_s)),
    fixed("BRAID_CONNECT_TIMEOUT_S", Kind::Unsigned, MPI_T_VERBOSITY_USER_DETAIL, |c, _| Value::Unsigned(c.connect_timeout_s)),
    fixed("BRAID_UNEXPECTED_MARK", Kind::Size, MPI_T_VERBOSITY_TUNER_DETAIL, |c, _| size(c.unexpected_mark)),
    fixed("BRAID_DEBUG", Kind::Choice(enums::SWITCH), MPI_T_VERBOSITY_MPIDEV_BASIC, |c, _| Value::Choice(enums::switch_value(c.debug))),
];

impl ControlVariable {
    fn setting(&self) -> &'static Setting {
        // Every variable is a setting (the tests check it).
        SETTINGS.iter().find(|setting| setting.variable == self.name).expect("every control variable is a setting")
    }

    fn description(&self) -> String {
        let setting = self.setting();
        format!("{} (default: {})", setting.meaning, setting.default)
    }

    fn scope(&self) -> c_int {
        match self.write {
            Some(_) => MPI_T_SCOPE_ALL_EQ,
            None => MPI_T_SCOPE_READONLY,
        }
    }

    /// The value in effect.
    fn value(&self) -> ToolResult<Value> {
        let (config, tuning) = settings()?;
        Ok((self.read)(&config, &tuning))
    }
}

/// The variable index of a control-variable handle, and the elements it was allocated for.
fn handle_target(tools: &Tools, handle: MPI_T_cvar_handle) -> ToolResult<(usize, usize)> {
    tools.cvar_handles.get(&(handle as u64)).copied().ok_or(MPI_T_ERR_INVALID_HANDLE)
}

/// Writes `value` into a C buffer of `count` elements of its type.
///
/// # Safety
/// `buffer` must be valid for writes of `count` elements of the value's type.
unsafe fn store(value: &Value, buffer: *mut c_void, count: usize) {
    // SAFETY: the caller guarantees room for `count` (at least 1) elements of the value's type;
    // a string is cut to `count` bytes, its NUL included.
    unsafe {
        match value {
            Value::Unsigned(number) => buffer.cast::<u32>().write_unaligned(*number),
            Value::Size(number) => buffer.cast::<u64>().write_unaligned(*number),
            Value::Double(number) => buffer.cast::<f64>().write_unaligned(*number),
            Value::Choice(number) => buffer.cast::<c_int>().write_unaligned(*number),
            Value::Text(text) => {
                crate::error::write_c_string(text, buffer.cast::<c_char>(), count);
            }
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_cvar_get_num(num_cvar: *mut c_int) -> c_int {
    call(|_| {
        // SAFETY: MPI_T's rules: a valid pointer to an int (NULL is refused).
        *unsafe { required(num_cvar) }? = c_count(CVARS.len());
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_cvar_get_info(
    cvar_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    verbosity: *mut c_int,
    datatype: *mut MPI_Datatype,
    enumtype: *mut MPI_T_enum,
    desc: *mut c_char,
    desc_len: *mut c_int,
    bind: *mut c_int,
    scope: *mut c_int,
) -> c_int {
    call(|_| {
        let variable = &CVARS[index_argument(cvar_index, CVARS.len())?];
        // SAFETY: MPI_T's rules: each out-argument is NULL or valid; a string buffer holds
        // as many bytes as its length argument says.
        unsafe {
            put_string(variable.name, name, name_len);
            put(verbosity, variable.verbosity);
            put(datatype, variable.kind.datatype());
            put(enumtype, variable.kind.enumeration());
            put_string(&variable.description(), desc, desc_len);
            put(bind, MPI_T_BIND_NO_OBJECT);
            put(scope, variable.scope());
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_cvar_get_index(name: *const c_char, cvar_index: *mut c_int) -> c_int {
    call(|_| {
        // SAFETY: MPI_T's rules: a NUL-terminated name and a valid pointer to an int.
        let (name, cvar_index) = unsafe { (name_argument(name)?, required(cvar_index)?) };
        let index = CVARS.iter().position(|variable| variable.name == name).ok_or(MPI_T_ERR_INVALID_NAME)?;
        *cvar_index = c_count(index);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_cvar_handle_alloc(cvar_index: c_int, obj_handle: *mut c_void, handle: *mut MPI_T_cvar_handle, count: *mut c_int) -> c_int {
    // Every variable is bound to no object: `obj_handle` is ignored, as MPI says.
    let _ = obj_handle;
    call(|tools| {
        let index = index_argument(cvar_index, CVARS.len())?;
        // SAFETY: MPI_T's rules: valid pointers to a handle and an int.
        let (handle, count) = unsafe { (required(handle)?, required(count)?) };
        let elements = CVARS[index].value()?.count();
        let id = tools.new_id()?;
        tools.cvar_handles.insert(id, (index, elements));
        *handle = id as MPI_T_cvar_handle;
        *count = c_count(elements);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_cvar_handle_free(handle: *mut MPI_T_cvar_handle) -> c_int {
    call(|tools| {
        // SAFETY: MPI_T's rules: a valid pointer to a handle.
        let handle = unsafe { required(handle)? };
        tools.cvar_handles.remove(&(*handle as u64)).ok_or(MPI_T_ERR_INVALID_HANDLE)?;
        *handle = MPI_T_CVAR_HANDLE_NULL;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_cvar_read(handle: MPI_T_cvar_handle, buf: *mut c_void) -> c_int {
    call(|tools| {
        let (index, elements) = handle_target(tools, handle)?;
        if buf.is_null() {
            return Err(MPI_T_ERR_INVALID);
        }
        let value = CVARS[index].value()?;
        // SAFETY: MPI_T's rules: `buf` holds the `elements` elements the allocation reported.
        unsafe { store(&value, buf, elements) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_cvar_write(handle: MPI_T_cvar_handle, buf: *const c_void) -> c_int {
    call(|tools| {
        let (index, _) = handle_target(tools, handle)?;
        let write = CVARS[index].write.ok_or(MPI_T_ERR_CVAR_SET_NEVER)?;
        if buf.is_null() {
            return Err(MPI_T_ERR_INVALID);
        }
        // SAFETY: MPI_T's rules: `buf` holds one element of the variable's type (unsigned long long).
        let wanted = unsafe { buf.cast::<u64>().read_unaligned() };
        let wanted = usize::try_from(wanted).map_err(|_| MPI_T_ERR_INVALID)?;
        with_runtime(|rt| write(&mut rt.tuning, wanted))?.ok_or(MPI_T_ERR_CVAR_SET_NOT_NOW)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use braid_config::{CmaMode, StrategyKind, WaitMode};

    fn kind_matches(value: &Value, kind: Kind) -> bool {
        matches!(
            (value, kind),
            (Value::Unsigned(_), Kind::Unsigned) | (Value::Size(_), Kind::Size) | (Value::Double(_), Kind::Double) | (Value::Text(_), Kind::Text) | (Value::Choice(_), Kind::Choice(_))
        )
    }

    #[test]
    fn every_setting_is_a_control_variable_in_the_same_order() {
        let names: Vec<&str> = CVARS.iter().map(|variable| variable.name).collect();
        let settings: Vec<&str> = SETTINGS.iter().map(|setting| setting.variable).collect();
        assert_eq!(names, settings);
    }

    #[test]
    fn values_have_the_declared_type_and_the_documented_defaults() {
        let (config, tuning) = (Config::default(), CollTuning::default());
        for variable in &CVARS {
            let value = (variable.read)(&config, &tuning);
            assert!(kind_matches(&value, variable.kind), "{} reads as {value:?}", variable.name);
            let default = variable.setting().default;
            let shown = match &value {
                Value::Unsigned(number) => number.to_string(),
                Value::Size(number) => number.to_string(),
                Value::Double(number) => number.to_string(),
                Value::Text(text) => text.clone(),
                Value::Choice(item) => {
                    let Kind::Choice(enumeration) = variable.kind else { unreachable!() };
                    let name = enums::ENUMS[enumeration].items[*item as usize];
                    // BRAID_DEBUG documents its default as 0, the switch's "off".
                    if default == "0" {
                        "0".to_string()
                    } else {
                        name.to_string()
                    }
                }
            };
            assert_eq!(shown, default, "{}", variable.name);
        }
    }

    #[test]
    fn values_follow_the_configuration() {
        let config = Config {
            wait: WaitMode::Poll,
            eager_max: 4096,
            cma: CmaMode::Off,
            rails: Rails::Named(vec!["eth1".into(), "eth2".into()]),
            strategy: StrategyKind::Iso,
            offload_cost_ns: Some(3500),
            shm: false,
            ..Config::default()
        };
        let tuning = CollTuning { allreduce_split_min: 77, ..CollTuning::default() };
        let value = |name: &str| (CVARS.iter().find(|variable| variable.name == name).unwrap().read)(&config, &tuning);
        assert_eq!(value("BRAID_WAIT"), Value::Choice(1));
        assert_eq!(value("BRAID_EAGER_MAX"), Value::Size(4096));
        assert_eq!(value("BRAID_CMA"), Value::Choice(1));
        assert_eq!(value("BRAID_RAILS"), Value::Text("eth1,eth2".into()));
        assert_eq!(value("BRAID_STRATEGY"), Value::Choice(2));
        assert_eq!(value("BRAID_OFFLOAD_COST_US"), Value::Text("3.5".into()));
        assert_eq!(value("BRAID_SHM"), Value::Choice(0));
        assert_eq!(value("BRAID_COLL_ALLREDUCE_SPLIT_MIN"), Value::Size(77));
    }

    #[test]
    fn only_the_collective_thresholds_can_be_written() {
        let writable: Vec<&str> = CVARS.iter().filter(|variable| variable.write.is_some()).map(|variable| variable.name).collect();
        assert_eq!(
            writable,
            [
                "BRAID_COLL_BCAST_SPLIT_MIN",
                "BRAID_COLL_BCAST_FLAT_MAX",
                "BRAID_COLL_SHM_SLOT",
                "BRAID_COLL_SHM_MAX",
                "BRAID_COLL_PAIR_EXCHANGE_MAX",
                "BRAID_COLL_ALLREDUCE_SPLIT_MIN",
                "BRAID_COLL_ALLREDUCE_EXCHANGE_MAX",
                "BRAID_COLL_ALLTOALL_BATCH"
            ]
        );
        let mut tuning = CollTuning::default();
        for variable in CVARS.iter().filter(|variable| variable.write.is_some()) {
            (variable.write.unwrap())(&mut tuning, 12345);
            assert_eq!((variable.read)(&Config::default(), &tuning), Value::Size(12345), "{}", variable.name);
            assert_eq!(variable.scope(), MPI_T_SCOPE_ALL_EQ);
        }
        assert_eq!(CVARS[0].scope(), MPI_T_SCOPE_READONLY);
    }

    #[test]
    fn values_are_stored_as_their_c_types() {
        let mut word = [0u8; 8];
        // SAFETY: 8 writable bytes hold any of the numeric types.
        unsafe { store(&Value::Size(u64::MAX - 1), word.as_mut_ptr().cast(), 1) };
        assert_eq!(u64::from_ne_bytes(word), u64::MAX - 1);
        // SAFETY: as above.
        unsafe { store(&Value::Double(0.25), word.as_mut_ptr().cast(), 1) };
        assert_eq!(f64::from_ne_bytes(word), 0.25);
        let mut text = [0x55u8; 5];
        // SAFETY: 5 writable bytes; the string is cut to fit.
        unsafe { store(&Value::Text("eth1,eth2".into()), text.as_mut_ptr().cast(), text.len()) };
        assert_eq!(&text, b"eth1\0");
        assert_eq!(Value::Text("auto".into()).count(), 5);
    }
}
