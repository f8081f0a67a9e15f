//! `braid net-probe` (hidden, for tests and checks): one TCP stream between two namespaces, to
//! show that a network of a virtual cluster carries traffic and at what rate.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use braid_sys::netns;

const CHUNK_BYTES: usize = 64 * 1024;
/// How long `listen` waits for its one connection.
const ACCEPT_PATIENCE: Duration = Duration::from_secs(20);

fn enter(namespace: Option<&str>) -> Result<(), String> {
    match namespace {
        Some(name) => netns::enter(name).map_err(|error| format!("cannot enter network namespace {name}: {error}")),
        None => Ok(()),
    }
}

/// Accepts one connection on `address`, reads it to the end, and prints
/// `received BYTES bytes in SECONDS s: RATE Mbit/s` (timed from the first byte).
pub fn listen(namespace: Option<&str>, address: SocketAddr) -> Result<(), String> {
    enter(namespace)?;
    let listener = TcpListener::bind(address).map_err(|error| format!("cannot listen on {address}: {error}"))?;
    println!("listening on {address}");
    std::io::stdout().flush().map_err(|error| error.to_string())?;
    listener.set_nonblocking(true).map_err(|error| error.to_string())?;
    let started = Instant::now();
    let mut stream = loop {
        match listener.accept() {
            Ok((stream, _)) => break stream,
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock && started.elapsed() < ACCEPT_PATIENCE => std::thread::sleep(Duration::from_millis(5)),
            Err(error) => return Err(format!("no connection on {address}: {error}")),
        }
    };
    stream.set_nonblocking(false).map_err(|error| error.to_string())?;
    let mut buffer = vec![0u8; CHUNK_BYTES];
    let mut total = stream.read(&mut buffer).map_err(|error| format!("receiving failed: {error}"))? as u64;
    let first_byte = Instant::now();
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => total += read as u64,
            Err(error) => return Err(format!("receiving failed after {total} bytes: {error}")),
        }
    }
    let seconds = first_byte.elapsed().as_secs_f64();
    println!("received {total} bytes in {seconds:.3} s: {:.1} Mbit/s", total as f64 * 8.0 / seconds.max(1e-9) / 1e6);
    Ok(())
}

/// Connects to `address` and sends for `seconds`, then closes.
pub fn send(namespace: Option<&str>, address: SocketAddr, seconds: f64) -> Result<(), String> {
    enter(namespace)?;
    let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(5)).map_err(|error| format!("cannot connect to {address}: {error}"))?;
    let buffer = vec![0x5au8; CHUNK_BYTES];
    let until = Instant::now() + Duration::from_secs_f64(seconds.max(0.0));
    let mut total = 0u64;
    loop {
        stream.write_all(&buffer).map_err(|error| format!("sending failed after {total} bytes: {error}"))?;
        total += buffer.len() as u64;
        if Instant::now() >= until {
            break;
        }
    }
    stream.shutdown(std::net::Shutdown::Write).map_err(|error| error.to_string())?;
    // Wait for the listener to close: every byte has then been read.
    let _ = stream.read(&mut [0u8; 1]);
    println!("sent {total} bytes");
    Ok(())
}
