//! Rank bodies shared by the channel-transport and shared-memory test jobs.

use std::time::{Duration, Instant};

use braid_engine::{Engine, EngineError, MessageId, RequestId, SendMode, Source, Status, TagSelector};

use super::{leak, leak_zeroed, pattern};

pub const CONTEXT: u32 = 5;

pub fn send(engine: &mut Engine, data: Vec<u8>, dest: u32, tag: i32) -> RequestId {
    engine.isend(leak(data), dest, tag, CONTEXT, SendMode::Standard).unwrap()
}

pub fn post(engine: &mut Engine, len: usize, source: Source, tag: TagSelector) -> RequestId {
    engine.irecv(leak_zeroed(len), source, tag, CONTEXT).unwrap()
}

pub fn receive(engine: &mut Engine, len: usize, source: Source, tag: TagSelector) -> (Status, &'static mut [u8]) {
    let request = post(engine, len, source, tag);
    engine.wait_receive(request).unwrap()
}

/// Ranks 0 and 1 each send 200 numbered messages to rank 2, which receives them all with
/// wildcards and checks that each sender's messages arrive in order. Returns how many arrived.
pub fn wildcard_order(engine: &mut Engine) -> u32 {
    const COUNT: u32 = 200;
    if engine.rank() < 2 {
        let sends: Vec<_> = (0..COUNT).map(|i| send(engine, i.to_le_bytes().to_vec(), 2, (i % 3) as i32)).collect();
        for request in sends {
            engine.wait(request).unwrap();
        }
        return 0;
    }
    let mut next = [0u32; 2];
    for _ in 0..2 * COUNT {
        let (status, data) = receive(engine, 4, Source::Any, TagSelector::Any);
        let value = u32::from_le_bytes((&*data).try_into().unwrap());
        assert_eq!(value, next[status.source as usize], "a message from rank {} overtook another", status.source);
        assert_eq!((status.tag, status.count), ((value % 3) as i32, 4));
        next[status.source as usize] += 1;
    }
    next.iter().sum()
}

/// Ranks 0 and 1 swap two 8 MiB messages at the same time; both must arrive intact.
pub fn exchange_large(engine: &mut Engine) {
    const LEN: usize = 8 << 20;
    let peer = 1 - engine.rank();
    for round in 0..2u64 {
        let incoming = post(engine, LEN, Source::Rank(peer), TagSelector::Tag(round as i32));
        let outgoing = send(engine, pattern(round * 2 + engine.rank() as u64, LEN), peer, round as i32);
        let (status, data) = engine.wait_receive(incoming).unwrap();
        assert_eq!((status.count, status.truncated), (LEN, false));
        assert!(*data == pattern(round * 2 + peer as u64, LEN)[..], "8 MiB message corrupted");
        assert_eq!(engine.wait(outgoing).unwrap().count, LEN);
    }
}

fn mixed_size(index: usize) -> usize {
    match index % 5 {
        0 => 0,
        1 => 3,
        2 => 5000,
        3 => 40_000,
        _ => 200_000,
    }
}

/// Rank 0 starts 400 sends of mixed sizes before waiting for any; rank 1 checks order and bytes.
/// Returns (on rank 0) whether some send was still incomplete after posting them all.
pub fn many_outstanding(engine: &mut Engine) -> bool {
    const COUNT: usize = 400;
    if engine.rank() == 0 {
        let sends: Vec<_> = (0..COUNT).map(|i| send(engine, pattern(i as u64, mixed_size(i)), 1, 0)).collect();
        let backed_up = sends.iter().any(|&request| !engine.is_complete(request));
        for request in sends {
            engine.wait(request).unwrap();
        }
        return backed_up;
    }
    for i in 0..COUNT {
        let (status, data) = receive(engine, 200_000, Source::Rank(0), TagSelector::Any);
        assert_eq!(status.count, mixed_size(i), "message {i} out of order");
        assert!(data[..status.count] == pattern(i as u64, mixed_size(i))[..], "message {i} corrupted");
    }
    false
}

