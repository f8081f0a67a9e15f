//! The request table: a slab of slots with a free list, so a steady stream of operations reuses
//! slots instead of allocating. Request number `n` lives in slot `n - 1`; 0 is never handed out.

use crate::Status;

pub(crate) enum Operation {
    Free,
    Send {
        data: &'static [u8],
        /// Where the message goes and its context: what a cancellation names.
        dest: u32,
        context: u32,
    },
    Recv {
        buffer: &'static mut [u8],
        context: u32,
        /// Bytes the rendezvous pipeline will deliver, and how many have arrived.
        expected: usize,
        received: usize,
        /// A shared single copy that was offered: the send request told with FIN once every byte
        /// is in.
        fin_to: Option<u32>,
    },
}

pub(crate) struct Slot {
    pub(crate) operation: Operation,
    pub(crate) done: bool,
    /// MPI_Request_free was called: free the slot as soon as the operation completes.
    pub(crate) released: bool,
    pub(crate) status: Status,
}

#[derive(Default)]
pub(crate) struct Requests {
    slots: Vec<Slot>,
    free: Vec<u32>,
}

impl Requests {
    #[inline]
    pub(crate) fn allocate(&mut self, operation: Operation, status: Status) -> u32 {
        let slot = Slot { operation, done: false, released: false, status };
        match self.free.pop() {
            Some(index) => {
                self.slots[index as usize] = slot;
                index + 1
            }
            None => self.grow(slot),
        }
    }

    #[cold]
    fn grow(&mut self, slot: Slot) -> u32 {
        self.slots.push(slot);
        self.slots.len() as u32
    }

    /// The live slot of request number `id`.
    #[inline]
    pub(crate) fn get(&self, id: u32) -> Option<&Slot> {
        let slot = self.slots.get((id as usize).checked_sub(1)?)?;
        (!matches!(slot.operation, Operation::Free)).then_some(slot)
    }

    #[inline]
    pub(crate) fn get_mut(&mut self, id: u32) -> Option<&mut Slot> {
        let slot = self.slots.get_mut((id as usize).checked_sub(1)?)?;
        (!matches!(slot.operation, Operation::Free)).then_some(slot)
    }

    /// Marks request `id` complete with `status`; frees it at once if it was released.
    #[inline]
    pub(crate) fn complete(&mut self, id: u32, status: Status) {
        let Some(slot) = self.get_mut(id) else { return };
        slot.status = status;
        slot.done = true;
        if slot.released {
            self.free(id);
        }
    }

    /// Completes request `id` with the status already stored in its slot.
    #[inline]
    pub(crate) fn finish(&mut self, id: u32) {
        if let Some(status) = self.get(id).map(|slot| slot.status) {
            self.complete(id, status);
        }
    }

    #[inline]
    pub(crate) fn free(&mut self, id: u32) {
        self.take(id);
    }

    /// Frees request `id`, handing back its operation (and so the buffer it held).
    #[inline]
    pub(crate) fn take(&mut self, id: u32) -> Option<Operation> {
        let slot = self.get_mut(id)?;
        let operation = std::mem::replace(&mut slot.operation, Operation::Free);
        self.free.push(id - 1);
        Some(operation)
    }

    /// Whether a released operation has not completed yet (finalize waits for those).
    pub(crate) fn released_pending(&self) -> bool {
        self.slots.iter().any(|slot| slot.released && !slot.done && !matches!(slot.operation, Operation::Free))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status() -> Status {
        Status { source: 0, tag: 0, count: 0, cancelled: false, truncated: false }
    }

    #[test]
    fn ids_start_at_one_and_freed_slots_are_reused() {
        let mut requests = Requests::default();
        let a = requests.allocate(Operation::Send { data: b"a", dest: 0, context: 0 }, status());
        let b = requests.allocate(Operation::Send { data: b"b", dest: 0, context: 0 }, status());
        assert_eq!((a, b), (1, 2));
        assert!(requests.get(0).is_none());
        requests.free(a);
        assert!(requests.get(a).is_none());
        assert_eq!(requests.allocate(Operation::Send { data: b"c", dest: 0, context: 0 }, status()), a);
        assert_eq!(requests.slots.len(), 2);
    }

    #[test]
    fn a_released_request_is_freed_when_it_completes() {
        let mut requests = Requests::default();
        let id = requests.allocate(Operation::Send { data: b"x", dest: 0, context: 0 }, status());
        requests.get_mut(id).unwrap().released = true;
        assert!(requests.released_pending());
        requests.complete(id, status());
        assert!(requests.get(id).is_none());
        assert!(!requests.released_pending());
    }
}
