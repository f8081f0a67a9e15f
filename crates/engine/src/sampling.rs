//! Rail sampling (Brunet, Trahay and Denis 2008): a ping-pong between two ranks over one rail at sizes 0, 1, 2, 4, ...,
//! the one-way time of each size being half the median round trip. The result is the rail's
//! [`Profile`], cached per rail identity and reused.
//!
//! At start-up, a rail without a cached profile gets a short sample within `BRAID_SAMPLE_MS`:
//! rank 0 and the first rank it reaches over the rails measure, rank 0 publishes the profiles
//! through the bootstrap, and every rank uses them (node leaders cache them). `braid sample`
//! runs the full range with [`ping_pong`] directly.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use braid_config::Config;
use braid_lane::{PeerId, Profile, Sample};
use braid_pmi::Bootstrap;
use braid_transport::tcp::{self, TcpTransport};
use braid_transport::{profile_cache, Incoming, SendOutcome, Transport, TransportError};

use crate::frame::SAMPLE;
use crate::EngineError;

/// Largest size of a full sample.
pub const FULL_LARGEST: usize = 16 << 20;
/// Round trips per size of a full sample (the median is kept).
pub const FULL_REPETITIONS: usize = 5;
/// Round trips per size of the start-up sample.
const STARTUP_REPETITIONS: usize = 3;

const PING: u8 = 0;
const PONG: u8 = 1;
const END: u8 = 2;
const SAMPLE_HEADER: usize = 10;

/// What one sampling run measures.
#[derive(Debug, Clone, Copy)]
pub struct SamplePlan {
    /// Sizes 0, 1, 2, 4, ... up to this one.
    pub largest: usize,
    pub repetitions: usize,
    /// No new size is started after this instant (the profile then ends at the last size done).
    pub deadline: Option<Instant>,
}

/// The sizes of a sample: 0 and every power of two up to `largest`.
pub fn sizes(largest: usize) -> Vec<usize> {
    std::iter::once(0).chain((0..usize::BITS).map(|shift| 1usize << shift).take_while(|&size| size <= largest)).collect()
}

fn sample_header(op: u8, size: usize) -> [u8; SAMPLE_HEADER] {
    let mut header = [0u8; SAMPLE_HEADER];
    header[0] = SAMPLE;
    header[1] = op;
    header[2..].copy_from_slice(&(size as u64).to_le_bytes());
    header
}

/// One side of the ping-pong over one transport.
struct Pinger<'a> {
    transport: &'a mut dyn Transport,
    peer: PeerId,
    /// Bytes of the message being received, its size and op; `None` until its first frame.
    receiving: Option<(u8, usize, usize)>,
    complete: Option<(u8, usize)>,
    failure: Option<String>,
    buffer: Vec<u8>,
}

impl Pinger<'_> {
    fn fail(&self, why: impl std::fmt::Display) -> EngineError {
        EngineError::Init(format!("sampling {} with rank {}: {why}", self.transport.name(), self.peer))
    }

    /// Sends one message of `size` bytes, cut to the transport's frame size.
    fn send(&mut self, op: u8, size: usize) -> Result<(), EngineError> {
        let max = self.transport.capabilities().max_payload.max(1);
        if self.buffer.len() < size.min(max) {
            self.buffer.resize(size.min(max), 0x5a);
        }
        let header = sample_header(op, size);
        let mut sent = 0;
        loop {
            let len = (size - sent).min(max);
            match self.transport.try_send(self.peer, &header, &[std::io::IoSlice::new(&self.buffer[..len])]) {
                Ok(SendOutcome::Sent) => {
                    sent += len;
                    if sent == size {
                        return Ok(());
                    }
                }
                Ok(SendOutcome::WouldBlock) => self.poll()?,
                Err(error) => return Err(self.fail(error)),
            }
        }
    }

    fn poll(&mut self) -> Result<(), EngineError> {
        let peer = self.peer;
        let (receiving, complete, failure) = (&mut self.receiving, &mut self.complete, &mut self.failure);
        self.transport.poll(&mut |incoming: Incoming<'_>| {
            let header = incoming.header;
            if incoming.peer != peer || header.len() != SAMPLE_HEADER || header[0] != SAMPLE {
                failure.get_or_insert(format!("unexpected frame from rank {} while sampling", incoming.peer));
                return;
            }
            let size = u64::from_le_bytes(header[2..].try_into().expect("8 bytes")) as usize;
            let (op, got) = match *receiving {
                Some((op, expected, got)) if op == header[1] && expected == size => (op, got),
                _ => (header[1], 0),
            };
            let got = got + incoming.payload.len();
            if got >= size {
                *receiving = None;
                *complete = Some((op, size));
            } else {
                *receiving = Some((op, size, got));
            }
        });
        if let Some(why) = self.failure.take() {
            return Err(self.fail(why));
        }
        if !self.transport.reaches(self.peer) {
            return Err(self.fail(TransportError::Unreachable(self.peer)));
        }
        Ok(())
    }

    /// Waits for the next complete message; returns its op and size.
    fn receive(&mut self) -> Result<(u8, usize), EngineError> {
        loop {
            if let Some(message) = self.complete.take() {
                return Ok(message);
            }
            self.poll()?;
        }
    }
}

