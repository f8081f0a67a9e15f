//! Buffered mode: the attached buffers (MPI_Buffer_attach and, from MPI 4.1, a communicator's and
//! a session's, in [`abi`]) and the sends that go through them (MPI_Bsend, MPI_Ibsend and
//! persistent MPI_Bsend_init requests reach [`BsendBuffers::send`] through `p2p::start`).
//!
//! A buffered send uses its communicator's buffer, else the buffer of the session the
//! communicator comes from, else the process's (MPI 4.1 §3.6). It packs its message into a free
//! stretch of that buffer and sends it from there, so it is complete as soon as it starts. The
//! stretch is the message's packed size plus MPI_BSEND_OVERHEAD bytes, as the standard counts, so
//! a program that sizes its buffer by that count never runs out; it is given back once the
//! engine's send of it completes. Stretches are taken first-fit in address order. A buffer
//! attached as MPI_BUFFER_AUTOMATIC gives each message memory of its own, freed once it is sent.
//! Flushing (MPI_Buffer_flush and its kin) waits for the messages in a buffer; the non-blocking
//! forms watch them from a progress agent.

pub mod abi;

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use braid_engine::{Engine, EngineError, ProgressAgent, RequestId, SendMode};

use crate::coll::drive::Outcome;
use crate::consts::*;
use crate::datatype::{packed_bytes, DatatypeRef};
use crate::error::{engine_error, error, MpiResult};
use crate::request::Operation;

/// Whose buffer: the process's, a communicator's or a session's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    Process,
    Comm(MPI_Comm),
    Session(MPI_Session),
}

/// A message in flight from an attached buffer.
struct Stretch {
    offset: usize,
    /// Bytes reserved: the packed message plus MPI_BSEND_OVERHEAD.
    len: usize,
    send: RequestId,
    /// Counts the buffer's messages, for flushes to tell the earlier ones.
    sequence: u64,
    /// The message's own memory, in an automatic buffer: held until the send completes.
    _memory: Option<Box<[u8]>>,
}

/// The memory of an attached buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Memory {
    /// The program's `size` bytes at `base`.
    Given { base: *mut u8, size: usize },
    /// MPI_BUFFER_AUTOMATIC.
    Automatic,
}

/// Where a new message goes: its place in the list of stretches, its offset, the memory it is
/// packed into, and that memory's owner in an automatic buffer.
struct Placement {
    index: usize,
    offset: usize,
    region: &'static mut [u8],
    owned: Option<Box<[u8]>>,
}

struct Attached {
    memory: Memory,
    /// In address order (in sending order for an automatic buffer).
    in_flight: Vec<Stretch>,
    next_sequence: u64,
}

/// The first gap of `need` bytes between the stretches in flight (in address order) of a buffer
/// of `size` bytes: where the new stretch goes in the list, and its offset.
fn first_fit(in_flight: &[(usize, usize)], size: usize, need: usize) -> Option<(usize, usize)> {
    let mut start = 0;
    for (index, &(offset, len)) in in_flight.iter().enumerate() {
        if offset - start >= need {
            return Some((index, start));
        }
        start = offset + len;
    }
    (size - start >= need).then_some((in_flight.len(), start))
}

impl Attached {
    fn new(memory: Memory) -> Attached {
        Attached { memory, in_flight: Vec::new(), next_sequence: 0 }
    }

    /// Gives back the stretches whose sends have completed.
    fn reclaim(&mut self, engine: &mut Engine) -> Result<(), EngineError> {
        let mut index = 0;
        while index < self.in_flight.len() {
            let send = self.in_flight[index].send;
            if engine.is_complete(send) {
                engine.wait(send)?;
                self.in_flight.remove(index);
            } else {
                index += 1;
            }
        }
        Ok(())
    }

    /// Waits for every send in flight.
    fn drain(&mut self, engine: &mut Engine) -> Result<(), EngineError> {
        while let Some(stretch) = self.in_flight.pop() {
            engine.wait(stretch.send)?;
        }
        Ok(())
    }

