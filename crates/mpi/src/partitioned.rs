//! Partitioned communication (MPI 4.0 §4): a persistent send whose buffer is cut into partitions
//! that the program marks ready one by one (from any thread), and a persistent receive that can
//! ask whether each of its partitions has arrived. Every partition travels as soon as it is ready
//! (see `channel`), so a receiver consumes the first partitions while the last are produced.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

mod channel;
mod matcher;
mod wire;

use std::any::Any;
use std::cell::RefCell;
use std::ffi::{c_int, c_void};
use std::rc::Rc;

pub use channel::Registry;
use channel::{Buffer, Receiving, RoundAgent, Sending};

use crate::coll::drive::Outcome;
use crate::comm::TAG_UB;
use crate::consts::*;
use crate::error::{error, finish, MpiResult};
use crate::p2p::{check_buffer, check_peer, describe_datatype};
use crate::request::{Pending, Persistent};
use crate::runtime::{self, engine_error, Runtime};

/// What MPI_Pready and MPI_Parrived reach through a partitioned request.
enum Channel {
    Send(Rc<RefCell<Sending>>),
    Receive(Rc<RefCell<Receiving>>),
    /// MPI_PROC_NULL as the peer: every round completes at once.
    Null {
        partitions: usize,
    },
}

impl Channel {
    fn partitions(&self) -> usize {
        match self {
            Channel::Send(sending) => sending.borrow().partitions(),
            Channel::Receive(receiving) => receiving.borrow().partitions(),
            Channel::Null { partitions } => *partitions,
        }
    }

    /// MPI_Start: begins a round, advanced by the engine's progress from then on.
    fn start(&self, rt: &mut Runtime, comm: MPI_Comm) -> MpiResult<Rc<Outcome>> {
        let (outcome, agent) = match self {
            Channel::Send(sending) => (sending.borrow_mut().start(), RoundAgent::Send(sending.clone())),
            Channel::Receive(receiving) => {
                let outcome = receiving.borrow_mut().start(&mut rt.engine).map_err(|e| engine_error(comm, e))?;
                (outcome, RoundAgent::Receive(receiving.clone()))
            }
            Channel::Null { .. } => {
                let outcome = Rc::new(Outcome::default());
                outcome.finish(Ok(()));
                return Ok(outcome);
            }
        };
        rt.engine.attach_agent(Box::new(agent));
        Ok(outcome)
    }
}

/// The arguments both MPI_Psend_init and MPI_Precv_init check.
struct Arguments {
    buf: *mut c_void,
    partitions: c_int,
    count: MPI_Count,
    datatype: MPI_Datatype,
    peer: c_int,
    tag: c_int,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
}

