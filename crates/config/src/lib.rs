//! Every Braid setting, with its default, and the only place where environment variables are read.
//!
//! Lower layers never call `std::env`: they receive the values they need from a [`Config`].
//! `braid config` (and docs/settings.md) print [`SETTINGS`], so the list cannot drift from the code.

use std::fmt;

/// How a rank waits for a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitMode {
    /// Spin for `spin_count` polls, then block on the futex doorbell; block at once when the
    /// node's ranks outnumber the cores the job may use.
    Auto,
    /// Always poll (lowest latency when every rank has its own core).
    Poll,
    /// Always block on the doorbell after one unsuccessful poll.
    Block,
}

/// Whether large intra-node messages may use cross-memory attach (`process_vm_readv`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmaMode {
    /// Use CMA; fall back to the pipelined two-copy path if the kernel refuses (EPERM).
    Auto,
    /// Never use CMA: always the pipelined two-copy path through the shared buffer pool.
    Off,
}

/// All settings of one process.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub wait: WaitMode,
    pub spin_count: u32,
    pub yield_us: u32,
    pub block_timeout_ms: u32,
    pub shm_ring_cells: usize,
    pub shm_inline_max: usize,
    pub shm_pool_buffers: usize,
    pub shm_pool_buffer_size: usize,
    pub eager_max: usize,
    pub cma: CmaMode,
    pub cma_chunk: usize,
    pub coll_bcast_split_min: usize,
    pub coll_allreduce_split_min: usize,
    pub debug: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            wait: WaitMode::Auto,
            spin_count: 20_000,
            yield_us: 200,
            block_timeout_ms: 200,
            shm_ring_cells: 512,
            shm_inline_max: 1024,
            shm_pool_buffers: 32,
            shm_pool_buffer_size: 64 * 1024,
            eager_max: 32 * 1024,
            cma: CmaMode::Auto,
            cma_chunk: 1024 * 1024,
            coll_bcast_split_min: 256 * 1024,
            coll_allreduce_split_min: 16 * 1024,
            debug: false,
        }
    }
}

/// One documented setting: its environment variable, default and meaning.
pub struct Setting {
    pub variable: &'static str,
    pub default: &'static str,
    pub meaning: &'static str,
}

/// Every environment variable Braid reads, in the order docs/settings.md lists them.
pub const SETTINGS: &[Setting] = &[
    Setting { variable: "BRAID_WAIT", default: "auto", meaning: "auto | poll | block: how a rank waits for messages (auto spins, then blocks on a futex doorbell; blocks at once when oversubscribed)" },
    Setting { variable: "BRAID_SPIN_COUNT", default: "20000", meaning: "polls of all channels before a waiting rank blocks (auto mode)" },
    Setting { variable: "BRAID_YIELD_US", default: "200", meaning: "oversubscribed node (auto mode): microseconds a waiting rank yields its core (sched_yield) before it blocks on the doorbell; 0 blocks at once" },
    Setting { variable: "BRAID_BLOCK_TIMEOUT_MS", default: "200", meaning: "longest single futex sleep; a sleeping rank re-checks its channels at least this often" },
    Setting { variable: "BRAID_SHM_RING_CELLS", default: "512", meaning: "64-byte cells in each per-pair ring (power of two)" },
    Setting { variable: "BRAID_SHM_INLINE_MAX", default: "1024", meaning: "largest message (header included) copied through the ring cells; larger eager messages use the buffer pool" },
    Setting { variable: "BRAID_SHM_POOL_BUFFERS", default: "32", meaning: "buffers in each rank's shared send pool" },
    Setting { variable: "BRAID_SHM_POOL_BUFFER_SIZE", default: "65536", meaning: "bytes per pool buffer; also the chunk of the two-copy pipeline" },
    Setting { variable: "BRAID_EAGER_MAX", default: "32768", meaning: "largest message sent eagerly; larger ones use rendezvous (CMA single copy or two-copy pipeline)" },
    Setting { variable: "BRAID_CMA", default: "auto", meaning: "auto | off: single-copy large messages with process_vm_readv (auto falls back on EPERM)" },
    Setting { variable: "BRAID_CMA_CHUNK", default: "1048576", meaning: "bytes per process_vm_readv call of the single-copy pipeline" },
    Setting { variable: "BRAID_COLL_BCAST_SPLIT_MIN", default: "262144", meaning: "smallest broadcast (bytes) sent as scatter + ring allgather instead of a binomial tree; must be equal on every rank" },
    Setting { variable: "BRAID_COLL_ALLREDUCE_SPLIT_MIN", default: "16384", meaning: "smallest commutative allreduce (bytes) done as reduce-scatter + allgather instead of recursive doubling; must be equal on every rank" },
    Setting { variable: "BRAID_DEBUG", default: "0", meaning: "1: print wire-up and protocol decisions on stderr" },
];

/// A setting whose value could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub variable: &'static str,
    pub value: String,
    pub expected: &'static str,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={:?} is not valid: expected {}", self.variable, self.value, self.expected)
    }
}

impl std::error::Error for ConfigError {}

impl Config {
    /// Reads the process environment.
    pub fn from_env() -> Result<Config, ConfigError> {
        Config::from_lookup(|name| std::env::var(name).ok())
    }

