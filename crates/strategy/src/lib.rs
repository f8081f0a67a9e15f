//! Strategies: I/O-free decisions about how a message travels (which transport, which protocol,
//! and for multirail, what split). They receive every fact they need, clocks included.
//!
//! Following the layered design of NewMadeleine (Brunet, Trahay and Denis 2008, section III-B), the engine asks the
//! strategy at its decision points — a send is posted, a rendezvous request is matched — and then
//! carries the decision out. Nothing here touches a transport or the system.

pub mod multirail;

use std::fmt;

use braid_config::{CmaMode, Config};
use braid_lane::{Capabilities, PeerId};

/// A rank that no transport reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unroutable {
    pub rank: PeerId,
}

impl fmt::Display for Unroutable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no transport reaches rank {} (no shared memory with it and no network rail to it)", self.rank)
    }
}

impl std::error::Error for Unroutable {}

/// How traffic to one peer travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// Every frame through this one transport (an index into the engine's transport list).
    Direct(usize),
    /// Through the network rails: control frames on one rail, rendezvous payloads split over them.
    Rails,
}

/// Which transport (or the rail set) carries each peer's traffic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Router {
    routes: Vec<Route>,
}

impl Router {
    /// Routes `own_rank` to `self_transport` and every other rank of `0..size` to the first of
    /// the `transport_count` transports for which `reaches(transport, rank)` holds.
    pub fn new(own_rank: PeerId, size: u32, self_transport: usize, transport_count: usize, reaches: impl Fn(usize, PeerId) -> bool) -> Result<Router, Unroutable> {
        Router::with_rails(own_rank, size, self_transport, 0..transport_count, 0..0, reaches)
    }

    /// Like [`Router::new`] over the `direct` transports; a rank that none of them reaches but
    /// one of the `rails` does is routed over the rail set.
    pub fn with_rails(
        own_rank: PeerId,
        size: u32,
        self_transport: usize,
        direct: std::ops::Range<usize>,
        rails: std::ops::Range<usize>,
        reaches: impl Fn(usize, PeerId) -> bool,
    ) -> Result<Router, Unroutable> {
        let routes = (0..size)
            .map(|rank| {
                if rank == own_rank {
                    Ok(Route::Direct(self_transport))
                } else if let Some(transport) = direct.clone().find(|&transport| reaches(transport, rank)) {
                    Ok(Route::Direct(transport))
                } else if rails.clone().any(|rail| reaches(rail, rank)) {
                    Ok(Route::Rails)
                } else {
                    Err(Unroutable { rank })
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Router { routes })
    }

    /// How traffic to `peer` (a rank of the job) travels.
    #[inline]
    pub fn route(&self, peer: PeerId) -> Route {
        self.routes[peer as usize]
    }

    /// The ranks routed through direct transport `transport`, in rank order.
    pub fn peers_of(&self, transport: usize) -> impl Iterator<Item = PeerId> + '_ {
        self.routes.iter().enumerate().filter(move |(_, &route)| route == Route::Direct(transport)).map(|(rank, _)| rank as PeerId)
    }

    /// The ranks routed over the rails, in rank order.
    pub fn rail_peers(&self) -> impl Iterator<Item = PeerId> + '_ {
        self.routes.iter().enumerate().filter(|(_, &route)| route == Route::Rails).map(|(rank, _)| rank as PeerId)
    }
}

/// How the bytes of one message travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// Payload travels with the matching information; the sender is done once it is posted.
    Eager,
    /// The sender announces the message; the receiver fetches it once matched.
    Rendezvous,
}

/// How a matched rendezvous moves its bytes, decided by the receiver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RendezvousPath {
    /// The receiver reads the sender's buffer directly (CMA), `chunk` bytes per read.
    SingleCopy { chunk: usize },
    /// The sender streams chunks through the transport (see [`ProtocolPolicy::pipeline_chunk`]);
    /// the receiver copies them into place.
    Pipeline,
}

/// Protocol thresholds from the configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProtocolPolicy {
    eager_max: usize,
    remote_read_allowed: bool,
    remote_read_chunk: usize,
    share_min: usize,
    share_max: usize,
    pipeline_max: usize,
}

impl ProtocolPolicy {
    pub fn from_config(config: &Config) -> ProtocolPolicy {
        ProtocolPolicy {
            eager_max: config.eager_max,
            remote_read_allowed: config.cma == CmaMode::Auto,
            remote_read_chunk: config.cma_chunk.max(1),
            share_min: config.cma_share_min,
            share_max: config.cma_share_max,
            pipeline_max: config.shm_pipeline_max,
        }
    }

    /// Largest message sent eagerly to a peer reached directly through a transport with `caps`,
    /// whose frames carry a header of `header_len` bytes: BRAID_EAGER_MAX, or less if one frame
    /// cannot carry that much.
    #[inline]
    pub fn eager_limit(&self, caps: &Capabilities, header_len: usize) -> usize {
        self.eager_max.min(caps.max_payload.saturating_sub(header_len))
    }