/// A one-rank job sends itself every size, eager and rendezvous, before and after the receive.
pub fn self_sends(engine: &mut Engine) {
    for (index, len) in [0, 1, 100, 32 * 1024, 32 * 1024 + 1, 1 << 20, 8 << 20].into_iter().enumerate() {
        let seed = index as u64;
        let sent = send(engine, pattern(seed, len), 0, 1);
        let (status, data) = receive(engine, len, Source::Rank(0), TagSelector::Tag(1));
        assert_eq!((status.source, status.count), (0, len));
        assert!(*data == pattern(seed, len)[..], "unexpected self message of {len} bytes corrupted");
        engine.wait(sent).unwrap();

        let posted = post(engine, len, Source::Any, TagSelector::Tag(2));
        let sent = engine.isend(leak(pattern(seed + 100, len)), 0, 2, CONTEXT, SendMode::Synchronous).unwrap();
        engine.wait(sent).unwrap();
        let (status, data) = engine.wait_receive(posted).unwrap();
        assert_eq!(status.count, len);
        assert!(*data == pattern(seed + 100, len)[..], "posted self message of {len} bytes corrupted");
    }
}

/// Rank 1 waits for a message that rank 0 sends 200 ms late; returns rank 1's wait.
pub fn late_message(engine: &mut Engine) -> Duration {
    if engine.rank() == 0 {
        std::thread::sleep(Duration::from_millis(200));
        let request = send(engine, vec![9; 64], 1, 3);
        engine.wait(request).unwrap();
        return Duration::ZERO;
    }
    let start = Instant::now();
    let (status, data) = receive(engine, 64, Source::Rank(0), TagSelector::Tag(3));
    assert_eq!((status.count, &*data), (64, &[9u8; 64][..]));
    start.elapsed()
}

/// Waits until a matched probe of (`source`, `tag`) finds a message; returns it and its status.
pub fn mprobe(engine: &mut Engine, source: Source, tag: TagSelector) -> (MessageId, Status) {
    let mut found = None;
    engine
        .wait_until(|engine| {
            found = engine.improbe(source, tag, CONTEXT).unwrap();
            found.is_some()
        })
        .unwrap();
    found.unwrap()
}

/// Rank 0 sends rank 1 a small, a large (rendezvous) and a small synchronous message. Rank 1
/// matches the large one with a matched probe, then shows that neither wildcard receives nor
/// probes see it any more, and receives it (and the synchronous one, also matched by probe)
/// later by its message number.
pub fn matched_probe(engine: &mut Engine) {
    const LARGE: usize = 1 << 20;
    if engine.rank() == 0 {
        let small = send(engine, pattern(1, 100), 1, 1);
        let large = send(engine, pattern(2, LARGE), 1, 2);
        let synchronous = engine.isend(leak(pattern(3, 50)), 1, 3, CONTEXT, SendMode::Synchronous).unwrap();
        for request in [small, large, synchronous] {
            engine.wait(request).unwrap();
        }
        return;
    }
    if engine.rank() != 1 {
        return;
    }
    let (large, status) = mprobe(engine, Source::Rank(0), TagSelector::Tag(2));
    assert_eq!((status.source, status.tag, status.count), (0, 2, LARGE));
    let (status, data) = receive(engine, LARGE, Source::Any, TagSelector::Any);
    assert_eq!((status.tag, status.count), (1, 100));
    assert!(data[..100] == pattern(1, 100)[..], "the small message was corrupted");
    let (synchronous, status) = mprobe(engine, Source::Any, TagSelector::Any);
    assert_eq!((status.tag, status.count), (3, 50));
    assert_eq!(engine.iprobe(Source::Any, TagSelector::Any, CONTEXT).unwrap(), None);
    assert_eq!(engine.improbe(Source::Any, TagSelector::Any, CONTEXT).unwrap(), None);
    let wildcard = post(engine, LARGE, Source::Any, TagSelector::Any);

    let request = engine.imrecv(large, leak_zeroed(LARGE)).unwrap();
    let (status, data) = engine.wait_receive(request).unwrap();
    assert_eq!((status.source, status.tag, status.count, status.truncated), (0, 2, LARGE, false));
    assert!(*data == pattern(2, LARGE)[..], "the probed rendezvous message was corrupted");
    assert_eq!(engine.imrecv(large, leak_zeroed(1)), Err(EngineError::BadRequest));
    let request = engine.imrecv(synchronous, leak_zeroed(20)).unwrap();
    let (status, data) = engine.wait_receive(request).unwrap();
    assert_eq!((status.tag, status.count, status.truncated), (3, 20, true));
    assert!(*data == pattern(3, 50)[..20], "the probed synchronous message was corrupted");

    assert!(engine.cancel(wildcard), "the wildcard receive matched a probed message");
    assert!(engine.wait(wildcard).unwrap().cancelled);
}

