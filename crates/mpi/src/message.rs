//! Matched probes: the MPI_Message handles of MPI_Mprobe and MPI_Improbe, which MPI_Mrecv and
//! MPI_Imrecv receive (the calls are in [`abi`]).
//!
//! A matched probe takes the message out of the engine's matching, so that no other receive or
//! probe can match it; its handle names it until MPI_Mrecv or MPI_Imrecv receives it, whatever
//! its size (a rendezvous proceeds only then) and whichever route it came by.

pub mod abi;

use std::sync::Arc;

use braid_engine::MessageId;

use crate::comm::CommShared;
use crate::consts::*;
use crate::error::{error, MpiError};

/// A message matched by a probe and not received yet.
struct Matched {
    engine: MessageId,
    /// Whose error handler applies to its receive.
    comm: MPI_Comm,
    /// Translates the job rank of the message's source (see `Pending::shared`).
    shared: Option<Arc<CommShared>>,
}

/// The first handle of a matched message; those below are MPI_MESSAGE_NULL and
/// MPI_MESSAGE_NO_PROC.
const FIRST_MESSAGE: MPI_Message = MPI_MESSAGE_NO_PROC + 1;

/// MPI_Message handles: slot index + [`FIRST_MESSAGE`].
#[derive(Default)]
pub struct MessageTable {
    slots: Vec<Option<Matched>>,
    free: Vec<u32>,
}

impl MessageTable {
    pub fn new() -> MessageTable {
        MessageTable::default()
    }

    fn insert(&mut self, matched: Matched) -> MPI_Message {
        let index = match self.free.pop() {
            Some(index) => {
                self.slots[index as usize] = Some(matched);
                index as usize
            }
            None => {
                self.slots.push(Some(matched));
                self.slots.len() - 1
            }
        };
        index as MPI_Message + FIRST_MESSAGE
    }

    fn index(message: MPI_Message) -> Option<usize> {
        usize::try_from(message.checked_sub(FIRST_MESSAGE)?).ok()
    }

    fn get(&self, message: MPI_Message) -> Option<&Matched> {
        self.slots.get(MessageTable::index(message)?)?.as_ref()
    }

    fn take(&mut self, message: MPI_Message) -> Option<Matched> {
        let index = MessageTable::index(message)?;
        let taken = self.slots.get_mut(index)?.take()?;
        self.free.push(index as u32);
        Some(taken)
    }
}

#[cold]
fn invalid_message(message: MPI_Message) -> MpiError {
    let detail = match message {
        MPI_MESSAGE_NULL => "the message is MPI_MESSAGE_NULL".to_string(),
        _ => format!("{message} is not a message from MPI_Mprobe or MPI_Improbe"),
    };
    error(MPI_COMM_WORLD, MPI_ERR_REQUEST, detail)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matched(number: u32) -> Matched {
        Matched { engine: MessageId(number), comm: MPI_COMM_WORLD, shared: None }
    }

    #[test]
    fn handles_skip_the_predefined_messages_and_are_reused() {
        let mut table = MessageTable::new();
        let first = table.insert(matched(1));
        let second = table.insert(matched(2));
        assert_eq!((first, second), (FIRST_MESSAGE, FIRST_MESSAGE + 1));
        assert!(table.get(MPI_MESSAGE_NULL).is_none() && table.get(MPI_MESSAGE_NO_PROC).is_none() && table.get(-5).is_none());
        assert_eq!(table.take(first).map(|m| m.engine), Some(MessageId(1)));
        assert!(table.take(first).is_none() && table.get(first).is_none());
        assert_eq!(table.insert(matched(3)), first);
        assert_eq!(table.get(second).map(|m| m.engine), Some(MessageId(2)));
        assert_eq!(invalid_message(MPI_MESSAGE_NULL).class, MPI_ERR_REQUEST);
    }
}