    /// Largest message sent eagerly to a peer reached over the network rails: where their
    /// profiles say a rendezvous split starts to pay (`profile_threshold`, see
    /// [`multirail::rendezvous_threshold`]), capped by BRAID_EAGER_MAX and by what one control
    /// frame carries (`frame_room`).
    #[inline]
    pub fn rails_eager_limit(&self, profile_threshold: usize, frame_room: usize) -> usize {
        self.eager_max.min(profile_threshold).min(frame_room)
    }

    /// Protocol for a `len`-byte message.
    #[inline]
    pub fn choose(&self, len: usize, caps: &Capabilities, header_len: usize) -> Protocol {
        if len <= self.eager_limit(caps, header_len) {
            Protocol::Eager
        } else {
            Protocol::Rendezvous
        }
    }

    /// How a matched rendezvous from a peer moves: single copy when the transport can read
    /// remotely, the configuration allows it and the kernel has not refused it for that peer.
    /// A message of at most BRAID_SHM_PIPELINE_MAX bytes (`len`) streams through the pool even so.
    pub fn rendezvous_path(&self, caps: &Capabilities, remote_read_refused: bool, len: usize) -> RendezvousPath {
        if caps.remote_read && self.remote_read_allowed && !remote_read_refused && len > self.pipeline_max {
            RendezvousPath::SingleCopy { chunk: self.remote_read_chunk }
        } else {
            RendezvousPath::Pipeline
        }
    }

    /// Bytes per remote write of the sender's share of a shared copy (the read chunk).
    pub fn remote_write_chunk(&self) -> usize {
        self.remote_read_chunk
    }

    /// Where a single-copy receive of `len` bytes splits its copy with the sender, if it does: the
    /// receiver reads `[0, split)` while the sender writes `[split, len)`. Only once single copy is
    /// known to work with that peer (`confirmed`), so a refusal never meets a shared copy.
    pub fn shared_copy_split(&self, len: usize, confirmed: bool) -> Option<usize> {
        if !confirmed || self.share_min == 0 || len < self.share_min || len > self.share_max {
            return None;
        }
        // Whole pages: both copies stay large and aligned alike.
        Some((len / 2) & !4095).filter(|&split| split > 0)
    }