    /// Whether a message sent before sequence number `upto` is still in flight.
    fn holds_before(&self, upto: u64) -> bool {
        self.in_flight.iter().any(|stretch| stretch.sequence < upto)
    }

    fn free_bytes(&self) -> usize {
        match self.memory {
            Memory::Given { size, .. } => size - self.in_flight.iter().map(|stretch| stretch.len).sum::<usize>(),
            Memory::Automatic => usize::MAX,
        }
    }

    /// Room for a message of `packed` bytes, whose stretch takes `need`, if there is.
    fn place(&mut self, engine: &mut Engine, packed: usize, need: usize) -> Result<Option<Placement>, EngineError> {
        let Memory::Given { base, size } = self.memory else {
            let mut owned = vec![0u8; packed].into_boxed_slice();
            // SAFETY: the box moves into the stretch, which keeps its heap memory in place until
            // the engine's send of it has completed.
            let region = unsafe { std::slice::from_raw_parts_mut(owned.as_mut_ptr(), packed) };
            return Ok(Some(Placement { index: self.in_flight.len(), offset: 0, region, owned: Some(owned) }));
        };
        let spans = |attached: &Attached| attached.in_flight.iter().map(|stretch| (stretch.offset, stretch.len)).collect::<Vec<_>>();
        self.reclaim(engine)?;
        let mut fit = first_fit(&spans(self), size, need);
        if fit.is_none() && !self.in_flight.is_empty() {
            // Sends may finish in this step and make room.
            engine.progress()?;
            self.reclaim(engine)?;
            fit = first_fit(&spans(self), size, need);
        }
        Ok(fit.map(|(index, offset)| {
            let region: &'static mut [u8] = match packed {
                0 => &mut [],
                // SAFETY: `offset + packed <= size`, so the region lies in the attached buffer,
                // which MPI reserves for MPI until it is detached; no stretch in flight overlaps it.
                _ => unsafe { std::slice::from_raw_parts_mut(base.add(offset), packed) },
            };
            Placement { index, offset, region, owned: None }
        }))
    }
}

/// Completes a non-blocking flush once the messages it waits for have left.
struct FlushWatch {
    attached: Rc<RefCell<Attached>>,
    upto: u64,
    outcome: Rc<Outcome>,
}

impl ProgressAgent for FlushWatch {
    fn advance(&mut self, engine: &mut Engine) -> Result<bool, EngineError> {
        let mut attached = self.attached.borrow_mut();
        attached.reclaim(engine)?;
        if attached.holds_before(self.upto) {
            return Ok(false);
        }
        self.outcome.finish(Ok(()));
        Ok(true)
    }

    fn is_done(&self) -> bool {
        self.outcome.result().is_some()
    }
}

/// Every attached buffer of the process.
#[derive(Default)]
pub struct BsendBuffers {
    attached: HashMap<Scope, Rc<RefCell<Attached>>>,
}

impl BsendBuffers {
    pub fn new() -> BsendBuffers {
        BsendBuffers::default()
    }

    /// Attaches `size` bytes at `base` (or MPI_BUFFER_AUTOMATIC, whose size is ignored) as
    /// `scope`'s buffer; errors are reported on `comm`.
    fn attach(&mut self, scope: Scope, comm: MPI_Comm, base: *mut u8, size: impl Into<MPI_Count>) -> MpiResult<()> {
        let memory = if base.cast_const().cast() == MPI_BUFFER_AUTOMATIC {
            Memory::Automatic
        } else {
            let size: MPI_Count = size.into();
            let Ok(size) = usize::try_from(size) else {
                return Err(error(comm, MPI_ERR_ARG, format!("size {size} is negative")));
            };
            if base.is_null() && size > 0 {
                return Err(error(comm, MPI_ERR_BUFFER, "the buffer is NULL"));
            }
            Memory::Given { base, size }
        };
        if let Some(attached) = self.attached.get(&scope) {
            let detail = match attached.borrow().memory {
                Memory::Given { size, .. } => format!("a buffer of {size} bytes is attached already (detach it first)"),
                Memory::Automatic => "MPI_BUFFER_AUTOMATIC is attached already (detach it first)".to_string(),
            };
            return Err(error(comm, MPI_ERR_BUFFER, detail));
        }
        self.attached.insert(scope, Rc::new(RefCell::new(Attached::new(memory))));
        Ok(())
    }

