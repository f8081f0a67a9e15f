//! Every algorithm on a simulated group of threads, checked against a sequential reference.
//!
//! The simulated channel is strict: a send returns only once the receiver has taken the message
//! (so an algorithm that would deadlock on rendezvous sends fails here), a receive must be
//! exactly the size of the message, and a message is matched by source in send order.

use std::future::Future;
use std::ops::Range;
use std::pin::pin;
use std::rc::Rc;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use super::*;
use crate::coll::hierarchy::{Hierarchy, LinkCosts, NodeLayout};
use crate::coll::port::{poll_once, Transfer};
use crate::coll::CollTuning;

const DEADLOCK: Duration = Duration::from_secs(5);

struct SimulatedChannel {
    /// This rank in its group, and which group (0, or 1 on an intercommunicator).
    rank: usize,
    group: usize,
    /// The thread of each port rank.
    threads: Vec<usize>,
    /// Channels by thread.
    to: Vec<Sender<Vec<u8>>>,
    from: Vec<Receiver<Vec<u8>>>,
    ack_to: Vec<Sender<()>>,
    ack_from: Vec<Receiver<()>>,
}

fn wait<T>(receiver: &Receiver<T>, what: &str) -> T {
    match receiver.recv_timeout(DEADLOCK) {
        Ok(value) => value,
        Err(RecvTimeoutError::Timeout) => panic!("deadlock: {what} never completed"),
        Err(RecvTimeoutError::Disconnected) => panic!("{what}: the peer thread has failed"),
    }
}

/// One rank of the simulated group: runs an algorithm, carrying out each of its rounds on the
/// channel (every send posted, then every receive in order, then every send's match awaited).
pub(crate) struct SimulatedRank {
    channel: SimulatedChannel,
    port: Rc<Port>,
}

impl SimulatedRank {
    fn rank(&self) -> usize {
        self.channel.rank
    }

    fn group(&self) -> usize {
        self.channel.group
    }

    pub(crate) fn port(&self) -> Rc<Port> {
        self.port.clone()
    }

    pub(crate) fn run<T>(&mut self, algorithm: impl Future<Output = T>) -> T {
        let mut algorithm = pin!(algorithm);
        let ch = &self.channel;
        loop {
            if let Poll::Ready(result) = poll_once(algorithm.as_mut()) {
                return result;
            }
            let mut transfers = Vec::new();
            while let Some(transfer) = self.port.take_transfer() {
                transfers.push(transfer);
            }
            assert!(!transfers.is_empty(), "rank {} waits on a round with nothing in it", ch.rank);
            let me = ch.threads[ch.rank];
            for transfer in &transfers {
                if let Transfer::Send { peer, data, len } = *transfer {
                    let peer = ch.threads[peer];
                    assert_ne!(peer, me, "rank {} sends to itself", ch.rank);
                    // SAFETY: the algorithm lends `len` bytes at `data` to this round.
                    let bytes = if len == 0 { Vec::new() } else { unsafe { std::slice::from_raw_parts(data, len) }.to_vec() };
                    ch.to[peer].send(bytes).expect("peer thread has failed");
                }
            }
            for transfer in &transfers {
                if let Transfer::Recv { peer, buffer, len } = *transfer {
                    let peer = ch.threads[peer];
                    assert_ne!(peer, me, "rank {} receives from itself", ch.rank);
                    let message = wait(&ch.from[peer], &format!("receive {me} <- {peer}"));
                    assert_eq!(message.len(), len, "size mismatch on {peer} -> {me}");
                    if len > 0 {
                        // SAFETY: the algorithm lends `len` writable bytes at `buffer` to this round.
                        unsafe { std::ptr::copy_nonoverlapping(message.as_ptr(), buffer, len) };
                    }
                    ch.ack_to[peer].send(()).expect("peer thread has failed");
                }
            }
            for transfer in &transfers {
                if let Transfer::Send { peer, .. } = *transfer {
                    let peer = ch.threads[peer];
                    wait(&ch.ack_from[peer], &format!("send {me} -> {peer}"));
                }
                self.port.finish_transfer(Ok(()));
            }
        }
    }
}

fn take<T>(row: Vec<Option<T>>) -> Vec<T> {
    row.into_iter().map(Option::unwrap).collect()
}

/// Runs `body` on every rank of a simulated group of `size` and returns the ranks' results.
pub(crate) fn run_group<T: Send>(size: usize, tuning: CollTuning, body: impl Fn(&mut SimulatedRank) -> T + Sync) -> Vec<T> {
    run_groups(&[size], tuning, body)
}

/// Runs `body` on every rank of one group, or of an intercommunicator's two groups (threads
/// `0..sizes[0]` are group 0, the others group 1), and returns the results in that order.
fn run_groups<T: Send>(sizes: &[usize], tuning: CollTuning, body: impl Fn(&mut SimulatedRank) -> T + Sync) -> Vec<T> {
    run_groups_with(sizes, tuning, None, body)
}

/// [`run_groups`] with the ports' hierarchy set.
fn run_groups_with<T: Send>(sizes: &[usize], tuning: CollTuning, hierarchy: Option<Arc<Hierarchy>>, body: impl Fn(&mut SimulatedRank) -> T + Sync) -> Vec<T> {
    let threads: usize = sizes.iter().sum();
    let mut to: Vec<Vec<Option<Sender<Vec<u8>>>>> = (0..threads).map(|_| (0..threads).map(|_| None).collect()).collect();
    let mut from: Vec<Vec<Option<Receiver<Vec<u8>>>>> = (0..threads).map(|_| (0..threads).map(|_| None).collect()).collect();
    let mut ack_to: Vec<Vec<Option<Sender<()>>>> = (0..threads).map(|_| (0..threads).map(|_| None).collect()).collect();
    let mut ack_from: Vec<Vec<Option<Receiver<()>>>> = (0..threads).map(|_| (0..threads).map(|_| None).collect()).collect();
    for sender in 0..threads {
        for receiver in 0..threads {
            let (data_in, data_out) = channel();
            to[sender][receiver] = Some(data_in);
            from[receiver][sender] = Some(data_out);
            let (ack_in, ack_out) = channel();
            ack_to[receiver][sender] = Some(ack_in);
            ack_from[sender][receiver] = Some(ack_out);
        }
    }
    let firsts: Vec<usize> = sizes.iter().scan(0, |first, &size| Some(std::mem::replace(first, *first + size))).collect();
    let mut channels: Vec<SimulatedChannel> = Vec::new();
    for thread in (0..threads).rev() {
        let group = firsts.iter().rposition(|&first| first <= thread).unwrap();
        // The port names its own group first, then the other.
        let order = if group == 0 { [0, 1] } else { [1, 0] };
        let threads_of = order.iter().filter(|&&g| g < sizes.len()).flat_map(|&g| firsts[g]..firsts[g] + sizes[g]).collect();
        channels.push(SimulatedChannel {
            rank: thread - firsts[group],
            group,
            threads: threads_of,
            to: take(to.pop().unwrap()),
            from: take(from.pop().unwrap()),
            ack_to: take(ack_to.pop().unwrap()),
            ack_from: take(ack_from.pop().unwrap()),
        });
    }
    channels.reverse();
    std::thread::scope(|scope| {
        let body = &body;
        let hierarchy = &hierarchy;
        let handles: Vec<_> = channels
            .into_iter()
            .map(|channel| {
                scope.spawn(move || {
                    let remote_size = if sizes.len() == 2 { sizes[1 - channel.group] } else { 0 };
                    let mut port = Port::between_groups(channel.rank, sizes[channel.group], remote_size, tuning);
                    port.set_hierarchy(hierarchy.clone());
                    let port = Rc::new(port);
                    body(&mut SimulatedRank { channel, port })
                })
            })
            .collect();
        handles.into_iter().map(|handle| handle.join().expect("a rank panicked")).collect()
    })
}