    /// Bytes per pipeline frame: as much as one frame with a `header_len`-byte header may carry.
    pub fn pipeline_chunk(&self, caps: &Capabilities, header_len: usize) -> usize {
        caps.max_payload.saturating_sub(header_len).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(max_payload: usize, remote_read: bool) -> Capabilities {
        Capabilities { max_payload, max_inline: 1024, remote_read, wakes_receiver: true }
    }

    #[test]
    fn own_rank_goes_to_self_and_others_to_the_first_transport_reaching_them() {
        // Transport 0 is self; 1 reaches ranks 1 and 2; 2 reaches ranks 2 and 3.
        let reaches = |transport: usize, rank: u32| match transport {
            1 => rank == 1 || rank == 2,
            2 => rank == 2 || rank == 3,
            _ => false,
        };
        let router = Router::new(0, 4, 0, 3, reaches).unwrap();
        let routes: Vec<Route> = (0..4).map(|r| router.route(r)).collect();
        assert_eq!(routes, [0, 1, 1, 2].map(Route::Direct));
        assert_eq!(router.peers_of(1).collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(router.rail_peers().count(), 0);
    }

    #[test]
    fn ranks_only_the_rails_reach_are_routed_over_the_rail_set() {
        // 0 is self, 1 shared memory (reaches rank 1), 2 and 3 rails (reach ranks 2 and 3; rail 3
        // also claims rank 1, which shared memory keeps).
        let reaches = |transport: usize, rank: u32| match transport {
            1 => rank == 1,
            2 => rank == 2,
            3 => rank == 1 || rank == 3,
            _ => false,
        };
        let router = Router::with_rails(0, 4, 0, 1..2, 2..4, reaches).unwrap();
        let routes: Vec<Route> = (0..4).map(|r| router.route(r)).collect();
        assert_eq!(routes, vec![Route::Direct(0), Route::Direct(1), Route::Rails, Route::Rails]);
        assert_eq!(router.rail_peers().collect::<Vec<_>>(), vec![2, 3]);
        assert_eq!(router.peers_of(1).collect::<Vec<_>>(), vec![1]);
        let error = Router::with_rails(0, 5, 0, 1..2, 2..4, reaches).unwrap_err();
        assert_eq!(error, Unroutable { rank: 4 });
    }

    #[test]
    fn an_unreachable_rank_is_named() {
        let error = Router::new(1, 3, 0, 2, |transport, rank| transport == 1 && rank == 0).unwrap_err();
        assert_eq!(error, Unroutable { rank: 2 });
        assert!(error.to_string().contains("rank 2"));
    }

    #[test]
    fn eager_up_to_the_smaller_of_the_setting_and_the_transport_room() {
        let policy = ProtocolPolicy::from_config(&Config { eager_max: 32 * 1024, ..Config::default() });
        let big = caps(64 * 1024, true);
        assert_eq!(policy.choose(32 * 1024, &big, 40), Protocol::Eager);
        assert_eq!(policy.choose(32 * 1024 + 1, &big, 40), Protocol::Rendezvous);
        let small = caps(4096, true);
        assert_eq!(policy.eager_limit(&small, 40), 4096 - 40);
        assert_eq!(policy.choose(4096 - 40, &small, 40), Protocol::Eager);
        assert_eq!(policy.choose(4096 - 39, &small, 40), Protocol::Rendezvous);
        let unlimited = caps(usize::MAX, false);
        assert_eq!(policy.choose(32 * 1024 + 1, &unlimited, 40), Protocol::Rendezvous);
        assert_eq!(policy.choose(0, &caps(0, false), 40), Protocol::Eager);
    }

    #[test]
    fn rails_go_eager_up_to_the_profile_threshold_capped_by_the_setting_and_the_frame() {
        let policy = ProtocolPolicy::from_config(&Config { eager_max: 32 * 1024, ..Config::default() });
        assert_eq!(policy.rails_eager_limit(256 * 1024, 1 << 20), 32 * 1024);
        assert_eq!(policy.rails_eager_limit(8192, 1 << 20), 8192);
        assert_eq!(policy.rails_eager_limit(256 * 1024, 16 * 1024), 16 * 1024);
        let none = ProtocolPolicy::from_config(&Config { eager_max: 0, ..Config::default() });
        assert_eq!(none.rails_eager_limit(256 * 1024, 1 << 20), 0);
    }

    #[test]
    fn copies_are_shared_from_the_threshold_on_a_confirmed_peer_at_a_page_boundary() {
        let policy = ProtocolPolicy::from_config(&Config { cma_share_min: 256 * 1024, ..Config::default() });
        assert_eq!(policy.shared_copy_split(1 << 20, true), Some(1 << 19));
        assert_eq!(policy.shared_copy_split((1 << 20) + 3 * 4096 + 7, true), Some((1 << 19) + 4096));
        assert_eq!(policy.shared_copy_split(1 << 20, false), None);
        assert_eq!(policy.shared_copy_split(256 * 1024 - 1, true), None);
        assert_eq!(policy.shared_copy_split(8 << 20, true), Some(4 << 20));
        assert_eq!(policy.shared_copy_split((8 << 20) + 1, true), None);
        let never = ProtocolPolicy::from_config(&Config { cma_share_min: 0, ..Config::default() });
        assert_eq!(never.shared_copy_split(1 << 30, true), None);
        let tiny = ProtocolPolicy::from_config(&Config { cma_share_min: 1, ..Config::default() });
        assert_eq!(tiny.shared_copy_split(8191, true), None);
    }

    #[test]
    fn single_copy_only_when_offered_allowed_and_not_refused() {
        let auto = ProtocolPolicy::from_config(&Config { cma_chunk: 1 << 20, ..Config::default() });
        let off = ProtocolPolicy::from_config(&Config { cma: CmaMode::Off, ..Config::default() });
        let cma = caps(64 * 1024, true);
        let big = 1 << 20;
        assert_eq!(auto.rendezvous_path(&cma, false, big), RendezvousPath::SingleCopy { chunk: 1 << 20 });
        assert_eq!(auto.rendezvous_path(&cma, true, big), RendezvousPath::Pipeline);
        assert_eq!(auto.rendezvous_path(&caps(8192, false), false, big), RendezvousPath::Pipeline);
        assert_eq!(off.rendezvous_path(&cma, false, big), RendezvousPath::Pipeline);
        // One pool buffer's worth streams through the pool; one byte more is read directly.
        assert_eq!(auto.rendezvous_path(&cma, false, 64 * 1024), RendezvousPath::Pipeline);
        assert_eq!(auto.rendezvous_path(&cma, false, 64 * 1024 + 1), RendezvousPath::SingleCopy { chunk: 1 << 20 });
        let always = ProtocolPolicy::from_config(&Config { shm_pipeline_max: 0, ..Config::default() });
        assert_eq!(always.rendezvous_path(&cma, false, 40 * 1024), RendezvousPath::SingleCopy { chunk: Config::default().cma_chunk });
        assert_eq!(auto.pipeline_chunk(&cma, 13), 64 * 1024 - 13);
        assert_eq!(auto.pipeline_chunk(&caps(usize::MAX, false), 13), usize::MAX - 13);
    }
}
