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
        assert_eq!(Bootstrap::universe_size(&mut client).unwrap(), Some(3));
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

#[test]
fn a_spawn_becomes_a_job_of_its_own_with_the_preput_values_and_its_own_barrier() {
    use braid_pmi::spawn::{SpawnCommand, SpawnRequest, PARENT_PORT_KEY};
    let request = SpawnRequest {
        commands: vec![
            SpawnCommand { execname: "./worker".into(), nprocs: 2, args: vec!["a b".into()], info: vec![] },
            SpawnCommand { execname: "./other".into(), nprocs: 1, args: vec![], info: vec![("wdir".into(), "/tmp".into())] },
        ],
        preput: vec![(PARENT_PORT_KEY.into(), "braid-port:127.0.0.1:1".into())],
    };
    let asked = request.clone();
    let (mut server, mut threads) = job("kvs_test_spawn", 1, move |mut client| {
        let refused = client.spawn(&asked).unwrap_err();
        client.spawn(&asked).unwrap();
        client.put("parent-only", "1").unwrap();
        client.fence().unwrap();
        client.finalize().unwrap();
        refused.reason
    });
    // The first spawn is refused, the second started as job "kvs_test_spawn-1".
    let mut spawned = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut answered = 0;
    while answered < 2 {
        assert!(Instant::now() < deadline, "no spawn request arrived");
        for event in server.poll_once(Some(Duration::from_millis(100))).unwrap() {
            let ServerEvent::Spawn { rank: 0, request: got } = event else { continue };
            assert_eq!(got, request);
            if answered == 0 {
                server.answer_spawn(0, Err("no\nroom".into()));
            } else {
                let first = server.add_job("kvs_test_spawn-1", &got);
                assert_eq!(first, 1);
                for (index, process) in (first..first + 3).enumerate() {
                    let (ours, theirs) = UnixStream::pair().unwrap();
                    server.attach(process, ours).unwrap();
                    spawned.push(std::thread::spawn(move || {
                        let mut client = PmiClient::over_stream(theirs, index as u32, 3).unwrap();
                        let port = client.get(PARENT_PORT_KEY).unwrap();
                        let parents = client.get("parent-only").is_err();
                        client.fence().unwrap();
                        client.finalize().unwrap();
                        (client.job_id().to_string(), client.appnum(), port, parents)
                    }));
                }
                assert_eq!(server.job_of(2), Some(("kvs_test_spawn-1", 1)));
                server.answer_spawn(0, Ok(()));
            }
            answered += 1;
        }
    }
    serve(&mut server);
    assert!(threads.remove(0).join().unwrap().contains("no room"));
    let results: Vec<_> = spawned.into_iter().map(|thread| thread.join().unwrap()).collect();
    let appnums: Vec<i32> = results.iter().map(|(_, appnum, _, _)| *appnum).collect();
    assert_eq!(appnums, vec![0, 0, 1]);
    for (job, _, port, separate) in results {
        assert_eq!((job.as_str(), port.as_str(), separate), ("kvs_test_spawn-1", "braid-port:127.0.0.1:1", true));
    }
}

#[test]
fn names_are_published_looked_up_and_withdrawn() {
    let (mut server, threads) = job("kvs_test_names", 2, |mut client| {
        let rank = client.rank();
        if rank == 0 {
            client.publish_name("ocean", "braid-port:127.0.0.1:9").unwrap();
            assert!(client.publish_name("ocean", "elsewhere").is_err(), "a service is published once");
        }
        client.fence().unwrap();
        let found = client.lookup_name("ocean").unwrap();
        client.fence().unwrap();
        if rank == 1 {
            client.unpublish_name("ocean").unwrap();
            assert!(client.unpublish_name("ocean").is_err());
        }
        client.fence().unwrap();
        let gone = client.lookup_name("ocean").is_err();
        client.finalize().unwrap();
        (found, gone)
    });
    serve(&mut server);
    for thread in threads {
        assert_eq!(thread.join().unwrap(), ("braid-port:127.0.0.1:9".to_string(), true));
    }
}
