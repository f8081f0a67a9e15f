//! Multirail strategies (seed 004): how one peer's traffic is spread over several rails.
//!
//! Everything here is a pure function of what it is given — profiles, backlogs, observed drain
//! rates — so the unit tests drive it on a simulated network. The engine calls it when it sends
//! an eager frame (which rail, and whether to aggregate) and when a rendezvous payload is ready
//! to move (what split).

use braid_transport::Profile;

/// One rail toward one peer, as the strategy sees it at one instant.
#[derive(Debug, Clone, Copy)]
pub struct RailView<'a> {
    /// Sampled transfer time per size.
    pub profile: &'a Profile,
    /// Bytes queued on this rail and not yet drained (kernel queue plus our own).
    pub backlog_bytes: u64,
    /// Online correction of the profile's rate: observed drain rate / profiled rate (1.0 = as sampled).
    pub rate_factor: f64,
    /// The rail is connected and has not failed.
    pub up: bool,
}

/// A piece of a payload assigned to a rail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    pub rail: usize,
    pub offset: usize,
    pub len: usize,
}

/// A multirail strategy plug-in (chosen by BRAID_STRATEGY).
pub trait MultirailStrategy: Send {
    fn name(&self) -> &'static str;
    /// The rail that carries an eager message of `len` bytes and the control frames.
    fn eager_rail(&mut self, len: usize, rails: &[RailView<'_>]) -> usize;
    /// Splits a `len`-byte payload over the rails, appending the chunks (covering 0..len exactly,
    /// in offset order) to `out`.
    fn split(&mut self, len: usize, rails: &[RailView<'_>], out: &mut Vec<Chunk>);
}
