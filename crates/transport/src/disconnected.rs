//! What stands in for a transport once the processes it reached are disconnected (MPI's
//! MPI_Comm_disconnect of the last communicator joining two jobs): it reaches nobody, so a frame
//! for one of them fails as for an unreachable peer, and the transport's memory is given back.

use std::io::IoSlice;

use braid_lane::{Capabilities, PeerId, Profile};
use braid_pmi::Bootstrap;

use crate::{Incoming, SendOutcome, Transport, TransportError};

/// A transport that reaches nobody any more.
pub struct Disconnected {
    name: String,
    capabilities: Capabilities,
    profile: Profile,
}

impl Disconnected {
    /// Stands in for `closed`, keeping its name, capabilities and profile.
    pub fn replacing(closed: &dyn Transport) -> Disconnected {
        Disconnected { name: format!("{} (disconnected)", closed.name()), capabilities: closed.capabilities(), profile: closed.profile().clone() }
    }
}

impl Transport for Disconnected {
    fn name(&self) -> &str {
        &self.name
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    fn profile(&self) -> &Profile {
        &self.profile
    }

    fn connect(&mut self, _bootstrap: &mut dyn Bootstrap) -> Result<(), TransportError> {
        Err(TransportError::Unsupported("connecting a disconnected transport"))
    }

    fn reaches(&self, _peer: PeerId) -> bool {
        false
    }

    fn try_send(&mut self, peer: PeerId, _header: &[u8], _payload: &[IoSlice<'_>]) -> Result<SendOutcome, TransportError> {
        Err(TransportError::Unreachable(peer))
    }

    fn poll(&mut self, _deliver: &mut dyn FnMut(Incoming<'_>)) -> usize {
        0
    }
}
