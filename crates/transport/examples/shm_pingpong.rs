//! Quick sanity check of shared-memory latency: two ranks (threads) bounce a small frame.
//! `cargo run --release -p braid-transport --example shm_pingpong [round_trips] [payload_bytes]`
//! Pin nothing and share cores with others, so treat the number as an upper bound.

use std::io::IoSlice;
use std::time::Instant;

use braid_config::Config;
use braid_pmi::threads::ThreadBootstrap;
use braid_pmi::Bootstrap;
use braid_transport::shm::ShmTransport;
use braid_transport::{SendOutcome, Transport};

fn main() {
    let mut args = std::env::args().skip(1);
    let round_trips: u32 = args.next().map_or(100_000, |text| text.parse().expect("round trips"));
    let payload_len: usize = args.next().map_or(8, |text| text.parse().expect("payload bytes"));
    let job_id = format!("pingpong-{}", std::process::id());
    let ranks: Vec<_> = ThreadBootstrap::job(&job_id, 2)
        .into_iter()
        .map(|mut bootstrap| {
            std::thread::spawn(move || {
                let mut transport = ShmTransport::new(&Config::default()).expect("shm settings");
                transport.connect(&mut bootstrap).expect("connect");
                let rank = bootstrap.rank();
                let peer = 1 - rank;
                let payload = vec![7u8; payload_len];
                let warmup = round_trips / 10;
                let mut start = Instant::now();
                for trip in 0..warmup + round_trips {
                    if trip == warmup {
                        start = Instant::now();
                    }
                    if rank == 0 {
                        send(&mut transport, peer, &payload);
                        receive(&mut transport);
                    } else {
                        receive(&mut transport);
                        send(&mut transport, peer, &payload);
                    }
                }
                start.elapsed()
            })
        })
        .collect();
    let elapsed = ranks.into_iter().map(|rank| rank.join().expect("rank")).next().expect("rank 0");
    let one_way = elapsed.as_nanos() as f64 / f64::from(round_trips) / 2.0;
    println!("shm ping-pong: {payload_len}-byte payload, {round_trips} round trips, {one_way:.0} ns one way");
}

fn send(transport: &mut ShmTransport, peer: u32, payload: &[u8]) {
    while transport.try_send(peer, &[1; 16], &[IoSlice::new(payload)]).expect("send") == SendOutcome::WouldBlock {
        std::hint::spin_loop();
    }
}

fn receive(transport: &mut ShmTransport) {
    while transport.poll(&mut |_| {}) == 0 {
        std::hint::spin_loop();
    }
}
