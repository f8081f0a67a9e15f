//! MPI matching: per context, the receives posted and not yet matched (in posting order) and the
//! messages arrived and not yet received (in arrival order). Scanning both queues front to back
//! gives MPI's rules: a message matches the earliest posted receive that accepts it, and a
//! receive — wildcards included — matches the earliest arrived message it accepts. Frames from one
//! peer arrive in sending order, so messages between a pair never overtake each other.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use braid_transport::RemoteRegion;

use crate::{Source, TagSelector};

/// A receive waiting for its message.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Posted {
    pub(crate) request: u32,
    pub(crate) source: Source,
    pub(crate) tag: TagSelector,
}

/// A message that arrived before its receive.
pub(crate) struct Unexpected {
    pub(crate) source: u32,
    pub(crate) tag: i32,
    pub(crate) body: Body,
}

pub(crate) enum Body {
    /// An eager payload, copied out of the transport; `ack_to` is the synchronous sender's request.
    Eager { payload: Vec<u8>, ack_to: Option<u32> },
    /// A rendezvous announcement.
    Rendezvous { sender: u32, region: RemoteRegion },
}

impl Unexpected {
    pub(crate) fn len(&self) -> usize {
        match &self.body {
            Body::Eager { payload, .. } => payload.len(),
            Body::Rendezvous { region, .. } => region.len as usize,
        }
    }

    /// Whether this is the message of `source`'s send request `sender` that the sender can still
    /// withdraw: an RTS or EAGER_SYNC, whose send stays incomplete (so its request number is not
    /// reused) until the message matches.
    fn is_withdrawable(&self, source: u32, sender: u32) -> bool {
        self.source == source
            && match self.body {
                Body::Eager { ack_to, .. } => ack_to == Some(sender),
                Body::Rendezvous { sender: announced, .. } => announced == sender,
            }
    }
}

/// The earliest posted receive after the first that accepts the message, taken out.
#[inline(never)]
fn take_later_posted(posted: &mut VecDeque<Posted>, from: u32, tag: i32) -> Option<u32> {
    let index = posted.iter().position(|p| accepts(p.source, p.tag, from, tag))?;
    posted.remove(index).map(|p| p.request)
}

#[inline]
pub(crate) fn accepts(source: Source, tag: TagSelector, from: u32, message_tag: i32) -> bool {
    let source_ok = match source {
        Source::Any => true,
        Source::Rank(rank) => rank == from,
    };
    let tag_ok = match tag {
        TagSelector::Any => true,
        TagSelector::Tag(wanted) => wanted == message_tag,
    };
    source_ok && tag_ok
}

#[derive(Default)]
struct Queues {
    posted: VecDeque<Posted>,
    unexpected: VecDeque<Unexpected>,
}

/// Context ids are small integers chosen by the MPI layer: a multiplicative hash spreads them
/// without SipHash's cost on every message.
#[derive(Default)]
pub(crate) struct ContextHasher(u64);

