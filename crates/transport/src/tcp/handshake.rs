//! The wire-up's handshake: the address a rank publishes for its rail, and the hello a
//! connecting rank sends first.

use std::net::SocketAddrV4;

use braid_lane::PeerId;

const HELLO_MAGIC: [u8; 4] = *b"BRTC";
pub(super) const HELLO_LEN: usize = 16;

pub(super) fn parse_published(value: &str) -> Option<(SocketAddrV4, &str)> {
    let (address, node) = value.split_once('/')?;
    Some((address.parse().ok()?, node))
}

/// FNV-1a of the job id and rail name: a hello from another job or rail is refused.
pub(super) fn hello_hash(job_id: &str, rail: &str) -> u64 {
    job_id.bytes().chain([0]).chain(rail.bytes()).fold(0xcbf2_9ce4_8422_2325, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3))
}

pub(super) fn hello(rank: u32, hash: u64) -> [u8; HELLO_LEN] {
    let mut bytes = [0u8; HELLO_LEN];
    bytes[..4].copy_from_slice(&HELLO_MAGIC);
    bytes[4..8].copy_from_slice(&rank.to_le_bytes());
    bytes[8..].copy_from_slice(&hash.to_le_bytes());
    bytes
}

pub(super) fn parse_hello(bytes: &[u8; HELLO_LEN], hash: u64) -> Option<PeerId> {
    let well_formed = bytes[..4] == HELLO_MAGIC && bytes[8..] == hash.to_le_bytes();
    well_formed.then(|| u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hellos_round_trip_and_foreign_ones_are_refused() {
        let hash = hello_hash("job-1", "eth1");
        assert_eq!(parse_hello(&hello(7, hash), hash), Some(7));
        assert_eq!(parse_hello(&hello(7, hash), hello_hash("job-2", "eth1")), None);
        assert_ne!(hello_hash("job-1", "eth1"), hello_hash("job-1", "eth2"));
        let mut garbled = hello(7, hash);
        garbled[0] = b'X';
        assert_eq!(parse_hello(&garbled, hash), None);
    }

    #[test]
    fn published_addresses_parse() {
        assert_eq!(parse_published("10.1.0.2:4000/host:boot:net7"), Some(("10.1.0.2:4000".parse().unwrap(), "host:boot:net7")));
        assert_eq!(parse_published("10.1.0.2:4000"), None);
        assert_eq!(parse_published("nonsense/node"), None);
    }
}
