//! Joining the processes of other jobs (MPI's dynamic processes: spawn, accept and connect,
//! join): the processes of both sides meet through a bootstrap of their own (the group), every
//! one of them gets a peer number, new ones after the job's ranks for the processes this engine
//! did not know, and a shared-memory transport connected among the group carries the traffic to
//! the new ones under those numbers ([`braid_transport::renumbered`]). From then on a joined
//! peer is one more endpoint: the same protocols, matching and waiting as for a job rank.

use std::collections::HashMap;

use braid_config::Config;
use braid_lane::PeerId;
use braid_pmi::Bootstrap;
use braid_transport::disconnected::Disconnected;
use braid_transport::renumbered::Renumbered;
use braid_transport::shm::ShmTransport;
use braid_transport::Transport;

use crate::endpoint::{ControlLane, Endpoint};
use crate::frame::EAGER_HEADER_MAX;
use crate::progress::Doorbell;
use crate::{Engine, EngineError};

/// The processes of other jobs this engine has joined.
#[derive(Default)]
pub(crate) struct Joined {
    /// Peer number of each joined process, by name (see [`Engine::process_name`]).
    peers: HashMap<String, PeerId>,
    /// The groups whose transports are connected, with the peers each brought.
    groups: Vec<JoinedGroup>,
}

/// A group's transport and the peers it introduced.
struct JoinedGroup {
    transport: usize,
    peers: Vec<PeerId>,
}

fn group_error(error: braid_pmi::BootstrapError) -> EngineError {
    EngineError::Init(format!("joining another job: {error}"))
}

impl Engine {
    /// This process's name among every job's: its job's id and its rank there.
    pub fn process_name(&self) -> String {
        format!("{}#{}", self.bootstrap.job_id(), self.core.rank)
    }

    /// The launcher's side of this process (its job's key-value space; spawning).
    pub fn bootstrap(&mut self) -> &mut dyn Bootstrap {
        self.bootstrap.as_mut()
    }

    /// Every peer: the job's ranks, then the processes of other jobs joined since.
    pub fn peer_count(&self) -> u32 {
        self.core.endpoints.len() as u32
    }

