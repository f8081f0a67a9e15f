//! PMI-1 client against server over socketpairs: ranks are threads, the server runs in the test.

use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use braid_pmi::client::{PmiClient, Singleton};
use braid_pmi::server::{PmiServer, ServerEvent};
use braid_pmi::Bootstrap;

/// Starts `size` rank threads running `body` and returns the server holding their connections.
fn job<T: Send + 'static>(kvsname: &str, size: u32, body: impl Fn(PmiClient) -> T + Send + Sync + Clone + 'static) -> (PmiServer, Vec<JoinHandle<T>>) {
    let mut server = PmiServer::new(kvsname, size);
    let mut threads = Vec::new();
    for rank in 0..size {
        let (ours, theirs) = UnixStream::pair().unwrap();
        server.attach(rank, ours).unwrap();
        let body = body.clone();
        threads.push(std::thread::spawn(move || body(PmiClient::over_stream(theirs, rank, size).unwrap())));
    }
    (server, threads)
}

/// Serves until every connection is closed; returns all events. Fails the test after 10 s.
fn serve(server: &mut PmiServer) -> Vec<ServerEvent> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut events = Vec::new();
    while !server.descriptors().is_empty() {
        assert!(Instant::now() < deadline, "the job did not end; events so far: {events:?}");
        events.extend(server.poll_once(Some(Duration::from_millis(100))).unwrap());
    }
    events
}

#[test]
fn ranks_exchange_values_through_a_fence() {
    let (mut server, threads) = job("kvs_test_exchange", 3, |mut client| {
        let rank = client.rank();
        assert_eq!(client.size(), 3);
        assert_eq!(client.job_id(), "kvs_test_exchange");
        assert_eq!(client.appnum(), 0);
        assert_eq!(client.universe_size().unwrap(), Some(3));
        client.put(&format!("card-{rank}"), &format!("shm:rank={rank}")).unwrap();
        let early = client.get(&format!("card-{rank}"));
        client.fence().unwrap();
        let cards: Vec<String> = (0..3).map(|peer| client.get(&format!("card-{peer}")).unwrap()).collect();
        let missing = client.get("nobody-put-this").unwrap_err();
        client.finalize().unwrap();
        client.finalize().unwrap();
        (early.is_err(), cards, missing.operation)
    });
    let events = serve(&mut server);
    for thread in threads {
        let (early_failed, cards, missing_operation) = thread.join().unwrap();
        assert!(early_failed, "a put must not be visible before the fence");
        assert_eq!(cards, vec!["shm:rank=0", "shm:rank=1", "shm:rank=2"]);
        assert_eq!(missing_operation, "get");
    }
    for rank in 0..3 {
        assert!(events.contains(&ServerEvent::Initialized { rank }));
        assert!(events.contains(&ServerEvent::Finalized { rank }));
        assert!(events.contains(&ServerEvent::Closed { rank, finalized: true }));
        assert!(server.finalized(rank));
    }
}

#[test]
fn an_abort_reaches_the_launcher_with_its_code_and_message() {
    let (mut server, threads) = job("kvs_test_abort", 2, |mut client| {
        if client.rank() == 1 {
            client.abort(7, "out of memory = no luck\nsecond line").unwrap();
        }
    });
    let events = serve(&mut server);
    threads.into_iter().for_each(|thread| thread.join().unwrap());
    let abort = events.iter().find(|event| matches!(event, ServerEvent::Aborted { .. })).unwrap();
    assert_eq!(abort, &ServerEvent::Aborted { rank: 1, code: 7, message: "out of memory : no luck second line".to_string() });
    assert!(events.contains(&ServerEvent::Closed { rank: 0, finalized: false }));
    assert!(server.initialized(0) && !server.finalized(0));
}

#[test]
fn bad_puts_are_refused_before_reaching_the_wire() {
    let (mut server, threads) = job("kvs_test_bad_put", 1, |mut client| {
        let results = [
            client.put("has space", "v").is_err(),
            client.put("key", "has space").is_err(),
            client.put("key", &"x".repeat(2000)).is_err(),
            client.put(&"k".repeat(100), "v").is_err(),
            client.put("fine", "a=b").is_ok(),
        ];
        client.finalize().unwrap();
        results
    });
    serve(&mut server);
    assert_eq!(threads.into_iter().next().unwrap().join().unwrap(), [true; 5]);
}

#[test]
fn an_unsupported_command_is_reported_and_closes_the_rank() {
    let mut server = PmiServer::new("kvs_test_unsupported", 1);
    let (ours, theirs) = UnixStream::pair().unwrap();
    server.attach(0, ours).unwrap();
    let mut writer = theirs.try_clone().unwrap();
    writer.write_all(b"cmd=init pmi_version=1 pmi_subversion=1\ncmd=spawn nprocs=2\n").unwrap();
    let events = serve(&mut server);
    let mut reply = String::new();
    BufReader::new(theirs).read_line(&mut reply).unwrap();
    assert_eq!(reply, "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n");
    assert!(matches!(&events[1], ServerEvent::ProtocolError { rank: 0, detail } if detail.contains("spawn")), "{events:?}");
    assert_eq!(events[2], ServerEvent::Closed { rank: 0, finalized: false });
}

#[test]
fn the_environment_names_the_connection() {
    assert!(PmiClient::from_lookup(|_| None).unwrap().is_none());
    let only_fd = |name: &str| (name == "PMI_FD").then(|| "3".to_string());
    assert!(PmiClient::from_lookup(only_fd).is_err());
    let closed_fd = |name: &str| match name {
        "PMI_FD" => Some("987654".to_string()),
        "PMI_RANK" => Some("0".to_string()),
        "PMI_SIZE" => Some("1".to_string()),
        _ => None,
    };
    let error = PmiClient::from_lookup(closed_fd).err().unwrap();
    assert!(error.reason.contains("987654"), "{error}");

    // The real thing: the rank's end of a socketpair named by number, as `braid run` passes it.
    let mut server = PmiServer::new("kvs_test_env", 1);
    let (ours, theirs) = UnixStream::pair().unwrap();
    server.attach(0, ours).unwrap();
    let raw = theirs.as_raw_fd().to_string();
    let rank_thread = std::thread::spawn(move || {
        let lookup = |name: &str| match name {
            "PMI_FD" => Some(raw.clone()),
            "PMI_RANK" => Some("0".to_string()),
            "PMI_SIZE" => Some("1".to_string()),
            _ => None,
        };
        let mut client = PmiClient::from_lookup(lookup).unwrap().unwrap();
        drop(theirs);
        let job_id = client.job_id().to_string();
        client.finalize().unwrap();
        job_id
    });
    serve(&mut server);
    assert_eq!(rank_thread.join().unwrap(), "kvs_test_env");
}

#[test]
fn singletons_are_jobs_of_one_with_unique_names() {
    let mut first = Singleton::new();
    let second = Singleton::new();
    assert_ne!(first.job_id(), second.job_id());
    assert!(first.job_id().chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
    assert_eq!((first.rank(), first.size()), (0, 1));
    first.put("k", "v").unwrap();
    first.fence().unwrap();
    assert_eq!(first.get("k").unwrap(), "v");
    assert!(first.get("other").is_err());
}