const SIZES: Range<usize> = 1..8;

/// Default switch points; zero (always the large-message algorithms); the all-to-all allreduce
/// at every size (its scratch on the heap too).
fn tunings() -> [CollTuning; 3] {
    [
        CollTuning::default(),
        CollTuning { bcast_split_min: 0, allreduce_split_min: 0, allreduce_exchange_max: 0, ..CollTuning::default() },
        CollTuning { allreduce_exchange_max: usize::MAX, ..CollTuning::default() },
    ]
}

/// Deterministic bytes that differ per rank and per position.
fn pattern(rank: usize, len: usize, salt: u64) -> Vec<u8> {
    let mut state = (rank as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt.wrapping_mul(0xD1B5_4A32_D192_ED03);
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

/// Commutative: element-wise wrapping sum of u64.
const SUM_SIZE: usize = 8;
fn sum(input: &[u8], inout: &mut [u8]) {
    for (a, b) in input.chunks_exact(SUM_SIZE).zip(inout.chunks_exact_mut(SUM_SIZE)) {
        let total = u64::from_le_bytes(a.try_into().unwrap()).wrapping_add(u64::from_le_bytes((&*b).try_into().unwrap()));
        b.copy_from_slice(&total.to_le_bytes());
    }
}

/// Non-commutative: 2x2 matrices of wrapping u32 (16 bytes), `inout = input * inout`.
const MATRIX_SIZE: usize = 16;
fn matrix_product(input: &[u8], inout: &mut [u8]) {
    let words = |bytes: &[u8]| -> [u32; 4] { std::array::from_fn(|i| u32::from_le_bytes(bytes[4 * i..4 * i + 4].try_into().unwrap())) };
    for (a, b) in input.chunks_exact(MATRIX_SIZE).zip(inout.chunks_exact_mut(MATRIX_SIZE)) {
        let [a0, a1, a2, a3] = words(a);
        let [b0, b1, b2, b3] = words(b);
        let product = [
            a0.wrapping_mul(b0).wrapping_add(a1.wrapping_mul(b2)),
            a0.wrapping_mul(b1).wrapping_add(a1.wrapping_mul(b3)),
            a2.wrapping_mul(b0).wrapping_add(a3.wrapping_mul(b2)),
            a2.wrapping_mul(b1).wrapping_add(a3.wrapping_mul(b3)),
        ];
        for (slot, word) in b.chunks_exact_mut(4).zip(product) {
            slot.copy_from_slice(&word.to_le_bytes());
        }
    }
}

struct Operation {
    element_size: usize,
    combine: fn(&[u8], &mut [u8]),
    commutative: bool,
}

const OPERATIONS: [Operation; 2] = [Operation { element_size: SUM_SIZE, combine: sum, commutative: true }, Operation { element_size: MATRIX_SIZE, combine: matrix_product, commutative: false }];

/// x_first op ... op x_last, sequentially.
fn reference(operation: &Operation, inputs: &[Vec<u8>]) -> Vec<u8> {
    let mut result = inputs.last().unwrap().clone();
    for input in inputs.iter().rev().skip(1) {
        (operation.combine)(input, &mut result);
    }
    result
}

const ELEMENT_COUNTS: [usize; 5] = [0, 1, 3, 8, 37];

#[test]
fn matrix_product_is_not_commutative() {
    let (a, b) = (pattern(0, MATRIX_SIZE, 1), pattern(1, MATRIX_SIZE, 1));
    let mut ab = b.clone();
    matrix_product(&a, &mut ab);
    let mut ba = a.clone();
    matrix_product(&b, &mut ba);
    assert_ne!(ab, ba);
}

#[test]
fn barrier_completes_and_synchronizes() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    for size in SIZES {
        let arrived = AtomicUsize::new(0);
        let seen = run_group(size, CollTuning::default(), |ch| {
            arrived.fetch_add(1, Ordering::SeqCst);
            ch.run(barrier(&ch.port())).unwrap();
            arrived.load(Ordering::SeqCst)
        });
        assert!(seen.iter().all(|&count| count == size), "size {size}: {seen:?}");
    }
}

#[test]
fn bcast_matches_root_data() {
    for tuning in tunings() {
        for size in SIZES {
            for len in [0, 1, 5, 100, 1000] {
                for root in 0..size {
                    let expected = pattern(root, len, 7);
                    let results = run_group(size, tuning, |ch| {
                        let mut buffer = if ch.rank() == root { expected.clone() } else { vec![0xEE; len] };
                        ch.run(bcast(&ch.port(), &mut buffer, root)).unwrap();
                        buffer
                    });
                    assert!(results.iter().all(|r| *r == expected), "size {size} len {len} root {root} {tuning:?}");
                }
            }
        }
    }
}

#[test]
fn allgather_collects_every_block_in_rank_order() {
    for size in SIZES {
        for block in [0, 1, 13] {
            let expected: Vec<u8> = (0..size).flat_map(|rank| pattern(rank, block, 3)).collect();
            let results = run_group(size, CollTuning::default(), |ch| {
                let mut all = vec![0xEE; block * size];
                let mine = pattern(ch.rank(), block, 3);
                ch.run(allgather(&ch.port(), &mine, &mut all)).unwrap();
                all
            });
            assert!(results.iter().all(|r| *r == expected), "size {size} block {block}");
        }
    }
}

/// Blocks of length 3r + 1 (rank r), laid out in reverse rank order with a gap of 2 bytes.
fn scattered_blocks(size: usize) -> (Vec<Range<usize>>, usize) {
    let mut blocks = vec![0..0; size];
    let mut offset = 0;
    for rank in (0..size).rev() {
        blocks[rank] = offset..offset + 3 * rank + 1;
        offset += 3 * rank + 1 + 2;
    }
    (blocks, offset)
}

#[test]
fn allgatherv_places_blocks_at_their_offsets() {
    for size in SIZES {
        let (blocks, total) = scattered_blocks(size);
        let mut expected = vec![0xEE; total];
        for rank in 0..size {
            expected[blocks[rank].clone()].copy_from_slice(&pattern(rank, blocks[rank].len(), 4));
        }
        for in_place in [false, true] {
            let results = run_group(size, CollTuning::default(), |ch| {
                let mine = pattern(ch.rank(), blocks[ch.rank()].len(), 4);
                let mut all = vec![0xEE; total];
                if in_place {
                    all[blocks[ch.rank()].clone()].copy_from_slice(&mine);
                    ch.run(allgatherv(&ch.port(), None, &mut all, &blocks)).unwrap();
                } else {
                    ch.run(allgatherv(&ch.port(), Some(&mine), &mut all, &blocks)).unwrap();
                }
                all
            });
            assert!(results.iter().all(|r| *r == expected), "size {size} in_place {in_place}");
        }
    }
}

#[test]
fn gather_and_scatter_round_trip_every_root() {
    for size in SIZES {
        for block in [0, 1, 9] {
            let expected: Vec<u8> = (0..size).flat_map(|rank| pattern(rank, block, 5)).collect();
            for root in 0..size {
                for in_place in [false, true] {
                    let results = run_group(size, CollTuning::default(), |ch| {
                        let rank = ch.rank();
                        let mine = pattern(rank, block, 5);
                        let mut all = if rank == root { vec![0xEE; block * size] } else { Vec::new() };
                        if rank == root && in_place {
                            all[rank * block..(rank + 1) * block].copy_from_slice(&mine);
                            ch.run(gather(&ch.port(), None, &mut all, root)).unwrap();
                        } else {
                            ch.run(gather(&ch.port(), Some(&mine), &mut all, root)).unwrap();
                        }
                        let gathered = all.clone();
                        let mut back = vec![0xEE; block];
                        if rank == root && in_place {
                            ch.run(scatter(&ch.port(), &all, None, root)).unwrap();
                            back.copy_from_slice(&all[rank * block..(rank + 1) * block]);
                        } else {
                            ch.run(scatter(&ch.port(), &all, Some(&mut back), root)).unwrap();
                        }
                        (gathered, back == mine)
                    });
                    assert_eq!(results[root].0, expected, "gather size {size} block {block} root {root}");
                    assert!(results.iter().all(|(_, ok)| *ok), "scatter size {size} block {block} root {root}");
                }
            }
        }
    }
}

#[test]
fn gatherv_and_scatterv_use_the_roots_layout() {
    for size in SIZES {
        let (blocks, total) = scattered_blocks(size);
        for root in 0..size {
            let results = run_group(size, CollTuning::default(), |ch| {
                let rank = ch.rank();
                let mine = pattern(rank, blocks[rank].len(), 6);
                let mut all = if rank == root { vec![0xEE; total] } else { Vec::new() };
                ch.run(gatherv(&ch.port(), Some(&mine), &mut all, &blocks, root)).unwrap();
                let mut back = vec![0; blocks[rank].len()];
                ch.run(scatterv(&ch.port(), &all, &blocks, Some(&mut back), root)).unwrap();
                (all, back == mine)
            });
            let mut expected = vec![0xEE; total];
            for rank in 0..size {
                expected[blocks[rank].clone()].copy_from_slice(&pattern(rank, blocks[rank].len(), 6));
            }
            assert_eq!(results[root].0, expected, "size {size} root {root}");
            assert!(results.iter().all(|(_, ok)| *ok), "size {size} root {root}");
        }
    }
}

#[test]
fn alltoall_transposes_blocks() {
    for size in SIZES {
        for block in [0, 1, 11] {
            let results = run_group(size, CollTuning::default(), |ch| {
                let send = pattern(ch.rank(), block * size, 8);
                let mut recv = vec![0xEE; block * size];
                ch.run(alltoall(&ch.port(), &send, &mut recv)).unwrap();
                recv
            });
            for (receiver, recv) in results.iter().enumerate() {
                for sender in 0..size {
                    let sent = pattern(sender, block * size, 8);
                    assert_eq!(recv[sender * block..(sender + 1) * block], sent[receiver * block..(receiver + 1) * block], "size {size}");
                }
            }
        }
    }
}

#[test]
fn alltoallv_moves_blocks_of_varying_sizes() {
    // Rank s sends s + 2d bytes to rank d, at reversed offsets on both sides.
    let layout = |size: usize, len_of: &dyn Fn(usize) -> usize| -> (Vec<Range<usize>>, usize) {
        let mut blocks = vec![0..0; size];
        let mut offset = 1;
        for peer in (0..size).rev() {
            blocks[peer] = offset..offset + len_of(peer);
            offset += len_of(peer);
        }
        (blocks, offset)
    };
    // Pairwise one step at a time, in batches of 2 (some batches shorter), all steps at once.
    for (size, batch) in SIZES.flat_map(|size| [1, 2, 32].map(|batch| (size, batch))) {
        let results = run_group(size, CollTuning { alltoall_batch: batch, ..CollTuning::default() }, |ch| {
            let rank = ch.rank();
            let (send_blocks, send_len) = layout(size, &|dest| rank + 2 * dest);
            let (recv_blocks, recv_len) = layout(size, &|source| source + 2 * rank);
            let send = pattern(rank, send_len, 9);
            let mut recv = vec![0xEE; recv_len];
            ch.run(alltoallv(&ch.port(), &send, &send_blocks, &mut recv, &recv_blocks)).unwrap();
            (recv, recv_blocks)
        });
        for (receiver, (recv, recv_blocks)) in results.iter().enumerate() {
            for sender in 0..size {
                let (send_blocks, send_len) = layout(size, &|dest| sender + 2 * dest);
                let sent = pattern(sender, send_len, 9);
                assert_eq!(recv[recv_blocks[sender].clone()], sent[send_blocks[receiver].clone()], "size {size} batch {batch}");
            }
        }
    }
}

fn inputs_for(operation: &Operation, size: usize, elements: usize) -> Vec<Vec<u8>> {
    (0..size).map(|rank| pattern(rank, elements * operation.element_size, 10)).collect()
}

#[test]
fn reduce_applies_the_operation_in_rank_order_at_every_root() {
    for operation in &OPERATIONS {
        for size in SIZES {
            for elements in ELEMENT_COUNTS {
                let inputs = inputs_for(operation, size, elements);
                let expected = reference(operation, &inputs);
                for root in 0..size {
                    let results = run_group(size, CollTuning::default(), |ch| {
                        let mut data = inputs[ch.rank()].clone();
                        ch.run(reduce(&ch.port(), &mut data, operation.element_size, &operation.combine, operation.commutative, root)).unwrap();
                        data
                    });
                    assert_eq!(results[root], expected, "size {size} elements {elements} root {root} commutative {}", operation.commutative);
                }
            }
        }
    }
}

#[test]
fn allreduce_gives_every_rank_the_same_result() {
    for tuning in tunings() {
        for operation in &OPERATIONS {
            for size in SIZES {
                for elements in ELEMENT_COUNTS {
                    let inputs = inputs_for(operation, size, elements);
                    let expected = reference(operation, &inputs);
                    let results = run_group(size, tuning, |ch| {
                        let mut data = inputs[ch.rank()].clone();
                        ch.run(allreduce(&ch.port(), &mut data, operation.element_size, &operation.combine, operation.commutative)).unwrap();
                        data
                    });
                    assert!(results.iter().all(|r| *r == expected), "size {size} elements {elements} commutative {} {tuning:?}", operation.commutative);
                }
            }
        }
    }
}

#[test]
fn reduce_scatter_gives_each_rank_its_part() {
    for operation in &OPERATIONS {
        for size in SIZES {
            let counts: Vec<usize> = (0..size).map(|rank| (rank * 2 + 1) % 4).collect();
            let total: usize = counts.iter().sum();
            let inputs = inputs_for(operation, size, total);
            let expected = reference(operation, &inputs);
            let results = run_group(size, CollTuning::default(), |ch| {
                let mut data = inputs[ch.rank()].clone();
                let mut out = vec![0xEE; counts[ch.rank()] * operation.element_size];
                ch.run(reduce_scatter(&ch.port(), &mut data, &counts, operation.element_size, &operation.combine, operation.commutative, &mut out)).unwrap();
                out
            });
            let mut offset = 0;
            for (rank, out) in results.iter().enumerate() {
                let len = counts[rank] * operation.element_size;
                assert_eq!(*out, expected[offset..offset + len], "size {size} rank {rank} commutative {}", operation.commutative);
                offset += len;
            }
        }
    }
}

#[test]
fn reduce_scatter_block_gives_each_rank_its_block() {
    for operation in &OPERATIONS {
        for size in SIZES {
            for elements in [0, 1, 4] {
                let block = elements * operation.element_size;
                let inputs = inputs_for(operation, size, elements * size);
                let expected = reference(operation, &inputs);
                let results = run_group(size, CollTuning::default(), |ch| {
                    let mut data = inputs[ch.rank()].clone();
                    let mut out = vec![0xEE; block];
                    ch.run(reduce_scatter_block(&ch.port(), &mut data, operation.element_size, &operation.combine, operation.commutative, &mut out)).unwrap();
                    out
                });
                for (rank, out) in results.iter().enumerate() {
                    assert_eq!(*out, expected[rank * block..(rank + 1) * block], "size {size} rank {rank}");
                }
            }
        }
    }
}

#[test]
fn scan_and_exscan_are_prefixes_in_rank_order() {
    for operation in &OPERATIONS {
        for size in SIZES {
            for elements in [0, 1, 5] {
                let inputs = inputs_for(operation, size, elements);
                let results = run_group(size, CollTuning::default(), |ch| {
                    let mut inclusive = inputs[ch.rank()].clone();
                    ch.run(scan(&ch.port(), &mut inclusive, operation.element_size, &operation.combine)).unwrap();
                    let mut exclusive = inputs[ch.rank()].clone();
                    ch.run(exscan(&ch.port(), &mut exclusive, operation.element_size, &operation.combine)).unwrap();
                    (inclusive, exclusive)
                });
                for (rank, (inclusive, exclusive)) in results.iter().enumerate() {
                    assert_eq!(*inclusive, reference(operation, &inputs[..=rank]), "scan size {size} rank {rank}");
                    let expected_exclusive = if rank == 0 { inputs[0].clone() } else { reference(operation, &inputs[..rank]) };
                    assert_eq!(*exclusive, expected_exclusive, "exscan size {size} rank {rank}");
                }
            }
        }
    }
}

#[test]
fn consecutive_collectives_do_not_mix_their_messages() {
    for size in SIZES {
        let results = run_group(size, CollTuning { bcast_split_min: 0, allreduce_split_min: 0, allreduce_exchange_max: 0, ..CollTuning::default() }, |ch| {
            let mut outcome = Vec::new();
            for round in 0..3u8 {
                let mut data = vec![round.wrapping_add(ch.rank() as u8); 64];
                ch.run(allreduce(&ch.port(), &mut data, 1, &|a: &[u8], b: &mut [u8]| b.iter_mut().zip(a).for_each(|(x, y)| *x = x.wrapping_add(*y)), true)).unwrap();
                let root = round as usize % size;
                let mut buffer = vec![if ch.rank() == root { round + 100 } else { 0 }; 40];
                ch.run(bcast(&ch.port(), &mut buffer, root)).unwrap();
                ch.run(barrier(&ch.port())).unwrap();
                outcome.push((data[0], buffer[0]));
            }
            outcome
        });
        for round in 0..3u8 {
            let total = (0..size).fold(0u8, |sum, rank| sum.wrapping_add(round.wrapping_add(rank as u8)));
            assert!(results.iter().all(|r| r[round as usize] == (total, round + 100)), "size {size}");
        }
    }
}

#[test]
fn bad_arguments_are_rejected_before_any_message() {
    let results = run_group(2, CollTuning::default(), |ch| {
        let mut buffer = [0u8; 4];
        let bad_root = ch.run(bcast(&ch.port(), &mut buffer, 2));
        let bad_elements = ch.run(allreduce(&ch.port(), &mut buffer, 3, &sum, true));
        let bad_length = ch.run(allgather(&ch.port(), &[1, 2], &mut buffer[..3]));
        (bad_root, bad_elements, bad_length)
    });
    for result in results {
        assert_eq!(result, (Err(MPI_ERR_ROOT), Err(MPI_ERR_ARG), Err(MPI_ERR_ARG)));
    }
}

/// Group sizes of the simulated intercommunicators: equal, unequal either way, single ranks.
const GROUP_PAIRS: [[usize; 2]; 7] = [[1, 1], [1, 3], [3, 1], [2, 2], [2, 3], [4, 1], [3, 5]];

/// Distinct inputs per (group, rank).
fn member(group: usize, rank: usize) -> usize {
    100 * group + rank
}

/// Each rank's role in a rooted collective whose root is rank `root` of group `root_group`.
fn role_in(ch: &SimulatedRank, root_group: usize, root: usize) -> inter::Role {
    match (ch.group() == root_group, ch.rank() == root) {
        (true, true) => inter::Role::Root,
        (true, false) => inter::Role::Idle,
        (false, _) => inter::Role::Remote { root },
    }
}

/// Every (root group, root rank) of a pair of groups.
fn roots(sizes: [usize; 2]) -> impl Iterator<Item = (usize, usize)> {
    (0..2).flat_map(move |group| (0..sizes[group]).map(move |root| (group, root)))
}

#[test]
fn inter_barrier_releases_no_one_before_the_other_group_has_entered() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    for sizes in GROUP_PAIRS {
        let arrived = [AtomicUsize::new(0), AtomicUsize::new(0)];
        let seen = run_groups(&sizes, CollTuning::default(), |ch| {
            arrived[ch.group()].fetch_add(1, Ordering::SeqCst);
            ch.run(inter::barrier(&ch.port())).unwrap();
            arrived[1 - ch.group()].load(Ordering::SeqCst) == sizes[1 - ch.group()]
        });
        assert!(seen.iter().all(|&ok| ok), "{sizes:?}: {seen:?}");
    }
}