    /// Collective over the processes of `group`, a bootstrap of its own among the processes of
    /// two (or more) jobs: numbers every member as a peer of this engine (the job's own ranks and
    /// the processes joined before keep their numbers; the others get new ones) and connects
    /// the new ones. Returns the peer number of each group rank.
    ///
    /// New peers are reached over shared memory, so every member must be on one node; a group
    /// spanning nodes is refused on every member alike.
    pub fn join(&mut self, config: &Config, group: &mut dyn Bootstrap) -> Result<Vec<PeerId>, EngineError> {
        let (me, members) = (group.rank(), group.size());
        let name = self.process_name();
        let node = braid_sys::process::node_identity().map_err(|error| EngineError::Init(format!("cannot identify this node: {error}")))?;
        group.put(&format!("braid-join-name-{me}"), &name).map_err(group_error)?;
        group.put(&format!("braid-join-node-{me}"), &node).map_err(group_error)?;
        group.fence().map_err(group_error)?;
        let mut names = Vec::with_capacity(members as usize);
        let mut spans_nodes = false;
        for member in 0..members {
            names.push(group.get(&format!("braid-join-name-{member}")).map_err(group_error)?);
            spans_nodes |= group.get(&format!("braid-join-node-{member}")).map_err(group_error)? != node;
        }
        if spans_nodes {
            return Err(EngineError::Unreachable { rank: 0, reason: "the processes to connect are on more than one node, and processes of other jobs are reached over shared memory only".into() });
        }
        let job = self.bootstrap.job_id().to_string();
        let mut next = self.peer_count();
        let mut new_peers = Vec::new();
        let peer_of: Vec<PeerId> = names
            .iter()
            .map(|member| {
                if let Some(rank) = member.strip_prefix(job.as_str()).and_then(|rest| rest.strip_prefix('#')).and_then(|rank| rank.parse::<u32>().ok()) {
                    return rank;
                }
                if let Some(&peer) = self.joined.peers.get(member) {
                    return peer;
                }
                new_peers.push(member.clone());
                next += 1;
                next - 1
            })
            .collect();
        // Every member connects the group's transport if any member meets a new process.
        group.put(&format!("braid-join-new-{me}"), if new_peers.is_empty() { "0" } else { "1" }).map_err(group_error)?;
        group.fence().map_err(group_error)?;
        let mut any_new = false;
        for member in 0..members {
            any_new |= group.get(&format!("braid-join-new-{member}")).map_err(group_error)? == "1";
        }
        if !any_new {
            return Ok(peer_of);
        }
        let mut shm = ShmTransport::new(config).map_err(|error| EngineError::Init(format!("shared-memory transport for another job: {error}")))?;
        shm.connect(group).map_err(|error| EngineError::Init(format!("shared-memory transport for another job: {error}")))?;
        let transport = Renumbered::new(Box::new(shm), peer_of.clone());
        let caps = transport.capabilities();
        let index = self.transports.len();
        let eager_limit = self.core.policy.eager_limit(&caps, EAGER_HEADER_MAX);
        let mut introduced = Vec::with_capacity(new_peers.len());
        for (name, peer) in new_peers.into_iter().zip(self.peer_count()..) {
            if !transport.reaches(peer) {
                return Err(EngineError::Unreachable { rank: peer, reason: format!("process {name} of another job has no shared memory with this one") });
            }
            self.core.endpoints.push(Endpoint::new(ControlLane::Direct(index), eager_limit));
            self.joined.peers.insert(name, peer);
            introduced.push(peer);
        }
        self.joined.groups.push(JoinedGroup { transport: index, peers: introduced });
        self.transports.push(Box::new(transport));
        self.core.caps.push(caps);
        self.polled.push(index);
        match self.wait.doorbell {
            Doorbell::Direct(_) => self.joined_doorbells.push(index),
            Doorbell::None if caps.wakes_receiver => self.wait.doorbell = Doorbell::Direct(index),
            Doorbell::Rails { .. } => self.wait.doorbell = Doorbell::Rails { bounded: true },
            Doorbell::None => {}
        }
        Ok(peer_of)
    }

    /// Disconnects the groups joined earlier none of whose new peers `in_use` still (MPI_Comm_disconnect
    /// of the last communicator reaching them): their transports are closed, giving back their
    /// shared memory, and a frame to one of their peers fails as to an unreachable rank. A process
    /// joined again later gets a new peer number. Returns how many groups were released.
    pub fn release_joined(&mut self, in_use: impl Fn(PeerId) -> bool) -> usize {
        let (kept, released): (Vec<JoinedGroup>, Vec<JoinedGroup>) = std::mem::take(&mut self.joined.groups).into_iter().partition(|group| group.peers.iter().any(|&peer| in_use(peer)));
        self.joined.groups = kept;
        for group in &released {
            let index = group.transport;
            let standing_in = Disconnected::replacing(self.transports[index].as_ref());
            self.transports[index] = Box::new(standing_in);
            self.polled.retain(|&polled| polled != index);
            self.joined_doorbells.retain(|&doorbell| doorbell != index);
            if self.wait.doorbell == Doorbell::Direct(index) {
                self.wait.doorbell = match self.joined_doorbells.first().copied() {
                    Some(next) => {
                        self.joined_doorbells.remove(0);
                        Doorbell::Direct(next)
                    }
                    None => Doorbell::None,
                };
            }
            for &peer in &group.peers {
                let dropped = self.core.endpoints[peer as usize].drop_backlog();
                self.core.backlog_len -= dropped;
            }
            self.joined.peers.retain(|_, peer| !group.peers.contains(peer));
        }
        released.len()
    }
}