/// Runs the ping-pong with `peer` over `transport`; both ranks call it, the `initiator` measures
/// and returns the profile (the other side returns `None` once the initiator is done).
/// `progress(size, one_way_nanos)` is called on the initiator after each size.
pub fn ping_pong(transport: &mut dyn Transport, peer: PeerId, initiator: bool, plan: &SamplePlan, mut progress: impl FnMut(usize, f64)) -> Result<Option<Profile>, EngineError> {
    let mut pinger = Pinger { transport, peer, receiving: None, complete: None, failure: None, buffer: Vec::new() };
    if !initiator {
        loop {
            match pinger.receive()? {
                (PING, size) => pinger.send(PONG, size)?,
                (END, _) => return Ok(None),
                (op, _) => return Err(pinger.fail(format!("unexpected sampling message {op}"))),
            }
        }
    }
    // One unmeasured round trip opens the path (connection set-up, caches).
    pinger.send(PING, 0)?;
    pinger.receive()?;
    let mut samples: Vec<Sample> = Vec::new();
    for size in sizes(plan.largest) {
        // The next size takes about twice the last one's time, per round trip and repetition.
        let estimate = samples.last().map_or(0.0, |last| last.nanos * 4.0 * plan.repetitions.max(1) as f64);
        let late = plan.deadline.is_some_and(|deadline| Instant::now() + Duration::from_nanos(estimate as u64) > deadline);
        if late && samples.len() >= 2 {
            break;
        }
        let mut round_trips = Vec::with_capacity(plan.repetitions);
        for _ in 0..plan.repetitions.max(1) {
            let start = Instant::now();
            pinger.send(PING, size)?;
            match pinger.receive()? {
                (PONG, echoed) if echoed == size => {}
                (op, echoed) => return Err(pinger.fail(format!("expected a {size}-byte pong, got message {op} of {echoed} bytes"))),
            }
            round_trips.push(start.elapsed().as_nanos() as f64);
        }
        round_trips.sort_by(f64::total_cmp);
        let one_way = round_trips[round_trips.len() / 2] / 2.0;
        // Noise must not make a larger message predicted faster than a smaller one.
        let nanos = samples.last().map_or(one_way, |last| one_way.max(last.nanos));
        samples.push(Sample { size, nanos });
        progress(size, nanos);
    }
    pinger.send(END, 0)?;
    Ok(Some(Profile::from_samples(samples)))
}

/// Where one rail's profile is cached, and whether the cache held one.
#[derive(Debug, Clone)]
pub struct RailCache {
    pub file: PathBuf,
    pub measured: bool,
}

/// Rail transports, and where each one's profile is cached (same order).
pub type Rails = (Vec<Box<dyn Transport>>, Vec<RailCache>);

/// One TCP transport per rail of `config.rails`, and where their profiles are cached.
pub fn tcp_rails(config: &Config) -> Result<Rails, EngineError> {
    let rails = tcp::rails(&config.rails).map_err(|error| EngineError::Init(format!("network rails: {error}")))?;
    let mut transports: Vec<Box<dyn Transport>> = Vec::with_capacity(rails.len());
    let mut caches = Vec::with_capacity(rails.len());
    for rail in rails {
        let name = rail.name.clone();
        let transport = TcpTransport::new(config, rail).map_err(|error| EngineError::Init(format!("rail {name}: {error}")))?;
        caches.push(RailCache { file: transport.profile_file().to_path_buf(), measured: transport.profile_is_measured() });
        transports.push(Box::new(transport));
    }
    Ok((transports, caches))
}

/// A profile as one bootstrap value: `nanos` per size in size order, comma-separated.
pub fn encode_profile(profile: &Profile) -> String {
    profile.samples().iter().map(|sample| format!("{:.0}", sample.nanos)).collect::<Vec<_>>().join(",")
}

pub fn decode_profile(text: &str) -> Option<Profile> {
    let all_sizes = sizes(usize::MAX);
    let samples: Option<Vec<Sample>> =
        text.split(',').zip(all_sizes).map(|(nanos, size)| nanos.parse::<f64>().ok().filter(|nanos| nanos.is_finite() && *nanos >= 0.0).map(|nanos| Sample { size, nanos })).collect();
    samples.filter(|samples| !samples.is_empty() && samples.len() == text.split(',').count()).map(Profile::from_samples)
}

fn bootstrap_error(error: braid_pmi::BootstrapError) -> EngineError {
    EngineError::Init(format!("sharing rail profiles: {error}"))
}