#[test]
fn inter_bcast_reaches_the_other_group_only() {
    for tuning in tunings() {
        for sizes in GROUP_PAIRS {
            for len in [0, 5, 1000] {
                for (root_group, root) in roots(sizes) {
                    let expected = pattern(member(root_group, root), len, 7);
                    let results = run_groups(&sizes, tuning, |ch| {
                        let role = role_in(ch, root_group, root);
                        let mut buffer = if role == inter::Role::Root { expected.clone() } else { vec![0xEE; len] };
                        ch.run(inter::bcast(&ch.port(), &mut buffer, role)).unwrap();
                        (role, buffer)
                    });
                    for (role, buffer) in results {
                        let wanted = if role == inter::Role::Idle { vec![0xEE; len] } else { expected.clone() };
                        assert_eq!(buffer, wanted, "{sizes:?} len {len} root {root_group}/{root} {role:?} {tuning:?}");
                    }
                }
            }
        }
    }
}

#[test]
fn inter_gather_and_scatter_round_trip_through_the_root() {
    for sizes in GROUP_PAIRS {
        for block in [0, 1, 9] {
            for (root_group, root) in roots(sizes) {
                let other = 1 - root_group;
                let expected: Vec<u8> = (0..sizes[other]).flat_map(|rank| pattern(member(other, rank), block, 5)).collect();
                let results = run_groups(&sizes, CollTuning::default(), |ch| {
                    let role = role_in(ch, root_group, root);
                    let mine = pattern(member(ch.group(), ch.rank()), block, 5);
                    let mut all = if role == inter::Role::Root { vec![0xEE; block * sizes[other]] } else { Vec::new() };
                    ch.run(inter::gather(&ch.port(), &mine, &mut all, role)).unwrap();
                    let gathered = all.clone();
                    let mut back = vec![0xEE; block];
                    let mut reversed = all.clone();
                    reversed.reverse();
                    ch.run(inter::scatter(&ch.port(), &reversed, &mut back, role)).unwrap();
                    (role, gathered, back)
                });
                for (index, (role, gathered, back)) in results.iter().enumerate() {
                    match role {
                        inter::Role::Root => assert_eq!(*gathered, expected, "gather {sizes:?} block {block} root {root_group}/{root}"),
                        inter::Role::Idle => assert!(back.iter().all(|&byte| byte == 0xEE)),
                        inter::Role::Remote { .. } => {
                            let rank = index - if other == 0 { 0 } else { sizes[0] };
                            let mut reversed = expected.clone();
                            reversed.reverse();
                            assert_eq!(*back, reversed[rank * block..(rank + 1) * block], "scatter {sizes:?} block {block} root {root_group}/{root}");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn inter_gatherv_and_scatterv_use_the_roots_layout() {
    for sizes in GROUP_PAIRS {
        for (root_group, root) in roots(sizes) {
            let other = 1 - root_group;
            let (blocks, total) = scattered_blocks(sizes[other]);
            let results = run_groups(&sizes, CollTuning::default(), |ch| {
                let role = role_in(ch, root_group, root);
                let rank = ch.rank();
                let mine = if ch.group() == other { pattern(member(other, rank), blocks[rank].len(), 6) } else { Vec::new() };
                let mut all = if role == inter::Role::Root { vec![0xEE; total] } else { Vec::new() };
                ch.run(inter::gatherv(&ch.port(), &mine, &mut all, &blocks, role)).unwrap();
                let mut back = vec![0; mine.len()];
                ch.run(inter::scatterv(&ch.port(), &all, &blocks, &mut back, role)).unwrap();
                (role, all, back == mine)
            });
            let mut expected = vec![0xEE; total];
            for rank in 0..sizes[other] {
                expected[blocks[rank].clone()].copy_from_slice(&pattern(member(other, rank), blocks[rank].len(), 6));
            }
            for (role, all, round_trip) in &results {
                if *role == inter::Role::Root {
                    assert_eq!(*all, expected, "{sizes:?} root {root_group}/{root}");
                }
                assert!(round_trip, "{sizes:?} root {root_group}/{root}");
            }
        }
    }
}

/// Index of thread `index` in its group, and the group.
fn group_rank(sizes: [usize; 2], index: usize) -> (usize, usize) {
    if index < sizes[0] {
        (0, index)
    } else {
        (1, index - sizes[0])
    }
}

#[test]
fn inter_allgather_gives_each_group_the_others_blocks() {
    for sizes in GROUP_PAIRS {
        // The groups send blocks of different lengths: 3 bytes from group 0, 5 from group 1.
        let block = [3, 5];
        let results = run_groups(&sizes, CollTuning::default(), |ch| {
            let other = 1 - ch.group();
            let mine = pattern(member(ch.group(), ch.rank()), block[ch.group()], 3);
            let mut all = vec![0xEE; block[other] * sizes[other]];
            ch.run(inter::allgather(&ch.port(), &mine, &mut all)).unwrap();
            all
        });
        for (index, all) in results.iter().enumerate() {
            let other = 1 - group_rank(sizes, index).0;
            let expected: Vec<u8> = (0..sizes[other]).flat_map(|rank| pattern(member(other, rank), block[other], 3)).collect();
            assert_eq!(*all, expected, "{sizes:?} thread {index}");
        }
    }
}

#[test]
fn inter_allgatherv_places_the_other_groups_blocks_at_their_offsets() {
    for sizes in GROUP_PAIRS {
        let results = run_groups(&sizes, CollTuning::default(), |ch| {
            let other = 1 - ch.group();
            let (blocks, total) = scattered_blocks(sizes[other]);
            let mine = pattern(member(ch.group(), ch.rank()), 3 * ch.rank() + 1, 4);
            let mut all = vec![0xEE; total];
            ch.run(inter::allgatherv(&ch.port(), &mine, &mut all, &blocks)).unwrap();
            all
        });
        for (index, all) in results.iter().enumerate() {
            let other = 1 - group_rank(sizes, index).0;
            let (blocks, total) = scattered_blocks(sizes[other]);
            let mut expected = vec![0xEE; total];
            for rank in 0..sizes[other] {
                expected[blocks[rank].clone()].copy_from_slice(&pattern(member(other, rank), blocks[rank].len(), 4));
            }
            assert_eq!(*all, expected, "{sizes:?} thread {index}");
        }
    }
}

#[test]
fn inter_alltoall_transposes_blocks_between_the_groups() {
    for sizes in GROUP_PAIRS {
        let block = [2, 7];
        let results = run_groups(&sizes, CollTuning::default(), |ch| {
            let other = 1 - ch.group();
            let send = pattern(member(ch.group(), ch.rank()), block[ch.group()] * sizes[other], 8);
            let mut recv = vec![0xEE; block[other] * sizes[other]];
            ch.run(inter::alltoall(&ch.port(), &send, &mut recv)).unwrap();
            recv
        });
        for (index, recv) in results.iter().enumerate() {
            let (group, rank) = group_rank(sizes, index);
            let other = 1 - group;
            for sender in 0..sizes[other] {
                let sent = pattern(member(other, sender), block[other] * sizes[group], 8);
                let b = block[other];
                assert_eq!(recv[sender * b..(sender + 1) * b], sent[rank * b..(rank + 1) * b], "{sizes:?} thread {index} from {sender}");
            }
        }
    }
}

#[test]
fn inter_alltoallv_moves_blocks_of_varying_sizes() {
    // Rank s of group g sends s + 2d + g bytes to remote rank d, at reversed offsets on both sides.
    let layout = |count: usize, len_of: &dyn Fn(usize) -> usize| -> (Vec<Range<usize>>, usize) {
        let mut blocks = vec![0..0; count];
        let mut offset = 1;
        for peer in (0..count).rev() {
            blocks[peer] = offset..offset + len_of(peer);
            offset += len_of(peer);
        }
        (blocks, offset)
    };
    for sizes in GROUP_PAIRS {
        let results = run_groups(&sizes, CollTuning::default(), |ch| {
            let (group, rank) = (ch.group(), ch.rank());
            let other = 1 - group;
            let (send_blocks, send_len) = layout(sizes[other], &|dest| rank + 2 * dest + group);
            let (recv_blocks, recv_len) = layout(sizes[other], &|source| source + 2 * rank + other);
            let send = pattern(member(group, rank), send_len, 9);
            let mut recv = vec![0xEE; recv_len];
            ch.run(inter::alltoallv(&ch.port(), &send, &send_blocks, &mut recv, &recv_blocks)).unwrap();
            (recv, recv_blocks)
        });
        for (index, (recv, recv_blocks)) in results.iter().enumerate() {
            let (group, rank) = group_rank(sizes, index);
            let other = 1 - group;
            for sender in 0..sizes[other] {
                let (send_blocks, send_len) = layout(sizes[group], &|dest| sender + 2 * dest + other);
                let sent = pattern(member(other, sender), send_len, 9);
                assert_eq!(recv[recv_blocks[sender].clone()], sent[send_blocks[rank].clone()], "{sizes:?} thread {index} from {sender}");
            }
        }
    }
}

fn group_inputs(operation: &Operation, sizes: [usize; 2], elements: usize) -> [Vec<Vec<u8>>; 2] {
    std::array::from_fn(|group| (0..sizes[group]).map(|rank| pattern(member(group, rank), elements * operation.element_size, 10)).collect())
}

#[test]
fn inter_reduce_applies_the_operation_over_the_other_group_in_rank_order() {
    for operation in &OPERATIONS {
        for sizes in GROUP_PAIRS {
            for elements in [0, 1, 5] {
                let inputs = group_inputs(operation, sizes, elements);
                for (root_group, root) in roots(sizes) {
                    let results = run_groups(&sizes, CollTuning::default(), |ch| {
                        let role = role_in(ch, root_group, root);
                        let mut data = if role == inter::Role::Root { vec![0xEE; elements * operation.element_size] } else { inputs[ch.group()][ch.rank()].clone() };
                        ch.run(inter::reduce(&ch.port(), &mut data, operation.element_size, &operation.combine, operation.commutative, role)).unwrap();
                        (role, data)
                    });
                    let expected = reference(operation, &inputs[1 - root_group]);
                    let at_root = results.iter().find(|(role, _)| *role == inter::Role::Root).unwrap();
                    assert_eq!(at_root.1, expected, "{sizes:?} elements {elements} root {root_group}/{root} commutative {}", operation.commutative);
                }
            }
        }
    }
}

#[test]
fn inter_allreduce_gives_each_group_the_other_groups_result() {
    for tuning in tunings() {
        for operation in &OPERATIONS {
            for sizes in GROUP_PAIRS {
                for elements in [0, 1, 37] {
                    let inputs = group_inputs(operation, sizes, elements);
                    let results = run_groups(&sizes, tuning, |ch| {
                        let mut data = inputs[ch.group()][ch.rank()].clone();
                        ch.run(inter::allreduce(&ch.port(), &mut data, operation.element_size, &operation.combine, operation.commutative)).unwrap();
                        data
                    });
                    for (index, data) in results.iter().enumerate() {
                        let other = 1 - group_rank(sizes, index).0;
                        assert_eq!(*data, reference(operation, &inputs[other]), "{sizes:?} elements {elements} thread {index} commutative {} {tuning:?}", operation.commutative);
                    }
                }
            }
        }
    }
}

#[test]
fn inter_reduce_scatter_scatters_the_other_groups_result() {
    for operation in &OPERATIONS {
        for sizes in GROUP_PAIRS {
            // Both groups reduce vectors of 12 elements, cut differently: 0, 1, 2, ... and the rest last.
            let total = 12;
            let counts_of = |group: usize| -> Vec<usize> {
                let mut counts: Vec<usize> = (0..sizes[group]).collect();
                counts[sizes[group] - 1] = total - counts[..sizes[group] - 1].iter().sum::<usize>();
                counts
            };
            let inputs = group_inputs(operation, sizes, total);
            let results = run_groups(&sizes, CollTuning::default(), |ch| {
                let counts = counts_of(ch.group());
                let mut data = inputs[ch.group()][ch.rank()].clone();
                let mut out = vec![0xEE; counts[ch.rank()] * operation.element_size];
                ch.run(inter::reduce_scatter(&ch.port(), &mut data, &counts, operation.element_size, &operation.combine, operation.commutative, &mut out)).unwrap();
                out
            });
            for (index, out) in results.iter().enumerate() {
                let (group, rank) = group_rank(sizes, index);
                let counts = counts_of(group);
                let expected = reference(operation, &inputs[1 - group]);
                let offset = counts[..rank].iter().sum::<usize>() * operation.element_size;
                assert_eq!(*out, expected[offset..offset + counts[rank] * operation.element_size], "{sizes:?} thread {index} commutative {}", operation.commutative);
            }
        }
    }
}

#[test]
fn inter_reduce_scatter_block_gives_each_rank_its_block() {
    for operation in &OPERATIONS {
        for sizes in GROUP_PAIRS {
            // Vectors as long in both groups: a multiple of both sizes.
            let total = sizes[0] * sizes[1] * 2;
            let inputs = group_inputs(operation, sizes, total);
            let results = run_groups(&sizes, CollTuning::default(), |ch| {
                let block = total / sizes[ch.group()] * operation.element_size;
                let mut data = inputs[ch.group()][ch.rank()].clone();
                let mut out = vec![0xEE; block];
                ch.run(inter::reduce_scatter_block(&ch.port(), &mut data, operation.element_size, &operation.combine, operation.commutative, &mut out)).unwrap();
                out
            });
            for (index, out) in results.iter().enumerate() {
                let (group, rank) = group_rank(sizes, index);
                let block = total / sizes[group] * operation.element_size;
                let expected = reference(operation, &inputs[1 - group]);
                assert_eq!(*out, expected[rank * block..(rank + 1) * block], "{sizes:?} thread {index}");
            }
        }
    }
}

#[test]
fn inter_bad_arguments_are_rejected_before_any_message() {
    let results = run_groups(&[2, 1], CollTuning::default(), |ch| {
        let mut buffer = [0u8; 4];
        let port = ch.port();
        let bad_root = ch.run(inter::bcast(&port, &mut buffer, inter::Role::Remote { root: port.remote_size() }));
        let bad_elements = ch.run(inter::allreduce(&port, &mut buffer, 3, &sum, true));
        let bad_blocks = ch.run(inter::gatherv(&port, &[], &mut buffer, &vec![0..9; port.remote_size()], inter::Role::Root));
        (bad_root, bad_elements, bad_blocks)
    });
    for result in results {
        assert_eq!(result, (Err(MPI_ERR_ROOT), Err(MPI_ERR_ARG), Err(MPI_ERR_BUFFER)));
    }
}

/// Node layouts for the hierarchical forms: blocked, cyclic, uneven, one node, one rank per node.
const LAYOUTS: [&[u32]; 6] = [&[0, 0, 1, 1], &[0, 1, 0, 1], &[0, 0, 0, 1, 1], &[0, 1, 1, 2, 2, 2, 0], &[5, 5, 5], &[0, 1, 2]];

#[test]
fn hierarchical_allreduce_and_reduce_match_the_reference_on_every_layout() {
    let operation = &OPERATIONS[0];
    for ids in LAYOUTS {
        let layout = NodeLayout::new(ids);
        let size = ids.len();
        for elements in ELEMENT_COUNTS {
            let inputs = inputs_for(operation, size, elements);
            let expected = reference(operation, &inputs);
            let results = run_group(size, CollTuning::default(), |ch| {
                let mut data = inputs[ch.rank()].clone();
                ch.run(hier::allreduce(&ch.port(), &layout, &mut data, operation.element_size, &operation.combine)).unwrap();
                data
            });
            assert!(results.iter().all(|r| *r == expected), "allreduce, layout {ids:?}, {elements} elements");
            for root in 0..size {
                let results = run_group(size, CollTuning::default(), |ch| {
                    let mut data = inputs[ch.rank()].clone();
                    ch.run(hier::reduce(&ch.port(), &layout, &mut data, operation.element_size, &operation.combine, root)).unwrap();
                    data
                });
                assert_eq!(results[root], expected, "reduce to {root}, layout {ids:?}, {elements} elements");
            }
        }
    }
}

#[test]
fn hierarchical_bcast_and_barrier_work_on_every_layout() {
    for ids in LAYOUTS {
        let layout = NodeLayout::new(ids);
        let size = ids.len();
        for len in [0, 1, 100, 70_000] {
            for root in 0..size {
                let message = pattern(root, len, 3);
                let results = run_group(size, CollTuning { bcast_split_min: 0, ..CollTuning::default() }, |ch| {
                    let mut buffer = if ch.rank() == root { message.clone() } else { vec![0; len] };
                    ch.run(hier::bcast(&ch.port(), &layout, &mut buffer, root)).unwrap();
                    ch.run(hier::barrier(&ch.port(), &layout)).unwrap();
                    buffer
                });
                assert!(results.iter().all(|r| *r == message), "bcast from {root}, layout {ids:?}, {len} bytes");
            }
        }
    }
}

#[test]
fn a_port_with_a_hierarchy_runs_the_form_the_model_picks_and_gets_the_same_results() {
    // Links so unequal that a cyclic layout always goes hierarchical.
    let costs = LinkCosts { intra: braid_lane::Profile::from_model(10.0, 1e12, 1 << 24), inter: braid_lane::Profile::from_model(1e6, 1e6, 1 << 24), wake_up: 0.0, awake: 0.0 };
    let ids = [0, 1, 0, 1, 0, 1];
    let hierarchy = Arc::new(Hierarchy::new(NodeLayout::new(&ids), costs));
    let operation = &OPERATIONS[0];
    let inputs = inputs_for(operation, ids.len(), 8);
    let expected = reference(operation, &inputs);
    let results = run_groups_with(&[ids.len()], CollTuning::default(), Some(hierarchy.clone()), |ch| {
        let port = ch.port();
        assert!(port.hierarchy_for(crate::coll::hierarchy::Collective::Allreduce, 64).is_some());
        let mut data = inputs[ch.rank()].clone();
        ch.run(allreduce(&port, &mut data, operation.element_size, &operation.combine, true)).unwrap();
        let mut root_data = inputs[ch.rank()].clone();
        ch.run(reduce(&port, &mut root_data, operation.element_size, &operation.combine, true, 3)).unwrap();
        let mut message = if ch.rank() == 1 { pattern(1, 40, 9) } else { vec![0; 40] };
        ch.run(bcast(&port, &mut message, 1)).unwrap();
        ch.run(barrier(&port)).unwrap();
        (data, (ch.rank() == 3).then_some(root_data), message)
    });
    for (data, root_data, message) in results {
        assert_eq!(data, expected);
        if let Some(root_data) = root_data {
            assert_eq!(root_data, expected);
        }
        assert_eq!(message, pattern(1, 40, 9));
    }
}

/// A port on each layout of [`LAYOUTS`] that always takes the hierarchical forms.
fn run_hierarchical<T: Send>(ids: &[u32], body: impl Fn(&mut SimulatedRank) -> T + Sync) -> Vec<T> {
    let costs = LinkCosts { intra: braid_lane::Profile::from_model(300.0, 10e9, 1 << 24), inter: braid_lane::Profile::from_model(20_000.0, 200e6, 1 << 24), wake_up: 0.0, awake: 0.0 };
    let hierarchy = Arc::new(Hierarchy::new(NodeLayout::new(ids), costs));
    let tuning = CollTuning { hierarchy: braid_config::HierarchyMode::Always, ..CollTuning::default() };
    run_groups_with(&[ids.len()], tuning, Some(hierarchy), body)
}

#[test]
fn hierarchical_allgather_and_allgatherv_put_blocks_in_rank_order_on_every_layout() {
    for ids in LAYOUTS {
        let size = ids.len();
        for block in [0, 1, 5, 3000] {
            let expected: Vec<u8> = (0..size).flat_map(|rank| pattern(rank, block, 4)).collect();
            let results = run_hierarchical(ids, |ch| {
                let mut all = vec![0; block * size];
                ch.run(allgather(&ch.port(), &pattern(ch.rank(), block, 4), &mut all)).unwrap();
                all
            });
            assert!(results.iter().all(|r| *r == expected), "allgather, layout {ids:?}, {block} bytes");
        }
        let (blocks, len) = scattered_blocks(size);
        let results = run_hierarchical(ids, |ch| {
            let mut all = vec![0xEE; len];
            let mine = pattern(ch.rank(), blocks[ch.rank()].len(), 6);
            ch.run(allgatherv(&ch.port(), Some(&mine), &mut all, &blocks)).unwrap();
            all
        });
        for all in results {
            for (rank, block) in blocks.iter().enumerate() {
                assert_eq!(all[block.clone()], pattern(rank, block.len(), 6), "allgatherv, layout {ids:?}, block {rank}");
            }
        }
    }
}

#[test]
fn hierarchical_gather_and_scatter_round_trip_every_root_on_every_layout() {
    for ids in LAYOUTS {
        let size = ids.len();
        for block in [0, 3, 2000] {
            for root in 0..size {
                for in_place in [false, true] {
                    let results = run_hierarchical(ids, |ch| {
                        let port = ch.port();
                        let rank = ch.rank();
                        let mine = pattern(rank, block, 8);
                        let mut all = vec![0; block * size];
                        if rank == root && in_place {
                            all[rank * block..(rank + 1) * block].copy_from_slice(&mine);
                        }
                        let own = (rank != root || !in_place).then_some(&mine[..]);
                        ch.run(gather(&port, own, &mut all, root)).unwrap();
                        let source: Vec<u8> = if rank == root { (0..size).flat_map(|r| pattern(r, block, 9)).collect() } else { Vec::new() };
                        let mut back = vec![0; block];
                        let into = (rank != root || !in_place).then_some(&mut back[..]);
                        ch.run(scatter(&port, &source, into, root)).unwrap();
                        (all, back)
                    });
                    let gathered: Vec<u8> = (0..size).flat_map(|r| pattern(r, block, 8)).collect();
                    assert_eq!(results[root].0, gathered, "gather to {root}, layout {ids:?}, {block} bytes");
                    for (rank, (_, back)) in results.iter().enumerate() {
                        if rank != root || !in_place {
                            assert_eq!(*back, pattern(rank, block, 9), "scatter from {root} to {rank}, layout {ids:?}, {block} bytes");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn hierarchical_reduce_scatter_gives_each_rank_its_part_on_every_layout() {
    let operation = &OPERATIONS[0];
    for ids in LAYOUTS {
        let size = ids.len();
        for per_rank in [0, 1, 7] {
            // Uneven parts: rank r gets per_rank + r elements.
            let counts: Vec<usize> = (0..size).map(|rank| per_rank + rank).collect();
            let elements: usize = counts.iter().sum();
            let inputs = inputs_for(operation, size, elements);
            let expected = reference(operation, &inputs);
            let results = run_hierarchical(ids, |ch| {
                let mut data = inputs[ch.rank()].clone();
                let mut out = vec![0; counts[ch.rank()] * operation.element_size];
                ch.run(reduce_scatter(&ch.port(), &mut data, &counts, operation.element_size, &operation.combine, true, &mut out)).unwrap();
                out
            });
            let mut offset = 0;
            for (rank, out) in results.iter().enumerate() {
                let len = counts[rank] * operation.element_size;
                assert_eq!(*out, expected[offset..offset + len], "layout {ids:?}, rank {rank}, {per_rank} elements each");
                offset += len;
            }
        }
    }
}

#[test]
fn hierarchical_alltoall_transposes_blocks_on_every_layout() {
    for ids in LAYOUTS {
        let size = ids.len();
        for block in [0, 1, 9, 1500] {
            let results = run_hierarchical(ids, |ch| {
                let send = pattern(ch.rank(), block * size, 10);
                let mut recv = vec![0; block * size];
                ch.run(alltoall(&ch.port(), &send, &mut recv)).unwrap();
                recv
            });
            for (rank, recv) in results.iter().enumerate() {
                for source in 0..size {
                    let sent = pattern(source, block * size, 10);
                    assert_eq!(recv[source * block..(source + 1) * block], sent[rank * block..(rank + 1) * block], "layout {ids:?}, {source} -> {rank}, {block} bytes");
                }
            }
        }
    }
}

#[test]
fn hierarchical_gatherv_and_scatterv_round_trip_every_root_on_every_layout() {
    for ids in LAYOUTS {
        let size = ids.len();
        let (blocks, len) = scattered_blocks(size);
        for root in 0..size {
            for in_place in [false, true] {
                let results = run_hierarchical(ids, |ch| {
                    let port = ch.port();
                    let rank = ch.rank();
                    let mine = pattern(rank, blocks[rank].len(), 11);
                    let mut all = vec![0xEE; len];
                    if rank == root && in_place {
                        all[blocks[rank].clone()].copy_from_slice(&mine);
                    }
                    let own = (rank != root || !in_place).then_some(&mine[..]);
                    ch.run(gatherv(&port, own, &mut all, &blocks, root)).unwrap();
                    let mut source = vec![0; len];
                    if rank == root {
                        for (r, block) in blocks.iter().enumerate() {
                            source[block.clone()].copy_from_slice(&pattern(r, block.len(), 12));
                        }
                    }
                    let mut back = vec![0; blocks[rank].len()];
                    let into = (rank != root || !in_place).then_some(&mut back[..]);
                    ch.run(scatterv(&port, &source, &blocks, into, root)).unwrap();
                    (all, back)
                });
                for (rank, block) in blocks.iter().enumerate() {
                    assert_eq!(results[root].0[block.clone()], pattern(rank, block.len(), 11), "gatherv to {root}, layout {ids:?}, block {rank}");
                }
                for (rank, (_, back)) in results.iter().enumerate() {
                    if rank != root || !in_place {
                        assert_eq!(*back, pattern(rank, blocks[rank].len(), 12), "scatterv from {root} to {rank}, layout {ids:?}");
                    }
                }
            }
        }
    }
}

#[test]
fn hierarchical_alltoallv_delivers_blocks_of_every_size_on_every_layout() {
    // Rank s sends (s + 2 * d) % 5 * scale bytes to rank d (some pairs nothing), blocks in
    // reverse rank order with gaps, so no two ranks' layouts of their buffers agree.
    let len = |source: usize, dest: usize, scale: usize| (source + 2 * dest) % 5 * scale;
    let blocks = |lens: &dyn Fn(usize) -> usize, size: usize| -> (Vec<Range<usize>>, usize) {
        let mut ranges = vec![0..0; size];
        let mut offset = 0;
        for peer in (0..size).rev() {
            ranges[peer] = offset..offset + lens(peer);
            offset += lens(peer) + 1;
        }
        (ranges, offset)
    };
    for ids in LAYOUTS {
        let size = ids.len();
        for scale in [1, 700] {
            let results = run_hierarchical(ids, |ch| {
                let rank = ch.rank();
                let (send_blocks, send_len) = blocks(&|dest| len(rank, dest, scale), size);
                let (recv_blocks, recv_len) = blocks(&|source| len(source, rank, scale), size);
                let send = pattern(rank, send_len, 13);
                let mut recv = vec![0xEE; recv_len];
                ch.run(alltoallv(&ch.port(), &send, &send_blocks, &mut recv, &recv_blocks)).unwrap();
                (recv, recv_blocks)
            });
            for (rank, (recv, recv_blocks)) in results.iter().enumerate() {
                for source in 0..size {
                    let (send_blocks, send_len) = blocks(&|dest| len(source, dest, scale), size);
                    let sent = pattern(source, send_len, 13);
                    assert_eq!(recv[recv_blocks[source].clone()], sent[send_blocks[rank].clone()], "layout {ids:?}, {source} -> {rank}, scale {scale}");
                }
            }
        }
    }
}