    /// Waits until every message in `scope`'s buffer has left, then detaches it: its address and
    /// size (MPI_BUFFER_AUTOMATIC and 0 for an automatic one; NULL and 0 when the process has
    /// none attached, as in MPICH). A communicator or session without a buffer is an error.
    fn detach(&mut self, scope: Scope, comm: MPI_Comm, engine: &mut Engine) -> MpiResult<(*mut u8, usize)> {
        let Some(attached) = self.attached.get(&scope).cloned() else {
            return match scope {
                Scope::Process => Ok((std::ptr::null_mut(), 0)),
                Scope::Comm(_) => Err(error(comm, MPI_ERR_BUFFER, "no buffer is attached to this communicator")),
                Scope::Session(_) => Err(error(comm, MPI_ERR_BUFFER, "no buffer is attached to this session")),
            };
        };
        attached.borrow_mut().drain(engine).map_err(|e| engine_error(comm, e))?;
        self.attached.remove(&scope);
        let memory = attached.borrow().memory;
        Ok(match memory {
            Memory::Given { base, size } => (base, size),
            Memory::Automatic => (MPI_BUFFER_AUTOMATIC.cast_mut().cast(), 0),
        })
    }

    /// Waits until every message in `scope`'s buffer (if any) has left.
    fn flush(&mut self, scope: Scope, engine: &mut Engine) -> Result<(), EngineError> {
        match self.attached.get(&scope) {
            Some(attached) => attached.borrow_mut().drain(engine),
            None => Ok(()),
        }
    }

    /// A watch that ends once the messages in `scope`'s buffer now have left, finishing
    /// `outcome` (at once when there are none).
    fn watch_flush(&self, scope: Scope, outcome: Rc<Outcome>) -> Option<Box<dyn ProgressAgent>> {
        match self.attached.get(&scope) {
            Some(attached) if !attached.borrow().in_flight.is_empty() => {
                let upto = attached.borrow().next_sequence;
                Some(Box::new(FlushWatch { attached: Rc::clone(attached), upto, outcome }))
            }
            _ => {
                outcome.finish(Ok(()));
                None
            }
        }
    }

    /// Completes every buffered send (MPI_Finalize), leaving the buffers attached.
    pub fn drain(&mut self, engine: &mut Engine) -> Result<(), EngineError> {
        self.attached.values().try_for_each(|attached| attached.borrow_mut().drain(engine))
    }

    /// A communicator or session is going away: its buffer's messages leave, and it is detached.
    pub fn release(&mut self, scope: Scope, engine: &mut Engine) -> Result<(), EngineError> {
        let outcome = self.flush(scope, engine);
        self.attached.remove(&scope);
        outcome
    }

