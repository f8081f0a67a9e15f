//! The engine as `Engine::new` builds it: the self transport and shared memory between threads
//! of one process (each thread a rank; CMA reads the own process).

mod common;

use std::time::Duration;

use braid_config::{CmaMode, Config, WaitMode};
use common::{run_job, scenarios};

fn config() -> Config {
    Config { spin_count: 100, ..Config::default() }
}

#[test]
fn wildcard_receives_keep_each_senders_order() {
    assert_eq!(run_job(3, config(), scenarios::wildcard_order)[2], 400);
}

#[test]
fn rendezvous_single_copy_moves_8_mib_intact() {
    run_job(2, config(), scenarios::exchange_large);
}

#[test]
fn rendezvous_pipeline_moves_8_mib_intact() {
    run_job(2, Config { cma: CmaMode::Off, ..config() }, scenarios::exchange_large);
}

#[test]
fn many_outstanding_sends_wait_for_ring_cells_and_pool_buffers() {
    let tiny = Config { shm_ring_cells: 32, shm_inline_max: 256, shm_pool_buffers: 2, shm_pool_buffer_size: 8192, cma: CmaMode::Off, ..config() };
    assert!(run_job(2, tiny, scenarios::many_outstanding)[0], "the ring never filled up");
}

#[test]
fn payloads_handed_over_while_written_arrive_intact_posted_or_not() {
    // Every pooled payload, eager or a two-copy pipeline chunk, is read while being written.
    let handover = Config { shm_handover_min: 0, shm_handover_chunk: 256, cma: CmaMode::Off, ..config() };
    run_job(2, handover, scenarios::many_outstanding);
}

#[test]
fn a_matched_probe_takes_the_message_out_of_matching_until_received() {
    run_job(2, config(), scenarios::matched_probe);
    run_job(2, Config { cma: CmaMode::Off, ..config() }, scenarios::matched_probe);
}

#[test]
fn unmatched_sends_are_cancelled_and_matched_ones_complete() {
    run_job(2, config(), scenarios::cancel_sends);
    run_job(2, Config { cma: CmaMode::Off, ..config() }, scenarios::cancel_sends);
}

#[test]
fn self_sends_of_every_size_arrive_posted_or_not() {
    run_job(1, config(), scenarios::self_sends);
}

#[test]
fn a_blocking_receiver_is_woken_by_the_doorbell() {
    let config = Config { wait: WaitMode::Block, block_timeout_ms: 5000, ..config() };
    let waited = run_job(2, config, scenarios::late_message)[1];
    assert!(waited >= Duration::from_millis(150));
    assert!(waited < Duration::from_millis(3000), "the doorbell did not wake the receiver: {waited:?}");
}

#[test]
fn node_ranks_and_routes_cover_the_job() {
    let ranks = run_job(3, config(), |engine| (engine.rank(), engine.size(), engine.node_ranks().to_vec()));
    for (rank, (own, size, node)) in ranks.into_iter().enumerate() {
        assert_eq!((own, size, node), (rank as u32, 3, vec![0, 1, 2]));
    }
}
