//! Context ids: which ids this process has taken, and how a new communicator's members agree on
//! one that none of them has taken.
//!
//! The members first propose their first free id and take the largest as the candidate. That id
//! may have been taken on a member meanwhile: an MPI_Comm_idup in flight, or another thread's
//! communicator, agrees on its id while this agreement runs. So each member then *takes* the
//! candidate (atomically, if it is still free there) and the members confirm: if every member took
//! it, it is the id; if not, the members that took it give it back and all retry. Two agreements
//! in flight together would retry in step, each taking the other's candidate on some member, for
//! ever; so a retry moves the candidate past every member's first free id by a spread that
//! depends on the agreement (its context and tag) and the attempt, which sets them apart.

use std::collections::BTreeSet;
use std::sync::Mutex;

use crate::coll::algorithms;
use crate::coll::port::Port;
use crate::consts::MPI_ERR_INTERN;

/// Ids at or above this are never handed out: the engine context of id `n` is `2n + 1`.
const ID_LIMIT: u32 = 1 << 31;

/// The largest spread a retry adds (exclusive).
const RETRY_SPREAD: u64 = 16;

/// The context ids of this process.
#[derive(Debug)]
pub struct ContextIds {
    taken: Mutex<Taken>,
}

/// Every id below `floor` is taken, and those in `above`.
#[derive(Debug)]
struct Taken {
    floor: u32,
    above: BTreeSet<u32>,
}

impl Taken {
    fn is_free(&self, candidate: u32, span: u32) -> bool {
        candidate >= self.floor && candidate.checked_add(span).is_some_and(|end| end <= ID_LIMIT) && self.above.range(candidate..candidate + span).next().is_none()
    }

    /// Takes `span` ids from `candidate` on if none of them is taken; whether it did.
    fn try_take(&mut self, candidate: u32, span: u32) -> bool {
        if !self.is_free(candidate, span) {
            return false;
        }
        self.above.extend(candidate..candidate + span);
        while self.above.remove(&self.floor) {
            self.floor += 1;
        }
        true
    }

    /// The first id from `from` on with `span` free ids (ID_LIMIT when there is none).
    fn first_free(&self, from: u32, span: u32) -> u32 {
        let mut candidate = from.max(self.floor);
        while candidate < ID_LIMIT && !self.is_free(candidate, span) {
            candidate = self.above.range(candidate..candidate.saturating_add(span)).next_back().map_or(ID_LIMIT, |&taken| taken + 1);
        }
        candidate.min(ID_LIMIT)
    }
}

impl ContextIds {
    pub fn new(first_free: u32) -> ContextIds {
        ContextIds { taken: Mutex::new(Taken { floor: first_free, above: BTreeSet::new() }) }
    }

    fn taken(&self) -> std::sync::MutexGuard<'_, Taken> {
        self.taken.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The first id with `span` free ids after it.
    pub fn first_free(&self, span: u32) -> u32 {
        self.taken().first_free(0, span)
    }

    /// Takes `span` ids from `candidate` on if none of them is taken; whether it did.
    pub fn try_take(&self, candidate: u32, span: u32) -> bool {
        self.taken().try_take(candidate, span)
    }

    /// Gives back ids taken for an agreement that failed.
    pub fn give_back(&self, candidate: u32, span: u32) {
        let mut taken = self.taken();
        for id in candidate..candidate + span {
            if !taken.above.remove(&id) && id < taken.floor {
                // Folded into the floor: split it open again.
                let floor = taken.floor;
                taken.above.extend(id + 1..floor);
                taken.floor = id;
            }
        }
    }
}

/// What a member reports in a confirmation round: whether it took the candidate, and its next
/// free id after trying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Report {
    pub took: bool,
    pub next: u32,
}

impl Report {
    pub fn words(self) -> [u32; 2] {
        [u32::from(self.took), self.next]
    }

    pub fn from_words(words: &[u32]) -> Report {
        Report { took: words[0] != 0, next: words[1] }
    }

    /// Both reports as one: every member took it, and the largest next free id.
    pub fn and(self, other: Report) -> Report {
        Report { took: self.took && other.took, next: self.next.max(other.next) }
    }

    /// The reports of a group, two words each, as one.
    pub fn combine(words: &[u32]) -> Report {
        words.chunks_exact(2).map(Report::from_words).fold(Report { took: true, next: 0 }, Report::and)
    }
}

