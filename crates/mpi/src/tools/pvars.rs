//! MPI_T performance variables: the engine's traffic counters (braid_engine's counters.rs says
//! what each one counts), named for profilers. Per-peer arrays have one element per job rank,
//! per-transport arrays one per transport in the order `braid_transport_names` lists. Every
//! `braid_` variable is bound to no object; Open MPI's monitoring variables, under their own
//! names, follow Open MPI (monitoring.rs).

// The safety contract of the MPI_T_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int};

use braid_engine::{CounterValues, PeerTraffic, TransportTraffic};

use super::{c_count, call, index_argument, name_argument, put, put_string, required};
use crate::consts::*;

/// How a variable is read from the counters.
#[derive(Clone, Copy)]
pub(crate) enum Reading {
    /// One number per job rank.
    PerPeer(fn(&PeerTraffic) -> u64),
    /// One number per transport.
    PerTransport(fn(&TransportTraffic) -> u64),
    /// One number.
    Single(fn(&CounterValues) -> u64),
    /// The unexpected queue's high watermark, whose interval restarts at the queue's length.
    UnexpectedHighWatermark,
    /// A string (MPI_CHAR).
    Text(fn(&CounterValues) -> String),
    /// Per job rank, the transport that carries messages to it.
    PeerTransport,
    /// Per rank of the communicator a handle is bound to, since the monitoring's last reset
    /// (sampled per job rank; the session maps them).
    CommPeer(fn(&PeerTraffic) -> u64),
    /// The monitoring's flush file name (read from the monitoring state, not the counters).
    FlushFileName,
}

/// What a variable reads at one moment: numbers in the variable's unit (nanoseconds for the
/// timer), or a string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Sample {
    Numbers(Vec<u64>),
    Text(String),
}

impl Sample {
    /// Elements of the variable's type the sample takes (a string's NUL included).
    pub(crate) fn count(&self) -> usize {
        match self {
            Sample::Numbers(numbers) => numbers.len(),
            Sample::Text(text) => text.len() + 1,
        }
    }
}

/// One performance variable.
pub(crate) struct PerformanceVariable {
    pub(crate) name: &'static str,
    description: &'static str,
    pub(crate) class: c_int,
    verbosity: c_int,
    reading: Reading,
    /// The kind of object a handle is bound to (MPI_T_BIND_*).
    pub(crate) bind: c_int,
    /// Cannot be written or reset.
    pub(crate) readonly: bool,
    /// Always active: cannot be started or stopped.
    pub(crate) continuous: bool,
}

impl PerformanceVariable {
    pub(crate) fn datatype(&self) -> MPI_Datatype {
        match (self.reading, self.class) {
            (Reading::Text(_) | Reading::FlushFileName, _) => MPI_CHAR,
            (_, MPI_T_PVAR_CLASS_TIMER) => MPI_DOUBLE,
            _ => MPI_UNSIGNED_LONG_LONG,
        }
    }

    /// Whether this is the unexpected queue's high watermark.
    pub(crate) fn is_watermark(&self) -> bool {
        matches!(self.reading, Reading::UnexpectedHighWatermark)
    }

    /// Whether this is Open MPI's monitoring flush.
    pub(crate) fn is_flush(&self) -> bool {
        matches!(self.reading, Reading::FlushFileName)
    }

    pub(crate) fn sample(&self, values: &CounterValues) -> Sample {
        match self.reading {
            Reading::PerPeer(read) | Reading::CommPeer(read) => Sample::Numbers(values.peers.iter().map(read).collect()),
            Reading::PerTransport(read) => Sample::Numbers(values.transports.iter().map(read).collect()),
            Reading::Single(read) => Sample::Numbers(vec![read(values)]),
            Reading::UnexpectedHighWatermark => Sample::Numbers(vec![values.unexpected_high_watermark]),
            Reading::Text(read) => Sample::Text(read(values)),
            Reading::PeerTransport => Sample::Numbers(values.peer_transport.clone()),
            // Kept by the monitoring, which the session reads instead.
            Reading::FlushFileName => Sample::Text(String::new()),
        }
    }
}

/// A counter that sessions start and stop, and may write or reset.
const fn counter(name: &'static str, description: &'static str, verbosity: c_int, reading: Reading) -> PerformanceVariable {
    PerformanceVariable { name, description, class: MPI_T_PVAR_CLASS_COUNTER, verbosity, reading, bind: MPI_T_BIND_NO_OBJECT, readonly: false, continuous: false }
}

