//! The frames of the `Messages` path on a window's private context: a request (tag
//! [`REQUEST_TAG`]), the body that follows a large one (its own tag) and the answer (the origin's
//! reply tag). Little-endian, fixed layout; pure encoding, unit-tested.

use std::borrow::Cow;
use std::ffi::c_int;

use super::sync::LockKind;

/// Requests arrive under this tag; bodies and answers under tags derived from the sequence number.
pub const REQUEST_TAG: i32 = 0;
/// Sequence numbers wrap within this mask: only requests in flight together need distinct tags.
const SEQUENCE_MASK: u32 = (1 << 29) - 1;
/// Request frames carry their body inline up to this many bytes in all; larger bodies follow as a
/// second message (the target posts a receive of exactly their size).
pub const INLINE_MAX: usize = 8192;

/// The tag of the body of request `sequence` (origin to target).
pub fn body_tag(sequence: u32) -> i32 {
    1 + (sequence & SEQUENCE_MASK) as i32
}

/// The tag of the answer to request `sequence` (target to origin).
pub fn reply_tag(sequence: u32) -> i32 {
    2 + SEQUENCE_MASK as i32 + (sequence & SEQUENCE_MASK) as i32
}

/// What a request asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestKind {
    Put,
    Get,
    Accumulate,
    /// Get_accumulate, Fetch_and_op.
    GetAccumulate,
    CompareAndSwap,
    Lock(LockKind),
    Unlock(LockKind),
    /// PSCW: the sender has posted an exposure epoch to the receiver.
    Post,
    /// PSCW: the sender has completed its access epoch to the receiver.
    Complete,
}

impl RequestKind {
    fn code(self) -> u8 {
        match self {
            RequestKind::Put => 1,
            RequestKind::Get => 2,
            RequestKind::Accumulate => 3,
            RequestKind::GetAccumulate => 4,
            RequestKind::CompareAndSwap => 5,
            RequestKind::Lock(LockKind::Shared) => 6,
            RequestKind::Lock(LockKind::Exclusive) => 7,
            RequestKind::Unlock(LockKind::Shared) => 8,
            RequestKind::Unlock(LockKind::Exclusive) => 9,
            RequestKind::Post => 10,
            RequestKind::Complete => 11,
        }
    }

    fn from_code(code: u8) -> Option<RequestKind> {
        Some(match code {
            1 => RequestKind::Put,
            2 => RequestKind::Get,
            3 => RequestKind::Accumulate,
            4 => RequestKind::GetAccumulate,
            5 => RequestKind::CompareAndSwap,
            6 => RequestKind::Lock(LockKind::Shared),
            7 => RequestKind::Lock(LockKind::Exclusive),
            8 => RequestKind::Unlock(LockKind::Shared),
            9 => RequestKind::Unlock(LockKind::Exclusive),
            10 => RequestKind::Post,
            11 => RequestKind::Complete,
            _ => return None,
        })
    }
}

/// The fixed part of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub kind: RequestKind,
    pub sequence: u32,
    /// The reduction (accumulate-like requests).
    pub op: c_int,
    /// The predefined datatype of the elements the reduction combines.
    pub basic: c_int,
    pub runs: u32,
    pub data_len: u64,
    pub compare_len: u64,
    /// Bytes the answer carries after its error class.
    pub result_len: u64,
}

/// Bytes of an encoded [`Header`].
pub const HEADER_LEN: usize = 48;
/// Bytes of one encoded run (offset, length).
const RUN_LEN: usize = 16;

impl Header {
    /// A request with no operands (locks, PSCW).
    pub fn control(kind: RequestKind, sequence: u32) -> Header {
        Header { kind, sequence, op: 0, basic: 0, runs: 0, data_len: 0, compare_len: 0, result_len: 0 }
    }

    /// Bytes of the body: the runs, the data, the compare data.
    pub fn body_len(&self) -> usize {
        self.runs as usize * RUN_LEN + self.data_len as usize + self.compare_len as usize
    }

    /// Whether the body travels inside the request frame.
    pub fn body_inline(&self) -> bool {
        HEADER_LEN + self.body_len() <= INLINE_MAX
    }

    /// Whether the runs of a body sent apart travel in the request frame (they fit there): the
    /// message that follows is then the data alone, sent from the origin's packed operand as it
    /// is and, for a put, received straight into the target's window.
    pub fn runs_in_frame(&self) -> bool {
        !self.body_inline() && HEADER_LEN + self.runs as usize * RUN_LEN <= INLINE_MAX
    }

    /// Bytes of the message that follows a request whose body does not travel inline.
    pub fn apart_len(&self) -> usize {
        if self.runs_in_frame() {
            self.data_len as usize + self.compare_len as usize
        } else {
            self.body_len()
        }
    }

