//! The conformance suite against every transport of this crate.
#![cfg(not(loom))]

use braid_config::{CmaMode, Config};
use braid_transport::conformance::Suite;
use braid_transport::selfloop::SelfTransport;
use braid_transport::shm::ShmTransport;
use braid_transport::Transport;

/// Small rings and pool so back-pressure and wrap-around happen within a short test.
fn small_config() -> Config {
    Config { shm_ring_cells: 64, shm_inline_max: 512, shm_pool_buffers: 4, shm_pool_buffer_size: 8192, ..Config::default() }
}

#[test]
fn self_transport_conforms() {
    Suite::new("self", 1, |_, _| SelfTransport::new()).run_all();
}

#[test]
fn shm_conforms_with_two_ranks() {
    Suite::new("shm2", 2, |_, _| ShmTransport::new(&Config::default()).unwrap()).expect_backpressure().run_all();
}

#[test]
fn shm_conforms_with_three_ranks_and_small_buffers() {
    Suite::new("shm3", 3, |_, _| ShmTransport::new(&small_config()).unwrap()).expect_backpressure().run_all();
}

#[test]
fn shm_conforms_with_four_ranks_without_cma() {
    let config = Config { cma: CmaMode::Off, ..small_config() };
    Suite::new("shm4", 4, move |_, _| ShmTransport::new(&config).unwrap()).expect_backpressure().run_all();
}

#[test]
fn shm_conforms_when_every_pooled_payload_is_handed_over_while_written() {
    let config = Config { shm_handover_min: 0, shm_handover_chunk: 64, ..small_config() };
    Suite::new("shm3h", 3, move |_, _| ShmTransport::new(&config).unwrap()).expect_backpressure().run_all();
}

#[test]
fn shm_alone_on_its_node_reaches_nobody() {
    let results = Suite::new("shm1", 1, |_, _| ShmTransport::new(&Config::default()).unwrap()).run_job("alone", |me| (me.peers(), me.transport.node_ranks().to_vec(), me.transport.prepare_sleep()));
    assert_eq!(results, vec![(vec![], vec![0], None)]);
}