/// Rank 0 cancels sends that rank 1 has not matched (a rendezvous one, a synchronous one), one
/// that it has matched (a rendezvous send to a posted receive), and a standard eager one (complete
/// once it left: never cancelled). Rank 1 checks that only what was not cancelled arrives.
pub fn cancel_sends(engine: &mut Engine) {
    const LARGE: usize = 1 << 20;
    if engine.rank() == 1 {
        let matched = post(engine, LARGE, Source::Rank(0), TagSelector::Tag(13));
        let go = send(engine, Vec::new(), 0, 20);
        engine.wait(go).unwrap();
        let (status, _) = receive(engine, 0, Source::Rank(0), TagSelector::Tag(21));
        assert_eq!(status.count, 0);
        for withdrawn in [10, 11] {
            assert_eq!(engine.iprobe(Source::Any, TagSelector::Tag(withdrawn), CONTEXT).unwrap(), None, "cancelled message {withdrawn} arrived");
        }
        let (status, data) = engine.wait_receive(matched).unwrap();
        assert!(!status.cancelled && status.count == LARGE && *data == pattern(13, LARGE)[..]);
        let (status, data) = receive(engine, 8, Source::Rank(0), TagSelector::Tag(12));
        assert_eq!((status.count, &*data), (8, &pattern(12, 8)[..]));
        assert_eq!(engine.iprobe(Source::Any, TagSelector::Any, CONTEXT).unwrap(), None);
        return;
    }
    if engine.rank() != 0 {
        return;
    }
    let unmatched_rendezvous = send(engine, pattern(10, LARGE), 1, 10);
    assert!(!engine.cancel(unmatched_rendezvous), "the receiver's answer cannot be known yet");
    let status = engine.wait(unmatched_rendezvous).unwrap();
    assert!(status.cancelled && status.count == 0, "an unmatched rendezvous send was not cancelled: {status:?}");

    let unmatched_synchronous = engine.isend(leak(pattern(11, 16)), 1, 11, CONTEXT, SendMode::Synchronous).unwrap();
    engine.cancel(unmatched_synchronous);
    assert!(engine.wait(unmatched_synchronous).unwrap().cancelled, "an unmatched synchronous send was not cancelled");

    let eager = send(engine, pattern(12, 8), 1, 12);
    assert!(!engine.cancel(eager));
    assert!(!engine.wait(eager).unwrap().cancelled);

    let (status, _) = receive(engine, 0, Source::Rank(1), TagSelector::Tag(20));
    assert_eq!(status.count, 0);
    let matched = send(engine, pattern(13, LARGE), 1, 13);
    engine.cancel(matched);
    let status = engine.wait(matched).unwrap();
    assert!(!status.cancelled && status.count == LARGE, "a matched send was cancelled: {status:?}");
    let done = send(engine, Vec::new(), 1, 21);
    engine.wait(done).unwrap();
}
