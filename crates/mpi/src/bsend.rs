//! Buffered mode: the attached buffer (MPI_Buffer_attach, MPI_Buffer_detach in [`abi`]) and the sends that
//! go through it (MPI_Bsend, MPI_Ibsend and persistent MPI_Bsend_init requests reach
//! [`BsendBuffer::send`] through `p2p::start`).
//!
//! A buffered send packs its message into a free stretch of the attached buffer and sends it from
//! there, so it is complete as soon as it starts. The stretch is the message's packed size plus
//! MPI_BSEND_OVERHEAD bytes, as the standard counts, so a program that sizes its buffer by that
//! count never runs out; it is given back once the engine's send of it completes. Stretches are
//! taken first-fit in address order.

pub mod abi;

use braid_engine::{Engine, EngineError, RequestId, SendMode};

use crate::consts::*;
use crate::datatype::{packed_bytes, DatatypeRef};
use crate::error::{engine_error, error, MpiResult};
use crate::request::Operation;

/// A message in flight from the attached buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stretch {
    offset: usize,
    /// Bytes reserved: the packed message plus MPI_BSEND_OVERHEAD.
    len: usize,
    send: RequestId,
}

struct Attached {
    base: *mut u8,
    size: usize,
    /// In address order.
    in_flight: Vec<Stretch>,
}

/// The first gap of `need` bytes between the stretches in flight (in address order) of a buffer
/// of `size` bytes: where the new stretch goes in the list, and its offset.
fn first_fit(in_flight: &[Stretch], size: usize, need: usize) -> Option<(usize, usize)> {
    let mut start = 0;
    for (index, stretch) in in_flight.iter().enumerate() {
        if stretch.offset - start >= need {
            return Some((index, start));
        }
        start = stretch.offset + stretch.len;
    }
    (size - start >= need).then_some((in_flight.len(), start))
}

impl Attached {
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

    fn free_bytes(&self) -> usize {
        self.size - self.in_flight.iter().map(|stretch| stretch.len).sum::<usize>()
    }
}

/// The process's attached buffer, if any (MPI allows one at a time).
#[derive(Default)]
pub struct BsendBuffer {
    attached: Option<Attached>,
}

impl BsendBuffer {
    pub fn new() -> BsendBuffer {
        BsendBuffer::default()
    }

