//! Joining the processes of other jobs (MPI's dynamic processes: spawn, accept and connect,
//! join): the processes of both sides meet through a bootstrap of their own (the group), every
//! one of them gets a peer number, new ones after the job's ranks for the processes this engine
//! did not know, and transports connected among the group carry the traffic to the new ones
//! under those numbers ([`braid_transport::renumbered`]): shared memory to those on this node,
//! TCP over the first network rail to those on other nodes. From then on a joined peer is one
//! more endpoint: the same protocols, matching and waiting as for a job rank.

use std::collections::HashMap;

use braid_config::Config;
use braid_lane::PeerId;
use braid_pmi::Bootstrap;
use braid_transport::disconnected::Disconnected;
use braid_transport::renumbered::Renumbered;
use braid_transport::shm::ShmTransport;
use braid_transport::tcp::{self, TcpTransport};
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

/// A group's transports and the peers it introduced.
struct JoinedGroup {
    transports: Vec<usize>,
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
    /// New peers on this node are reached over shared memory, those on other nodes (or every
    /// one with `BRAID_SHM=off`) over TCP on the first network rail (`BRAID_RAILS`); a group
    /// that needs the network where a member has no rail is refused on every member alike.
    pub fn join(&mut self, config: &Config, group: &mut dyn Bootstrap) -> Result<Vec<PeerId>, EngineError> {
        let (me, members) = (group.rank(), group.size());
        let name = self.process_name();
        let node = braid_sys::process::node_identity().map_err(|error| EngineError::Init(format!("cannot identify this node: {error}")))?;
        let rail = tcp::rails(&config.rails).ok().and_then(|rails| rails.into_iter().next());
        group.put(&format!("braid-join-name-{me}"), &name).map_err(group_error)?;
        group.put(&format!("braid-join-node-{me}"), &node).map_err(group_error)?;
        group.put(&format!("braid-join-rail-{me}"), if rail.is_some() { "1" } else { "0" }).map_err(group_error)?;
        group.fence().map_err(group_error)?;
        let mut names = Vec::with_capacity(members as usize);
        let mut spans_nodes = false;
        let mut without_rail = None;
        for member in 0..members {
            let member_name = group.get(&format!("braid-join-name-{member}")).map_err(group_error)?;
            spans_nodes |= group.get(&format!("braid-join-node-{member}")).map_err(group_error)? != node;
            if group.get(&format!("braid-join-rail-{member}")).map_err(group_error)? != "1" {
                without_rail.get_or_insert_with(|| member_name.clone());
            }
            names.push(member_name);
        }
        let over_network = spans_nodes || !config.shm;
        if let (true, Some(member)) = (over_network, &without_rail) {
            let why = if config.shm { "the processes to connect are on more than one node" } else { "shared memory is off (BRAID_SHM)" };
            return Err(EngineError::Unreachable { rank: 0, reason: format!("{why}, and process {member} has no network rail to reach the others over (BRAID_RAILS)") });
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
        // Every member connects the group's transports if any member meets a new process.
        group.put(&format!("braid-join-new-{me}"), if new_peers.is_empty() { "0" } else { "1" }).map_err(group_error)?;
        group.fence().map_err(group_error)?;
        let mut any_new = false;
        for member in 0..members {
            any_new |= group.get(&format!("braid-join-new-{member}")).map_err(group_error)? == "1";
        }
        if !any_new {
            return Ok(peer_of);
        }
        // Connected in the same order on every member (each connect is collective).
        let mut connected: Vec<Renumbered> = Vec::with_capacity(2);
        if config.shm {
            let mut shm = ShmTransport::new(config).map_err(|error| EngineError::Init(format!("shared-memory transport for another job: {error}")))?;
            shm.connect(group).map_err(|error| EngineError::Init(format!("shared-memory transport for another job: {error}")))?;
            connected.push(Renumbered::new(Box::new(shm), peer_of.clone()));
        }
        if let (true, Some(rail)) = (over_network, rail) {
            let mut network = TcpTransport::new(config, rail).map_err(|error| EngineError::Init(format!("network transport for another job: {error}")))?;
            network.connect(group).map_err(|error| EngineError::Init(format!("network transport for another job: {error}")))?;
            connected.push(Renumbered::new(Box::new(network), peer_of.clone()));
        }
        let first = self.transports.len();
        let mut introduced = Vec::with_capacity(new_peers.len());
        for (name, peer) in new_peers.into_iter().zip(self.peer_count()..) {
            let Some(carrier) = connected.iter().position(|transport| transport.reaches(peer)) else {
                return Err(EngineError::Unreachable { rank: peer, reason: format!("process {name} of another job is reached by neither shared memory nor the network") });
            };
            if self.core.debug {
                debug_line!(self.core.rank, "joined process {name} of another job as peer {peer}, over {}", connected[carrier].name());
            }
            let eager_limit = self.core.policy.eager_limit(&connected[carrier].capabilities(), EAGER_HEADER_MAX);
            self.core.endpoints.push(Endpoint::new(ControlLane::Direct(first + carrier), eager_limit));
            self.joined.peers.insert(name, peer);
            introduced.push(peer);
        }
        let indices: Vec<usize> = (first..first + connected.len()).collect();
        self.joined.groups.push(JoinedGroup { transports: indices.clone(), peers: introduced });
        for (transport, index) in connected.into_iter().zip(indices) {
            let caps = transport.capabilities();
            let sleeps_on_futex = transport.shared_doorbell().is_some();
            self.transports.push(Box::new(transport));
            self.core.caps.push(caps);
            self.polled.push(index);
            if !sleeps_on_futex {
                // A socket's doorbell is a descriptor: waiters poll it (see progress.rs).
                self.joined_sockets.push(index);
                if let Doorbell::Rails { .. } = self.wait.doorbell {
                    self.wait.doorbell = Doorbell::Rails { bounded: true };
                }
                continue;
            }
            match self.wait.doorbell {
                Doorbell::Direct(_) => self.joined_doorbells.push(index),
                Doorbell::None if caps.wakes_receiver => self.wait.doorbell = Doorbell::Direct(index),
                Doorbell::Rails { .. } => self.wait.doorbell = Doorbell::Rails { bounded: true },
                Doorbell::None => {}
            }
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
            for &index in &group.transports {
                let standing_in = Disconnected::replacing(self.transports[index].as_ref());
                self.transports[index] = Box::new(standing_in);
                self.polled.retain(|&polled| polled != index);
                self.joined_doorbells.retain(|&doorbell| doorbell != index);
                self.joined_sockets.retain(|&socket| socket != index);
                if self.wait.doorbell == Doorbell::Direct(index) {
                    self.wait.doorbell = match self.joined_doorbells.first().copied() {
                        Some(next) => {
                            self.joined_doorbells.remove(0);
                            Doorbell::Direct(next)
                        }
                        None => Doorbell::None,
                    };
                }
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
