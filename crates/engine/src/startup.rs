//! Start-up: every transport is connected through the bootstrap (collective over the job), each
//! peer gets its endpoint (its control lane: self, a direct transport, or the rails; its eager
//! limit), and the rail set takes over the rail transports with their profiles.

use std::time::Duration;

use braid_config::Config;
use braid_lane::{Capabilities, PeerId};
use braid_pmi::Bootstrap;
use braid_strategy::{ProtocolPolicy, Route, Router};
use braid_transport::selfloop::SelfTransport;
use braid_transport::shm::ShmTransport;
use braid_transport::Transport;

use crate::counters::Counters;
use crate::endpoint::{ControlLane, Endpoint};
use crate::frame::EAGER_HEADER_MAX;
use crate::links::LinkProfiles;
use crate::matching::{Matching, Probed};
use crate::progress::{Doorbell, WaitPolicy};
use crate::rails::Network;
use crate::requests::Requests;
use crate::{node, sampling, Core, Engine, EngineError, SELF_TRANSPORT};

/// Where the rails' profiles come from at start-up.
enum RailProfiles {
    /// Each rail transport's own profile (tests, callers that measured them).
    FromTransports,
    /// The profile cache, else a short sample shared through the bootstrap.
    CachedOrSampled(Vec<sampling::RailCache>),
}

impl Engine {
    /// Wires up every transport through `bootstrap` (collective over the job): self, shared
    /// memory (unless `BRAID_SHM=off`) and one TCP transport per network rail. Rail profiles come
    /// from the profile cache, or from a short sample at start-up.
    pub fn new(config: &Config, bootstrap: Box<dyn Bootstrap>) -> Result<Engine, EngineError> {
        let mut direct: Vec<Box<dyn Transport>> = Vec::new();
        if config.shm {
            let shm = ShmTransport::new(config).map_err(|error| EngineError::Init(format!("shared-memory transport: {error}")))?;
            direct.push(Box::new(shm));
        }
        let (rails, caches) = sampling::tcp_rails(config)?;
        Engine::build(config, bootstrap, Box::new(SelfTransport::new()), direct, rails, RailProfiles::CachedOrSampled(caches))
    }

    /// Builds an engine over the given transports: `self_transport` carries messages to the own
    /// rank, every other rank goes to the first of `transports` that reaches it. Connects them all
    /// in order (collective).
    pub fn with_transports(config: &Config, bootstrap: Box<dyn Bootstrap>, self_transport: Box<dyn Transport>, transports: Vec<Box<dyn Transport>>) -> Result<Engine, EngineError> {
        Engine::build(config, bootstrap, self_transport, transports, Vec::new(), RailProfiles::FromTransports)
    }

    /// Like [`Engine::with_transports`], plus network `rails`: a rank that none of `transports`
    /// reaches but a rail does is served by the rail set, with each rail's own
    /// [`Transport::profile`] (no sampling).
    pub fn with_rails(
        config: &Config,
        bootstrap: Box<dyn Bootstrap>,
        self_transport: Box<dyn Transport>,
        transports: Vec<Box<dyn Transport>>,
        rails: Vec<Box<dyn Transport>>,
    ) -> Result<Engine, EngineError> {
        Engine::build(config, bootstrap, self_transport, transports, rails, RailProfiles::FromTransports)
    }