/// Checks `args` and makes the request around the channel `open` makes from the checked buffer
/// and the peer's job rank, the collective context and the tag.
fn initialize(args: Arguments, open: impl FnOnce(&mut Runtime, Buffer, u32, u32) -> MpiResult<Channel>) -> MpiResult<()> {
    let comm = args.comm;
    runtime::with(|rt| {
        if args.request.is_null() {
            return Err(error(comm, MPI_ERR_ARG, "request must not be NULL"));
        }
        let shared = rt.comms.get(comm)?.shared.clone();
        let partitions = usize::try_from(args.partitions).map_err(|_| error(comm, MPI_ERR_ARG, format!("partitions must not be negative (got {})", args.partitions)))?;
        let count = usize::try_from(args.count).map_err(|_| error(comm, MPI_ERR_COUNT, format!("count must not be negative (got {})", args.count)))?;
        if !(0..=TAG_UB).contains(&args.tag) {
            return Err(error(comm, MPI_ERR_TAG, format!("tag {} is not in 0..={TAG_UB} (partitioned operations take no wildcard)", args.tag)));
        }
        let peer = check_peer(comm, args.peer, shared.peer_count(), false)?;
        crate::comm::abi::hints_of(comm, args.info)?;
        let datatype = describe_datatype(comm, args.datatype)?;
        let elements = partitions.checked_mul(count).ok_or_else(|| error(comm, MPI_ERR_COUNT, "partitions × count overflows"))?;
        check_buffer(comm, args.buf.cast(), elements, args.datatype)?;
        let channel = match peer {
            None => Channel::Null { partitions },
            Some(braid_engine::Source::Rank(rank)) => {
                let buffer = Buffer { user: args.buf.cast(), partitions, count, datatype };
                open(rt, buffer, shared.job_rank(rank), shared.coll_context)?
            }
            Some(braid_engine::Source::Any) => unreachable!("check_peer refuses MPI_ANY_SOURCE here"),
        };
        let channel: Rc<dyn Any> = Rc::new(channel);
        let started = channel.clone();
        let start = move |rt: &mut dyn Any| {
            let rt = rt.downcast_mut::<Runtime>().expect("a partitioned request starts with the runtime");
            started.downcast_ref::<Channel>().expect("a partitioned request holds its channel").start(rt, comm)
        };
        let pending = Pending { persistent: Some(Box::new(Persistent::Partitioned { start: Box::new(start), channel })), ..Pending::inactive(comm) };
        let handle = rt.requests.insert(pending);
        // SAFETY: checked non-null; the caller's handle.
        unsafe { *args.request = handle };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Psend_init(
    buf: *const c_void,
    partitions: c_int,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    let args = Arguments { buf: buf.cast_mut(), partitions, count, datatype, peer: dest, tag, comm, info, request };
    let result = initialize(args, |rt, buffer, dest, context| {
        if buffer.partitions > wire::MAX_PARTITIONS {
            return Err(error(comm, MPI_ERR_ARG, format!("a partitioned send has at most {} partitions (got {})", wire::MAX_PARTITIONS, buffer.partitions)));
        }
        let registry = rt.partitioned.clone();
        match Sending::new(&registry, &mut rt.engine, buffer, dest, context, tag).map_err(|e| engine_error(comm, e))? {
            Some(sending) => Ok(Channel::Send(Rc::new(RefCell::new(sending)))),
            None => Err(error(comm, MPI_ERR_INTERN, format!("every one of the {} partitioned send channels of this communicator is in use: free some partitioned sends", wire::CHANNELS - 1))),
        }
    });
    finish("MPI_Psend_init", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Precv_init(
    buf: *mut c_void,
    partitions: c_int,
    count: MPI_Count,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    let args = Arguments { buf, partitions, count, datatype, peer: source, tag, comm, info, request };
    let result = initialize(args, |rt, buffer, source, context| {
        let registry = rt.partitioned.clone();
        Ok(Channel::Receive(Rc::new(RefCell::new(Receiving::new(&registry, buffer, source, context, tag)))))
    });
    finish("MPI_Precv_init", result)
}

/// The channel of partitioned request `request`, and the communicator whose handler applies.
fn channel_of(rt: &mut Runtime, request: MPI_Request) -> MpiResult<(Rc<dyn Any>, MPI_Comm)> {
    let pending = rt.requests.get_mut(request)?;
    match pending.persistent.as_deref() {
        Some(Persistent::Partitioned { channel, .. }) => Ok((channel.clone(), pending.comm)),
        _ => Err(error(pending.comm, MPI_ERR_REQUEST, format!("request {request} is not a partitioned request"))),
    }
}

/// Checks `partition` of `channel`'s request.
fn check_partition(channel: &Channel, comm: MPI_Comm, partition: c_int) -> MpiResult<usize> {
    let partitions = channel.partitions();
    usize::try_from(partition).ok().filter(|&p| p < partitions).ok_or_else(|| error(comm, MPI_ERR_ARG, format!("partition {partition} is not in 0..{partitions}")))
}

/// Marks each of `partitions` of send request `request` ready.
fn mark_ready(request: MPI_Request, partitions: impl Iterator<Item = c_int>) -> MpiResult<()> {
    runtime::with(|rt| {
        let (channel, comm) = channel_of(rt, request)?;
        let channel = channel.downcast_ref::<Channel>().expect("a partitioned request holds its channel");
        for partition in partitions {
            let index = check_partition(channel, comm, partition)?;
            match channel {
                Channel::Send(sending) => {
                    let mut sending = sending.borrow_mut();
                    if !sending.is_active() {
                        return Err(error(comm, MPI_ERR_REQUEST, format!("request {request} is not active: MPI_Start it before marking partitions ready")));
                    }
                    if let Err(class) = sending.ready(&mut rt.engine, index).map_err(|e| engine_error(comm, e))? {
                        return Err(error(comm, class, format!("partition {partition} is ready already in this round")));
                    }
                }
                Channel::Null { .. } => {}
                Channel::Receive(_) => return Err(error(comm, MPI_ERR_REQUEST, format!("request {request} is a partitioned receive: only sends have partitions to mark ready"))),
            }
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Pready(partition: c_int, request: MPI_Request) -> c_int {
    finish("MPI_Pready", mark_ready(request, std::iter::once(partition)))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Pready_range(partition_low: c_int, partition_high: c_int, request: MPI_Request) -> c_int {
    if partition_low > partition_high {
        return finish("MPI_Pready_range", Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, format!("partition_low {partition_low} is above partition_high {partition_high}"))));
    }
    finish("MPI_Pready_range", mark_ready(request, partition_low..=partition_high))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Pready_list(length: c_int, array_of_partitions: *const c_int, request: MPI_Request) -> c_int {
    let Ok(length) = usize::try_from(length) else {
        return finish("MPI_Pready_list", Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, format!("length must not be negative (got {length})"))));
    };
    if length > 0 && array_of_partitions.is_null() {
        return finish("MPI_Pready_list", Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "array_of_partitions must not be NULL")));
    }
    // SAFETY: MPI's rule: `length` partition indices (checked non-null when there are any).
    let list = if length == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(array_of_partitions, length) } };
    finish("MPI_Pready_list", mark_ready(request, list.iter().copied()))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Parrived(request: MPI_Request, partition: c_int, flag: *mut c_int) -> c_int {
    let result = runtime::with(|rt| {
        let (channel, comm) = channel_of(rt, request)?;
        if flag.is_null() {
            return Err(error(comm, MPI_ERR_ARG, "flag must not be NULL"));
        }
        let channel = channel.downcast_ref::<Channel>().expect("a partitioned request holds its channel");
        let index = check_partition(channel, comm, partition)?;
        let arrived = match channel {
            Channel::Receive(receiving) => {
                if !receiving.borrow_mut().arrived(index) {
                    rt.engine.progress().map_err(|e| engine_error(comm, e))?;
                }
                receiving.borrow_mut().arrived(index)
            }
            Channel::Null { .. } => true,
            Channel::Send(_) => return Err(error(comm, MPI_ERR_REQUEST, format!("request {request} is a partitioned send: only receives have partitions that arrive"))),
        };
        // SAFETY: checked non-null; the caller's flag.
        unsafe { *flag = c_int::from(arrived) };
        Ok(())
    });
    finish("MPI_Parrived", result)
}