    fn attach(&mut self, base: *mut u8, size: impl Into<MPI_Count>) -> MpiResult<()> {
        let size: MPI_Count = size.into();
        let Ok(size) = usize::try_from(size) else {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, format!("size {size} is negative")));
        };
        if base.is_null() && size > 0 {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_BUFFER, "the buffer is NULL"));
        }
        if let Some(attached) = &self.attached {
            let detail = format!("a buffer of {} bytes is attached already (MPI_Buffer_detach it first)", attached.size);
            return Err(error(MPI_COMM_WORLD, MPI_ERR_BUFFER, detail));
        }
        self.attached = Some(Attached { base, size, in_flight: Vec::new() });
        Ok(())
    }

    /// Waits until every buffered message has left, then detaches the buffer: its address and
    /// size (NULL and 0 when none is attached, as in MPICH).
    fn detach(&mut self, engine: &mut Engine) -> Result<(*mut u8, usize), EngineError> {
        let Some(attached) = self.attached.as_mut() else { return Ok((std::ptr::null_mut(), 0)) };
        attached.drain(engine)?;
        let (base, size) = (attached.base, attached.size);
        self.attached = None;
        Ok((base, size))
    }

    /// Completes every buffered send (MPI_Finalize), leaving the buffer attached.
    pub fn drain(&mut self, engine: &mut Engine) -> Result<(), EngineError> {
        match self.attached.as_mut() {
            Some(attached) => attached.drain(engine),
            None => Ok(()),
        }
    }

    /// Sends `count` elements of `datatype` at `op.buffer` to job rank `dest` from the attached
    /// buffer: `to` is (dest, tag, context).
    pub(crate) fn send(&mut self, engine: &mut Engine, op: &Operation, datatype: &DatatypeRef, count: usize, to: (u32, i32, u32)) -> MpiResult<()> {
        let comm = op.comm;
        let Some(attached) = self.attached.as_mut() else {
            return Err(error(comm, MPI_ERR_BUFFER, "no buffer is attached for buffered sends (MPI_Buffer_attach)"));
        };
        let packed = packed_bytes(comm, datatype, count)?;
        let need = packed.saturating_add(MPI_BSEND_OVERHEAD as usize);
        attached.reclaim(engine).map_err(|e| engine_error(comm, e))?;
        let mut fit = first_fit(&attached.in_flight, attached.size, need);
        if fit.is_none() && !attached.in_flight.is_empty() {
            // Sends may finish in this step and make room.
            engine.progress().map_err(|e| engine_error(comm, e))?;
            attached.reclaim(engine).map_err(|e| engine_error(comm, e))?;
            fit = first_fit(&attached.in_flight, attached.size, need);
        }
        let Some((index, offset)) = fit else {
            let detail = format!(
                "a buffered message of {packed} bytes needs {need} bytes of the attached buffer (its packed size + MPI_BSEND_OVERHEAD); {} of its {} bytes are free, none in one piece that large",
                attached.free_bytes(),
                attached.size
            );
            return Err(error(comm, MPI_ERR_BUFFER, detail));
        };
        let region: &'static mut [u8] = match packed {
            0 => &mut [],
            // SAFETY: `offset + packed <= size`, so the region lies in the attached buffer, which
            // MPI reserves for MPI until it is detached; no other stretch in flight overlaps it.
            _ => unsafe { std::slice::from_raw_parts_mut(attached.base.add(offset), packed) },
        };
        // SAFETY: the user buffer holds `count` elements of the datatype (MPI's rule for sends).
        unsafe { datatype.pack(count, op.buffer, region) };
        let (dest, tag, context) = to;
        let send = engine.isend(region, dest, tag, context, SendMode::Buffered).map_err(|e| engine_error(comm, e))?;
        attached.in_flight.insert(index, Stretch { offset, len: need, send });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stretch(offset: usize, len: usize) -> Stretch {
        Stretch { offset, len, send: RequestId(1) }
    }

    #[test]
    fn stretches_go_in_the_first_gap_large_enough() {
        assert_eq!(first_fit(&[], 100, 100), Some((0, 0)));
        assert_eq!(first_fit(&[], 100, 101), None);
        let in_flight = [stretch(10, 20), stretch(40, 30), stretch(90, 10)];
        assert_eq!(first_fit(&in_flight, 100, 10), Some((0, 0)));
        assert_eq!(first_fit(&in_flight, 100, 11), Some((2, 70)));
        assert_eq!(first_fit(&in_flight, 100, 21), None);
        assert_eq!(first_fit(&in_flight[..2], 100, 30), Some((2, 70)));
        assert_eq!(first_fit(&[stretch(0, 50)], 100, 50), Some((1, 50)));
    }

    #[test]
    fn a_buffer_sized_by_the_standard_holds_every_message_it_was_sized_for() {
        // Three messages of 100, 0 and 7 bytes: 3 * MPI_BSEND_OVERHEAD + 107 bytes.
        let overhead = MPI_BSEND_OVERHEAD as usize;
        let size = 3 * overhead + 107;
        let mut in_flight = Vec::new();
        for packed in [100, 0, 7] {
            let (index, offset) = first_fit(&in_flight, size, packed + overhead).expect("room by the standard's count");
            in_flight.insert(index, stretch(offset, packed + overhead));
        }
        assert_eq!(first_fit(&in_flight, size, overhead), None);
        // The first completes: a message as large fits again, a larger one does not.
        in_flight.remove(0);
        assert_eq!(first_fit(&in_flight, size, 100 + overhead), Some((0, 0)));
        assert_eq!(first_fit(&in_flight, size, 101 + overhead), None);
    }

    #[test]
    fn attaching_checks_its_arguments_and_allows_one_buffer() {
        let mut buffer = BsendBuffer::new();
        let mut memory = [0u8; 16];
        assert_eq!(buffer.attach(memory.as_mut_ptr(), -1).unwrap_err().class, MPI_ERR_ARG);
        assert_eq!(buffer.attach(std::ptr::null_mut(), 16).unwrap_err().class, MPI_ERR_BUFFER);
        buffer.attach(memory.as_mut_ptr(), 16).unwrap();
        assert_eq!(buffer.attach(memory.as_mut_ptr(), 16).unwrap_err().class, MPI_ERR_BUFFER);
        assert_eq!(buffer.attached.as_ref().map(Attached::free_bytes), Some(16));
    }
}