    /// Builds a configuration from any name -> value lookup (tests pass a map).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let mut config = Config::default();
        let mut reader = Reader { lookup: &lookup };
        config.wait = reader.choice("BRAID_WAIT", config.wait, &[("auto", WaitMode::Auto), ("poll", WaitMode::Poll), ("block", WaitMode::Block)])?;
        config.spin_count = reader.number("BRAID_SPIN_COUNT", config.spin_count as usize, 0)? as u32;
        config.yield_us = reader.number("BRAID_YIELD_US", config.yield_us as usize, 0)? as u32;
        config.block_timeout_ms = reader.number("BRAID_BLOCK_TIMEOUT_MS", config.block_timeout_ms as usize, 1)? as u32;
        config.shm_ring_cells = reader.number("BRAID_SHM_RING_CELLS", config.shm_ring_cells, 8)?;
        if !config.shm_ring_cells.is_power_of_two() {
            return Err(ConfigError { variable: "BRAID_SHM_RING_CELLS", value: config.shm_ring_cells.to_string(), expected: "a power of two >= 8" });
        }
        config.shm_inline_max = reader.number("BRAID_SHM_INLINE_MAX", config.shm_inline_max, 64)?;
        config.shm_pool_buffers = reader.number("BRAID_SHM_POOL_BUFFERS", config.shm_pool_buffers, 2)?;
        config.shm_pool_buffer_size = reader.number("BRAID_SHM_POOL_BUFFER_SIZE", config.shm_pool_buffer_size, 4096)?;
        config.eager_max = reader.number("BRAID_EAGER_MAX", config.eager_max, 0)?;
        config.cma = reader.choice("BRAID_CMA", config.cma, &[("auto", CmaMode::Auto), ("on", CmaMode::Auto), ("off", CmaMode::Off)])?;
        config.cma_chunk = reader.number("BRAID_CMA_CHUNK", config.cma_chunk, 4096)?;
        config.coll_bcast_split_min = reader.number("BRAID_COLL_BCAST_SPLIT_MIN", config.coll_bcast_split_min, 0)?;
        config.coll_allreduce_split_min = reader.number("BRAID_COLL_ALLREDUCE_SPLIT_MIN", config.coll_allreduce_split_min, 0)?;
        config.debug = reader.choice("BRAID_DEBUG", config.debug, &[("0", false), ("1", true), ("off", false), ("on", true)])?;
        Ok(config)
    }
}

struct Reader<'a, F: Fn(&str) -> Option<String>> {
    lookup: &'a F,
}

impl<F: Fn(&str) -> Option<String>> Reader<'_, F> {
    fn number(&mut self, variable: &'static str, default: usize, minimum: usize) -> Result<usize, ConfigError> {
        let Some(text) = (self.lookup)(variable) else { return Ok(default) };
        let parsed = parse_size(text.trim());
        match parsed {
            Some(value) if value >= minimum => Ok(value),
            _ => Err(ConfigError { variable, value: text, expected: "a non-negative integer (k, m, g suffixes allowed) at or above the minimum" }),
        }
    }

    fn choice<T: Copy>(&mut self, variable: &'static str, default: T, choices: &[(&str, T)]) -> Result<T, ConfigError> {
        let Some(text) = (self.lookup)(variable) else { return Ok(default) };
        let wanted = text.trim().to_ascii_lowercase();
        choices
            .iter()
            .find(|(name, _)| *name == wanted)
            .map(|(_, value)| *value)
            .ok_or(ConfigError { variable, value: text, expected: "one of the documented choices" })
    }
}

/// Parses `4096`, `64k`, `1m`, `2g` (binary multiples).
pub fn parse_size(text: &str) -> Option<usize> {
    let lower = text.to_ascii_lowercase();
    let (digits, multiplier) = match lower.as_bytes().last()? {
        b'k' => (&lower[..lower.len() - 1], 1usize << 10),
        b'm' => (&lower[..lower.len() - 1], 1 << 20),
        b'g' => (&lower[..lower.len() - 1], 1 << 30),
        _ => (&lower[..], 1),
    };
    digits.parse::<usize>().ok()?.checked_mul(multiplier)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config_of(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Config::from_lookup(|name| map.get(name).cloned())
    }

    #[test]
    fn defaults_when_nothing_is_set() {
        assert_eq!(config_of(&[]).unwrap(), Config::default());
    }

    #[test]
    fn values_and_suffixes_are_read() {
        let config = config_of(&[("BRAID_WAIT", "block"), ("BRAID_EAGER_MAX", "16k"), ("BRAID_CMA", "off")]).unwrap();
        assert_eq!(config.wait, WaitMode::Block);
        assert_eq!(config.eager_max, 16 * 1024);
        assert_eq!(config.cma, CmaMode::Off);
    }

    #[test]
    fn bad_values_name_the_variable() {
        let error = config_of(&[("BRAID_WAIT", "sometimes")]).unwrap_err();
        assert_eq!(error.variable, "BRAID_WAIT");
        assert!(config_of(&[("BRAID_SHM_RING_CELLS", "100")]).is_err());
        assert!(config_of(&[("BRAID_SHM_POOL_BUFFERS", "x")]).is_err());
    }

    #[test]
    fn every_setting_read_is_documented() {
        let source = include_str!("lib.rs");
        for line in source.lines().filter(|l| l.trim_start().starts_with("config.") && l.contains("reader.")) {
            let name = line.split('"').nth(1).unwrap();
            assert!(SETTINGS.iter().any(|s| s.variable == name), "{name} is read but not in SETTINGS");
        }
    }
}