/// The outcome of a confirmation round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Every member took the candidate: it is the new communicator's id.
    Agreed(u32),
    /// Some member could not: try this one.
    Retry(u32),
}

/// The spread of retry `attempt` of the agreement `key`: a mix of both, below RETRY_SPREAD.
fn spread(key: u64, attempt: u32) -> u32 {
    let mut mixed = key.wrapping_add(u64::from(attempt + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    ((mixed ^ (mixed >> 31)) % RETRY_SPREAD) as u32
}

/// Judges the members' combined report on `candidate` in attempt `attempt` of agreement `key`.
pub fn verdict(candidate: u32, combined: Report, key: u64, attempt: u32) -> Result<Verdict, i32> {
    if combined.took {
        return Ok(Verdict::Agreed(candidate));
    }
    match combined.next.checked_add(spread(key, attempt)).filter(|&next| next < ID_LIMIT) {
        Some(next) => Ok(Verdict::Retry(next)),
        // The 2^31 ids of the job are used up: ids are never reused.
        None => Err(MPI_ERR_INTERN),
    }
}

/// This member's report on `candidate`: takes it if it is still free here.
pub fn report(ids: &ContextIds, candidate: u32, span: u32) -> Report {
    let mut taken = ids.taken();
    let took = taken.try_take(candidate, span);
    Report { took, next: taken.first_free(candidate.saturating_add(1), span) }
}

/// One confirmation round's end for this member: the id, or the next candidate (then the
/// candidate is given back if this member took it).
fn settle(ids: &ContextIds, mine: Report, candidate: u32, span: u32, combined: Report, key: u64, attempt: u32) -> Result<Verdict, i32> {
    let outcome = verdict(candidate, combined, key, attempt);
    if mine.took && !matches!(outcome, Ok(Verdict::Agreed(_))) {
        ids.give_back(candidate, span);
    }
    outcome
}

/// Every member of the port's group runs this with the same `span` and `key` (which tells this
/// agreement from the others that may run at the same time: its context and tag): the id (and the
/// `span - 1` after it) that all of them have taken for the new communicator. `proposal` is this
/// member's first proposal (normally its first free id). On an intercommunicator's port the
/// members of both groups agree.
pub async fn agree(port: &Port, ids: &ContextIds, proposal: u32, span: u32, key: u64) -> Result<u32, i32> {
    let mut candidate = combine(port, Report { took: true, next: proposal }).await?.next;
    for attempt in 0.. {
        let mine = report(ids, candidate, span);
        let combined = combine(port, mine).await?;
        match settle(ids, mine, candidate, span, combined, key, attempt)? {
            Verdict::Agreed(id) => return Ok(id),
            Verdict::Retry(next) => candidate = next,
        }
    }
    unreachable!("the attempts never run out before the ids do")
}

/// Every member's report as one: over the local group, and on an intercommunicator's port also
/// over the remote group (the leaders swap their groups' reports and broadcast the other's).
async fn combine(port: &Port, mine: Report) -> Result<Report, i32> {
    let mut all = vec![0u8; 8 * port.size()];
    algorithms::allgather(port, &to_bytes(&mine.words()), &mut all).await?;
    let ours = Report::combine(&from_bytes(&all));
    if port.remote_size() == 0 {
        return Ok(ours);
    }
    let mut theirs = [0u8; 8];
    if port.rank() == 0 {
        let leader = port.remote(0);
        port.sendrecv(leader, &to_bytes(&ours.words()), leader, &mut theirs).await?;
    }
    algorithms::bcast(port, &mut theirs, 0).await?;
    Ok(ours.and(Report::combine(&from_bytes(&theirs))))
}

/// The confirmation rounds of [`agree`] for callers that exchange the reports themselves (between
/// the groups of an intercommunicator): `exchange` combines this member's report with every other
/// member's.
pub fn confirm_with<E>(ids: &ContextIds, mut candidate: u32, span: u32, key: u64, mut exchange: impl FnMut(Report) -> Result<Report, E>, exhausted: impl Fn(i32) -> E) -> Result<u32, E> {
    for attempt in 0.. {
        let mine = report(ids, candidate, span);
        let combined = exchange(mine)?;
        match settle(ids, mine, candidate, span, combined, key, attempt).map_err(&exhausted)? {
            Verdict::Agreed(id) => return Ok(id),
            Verdict::Retry(next) => candidate = next,
        }
    }
    unreachable!("the attempts never run out before the ids do")
}

/// The key of an agreement on `context` under `tag`, for [`agree`].
pub fn key(context: u32, tag: i32) -> u64 {
    u64::from(context) << 32 | u64::from(tag as u32)
}

/// `words` as bytes, for the byte-wise collectives.
pub(crate) fn to_bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// The words [`to_bytes`] made.
pub(crate) fn from_bytes(bytes: &[u8]) -> Vec<u32> {
    bytes.chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_taken_once_and_can_be_given_back() {
        let ids = ContextIds::new(2);
        assert!(ids.try_take(5, 2));
        assert_eq!(ids.first_free(1), 2, "ids below a taken one stay free");
        assert!(!ids.try_take(5, 1), "already taken");
        assert!(!ids.try_take(4, 2), "overlaps a taken one");
        assert!(ids.try_take(2, 3));
        assert_eq!(ids.first_free(1), 7);
        assert!(!ids.try_take(1, 1), "below the first free id");
        ids.give_back(3, 1);
        assert_eq!(ids.first_free(1), 3);
        assert_eq!(ids.first_free(2), 7);
        assert!(ids.try_take(3, 1));
        assert!(!ids.try_take(ID_LIMIT - 1, 2), "past the limit");
        assert!(ids.try_take(ID_LIMIT - 1, 1));
    }

    #[test]
    fn a_retry_moves_past_every_first_free_id() {
        let all_took = Report { took: true, next: 9 };
        assert_eq!(verdict(8, all_took, 0, 0), Ok(Verdict::Agreed(8)));
        let one_failed = Report { took: true, next: 9 }.and(Report { took: false, next: 12 });
        match verdict(8, one_failed, 7, 0) {
            Ok(Verdict::Retry(next)) => assert!((12..12 + RETRY_SPREAD as u32).contains(&next), "retry at {next}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(verdict(8, Report { took: false, next: ID_LIMIT }, 0, 0), Err(MPI_ERR_INTERN));
    }

    #[test]
    fn agreements_in_flight_together_retry_apart() {
        let (first, second) = (key(3, 0), key(3, 1));
        // Independent choices among RETRY_SPREAD coincide 4 times in 64 on average.
        let together = (0..64).filter(|&attempt| spread(first, attempt) == spread(second, attempt)).count();
        assert!(together <= 12, "the two agreements' retries coincide {together} times in 64");
    }

    #[test]
    fn members_agree_on_an_id_free_on_every_one() {
        use crate::coll::algorithms::tests::run_group;
        use crate::coll::CollTuning;
        // Rank 0 proposed 3 but has taken 6 since (another communicator agreed meanwhile): the
        // first candidate, 6, fails there, and the members retry past it.
        let agreed = run_group(3, CollTuning::default(), |rank| {
            let me = rank.port().rank();
            let ids = ContextIds::new([3, 6, 4][me]);
            if me == 0 {
                assert!(ids.try_take(6, 1));
            }
            let port = rank.port();
            let id = rank.run(agree(&port, &ids, [3, 6, 4][me], 2, key(1, 0))).unwrap();
            assert!(!ids.try_take(id, 1) && !ids.try_take(id + 1, 1), "the agreed ids are taken");
            id
        });
        assert!(agreed.iter().all(|&id| id == agreed[0] && id >= 7), "{agreed:?}");
        let plain = run_group(2, CollTuning::default(), |rank| {
            let ids = ContextIds::new(2 + 5 * rank.port().rank() as u32);
            let port = rank.port();
            rank.run(agree(&port, &ids, ids.first_free(1), 1, key(1, 0))).unwrap()
        });
        assert_eq!(plain, vec![7, 7]);
    }

    #[test]
    fn reports_travel_as_words() {
        let report = Report { took: true, next: 41 };
        assert_eq!(Report::from_words(&report.words()), report);
    }

    #[test]
    fn words_survive_the_byte_round_trip() {
        let words = [0, 1, u32::MAX, 0x0102_0304];
        assert_eq!(from_bytes(&to_bytes(&words)), words);
    }
}
