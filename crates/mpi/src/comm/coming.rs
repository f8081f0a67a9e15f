//! A communicator that MPI_Comm_idup has handed out and whose request completes it (see `idup`).

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;

use super::{Comm, CommShared, CommTable};
use crate::attr::{AttributeStore, Object};
use crate::consts::*;

/// A communicator whose members are still agreeing on its context id.
pub struct ComingComm {
    pub(super) handle: MPI_Comm,
    /// Filled in by the agreement when it succeeds.
    pub(super) agreed: Rc<Cell<Option<u32>>>,
    /// The communicator as it will be, on a placeholder context until the id is known.
    pub(super) prototype: Comm,
}

impl ComingComm {
    /// The request completed (`succeeded`: without error): puts the communicator in place, or
    /// frees the handle again.
    pub fn arrive(self, comms: &mut CommTable, attributes: &mut AttributeStore, succeeded: bool) {
        let ComingComm { handle, agreed, prototype } = self;
        match agreed.get().filter(|_| succeeded) {
            Some(id) => {
                let original = &prototype.shared;
                let me = original.members[original.rank as usize];
                let shared = if original.is_inter() { CommShared::new_inter(original.members.clone(), original.peers.clone(), me, id) } else { CommShared::new(original.members.clone(), me, id) };
                comms.fill(handle, Some(Comm { shared: Arc::new(shared), ..prototype }));
            }
            None => {
                // The copies' delete callbacks cannot run here (the state is held); the failure
                // that ended the agreement is the one the program learns of.
                for (attribute, _) in attributes.attributes(Object::Comm(handle)) {
                    attributes.remove(Object::Comm(handle), attribute.keyval);
                }
                comms.fill(handle, None);
            }
        }
    }
}