    fn build(
        config: &Config,
        mut bootstrap: Box<dyn Bootstrap>,
        self_transport: Box<dyn Transport>,
        transports: Vec<Box<dyn Transport>>,
        rails: Vec<Box<dyn Transport>>,
        profiles: RailProfiles,
    ) -> Result<Engine, EngineError> {
        let rank = bootstrap.rank();
        let size = bootstrap.size();
        let node = node::exchange(bootstrap.as_mut())?;
        // A real job that lives on one node with shared memory needs no network: no listening
        // socket. Every rank sees the same node list, so all decide alike. (In-process test jobs
        // share one node identity while emulating several nodes, so they keep their rails.)
        let single_node = node.ranks.len() == size as usize;
        let (rails, profiles) = match (config.shm && single_node, profiles) {
            (true, RailProfiles::CachedOrSampled(_)) => (Vec::new(), RailProfiles::FromTransports),
            (_, profiles) => (rails, profiles),
        };
        let rail_base = 1 + transports.len();
        let mut all = Vec::with_capacity(rail_base + rails.len());
        all.push(self_transport);
        all.extend(transports);
        all.extend(rails);
        for transport in &mut all {
            transport.connect(bootstrap.as_mut()).map_err(|error| EngineError::Init(format!("{} transport: {error}", transport.name())))?;
        }
        let router = Router::with_rails(rank, size, SELF_TRANSPORT, 1..rail_base, rail_base..all.len(), |transport, peer| all[transport].reaches(peer))
            .map_err(|unroutable| EngineError::Unreachable { rank: unroutable.rank, reason: "no shared memory with it and no network rail reaches it (see BRAID_RAILS and BRAID_SHM)".into() })?;
        let rail_peers: Vec<PeerId> = router.rail_peers().collect();
        let mut links = all.split_off(rail_base);
        let rail_profiles = match profiles {
            RailProfiles::FromTransports => links.iter().map(|rail| rail.profile().clone()).collect(),
            RailProfiles::CachedOrSampled(caches) => {
                let leader = node.ranks.first() == Some(&rank);
                sampling::startup_profiles(config, bootstrap.as_mut(), &mut links, &caches, &rail_peers, leader)?
            }
        };
        let mut link_profiles = LinkProfiles::new(all.get(1).map(|node_transport| node_transport.profile()), &rail_profiles);
        let polls_rails = !rail_peers.is_empty();
        let rail_count = links.len();
        let policy = ProtocolPolicy::from_config(config);
        let net = Network::new(config, &policy, rank, rail_profiles, links, rail_peers, &node);
        let caps: Vec<Capabilities> = all.iter().map(|transport| transport.capabilities()).collect();
        let carriers: Vec<usize> = (0..rail_base).filter(|&t| router.peers_of(t).any(|peer| peer != rank)).collect();
        // A single direct transport's doorbell is rung by every peer; the rails' doorbells are
        // slept on together, and with direct peers too only for short sleeps.
        let doorbell = match carriers.as_slice() {
            [only] if !polls_rails && caps[*only].wakes_receiver => Doorbell::Direct(*only),
            _ if polls_rails && net.can_sleep() => Doorbell::Rails { bounded: !carriers.is_empty() },
            _ => Doorbell::None,
        };
        let wait = WaitPolicy {
            mode: config.wait,
            spin_count: config.spin_count,
            yield_window: Duration::from_micros(config.yield_us.into()),
            rail_spin_window: Duration::from_micros(config.rail_spin_us.into()),
            reply_spin_window: Duration::from_micros(config.rail_reply_spin_us.into()),
            timeout: Duration::from_millis(config.block_timeout_ms.into()),
            oversubscribed: node.oversubscribed,
            doorbell,
        };
        link_profiles.awake_ns = match wait.awake_before_sleep() {
            Duration::MAX => f64::INFINITY,
            awake => awake.as_nanos() as f64,
        };
        let link_profiles = crate::links::agree(bootstrap.as_mut(), &node.node_of, node.oversubscribed, link_profiles)?;
        if config.debug {
            let names: Vec<&str> = (0..size)
                .map(|peer| match router.route(peer) {
                    Route::Direct(transport) => all[transport].name(),
                    Route::Rails => "rails",
                })
                .collect();
            debug_line!(
                rank,
                "routes {names:?}, node ranks {:?}, oversubscribed {}, wait {:?}, sleeps on {}, {}",
                node.ranks,
                node.oversubscribed,
                config.wait,
                match doorbell {
                    Doorbell::Direct(t) => all[t].name(),
                    Doorbell::Rails { bounded: false } => "the rails",
                    Doorbell::Rails { bounded: true } => "the rails (bounded sleeps)",
                    Doorbell::None => "nothing",
                },
                net.describe()
            );
        }
        // Each lane's eager limit, from the protocol policy: a direct transport's from its frame
        // size, the rails' from their profiles (computed by the rail set); both capped by
        // BRAID_EAGER_MAX.
        let endpoints = (0..size)
            .map(|peer| match router.route(peer) {
                Route::Direct(transport) => Endpoint::new(ControlLane::Direct(transport), policy.eager_limit(&caps[transport], EAGER_HEADER_MAX)),
                Route::Rails => Endpoint::new(ControlLane::Rails, net.eager_limit),
            })
            .collect();
        let core = Core {
            rank,
            size,
            endpoints,
            caps,
            policy,
            requests: Requests::default(),
            matching: Matching::default(),
            backlog_len: 0,
            streams: Vec::new(),
            reads: Vec::new(),
            writes: Vec::new(),
            spare_payloads: Vec::new(),
            probed: Probed::default(),
            net,
            failure: None,
            debug: config.debug,
            rail_arrivals: Default::default(),
            counters: Counters::new(size as usize, rail_base, rail_count),
            events: crate::events::EventLog::new(std::time::Instant::now(), crate::events::EVENT_LOG_CAPACITY),
            unexpected_marks: crate::events::GrowthMarks::new(config.unexpected_mark as u64),
        };
        let polled = std::iter::once(0).chain(carriers.iter().copied().filter(|&t| t != 0)).collect();
        Ok(Engine {
            transports: all,
            polled,
            polls_rails,
            core,
            bootstrap,
            wait,
            node,
            links: link_profiles,
            agents: Vec::new(),
            moved_steps: 0,
            joined: Default::default(),
            joined_doorbells: Vec::new(),
            joined_sockets: Vec::new(),
            peer_watch: crate::peer_watch::PeerWatch::new(config.peer_check_ms, std::time::Instant::now(), (size > 1).then(braid_sys::process::parent_pid)),
        })
    }
}
