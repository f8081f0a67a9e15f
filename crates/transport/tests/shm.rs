//! Wire-up of the shared-memory transport: nothing left in /dev/shm, clean failures.
#![cfg(not(loom))]

use std::io::IoSlice;
use std::sync::atomic::{AtomicU32, Ordering};

use braid_config::Config;
use braid_pmi::threads::ThreadBootstrap;
use braid_transport::shm::ShmTransport;
use braid_transport::{SendOutcome, Transport, TransportError};

static JOBS: AtomicU32 = AtomicU32::new(0);

fn unique_job(tag: &str) -> String {
    format!("shmtest {tag}/{}:{}", std::process::id(), JOBS.fetch_add(1, Ordering::Relaxed))
}

/// Files in /dev/shm that belong to `job_id`.
fn leftovers(job_id: &str) -> Vec<String> {
    let prefix = ShmTransport::segment_name(job_id, 0).trim_end_matches('0').to_string();
    std::fs::read_dir("/dev/shm").unwrap().filter_map(|entry| entry.ok()?.file_name().into_string().ok()).filter(|name| name.starts_with(&prefix)).collect()
}

/// Connects one transport per rank, each with its own config, on threads; returns the results.
fn connect_all(job_id: &str, configs: Vec<Config>) -> Vec<(ShmTransport, Result<(), TransportError>)> {
    let threads: Vec<_> = ThreadBootstrap::job(job_id, configs.len() as u32)
        .into_iter()
        .zip(configs)
        .map(|(mut bootstrap, config)| {
            std::thread::spawn(move || {
                let mut transport = ShmTransport::new(&config).unwrap();
                let result = transport.connect(&mut bootstrap);
                (transport, result)
            })
        })
        .collect();
    threads.into_iter().map(|thread| thread.join().unwrap()).collect()
}

#[test]
fn segment_names_are_sanitised() {
    assert_eq!(ShmTransport::segment_name("job/with spaces:1", 3), "braid-job_with_spaces_1-3");
    assert_eq!(ShmTransport::segment_name("kvs_42-a", 0), "braid-kvs_42-a-0");
}

#[test]
fn no_segment_file_survives_connect() {
    let job_id = unique_job("clean");
    let mut ranks = connect_all(&job_id, vec![Config::default(); 3]);
    for (_, result) in &ranks {
        result.as_ref().unwrap();
    }
    assert_eq!(leftovers(&job_id), Vec::<String>::new());
    assert_eq!(ranks[0].0.node_ranks(), &[0, 1, 2]);
    // The unlinked segments still carry frames.
    assert_eq!(ranks[2].0.try_send(0, b"after-unlink", &[IoSlice::new(&[1, 2, 3])]), Ok(SendOutcome::Sent));
    let mut got = Vec::new();
    ranks[0].0.poll(&mut |frame| got.push((frame.peer, frame.header.to_vec(), frame.payload.whole().to_vec())));
    assert_eq!(got, vec![(2, b"after-unlink".to_vec(), vec![1, 2, 3])]);
}

#[test]
fn mismatched_settings_fail_on_every_rank_and_leave_nothing() {
    let job_id = unique_job("mismatch");
    let other = Config { shm_ring_cells: 1024, ..Config::default() };
    let ranks = connect_all(&job_id, vec![Config::default(), other]);
    assert_disagreement(&ranks);
    assert_eq!(leftovers(&job_id), Vec::<String>::new());

    let job_id = unique_job("mismatch-inline");
    let other = Config { shm_inline_max: 2048, ..Config::default() };
    let ranks = connect_all(&job_id, vec![Config::default(), other]);
    assert_disagreement(&ranks);
    assert_eq!(leftovers(&job_id), Vec::<String>::new());
}

fn assert_disagreement(ranks: &[(ShmTransport, Result<(), TransportError>)]) {
    for (_, result) in ranks {
        match result {
            Err(TransportError::System(reason)) => assert!(reason.contains("disagree"), "{reason}"),
            other => panic!("expected a settings mismatch, got {other:?}"),
        }
    }
}

#[test]
fn a_stale_file_is_reported_and_not_removed() {
    let job_id = unique_job("stale");
    let stale = ShmTransport::segment_name(&job_id, 0);
    let stale_path = format!("/dev/shm/{stale}");
    std::fs::write(&stale_path, b"not ours").unwrap();
    let ranks = connect_all(&job_id, vec![Config::default(); 2]);
    let still_there = std::fs::read(&stale_path);
    std::fs::remove_file(&stale_path).unwrap();
    match &ranks[0].1 {
        Err(TransportError::System(reason)) => assert!(reason.contains("cannot create"), "{reason}"),
        other => panic!("rank 0 should fail to create its segment, got {other:?}"),
    }
    assert!(ranks[1].1.is_err(), "rank 1 cannot use a foreign file as rank 0's segment");
    assert_eq!(still_there.unwrap(), b"not ours");
    assert_eq!(leftovers(&job_id), Vec::<String>::new());
}

#[test]
fn settings_that_cannot_work_are_refused_up_front() {
    let too_big_inline = Config { shm_ring_cells: 8, shm_inline_max: 1024, ..Config::default() };
    assert!(matches!(ShmTransport::new(&too_big_inline), Err(TransportError::System(reason)) if reason.contains("BRAID_SHM_INLINE_MAX")));
}