impl Hasher for ContextHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0.rotate_left(8) ^ byte as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u32(&mut self, value: u32) {
        self.0 = (value as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// Contexts below this id keep their queues in a directly indexed table (the MPI layer hands ids
/// out from 0 upwards, so a program with a few hundred communicators never hashes).
const DIRECT_CONTEXTS: usize = 1024;

/// The matching queues of every context.
#[derive(Default)]
pub(crate) struct Matching {
    direct: Vec<Queues>,
    hashed: HashMap<u32, Queues, BuildHasherDefault<ContextHasher>>,
}

impl Matching {
    #[inline]
    fn queues(&mut self, context: u32) -> &mut Queues {
        let index = context as usize;
        if index < self.direct.len() {
            return &mut self.direct[index];
        }
        self.queues_slow(context)
    }

    #[cold]
    fn queues_slow(&mut self, context: u32) -> &mut Queues {
        let index = context as usize;
        if index < DIRECT_CONTEXTS {
            self.direct.resize_with(index + 1, Queues::default);
            return &mut self.direct[index];
        }
        self.hashed.entry(context).or_default()
    }

    #[inline]
    fn existing(&self, context: u32) -> Option<&Queues> {
        match self.direct.get(context as usize) {
            Some(queues) => Some(queues),
            None => self.hashed.get(&context),
        }
    }

    #[inline]
    fn existing_mut(&mut self, context: u32) -> Option<&mut Queues> {
        match self.direct.get_mut(context as usize) {
            Some(queues) => Some(queues),
            None => self.hashed.get_mut(&context),
        }
    }

    /// The named sources of every posted receive (a rank may appear more than once).
    pub(crate) fn awaited_sources(&self) -> impl Iterator<Item = u32> + '_ {
        self.direct.iter().chain(self.hashed.values()).flat_map(|queues| queues.posted.iter()).filter_map(|posted| match posted.source {
            Source::Rank(rank) => Some(rank),
            Source::Any => None,
        })
    }

    /// Removes and returns the earliest posted receive accepting a message from `from` with `tag`.
    /// Inlined into the receive path: the common case, the earliest receive taking the message,
    /// is a few loads; the search behind it is a call.
    #[inline(always)]
    pub(crate) fn take_posted(&mut self, context: u32, from: u32, tag: i32) -> Option<u32> {
        let posted = &mut self.existing_mut(context)?.posted;
        let front = posted.front()?;
        if accepts(front.source, front.tag, from, tag) {
            return posted.pop_front().map(|p| p.request);
        }
        take_later_posted(posted, from, tag)
    }

    /// A receive's first step: the earliest arrived message it accepts, taken out; or, when none
    /// has arrived, the receive is posted (one lookup of the context for both).
    #[inline]
    pub(crate) fn take_unexpected_or_post(&mut self, context: u32, receive: Posted) -> Option<Unexpected> {
        let queues = self.queues(context);
        if !queues.unexpected.is_empty() {
            if let Some(index) = queues.unexpected.iter().position(|u| accepts(receive.source, receive.tag, u.source, u.tag)) {
                return queues.unexpected.remove(index);
            }
        }
        queues.posted.push_back(receive);
        None
    }

    /// Removes the posted receive `request`; false if it is not waiting (already matched).
    pub(crate) fn remove_posted(&mut self, context: u32, request: u32) -> bool {
        let posted = &mut self.queues(context).posted;
        match posted.iter().position(|p| p.request == request) {
            Some(index) => posted.remove(index).is_some(),
            None => false,
        }
    }

    /// The earliest arrived message that a receive of `source` and `tag` would accept, taken out
    /// (MPI_Improbe: no other receive or probe sees it afterwards).
    pub(crate) fn take_unexpected(&mut self, context: u32, source: Source, tag: TagSelector) -> Option<Unexpected> {
        let unexpected = &mut self.existing_mut(context)?.unexpected;
        let index = unexpected.iter().position(|u| accepts(source, tag, u.source, u.tag))?;
        unexpected.remove(index)
    }

    /// Takes out the unmatched message of `source`'s send request `sender` (a CANCEL), if any.
    #[cold]
    pub(crate) fn withdraw(&mut self, context: u32, source: u32, sender: u32) -> Option<Unexpected> {
        let unexpected = &mut self.existing_mut(context)?.unexpected;
        let index = unexpected.iter().position(|u| u.is_withdrawable(source, sender))?;
        unexpected.remove(index)
    }

    /// The earliest arrived message that the receive would accept, left in place.
    pub(crate) fn peek_unexpected(&self, context: u32, source: Source, tag: TagSelector) -> Option<&Unexpected> {
        self.existing(context)?.unexpected.iter().find(|u| accepts(source, tag, u.source, u.tag))
    }

    #[cold]
    pub(crate) fn add_unexpected(&mut self, context: u32, message: Unexpected) {
        self.queues(context).unexpected.push_back(message);
    }
}

/// Messages taken out of matching by a matched probe, each waiting for its receive. A message
/// is numbered by its slot + 1 (never 0); slots are reused.
#[derive(Default)]
pub(crate) struct Probed {
    slots: Vec<Option<(u32, Unexpected)>>,
    free: Vec<u32>,
}

impl Probed {
    /// Keeps `message` of `context`; returns its number.
    pub(crate) fn insert(&mut self, context: u32, message: Unexpected) -> u32 {
        match self.free.pop() {
            Some(index) => {
                self.slots[index as usize] = Some((context, message));
                index + 1
            }
            None => {
                self.slots.push(Some((context, message)));
                self.slots.len() as u32
            }
        }
    }

