//! PMI-1 over TCP (`PMI_PORT` + `PMI_ID`): ranks are threads, one attached by socket pair and
//! one by a loopback TCP connection, in the same job.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use braid_pmi::client::PmiClient;
use braid_pmi::server::PmiServer;
use braid_pmi::Bootstrap;

fn exchange(mut client: PmiClient) -> (u32, u32, Vec<String>) {
    let rank = client.rank();
    client.put(&format!("card-{rank}"), &format!("tcp:rank={rank}")).unwrap();
    client.fence().unwrap();
    let cards = (0..client.size()).map(|peer| client.get(&format!("card-{peer}")).unwrap()).collect();
    client.finalize().unwrap();
    (rank, client.size(), cards)
}

#[test]
fn a_network_rank_and_a_local_rank_exchange_values() {
    let mut server = PmiServer::new("kvs_test_network", 2);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().to_string();

    let (ours, theirs) = UnixStream::pair().unwrap();
    server.attach(0, ours).unwrap();
    let local = std::thread::spawn(move || exchange(PmiClient::over_stream(theirs, 0, 2).unwrap()));
    let remote = std::thread::spawn(move || {
        let lookup = |name: &str| match name {
            "PMI_PORT" => Some(port.clone()),
            "PMI_ID" => Some("1".to_string()),
            _ => None,
        };
        exchange(PmiClient::from_lookup(lookup).unwrap().expect("PMI_PORT names a launcher"))
    });

    let (stream, _) = listener.accept().unwrap();
    assert_eq!(server.accept_network(stream).unwrap(), 1);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !server.descriptors().is_empty() {
        assert!(Instant::now() < deadline, "the job did not end");
        server.poll_once(Some(Duration::from_millis(100))).unwrap();
    }
    let expected = vec!["tcp:rank=0".to_string(), "tcp:rank=1".to_string()];
    assert_eq!(local.join().unwrap(), (0, 2, expected.clone()));
    assert_eq!(remote.join().unwrap(), (1, 2, expected));
    assert!(server.finalized(0) && server.finalized(1));
}

/// Sends `line` over a new loopback connection and returns what `accept_network` made of it.
fn handshake(server: &mut PmiServer, line: &str) -> Result<u32, String> {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut peer = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    peer.write_all(line.as_bytes()).unwrap();
    let (stream, _) = listener.accept().unwrap();
    let outcome = server.accept_network(stream).map_err(|error| error.to_string());
    if outcome.is_ok() {
        let mut reader = BufReader::new(peer);
        let mut answer = String::new();
        for _ in 0..4 {
            reader.read_line(&mut answer).unwrap();
        }
        assert!(answer.starts_with("cmd=initack\n"), "{answer:?}");
        assert!(answer.contains("cmd=set size=3\n") && answer.contains("cmd=set debug=0\n"), "{answer:?}");
    }
    outcome
}

#[test]
fn accept_network_refuses_unknown_and_repeated_ranks() {
    let mut server = PmiServer::new("kvs_test_refuse", 3);
    assert_eq!(handshake(&mut server, "cmd=initack pmiid=2\n"), Ok(2));
    let again = handshake(&mut server, "cmd=initack pmiid=2\n").unwrap_err();
    assert!(again.contains("rank 2 is already connected"), "{again}");
    let outside = handshake(&mut server, "cmd=initack pmiid=3\n").unwrap_err();
    assert!(outside.contains("not a rank of this job of 3 ranks"), "{outside}");
    let wrong = handshake(&mut server, "cmd=init pmi_version=1\n").unwrap_err();
    assert!(wrong.contains("expected cmd=initack"), "{wrong}");
}

#[test]
fn accept_network_gives_up_on_a_silent_peer() {
    let mut server = PmiServer::new("kvs_test_silent", 1);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let _peer = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (stream, _) = listener.accept().unwrap();
    let started = Instant::now();
    let error = server.accept_network(stream).unwrap_err().to_string();
    assert!(error.contains("no cmd=initack within"), "{error}");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(server.descriptors().is_empty());
}