    /// Sends `count` elements of `datatype` at `op.buffer` to job rank `dest` from the buffer a
    /// send on `op.comm` (which comes from `session`, if any) uses: `to` is (dest, tag, context).
    pub(crate) fn send(&mut self, engine: &mut Engine, op: &Operation, session: Option<MPI_Session>, datatype: &DatatypeRef, count: usize, to: (u32, i32, u32)) -> MpiResult<()> {
        let comm = op.comm;
        let scopes = [Some(Scope::Comm(comm)), session.map(Scope::Session), Some(Scope::Process)];
        let Some(attached) = scopes.into_iter().flatten().find_map(|scope| self.attached.get(&scope)) else {
            return Err(error(comm, MPI_ERR_BUFFER, "no buffer is attached for buffered sends (MPI_Buffer_attach, or the communicator's or session's)"));
        };
        let mut attached = attached.borrow_mut();
        let packed = packed_bytes(comm, datatype, count)?;
        let need = packed.saturating_add(MPI_BSEND_OVERHEAD as usize);
        let Some(Placement { index, offset, region, owned }) = attached.place(engine, packed, need).map_err(|e| engine_error(comm, e))? else {
            let size = match attached.memory {
                Memory::Given { size, .. } => size,
                Memory::Automatic => 0,
            };
            let detail = format!(
                "a buffered message of {packed} bytes needs {need} bytes of the attached buffer (its packed size + MPI_BSEND_OVERHEAD); {} of its {size} bytes are free, none in one piece that large",
                attached.free_bytes(),
            );
            return Err(error(comm, MPI_ERR_BUFFER, detail));
        };
        // SAFETY: the user buffer holds `count` elements of the datatype (MPI's rule for sends).
        unsafe { datatype.pack(count, op.buffer, region) };
        let (dest, tag, context) = to;
        let send = engine.isend(region, dest, tag, context, SendMode::Buffered).map_err(|e| engine_error(comm, e))?;
        let sequence = attached.next_sequence;
        attached.next_sequence += 1;
        attached.in_flight.insert(index, Stretch { offset, len: need, send, sequence, _memory: owned });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stretches_go_in_the_first_gap_large_enough() {
        assert_eq!(first_fit(&[], 100, 100), Some((0, 0)));
        assert_eq!(first_fit(&[], 100, 101), None);
        let in_flight = [(10, 20), (40, 30), (90, 10)];
        assert_eq!(first_fit(&in_flight, 100, 10), Some((0, 0)));
        assert_eq!(first_fit(&in_flight, 100, 11), Some((2, 70)));
        assert_eq!(first_fit(&in_flight, 100, 21), None);
        assert_eq!(first_fit(&in_flight[..2], 100, 30), Some((2, 70)));
        assert_eq!(first_fit(&[(0, 50)], 100, 50), Some((1, 50)));
    }

    #[test]
    fn a_buffer_sized_by_the_standard_holds_every_message_it_was_sized_for() {
        // Three messages of 100, 0 and 7 bytes: 3 * MPI_BSEND_OVERHEAD + 107 bytes.
        let overhead = MPI_BSEND_OVERHEAD as usize;
        let size = 3 * overhead + 107;
        let mut in_flight = Vec::new();
        for packed in [100, 0, 7] {
            let (index, offset) = first_fit(&in_flight, size, packed + overhead).expect("room by the standard's count");
            in_flight.insert(index, (offset, packed + overhead));
        }
        assert_eq!(first_fit(&in_flight, size, overhead), None);
        // The first completes: a message as large fits again, a larger one does not.
        in_flight.remove(0);
        assert_eq!(first_fit(&in_flight, size, 100 + overhead), Some((0, 0)));
        assert_eq!(first_fit(&in_flight, size, 101 + overhead), None);
    }

    #[test]
    fn attaching_checks_its_arguments_and_allows_one_buffer_per_scope() {
        let mut buffers = BsendBuffers::new();
        let mut memory = [0u8; 16];
        let world = MPI_COMM_WORLD;
        assert_eq!(buffers.attach(Scope::Process, world, memory.as_mut_ptr(), -1).unwrap_err().class, MPI_ERR_ARG);
        assert_eq!(buffers.attach(Scope::Process, world, std::ptr::null_mut(), 16).unwrap_err().class, MPI_ERR_BUFFER);
        buffers.attach(Scope::Process, world, memory.as_mut_ptr(), 16).unwrap();
        assert_eq!(buffers.attach(Scope::Process, world, memory.as_mut_ptr(), 16).unwrap_err().class, MPI_ERR_BUFFER);
        assert_eq!(buffers.attached[&Scope::Process].borrow().free_bytes(), 16);
        // A communicator and a session have buffers of their own; automatic ones have no size.
        buffers.attach(Scope::Comm(world), world, MPI_BUFFER_AUTOMATIC.cast_mut().cast(), -5).unwrap();
        buffers.attach(Scope::Session(3), world, memory.as_mut_ptr(), 8).unwrap();
        assert_eq!(buffers.attached[&Scope::Comm(world)].borrow().memory, Memory::Automatic);
        assert_eq!(buffers.attached.len(), 3);
    }
}