/// The longest flush file name, NUL included (a Linux path).
pub(crate) const FLUSH_NAME_MAX: usize = 4096;

/// One of Open MPI's per-peer monitoring variables: bound to a communicator, read-only.
const fn monitoring(name: &'static str, description: &'static str, read: fn(&PeerTraffic) -> u64) -> PerformanceVariable {
    PerformanceVariable {
        name,
        description,
        class: MPI_T_PVAR_CLASS_SIZE,
        verbosity: MPI_T_VERBOSITY_USER_DETAIL,
        reading: Reading::CommPeer(read),
        bind: MPI_T_BIND_MPI_COMM,
        readonly: true,
        continuous: false,
    }
}

/// The performance variables; a variable's index is its position.
pub(crate) static PVARS: [PerformanceVariable; 20] = [
    counter(
        "braid_messages_sent",
        "MPI messages this rank sent to each rank (element i: job rank i), point-to-point and collective alike, counted when the engine takes them",
        MPI_T_VERBOSITY_USER_BASIC,
        Reading::PerPeer(|peer| peer.messages_sent),
    ),
    counter("braid_bytes_sent", "bytes of the MPI messages this rank sent to each rank (element i: job rank i)", MPI_T_VERBOSITY_USER_BASIC, Reading::PerPeer(|peer| peer.bytes_sent)),
    counter(
        "braid_messages_received",
        "MPI messages that arrived from each rank (element i: job rank i), counted on arrival, whether or not their receive was posted yet",
        MPI_T_VERBOSITY_USER_BASIC,
        Reading::PerPeer(|peer| peer.messages_received),
    ),
    counter(
        "braid_bytes_received",
        "bytes of the MPI messages that arrived from each rank (element i: job rank i); a message longer than its receive buffer counts whole",
        MPI_T_VERBOSITY_USER_BASIC,
        Reading::PerPeer(|peer| peer.bytes_received),
    ),
    counter(
        "braid_transport_frames_sent",
        "frames this rank handed to each transport, protocol frames included (elements in the order of braid_transport_names)",
        MPI_T_VERBOSITY_TUNER_BASIC,
        Reading::PerTransport(|transport| transport.frames_sent),
    ),
    counter(
        "braid_transport_bytes_sent",
        "payload bytes this rank handed to each transport, plus the bytes it wrote directly into peers' memory (elements in the order of braid_transport_names)",
        MPI_T_VERBOSITY_TUNER_BASIC,
        Reading::PerTransport(|transport| transport.bytes_sent),
    ),
    counter(
        "braid_transport_frames_received",
        "frames each transport delivered to this rank, protocol frames included (elements in the order of braid_transport_names)",
        MPI_T_VERBOSITY_TUNER_BASIC,
        Reading::PerTransport(|transport| transport.frames_received),
    ),
    counter(
        "braid_transport_bytes_received",
        "payload bytes each transport delivered to this rank, plus the bytes it read directly from peers' memory in single-copy rendezvous (elements in the order of braid_transport_names)",
        MPI_T_VERBOSITY_TUNER_BASIC,
        Reading::PerTransport(|transport| transport.bytes_received),
    ),
    PerformanceVariable {
        name: "braid_transport_names",
        description: "the transports, comma-separated, in the order of the elements of the braid_transport_ arrays: self, shm (when used), then tcp:<interface> per network rail",
        class: MPI_T_PVAR_CLASS_GENERIC,
        verbosity: MPI_T_VERBOSITY_TUNER_BASIC,
        reading: Reading::Text(|values| values.transport_names.join(",")),
        bind: MPI_T_BIND_NO_OBJECT,
        readonly: true,
        continuous: true,
    },
    PerformanceVariable {
        name: "braid_peer_transport",
        description: "the transport that carries messages to each rank (element i: job rank i), as an index into braid_transport_names; for a rank reached over the network rails, the first rail (the rails share its messages)",
        class: MPI_T_PVAR_CLASS_GENERIC,
        verbosity: MPI_T_VERBOSITY_TUNER_BASIC,
        reading: Reading::PeerTransport,
        bind: MPI_T_BIND_NO_OBJECT,
        readonly: true,
        continuous: true,
    },
    counter("braid_eager_sends", "messages this rank sent eagerly (copied out at once)", MPI_T_VERBOSITY_TUNER_BASIC, Reading::Single(|values| values.eager_sends)),
    counter(
        "braid_rendezvous_sends",
        "messages this rank sent by rendezvous (announced, then copied once their receive matched)",
        MPI_T_VERBOSITY_TUNER_BASIC,
        Reading::Single(|values| values.rendezvous_sends),
    ),
    PerformanceVariable {
        name: "braid_unexpected_messages",
        description: "messages that arrived before a matching receive was posted (kept in the unexpected queue), since the handle was allocated",
        class: MPI_T_PVAR_CLASS_COUNTER,
        verbosity: MPI_T_VERBOSITY_USER_DETAIL,
        reading: Reading::Single(|values| values.unexpected_total),
        bind: MPI_T_BIND_NO_OBJECT,
        readonly: true,
        continuous: true,
    },
    PerformanceVariable {
        name: "braid_unexpected_queue_length",
        description: "messages waiting in the unexpected queue for their receive",
        class: MPI_T_PVAR_CLASS_LEVEL,
        verbosity: MPI_T_VERBOSITY_USER_DETAIL,
        reading: Reading::Single(|values| values.unexpected_level),
        bind: MPI_T_BIND_NO_OBJECT,
        readonly: true,
        continuous: true,
    },
    PerformanceVariable {
        name: "braid_unexpected_queue_high_watermark",
        description: "most messages waiting in the unexpected queue at once since the handle was allocated or reset",
        class: MPI_T_PVAR_CLASS_HIGHWATERMARK,
        verbosity: MPI_T_VERBOSITY_USER_DETAIL,
        reading: Reading::UnexpectedHighWatermark,
        bind: MPI_T_BIND_NO_OBJECT,
        readonly: false,
        continuous: true,
    },
    PerformanceVariable {
        name: "braid_wait_blocked_time",
        description: "seconds waiting ranks spent yielding their core or asleep on the doorbell rather than polling",
        class: MPI_T_PVAR_CLASS_TIMER,
        verbosity: MPI_T_VERBOSITY_TUNER_DETAIL,
        reading: Reading::Single(|values| values.blocked_ns),
        bind: MPI_T_BIND_NO_OBJECT,
        readonly: false,
        continuous: false,
    },
    counter("braid_wait_sleeps", "sleeps of waiting ranks on the shared-memory doorbell", MPI_T_VERBOSITY_TUNER_DETAIL, Reading::Single(|values| values.sleeps)),
    monitoring(
        "pml_monitoring_messages_count",
        "Open MPI's name: MPI messages this rank sent to each rank of the communicator the handle is bound to, collectives' own included, since the monitoring was last reset (by pml_monitoring_flush)",
        |peer| peer.messages_sent,
    ),
    monitoring(
        "pml_monitoring_messages_size",
        "Open MPI's name: bytes of the MPI messages this rank sent to each rank of the communicator the handle is bound to, since the monitoring was last reset",
        |peer| peer.bytes_sent,
    ),
    PerformanceVariable {
        name: "pml_monitoring_flush",
        description: "Open MPI's name: write a file name NAME to the handle; stopping it writes NAME.RANK.prof (Open MPI's monitoring lines, one per peer) with what this rank sent since the last reset, then resets; an empty name writes nothing",
        class: MPI_T_PVAR_CLASS_GENERIC,
        verbosity: MPI_T_VERBOSITY_USER_BASIC,
        reading: Reading::FlushFileName,
        bind: MPI_T_BIND_NO_OBJECT,
        readonly: false,
        continuous: false,
    },
];