    /// Takes message `number` out, with its context.
    pub(crate) fn take(&mut self, number: u32) -> Option<(u32, Unexpected)> {
        let index = number.checked_sub(1)?;
        let taken = self.slots.get_mut(index as usize)?.take()?;
        self.free.push(index);
        Some(taken)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eager(source: u32, tag: i32, byte: u8) -> Unexpected {
        Unexpected { source, tag, body: Body::Eager { payload: vec![byte], ack_to: None } }
    }

    fn first_byte(message: Unexpected) -> u8 {
        match message.body {
            Body::Eager { payload, .. } => payload[0],
            Body::Rendezvous { .. } => panic!("expected an eager message"),
        }
    }

    #[test]
    fn wildcards_take_the_earliest_arrival() {
        let mut matching = Matching::default();
        matching.add_unexpected(0, eager(2, 5, b'a'));
        matching.add_unexpected(0, eager(1, 6, b'b'));
        matching.add_unexpected(0, eager(2, 6, b'c'));
        matching.add_unexpected(1, eager(1, 6, b'z'));
        assert_eq!(matching.peek_unexpected(0, Source::Any, TagSelector::Tag(6)).map(|u| u.source), Some(1));
        let take = |m: &mut Matching, source, tag| m.take_unexpected_or_post(0, Posted { request: 0, source, tag }).map(first_byte);
        assert_eq!(take(&mut matching, Source::Rank(2), TagSelector::Any), Some(b'a'));
        assert_eq!(take(&mut matching, Source::Any, TagSelector::Tag(6)), Some(b'b'));
        assert_eq!(take(&mut matching, Source::Any, TagSelector::Tag(5)), None);
        assert_eq!(take(&mut matching, Source::Any, TagSelector::Any), Some(b'c'));
        assert_eq!(take(&mut matching, Source::Any, TagSelector::Any), None);
    }

    #[test]
    fn contexts_past_the_direct_table_match_apart_from_the_others() {
        let mut matching = Matching::default();
        let far = DIRECT_CONTEXTS as u32 + 7;
        matching.add_unexpected(far, eager(1, 2, b'f'));
        matching.add_unexpected(3, eager(1, 2, b'n'));
        assert!(matching.peek_unexpected(far + 1, Source::Any, TagSelector::Any).is_none());
        let receive = Posted { request: 9, source: Source::Any, tag: TagSelector::Any };
        assert_eq!(matching.take_unexpected_or_post(far, receive).map(first_byte), Some(b'f'));
        assert!(matching.take_unexpected_or_post(far, receive).is_none());
        assert_eq!(matching.take_posted(far, 4, 4), Some(9));
        assert_eq!(matching.take_posted(far, 4, 4), None);
        assert_eq!(matching.take_unexpected_or_post(3, receive).map(first_byte), Some(b'n'));
    }

    #[test]
    fn a_probed_message_leaves_matching_until_taken_by_its_number() {
        let mut matching = Matching::default();
        matching.add_unexpected(0, eager(2, 5, b'a'));
        matching.add_unexpected(0, eager(1, 6, b'b'));
        assert!(matching.take_unexpected(0, Source::Rank(3), TagSelector::Any).is_none());
        assert!(matching.take_unexpected(9, Source::Any, TagSelector::Any).is_none());
        let message = matching.take_unexpected(0, Source::Any, TagSelector::Tag(6)).unwrap();
        assert_eq!((message.source, message.tag), (1, 6));
        assert!(matching.peek_unexpected(0, Source::Any, TagSelector::Tag(6)).is_none());
        let mut probed = Probed::default();
        let first = probed.insert(0, message);
        let second = probed.insert(4, eager(3, 1, b'c'));
        assert_eq!((first, second), (1, 2));
        assert!(probed.take(0).is_none());
        assert_eq!(probed.take(first).map(|(context, m)| (context, first_byte(m))), Some((0, b'b')));
        assert!(probed.take(first).is_none());
        assert_eq!(probed.insert(0, eager(3, 1, b'd')), first);
        assert_eq!(probed.take(second).map(|(context, m)| (context, first_byte(m))), Some((4, b'c')));
    }

    #[test]
    fn only_the_named_synchronous_or_rendezvous_message_is_withdrawn() {
        let mut matching = Matching::default();
        let region = RemoteRegion { pid: 1, address: 0x1000, len: 100 };
        matching.add_unexpected(0, Unexpected { source: 2, tag: 1, body: Body::Eager { payload: vec![b'p'], ack_to: None } });
        matching.add_unexpected(0, Unexpected { source: 1, tag: 1, body: Body::Eager { payload: vec![b's'], ack_to: Some(7) } });
        matching.add_unexpected(0, Unexpected { source: 2, tag: 1, body: Body::Eager { payload: vec![b'q'], ack_to: Some(7) } });
        matching.add_unexpected(0, Unexpected { source: 2, tag: 1, body: Body::Rendezvous { sender: 8, region } });
        assert!(matching.withdraw(0, 2, 9).is_none());
        assert!(matching.withdraw(1, 2, 7).is_none());
        assert_eq!(matching.withdraw(0, 2, 7).map(first_byte), Some(b'q'));
        assert!(matching.withdraw(0, 2, 7).is_none());
        assert!(matches!(matching.withdraw(0, 2, 8).map(|m| m.body), Some(Body::Rendezvous { sender: 8, .. })));
        let left = |m: &mut Matching| m.take_unexpected(0, Source::Any, TagSelector::Any).map(first_byte);
        assert_eq!(left(&mut matching), Some(b'p'));
        assert_eq!(left(&mut matching), Some(b's'));
        assert_eq!(left(&mut matching), None);
    }

    #[test]
    fn messages_match_the_earliest_posted_receive_that_accepts_them() {
        let mut matching = Matching::default();
        assert!(matching.take_unexpected_or_post(3, Posted { request: 1, source: Source::Rank(4), tag: TagSelector::Any }).is_none());
        assert!(matching.take_unexpected_or_post(3, Posted { request: 2, source: Source::Any, tag: TagSelector::Tag(9) }).is_none());
        assert!(matching.take_unexpected_or_post(3, Posted { request: 3, source: Source::Any, tag: TagSelector::Any }).is_none());
        assert_eq!(matching.take_posted(3, 5, 9), Some(2));
        assert_eq!(matching.take_posted(4, 5, 9), None);
        assert!(matching.remove_posted(3, 1));
        assert!(!matching.remove_posted(3, 1));
        assert_eq!(matching.take_posted(3, 4, 0), Some(3));
        assert_eq!(matching.take_posted(3, 4, 0), None);
    }
}