    fn encode_into(&self, out: &mut Vec<u8>) {
        out.push(self.kind.code());
        out.extend_from_slice(&[0; 3]);
        out.extend_from_slice(&self.sequence.to_le_bytes());
        out.extend_from_slice(&self.op.to_le_bytes());
        out.extend_from_slice(&self.basic.to_le_bytes());
        out.extend_from_slice(&self.runs.to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&self.data_len.to_le_bytes());
        out.extend_from_slice(&self.compare_len.to_le_bytes());
        out.extend_from_slice(&self.result_len.to_le_bytes());
    }

    pub fn decode(bytes: &[u8]) -> Result<Header, String> {
        if bytes.len() < HEADER_LEN {
            return Err(format!("a request of {} bytes is shorter than its header", bytes.len()));
        }
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        let kind = RequestKind::from_code(bytes[0]).ok_or_else(|| format!("unknown request kind {}", bytes[0]))?;
        Ok(Header { kind, sequence: u32_at(4), op: u32_at(8) as c_int, basic: u32_at(12) as c_int, runs: u32_at(16), data_len: u64_at(24), compare_len: u64_at(32), result_len: u64_at(40) })
    }
}

/// Encodes a request: the header, then (when it fits inline) the body. A larger request's runs
/// stay in the frame where they fit ([`Header::runs_in_frame`]), and what follows, to be sent
/// under [`body_tag`], is returned apart: `data` itself (the compare data appended), or the whole
/// body. Borrowed `data` is copied only into what is sent.
pub fn encode(header: &Header, runs: &[(isize, usize)], data: Cow<'_, [u8]>, compare: &[u8]) -> (Vec<u8>, Option<Vec<u8>>) {
    let mut frame = Vec::with_capacity(HEADER_LEN + if header.body_inline() { header.body_len() } else { 0 });
    header.encode_into(&mut frame);
    if header.body_inline() {
        write_runs(&mut frame, runs);
        frame.extend_from_slice(&data);
        frame.extend_from_slice(compare);
        return (frame, None);
    }
    if header.runs_in_frame() {
        write_runs(&mut frame, runs);
        let mut data = data.into_owned();
        data.extend_from_slice(compare);
        return (frame, Some(data));
    }
    let mut body = Vec::with_capacity(header.body_len());
    write_runs(&mut body, runs);
    body.extend_from_slice(&data);
    body.extend_from_slice(compare);
    (frame, Some(body))
}

/// The request frame of a request whose runs travel in it and whose data (no compare data)
/// follows apart ([`Header::runs_in_frame`]): what [`encode`] makes, without the data.
pub fn request_frame(header: &Header, runs: &[(isize, usize)]) -> Vec<u8> {
    debug_assert!(header.runs_in_frame() && header.compare_len == 0);
    let mut frame = Vec::with_capacity(HEADER_LEN + runs.len() * RUN_LEN);
    header.encode_into(&mut frame);
    write_runs(&mut frame, runs);
    frame
}

fn write_runs(out: &mut Vec<u8>, runs: &[(isize, usize)]) {
    for &(offset, len) in runs {
        out.extend_from_slice(&(offset as i64).to_le_bytes());
        out.extend_from_slice(&(len as u64).to_le_bytes());
    }
}

/// A body split into its parts.
pub struct Body<'a> {
    pub runs: Vec<(isize, usize)>,
    pub data: &'a [u8],
    pub compare: &'a [u8],
}

/// The runs encoded in `bytes` (exactly `count` of them).
pub fn decode_runs(bytes: &[u8], count: u32) -> Result<Vec<(isize, usize)>, String> {
    if bytes.len() != count as usize * RUN_LEN {
        return Err(format!("{} bytes of runs, {} expected", bytes.len(), count as usize * RUN_LEN));
    }
    Ok(bytes
        .chunks_exact(RUN_LEN)
        .map(|run| {
            let offset = i64::from_le_bytes(run[..8].try_into().expect("8 bytes"));
            let len = u64::from_le_bytes(run[8..].try_into().expect("8 bytes"));
            (offset as isize, len as usize)
        })
        .collect())
}

/// Splits a request's body per `header`: `in_frame` is what followed the header in the request
/// frame, `apart` the message that followed the request (empty for an inline body).
pub fn decode_body<'a>(header: &Header, in_frame: &'a [u8], apart: &'a [u8]) -> Result<Body<'a>, String> {
    let (run_bytes, rest) = if header.runs_in_frame() {
        (in_frame, apart)
    } else {
        let body = if header.body_inline() { in_frame } else { apart };
        if body.len() != header.body_len() {
            return Err(format!("a request body of {} bytes, {} expected", body.len(), header.body_len()));
        }
        body.split_at(header.runs as usize * RUN_LEN)
    };
    let runs = decode_runs(run_bytes, header.runs)?;
    if rest.len() != header.data_len as usize + header.compare_len as usize {
        return Err(format!("request data of {} bytes, {} expected", rest.len(), header.data_len + header.compare_len));
    }
    let (data, compare) = rest.split_at(header.data_len as usize);
    Ok(Body { runs, data, compare })
}