/// Start-up profiles of `rails` (connected; `caches` in the same order), collective over the
/// job: rails rank 0 has no cached profile for are sampled by rank 0 and the first of its
/// `rail_peers` within `config.sample_ms`, and shared; `leader` ranks cache what was sampled.
pub(crate) fn startup_profiles(
    config: &Config,
    bootstrap: &mut dyn Bootstrap,
    rails: &mut [Box<dyn Transport>],
    caches: &[RailCache],
    rail_peers: &[PeerId],
    leader: bool,
) -> Result<Vec<Profile>, EngineError> {
    let mut profiles: Vec<Profile> = rails.iter().map(|rail| rail.profile().clone()).collect();
    if rails.is_empty() {
        return Ok(profiles);
    }
    let rank = bootstrap.rank();
    const PLAN_KEY: &str = "braid-sample-plan";
    // Every node caches its own rails (their identities differ), so a rail is sampled when any
    // rank lacks its profile.
    let own_missing: Vec<String> = (0..rails.len()).filter(|&rail| !caches[rail].measured).map(|rail| rail.to_string()).collect();
    // PMI values may not be empty.
    let own_missing = if own_missing.is_empty() { "none".to_string() } else { own_missing.join(",") };
    bootstrap.put(&format!("braid-sample-missing-{rank}"), &own_missing).map_err(bootstrap_error)?;
    bootstrap.fence().map_err(bootstrap_error)?;
    if rank == 0 {
        let mut missing: Vec<usize> = Vec::new();
        for peer in 0..bootstrap.size() {
            let text = bootstrap.get(&format!("braid-sample-missing-{peer}")).map_err(bootstrap_error)?;
            missing.extend(text.split(',').filter_map(|rail| rail.parse::<usize>().ok()).filter(|&rail| rail < rails.len()));
        }
        missing.sort_unstable();
        missing.dedup();
        let missing: Vec<String> = missing.iter().map(usize::to_string).collect();
        let plan = match rail_peers.first() {
            Some(partner) if !missing.is_empty() => format!("{partner}:{}", missing.join(",")),
            _ => "none".to_string(),
        };
        bootstrap.put(PLAN_KEY, &plan).map_err(bootstrap_error)?;
    }
    bootstrap.fence().map_err(bootstrap_error)?;
    let plan = bootstrap.get(PLAN_KEY).map_err(bootstrap_error)?;
    let Some((partner, missing)) = plan.split_once(':') else { return Ok(profiles) };
    let partner: PeerId = partner.parse().map_err(|_| EngineError::Init(format!("malformed sampling plan {plan:?}")))?;
    let missing: Vec<usize> = missing.split(',').filter_map(|rail| rail.parse().ok()).filter(|&rail| rail < rails.len()).collect();
    if rank == 0 || rank == partner {
        let budget = Duration::from_millis(config.sample_ms.into()) / missing.len().max(1) as u32;
        for &rail in &missing {
            let plan = SamplePlan { largest: FULL_LARGEST, repetitions: STARTUP_REPETITIONS, deadline: Some(Instant::now() + budget) };
            let peer = if rank == 0 { partner } else { 0 };
            if let Some(profile) = ping_pong(rails[rail].as_mut(), peer, rank == 0, &plan, |_, _| {})? {
                if config.debug {
                    debug_line!(0, "sampled {} at {} sizes", rails[rail].name(), profile.samples().len());
                }
                bootstrap.put(&format!("braid-profile-{rail}"), &encode_profile(&profile)).map_err(bootstrap_error)?;
            }
        }
    }
    bootstrap.fence().map_err(bootstrap_error)?;
    for &rail in missing.iter().filter(|&&rail| !caches[rail].measured) {
        let text = bootstrap.get(&format!("braid-profile-{rail}")).map_err(bootstrap_error)?;
        let profile = decode_profile(&text).ok_or_else(|| EngineError::Init(format!("rank 0 shared a malformed profile {text:?}")))?;
        if leader {
            if let Err(error) = profile_cache::save(&profile, &caches[rail].file) {
                if config.debug {
                    debug_line!(rank, "cannot cache the profile of {}: {error}", rails[rail].name());
                }
            }
        }
        profiles[rail] = profile;
    }
    Ok(profiles)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_zero_then_powers_of_two() {
        assert_eq!(sizes(8), vec![0, 1, 2, 4, 8]);
        assert_eq!(sizes(0), vec![0]);
        assert_eq!(sizes(FULL_LARGEST).len(), 26);
    }

    #[test]
    fn profiles_survive_the_bootstrap_encoding() {
        let profile = Profile::from_model(25_000.0, 1.25e8, 1 << 20);
        let text = encode_profile(&profile);
        assert!(text.len() <= 1024 && !text.contains(' ') && !text.contains('='));
        let decoded = decode_profile(&text).unwrap();
        assert_eq!(decoded.samples().len(), profile.samples().len());
        for (a, b) in decoded.samples().iter().zip(profile.samples()) {
            assert_eq!(a.size, b.size);
            assert!((a.nanos - b.nanos).abs() <= 0.5);
        }
        assert!(decode_profile("1,x,3").is_none());
        assert!(decode_profile("").is_none());
        assert!(decode_profile("5,-1").is_none());
    }
}