#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_get_num(num_pvar: *mut c_int) -> c_int {
    call(|_| {
        // SAFETY: MPI_T's rules: a valid pointer to an int (NULL is refused).
        *unsafe { required(num_pvar) }? = c_count(PVARS.len());
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_get_info(
    pvar_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    verbosity: *mut c_int,
    var_class: *mut c_int,
    datatype: *mut MPI_Datatype,
    enumtype: *mut MPI_T_enum,
    desc: *mut c_char,
    desc_len: *mut c_int,
    bind: *mut c_int,
    readonly: *mut c_int,
    continuous: *mut c_int,
    atomic: *mut c_int,
) -> c_int {
    call(|_| {
        let variable = &PVARS[index_argument(pvar_index, PVARS.len())?];
        // SAFETY: MPI_T's rules: each out-argument is NULL or valid; a string buffer holds
        // as many bytes as its length argument says.
        unsafe {
            put_string(variable.name, name, name_len);
            put(verbosity, variable.verbosity);
            put(var_class, variable.class);
            put(datatype, variable.datatype());
            put(enumtype, MPI_T_ENUM_NULL);
            put_string(variable.description, desc, desc_len);
            put(bind, variable.bind);
            put(readonly, c_int::from(variable.readonly));
            put(continuous, c_int::from(variable.continuous));
            // MPI_T runs one call at a time and the engine is idle meanwhile: a read and reset
            // is always atomic.
            put(atomic, 1);
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_get_index(name: *const c_char, var_class: c_int, pvar_index: *mut c_int) -> c_int {
    call(|_| {
        // SAFETY: MPI_T's rules: a NUL-terminated name and a valid pointer to an int.
        let (name, pvar_index) = unsafe { (name_argument(name)?, required(pvar_index)?) };
        let index = PVARS.iter().position(|variable| variable.name == name && variable.class == var_class).ok_or(MPI_T_ERR_INVALID_NAME)?;
        *pvar_index = c_count(index);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use braid_engine::CounterValues;

    #[test]
    fn names_are_unique_and_types_follow_the_class() {
        let mut names: Vec<&str> = PVARS.iter().map(|variable| variable.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), PVARS.len());
        for variable in &PVARS {
            let open_mpis = variable.name.starts_with("pml_monitoring_");
            assert!(variable.name.starts_with("braid_") || open_mpis, "{}", variable.name);
            assert_eq!(variable.bind == MPI_T_BIND_MPI_COMM, variable.class == MPI_T_PVAR_CLASS_SIZE, "{}", variable.name);
            let expected = match variable.class {
                MPI_T_PVAR_CLASS_TIMER => MPI_DOUBLE,
                MPI_T_PVAR_CLASS_GENERIC if matches!(variable.reading, Reading::Text(_) | Reading::FlushFileName) => MPI_CHAR,
                _ => MPI_UNSIGNED_LONG_LONG,
            };
            assert_eq!(variable.datatype(), expected, "{}", variable.name);
            // Levels and watermarks are always active; levels cannot be written.
            if matches!(variable.class, MPI_T_PVAR_CLASS_LEVEL | MPI_T_PVAR_CLASS_HIGHWATERMARK) {
                assert!(variable.continuous, "{}", variable.name);
            }
            if variable.class == MPI_T_PVAR_CLASS_LEVEL {
                assert!(variable.readonly, "{}", variable.name);
            }
        }
    }

    #[test]
    fn samples_have_one_element_per_peer_or_transport() {
        let values = CounterValues {
            peers: vec![PeerTraffic { messages_sent: 3, ..PeerTraffic::default() }, PeerTraffic { bytes_received: 9, ..PeerTraffic::default() }],
            transports: vec![TransportTraffic::default(); 3],
            transport_names: vec!["self".into(), "shm".into(), "tcp:eth1".into()],
            peer_transport: vec![0, 2],
            unexpected_high_watermark: 4,
            blocked_ns: 1500,
            ..CounterValues::default()
        };
        let sample = |name: &str| PVARS.iter().find(|variable| variable.name == name).unwrap().sample(&values);
        assert_eq!(sample("braid_messages_sent"), Sample::Numbers(vec![3, 0]));
        assert_eq!(sample("braid_bytes_received"), Sample::Numbers(vec![0, 9]));
        assert_eq!(sample("braid_transport_frames_sent").count(), 3);
        assert_eq!(sample("braid_transport_names"), Sample::Text("self,shm,tcp:eth1".into()));
        assert_eq!(sample("braid_transport_names").count(), 18);
        assert_eq!(sample("braid_peer_transport"), Sample::Numbers(vec![0, 2]));
        assert_eq!(sample("braid_unexpected_queue_high_watermark"), Sample::Numbers(vec![4]));
        assert_eq!(sample("braid_wait_blocked_time"), Sample::Numbers(vec![1500]));
        assert_eq!(PVARS.iter().find(|variable| variable.name == "braid_messages_sent").unwrap().sample(&CounterValues::default()).count(), 0);
    }
}
