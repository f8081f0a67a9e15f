//! What partitioned communication puts on the wire, and where a partition's bytes lie: pure
//! functions, tested without an engine.
//!
//! A partitioned send tells its receiver its shape once, in a setup message (the program's tag,
//! the channel the sender chose, its partition count and total bytes); each partition then
//! travels as a message of its own under a tag made of the channel and the partition's index.
//! Both go on the communicator's collective context, above the collectives' tags (below 2^30)
//! and the intercommunicator leaders' tag (2^30), so they never meet the program's messages.

use std::ops::Range;

/// The tag of setup messages.
pub const SETUP_TAG: i32 = 0x4000_0001;
/// Channel ids are 1..CHANNELS: 10 bits of the tag. Channel 0 is never given out, which keeps
/// its tags (the leaders' and the setup tag among them) apart.
pub const CHANNELS: u32 = 1 << 10;
/// Bits of the tag for the partition index: a send has at most 2^20 partitions.
const PARTITION_BITS: u32 = 20;
pub const MAX_PARTITIONS: usize = 1 << PARTITION_BITS;
/// Set in every partitioned tag.
const PARTITIONED_TAGS: i32 = 0x4000_0000;

/// The tag of partition `partition` of channel `channel`.
pub fn chunk_tag(channel: u32, partition: usize) -> i32 {
    debug_assert!((1..CHANNELS).contains(&channel) && partition < MAX_PARTITIONS);
    PARTITIONED_TAGS | (channel << PARTITION_BITS) as i32 | partition as i32
}

/// A partitioned send's shape, as its setup message carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setup {
    /// The program's tag (matched with the receiver's).
    pub tag: i32,
    pub channel: u32,
    pub partitions: u32,
    /// The packed bytes of the whole message.
    pub bytes: u64,
}

/// Setup messages are this long.
pub const SETUP_BYTES: usize = 20;

impl Setup {
    pub fn encode(&self) -> [u8; SETUP_BYTES] {
        let mut frame = [0u8; SETUP_BYTES];
        frame[0..4].copy_from_slice(&self.tag.to_le_bytes());
        frame[4..8].copy_from_slice(&self.channel.to_le_bytes());
        frame[8..12].copy_from_slice(&self.partitions.to_le_bytes());
        frame[12..20].copy_from_slice(&self.bytes.to_le_bytes());
        frame
    }

    /// The setup in `frame`; None when it is not one a sender makes (wrong length, a negative
    /// tag, a channel out of range, too many partitions).
    pub fn decode(frame: &[u8]) -> Option<Setup> {
        let frame: &[u8; SETUP_BYTES] = frame.try_into().ok()?;
        let word = |at: usize| u32::from_le_bytes(frame[at..at + 4].try_into().expect("four bytes"));
        let setup = Setup { tag: word(0) as i32, channel: word(4), partitions: word(8), bytes: u64::from_le_bytes(frame[12..20].try_into().expect("eight bytes")) };
        let valid = setup.tag >= 0 && (1..CHANNELS).contains(&setup.channel) && setup.partitions as usize <= MAX_PARTITIONS;
        valid.then_some(setup)
    }

    /// The packed bytes of each of the sender's partitions (the total divides evenly: each
    /// partition holds the same count of the same datatype).
    pub fn bytes_each(&self) -> u64 {
        if self.partitions == 0 {
            0
        } else {
            self.bytes / u64::from(self.partitions)
        }
    }
}

/// The sender's partitions that carry bytes of receive partition `partition`, when the sender
/// cuts the message into `sent` partitions of `sent_each` bytes and the receiver into partitions
/// of `received_each` bytes. Without bytes, a receive partition waits for every sent one.
pub fn covering(sent: usize, sent_each: u64, received_each: u64, partition: usize) -> Range<usize> {
    if sent_each == 0 || received_each == 0 {
        return 0..sent;
    }
    let start = partition as u64 * received_each;
    let end = start + received_each;
    let first = (start / sent_each) as usize;
    let last = end.div_ceil(sent_each) as usize;
    first.min(sent)..last.min(sent)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn chunk_tags_stay_apart_from_the_collectives_the_leaders_and_setups() {
        let tags = [chunk_tag(1, 0), chunk_tag(1, MAX_PARTITIONS - 1), chunk_tag(CHANNELS - 1, 0), chunk_tag(CHANNELS - 1, MAX_PARTITIONS - 1)];
        for tag in tags {
            assert!(tag > SETUP_TAG, "{tag:#x}");
        }
        assert_ne!(chunk_tag(1, 1), chunk_tag(2, 1));
        assert_ne!(chunk_tag(2, 0), chunk_tag(1, MAX_PARTITIONS - 1));
    }

    #[test]
    fn receive_partitions_wait_for_the_sent_ones_that_overlap_them() {
        // 4 sent partitions of 6 bytes, 3 received of 8 bytes.
        assert_eq!(covering(4, 6, 8, 0), 0..2);
        assert_eq!(covering(4, 6, 8, 1), 1..3);
        assert_eq!(covering(4, 6, 8, 2), 2..4);
        // Aligned: one to one, and one received over two sent.
        assert_eq!(covering(4, 8, 8, 3), 3..4);
        assert_eq!(covering(4, 8, 16, 1), 2..4);
        // Empty messages: every sent partition.
        assert_eq!(covering(5, 0, 0, 2), 0..5);
    }

    proptest! {
        #[test]
        fn setups_round_trip(tag in 0..=i32::MAX, channel in 1..CHANNELS, partitions in 0..=MAX_PARTITIONS as u32, bytes: u64) {
            let setup = Setup { tag, channel, partitions, bytes };
            prop_assert_eq!(Setup::decode(&setup.encode()), Some(setup));
        }

        #[test]
        fn decoding_never_panics_and_rejects_what_no_sender_makes(frame in proptest::collection::vec(any::<u8>(), 0..40)) {
            if let Some(setup) = Setup::decode(&frame) {
                prop_assert_eq!(frame.len(), SETUP_BYTES);
                prop_assert!(setup.tag >= 0 && setup.channel >= 1 && setup.channel < CHANNELS);
                prop_assert_eq!(&setup.encode()[..], &frame[..]);
            }
        }

        #[test]
        fn every_received_byte_is_covered(unit in 1u64..8, a in 1u64..12, b in 1u64..12, m in 1u64..6) {
            // a·b·unit·m bytes: sent in b·m partitions of a·unit, received in a·m of b·unit.
            let (sent, sent_each, received, received_each) = ((b * m) as usize, a * unit, (a * m) as usize, b * unit);
            for partition in 0..received {
                let range = covering(sent, sent_each, received_each, partition);
                let (start, end) = (partition as u64 * received_each, (partition as u64 + 1) * received_each);
                prop_assert!(range.start as u64 * sent_each <= start && range.end as u64 * sent_each >= end);
                // Only overlapping ones.
                prop_assert!((range.start as u64 + 1) * sent_each > start && ((range.end as u64 - 1) * sent_each) < end);
            }
        }
    }
}
