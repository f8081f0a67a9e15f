//! What one rank's profiler writes at MPI_Finalize: DIR/rank-N.json (profiler/braid_profiler.c),
//! schema `braid-profile-rank/1`.

use serde::Deserialize;

pub const RANK_SCHEMA: &str = "braid-profile-rank/1";

/// Message sizes in power-of-two buckets: bucket 0 holds empty messages, bucket k sizes in
/// [2^(k-1), 2^k), as Open MPI's monitoring counts them.
pub const SIZE_BUCKETS: usize = 66;

#[derive(Debug, Clone, Deserialize)]
pub struct RankFile {
    pub schema: String,
    pub library: String,
    pub rank: usize,
    pub size: usize,
    pub pid: u32,
    pub node: String,
    pub cpus_allowed: Vec<u32>,
    pub cpus_seen: Vec<u32>,
    pub wall_time: f64,
    pub mpi_time: f64,
    /// Time waiting ranks yielded or slept (Braid's engine only).
    pub blocked_time: Option<f64>,
    /// "engine": the per-peer matrices are what Braid's engine counted (collectives' internal
    /// traffic included); "calls": only the point-to-point calls' bytes.
    pub matrix_source: String,
    pub phases: Vec<RankPhase>,
    pub transports: Option<RankTransports>,
    pub protocol: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RankPhase {
    pub name: String,
    pub wall_time: f64,
    pub mpi_time: f64,
    pub functions: Vec<FunctionStats>,
    pub call_bytes: Vec<u64>,
    pub call_messages: Vec<u64>,
    pub call_sizes: Vec<PeerSizes>,
    pub engine_bytes: Option<Vec<u64>>,
    pub engine_messages: Option<Vec<u64>>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PeerSizes {
    pub peer: usize,
    pub sizes: Vec<u64>,
}

#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq)]
pub struct FunctionStats {
    pub name: String,
    pub calls: u64,
    pub time: f64,
    pub bytes: u64,
    pub sizes: Vec<u64>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RankTransports {
    /// Comma-separated, as braid_transport_names lists them: self, shm, tcp:<interface>...
    pub names: String,
    pub bytes_sent: Vec<u64>,
    pub bytes_received: Vec<u64>,
    /// Per job rank: the index in `names` of the transport that carries messages to it.
    pub peer_transport: Option<Vec<u64>>,
    pub timeline: Vec<TransportSample>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct TransportSample {
    /// Seconds since the rank's MPI_Init.
    pub time: f64,
    /// Cumulative bytes per transport.
    pub sent: Vec<u64>,
    pub received: Vec<u64>,
}

impl RankFile {
    /// Reads and checks one rank file's text; the error says what is wrong with it.
    pub fn parse(text: &str) -> Result<RankFile, String> {
        let file: RankFile = serde_json::from_str(text).map_err(|e| format!("not a profiler rank file: {e}"))?;
        if file.schema != RANK_SCHEMA {
            return Err(format!("schema {:?}, expected {RANK_SCHEMA:?}", file.schema));
        }
        if file.rank >= file.size {
            return Err(format!("rank {} of a job of {} ranks", file.rank, file.size));
        }
        for phase in &file.phases {
            let per_peer = [Some(&phase.call_bytes), Some(&phase.call_messages), phase.engine_bytes.as_ref(), phase.engine_messages.as_ref()];
            if per_peer.into_iter().flatten().any(|row| row.len() != file.size) {
                return Err(format!("phase {:?} has a per-rank row that is not {} long", phase.name, file.size));
            }
            if phase.functions.iter().any(|function| function.sizes.len() != SIZE_BUCKETS) || phase.call_sizes.iter().any(|peer| peer.sizes.len() != SIZE_BUCKETS || peer.peer >= file.size) {
                return Err(format!("phase {:?} has a size histogram that is not {SIZE_BUCKETS} buckets", phase.name));
            }
        }
        if let Some(transports) = &file.transports {
            let count = transports.names.split(',').count();
            let samples_fit = transports.timeline.iter().all(|sample| sample.sent.len() == count && sample.received.len() == count);
            if transports.bytes_sent.len() != count || transports.bytes_received.len() != count || !samples_fit {
                return Err(format!("the transport counters do not match the {count} transports named"));
            }
            if transports.peer_transport.as_ref().is_some_and(|peers| peers.len() != file.size || peers.iter().any(|&t| t as usize >= count)) {
                return Err("peer_transport does not name a transport for every rank".to_string());
            }
        }
        Ok(file)
    }
}