/// Bytes of an answer's error class.
pub const ANSWER_HEAD: usize = 4;

/// An answer: the error class (MPI_SUCCESS or why the target refused), then the result bytes.
pub fn answer(class: c_int, result: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(ANSWER_HEAD + result.len());
    out.extend_from_slice(&class.to_le_bytes());
    out.extend_from_slice(result);
    out
}

/// The error class of an answer.
pub fn answer_class(answer: &[u8]) -> c_int {
    answer.get(..ANSWER_HEAD).map_or(crate::consts::MPI_ERR_INTERN, |head| c_int::from_le_bytes(head.try_into().expect("4 bytes")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_request_travels_whole() {
        let header = Header { kind: RequestKind::Accumulate, sequence: 9, op: 3, basic: 8, runs: 2, data_len: 8, compare_len: 0, result_len: 0 };
        let runs = [(0isize, 4usize), (-8, 4)];
        let (frame, body) = encode(&header, &runs, vec![1, 2, 3, 4, 5, 6, 7, 8].into(), &[]);
        assert!(body.is_none());
        let decoded = Header::decode(&frame).unwrap();
        assert_eq!(decoded, header);
        let body = decode_body(&decoded, &frame[HEADER_LEN..], &[]).unwrap();
        assert_eq!(body.runs, runs);
        assert_eq!(body.data, &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert!(body.compare.is_empty());
    }

    #[test]
    fn a_large_body_follows_apart() {
        let data = vec![7u8; INLINE_MAX];
        let header = Header { kind: RequestKind::Put, sequence: 1, op: 0, basic: 0, runs: 1, data_len: data.len() as u64, compare_len: 0, result_len: 0 };
        // The run stays in the frame; the data follows as it is.
        assert!(header.runs_in_frame());
        let (frame, body) = encode(&header, &[(16, data.len())], data.as_slice().into(), &[]);
        assert_eq!(frame.len(), HEADER_LEN + RUN_LEN);
        assert_eq!(request_frame(&header, &[(16, data.len())]), frame);
        let body = body.unwrap();
        assert_eq!(body, data);
        assert_eq!(header.apart_len(), body.len());
        let decoded = decode_body(&header, &frame[HEADER_LEN..], &body).unwrap();
        assert_eq!((decoded.runs, decoded.data.len()), (vec![(16, INLINE_MAX)], INLINE_MAX));
        assert!(decode_body(&header, &frame[HEADER_LEN..], &body[1..]).is_err());
        assert!(decode_body(&header, &frame[HEADER_LEN + 1..], &body).is_err());
    }

    #[test]
    fn runs_too_many_for_the_frame_follow_with_the_data() {
        let runs: Vec<(isize, usize)> = (0..600).map(|i| (2 * i as isize, 1)).collect();
        let data: Vec<u8> = (0..600).map(|i| i as u8).collect();
        let header = Header { kind: RequestKind::Accumulate, sequence: 3, op: 3, basic: 1, runs: 600, data_len: 600, compare_len: 0, result_len: 0 };
        assert!(!header.body_inline() && !header.runs_in_frame());
        let (frame, body) = encode(&header, &runs, data.as_slice().into(), &[]);
        assert_eq!(frame.len(), HEADER_LEN);
        let body = body.unwrap();
        assert_eq!(header.apart_len(), body.len());
        let decoded = decode_body(&header, &frame[HEADER_LEN..], &body).unwrap();
        assert_eq!((decoded.runs, decoded.data), (runs, &data[..]));
    }

    #[test]
    fn every_kind_round_trips_and_tags_never_collide() {
        for code in 1..=11 {
            let kind = RequestKind::from_code(code).unwrap();
            assert_eq!(Header::decode(&encode(&Header::control(kind, 5), &[], Vec::new().into(), &[]).0).unwrap().kind, kind);
        }
        assert!(Header::decode(&[0u8; HEADER_LEN]).is_err());
        assert!(Header::decode(&[1u8; 10]).is_err());
        for sequence in [0, 1, SEQUENCE_MASK, SEQUENCE_MASK + 1, u32::MAX] {
            assert!(body_tag(sequence) > REQUEST_TAG);
            assert!(reply_tag(sequence) > body_tag(SEQUENCE_MASK));
            assert!(reply_tag(sequence) > 0, "no tag wraps around");
        }
        assert_eq!(answer_class(&answer(54, &[1])), 54);
    }
}
