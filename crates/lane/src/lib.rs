//! What a lane is, in the words both the transports and the strategies use: who is at the other
//! end ([`PeerId`]), what the lane can do ([`Capabilities`]) and how fast it moves a message of
//! any size ([`Profile`]). Pure data and arithmetic: no I/O, no system calls, no dependencies.

pub mod profile;

pub use profile::{Profile, Sample};

/// A peer is named by its rank in the job.
pub type PeerId = u32;

/// What a lane's transport can do; the engine and strategy choose protocols from this.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// Largest payload one `try_send` may carry (header excluded).
    pub max_payload: usize,
    /// Largest payload that travels inline in the channel itself (lowest latency).
    pub max_inline: usize,
    /// `remote_read` works (single-copy rendezvous).
    pub remote_read: bool,
    /// Frames reach a sleeping receiver's doorbell (the receiver may block instead of polling).
    pub wakes_receiver: bool,
}
