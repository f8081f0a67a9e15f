//! How the roots of two jobs being connected meet: over a TCP connection (to a port, or the
//! socket MPI_Comm_join is given), the connecting root says how many processes its side has,
//! and the accepting root answers with its own count and the address of the key-value space it
//! serves for both sides ([`braid_pmi::group::serve_group`]). One line each, in PMI-1's
//! `key=value` wire format.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use braid_pmi::wire::Message;

/// What the accepting side's root tells the connecting side's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Meeting {
    /// Address of the group's key-value space.
    pub address: String,
    /// Processes of the accepting side (group ranks `0..accepting`).
    pub accepting: u32,
    /// Processes of the connecting side (group ranks from `accepting` on).
    pub connecting: u32,
}

/// Sends one line.
pub(crate) fn send(stream: &mut TcpStream, message: &Message) -> Result<(), String> {
    let line = message.to_line().map_err(|error| error.to_string())?;
    stream.write_all(line.as_bytes()).map_err(|error| format!("cannot write to the other side: {error}"))
}

/// Longest line the other side may send.
const LINE_MAX: usize = 4096;

/// Receives one line of command `command`, waiting at most `timeout` (forever if `None`). Reads
/// byte by byte: a line that follows at once (MPI_Comm_join's acceptor sends two) stays in the
/// socket for the next call.
pub(crate) fn receive(mut stream: &TcpStream, command: &str, timeout: Option<Duration>) -> Result<Message, String> {
    stream.set_read_timeout(timeout).map_err(|error| error.to_string())?;
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while line.last() != Some(&b'\n') {
        match stream.read(&mut byte) {
            Ok(0) => return Err("the other side closed the connection".into()),
            Ok(_) if line.len() < LINE_MAX => line.push(byte[0]),
            Ok(_) => return Err(format!("the other side sent a line longer than {LINE_MAX} bytes")),
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) if matches!(error.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return Err(format!("the other side did not answer within {} s (BRAID_CONNECT_TIMEOUT_S)", timeout.unwrap_or_default().as_secs()));
            }
            Err(error) => return Err(format!("cannot read from the other side: {error}")),
        }
    }
    let line = String::from_utf8_lossy(&line);
    let message = Message::parse(line.trim_end_matches('\n')).map_err(|error| format!("the other side is not a Braid process ({error})"))?;
    if message.command() != command {
        return Err(format!("the other side sent cmd={} where cmd={command} was due", message.command()));
    }
    Ok(message)
}

/// The connecting root's opening line: its side's size.
pub(crate) fn hello(connecting: u32) -> Message {
    Message::new("braid-connect").with("size", connecting)
}

/// The accepting root's answer.
pub(crate) fn welcome(meeting: &Meeting) -> Message {
    Message::new("braid-accept").with("address", &meeting.address).with("accepting", meeting.accepting).with("connecting", meeting.connecting)
}

/// Reads a size field.
pub(crate) fn size_of(message: &Message, key: &str) -> Result<u32, String> {
    message.get(key).and_then(|text| text.parse().ok()).filter(|&size: &u32| size > 0).ok_or_else(|| format!("cmd={} without a valid {key}", message.command()))
}

/// Reads the accepting root's answer.
pub(crate) fn meeting_of(message: &Message) -> Result<Meeting, String> {
    let address = message.get("address").ok_or("cmd=braid-accept without an address")?.to_string();
    Ok(Meeting { address, accepting: size_of(message, "accepting")?, connecting: size_of(message, "connecting")? })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_sent_back_to_back_are_received_one_at_a_time() {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let mut sender = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (receiver, _) = listener.accept().unwrap();
        let meeting = Meeting { address: "127.0.0.1:1".into(), accepting: 1, connecting: 1 };
        // Both lines in the socket before the first is read, as MPI_Comm_join's acceptor sends.
        send(&mut sender, &hello(1)).unwrap();
        send(&mut sender, &welcome(&meeting)).unwrap();
        let timeout = Some(Duration::from_secs(5));
        assert_eq!(receive(&receiver, "braid-connect", timeout).unwrap(), hello(1));
        assert_eq!(meeting_of(&receive(&receiver, "braid-accept", timeout).unwrap()).unwrap(), meeting);
        drop(sender);
        assert!(receive(&receiver, "braid-accept", timeout).unwrap_err().contains("closed"));
    }

    #[test]
    fn a_welcome_round_trips_and_a_bad_one_is_refused() {
        let meeting = Meeting { address: "127.0.0.1:4000".into(), accepting: 3, connecting: 2 };
        let line = welcome(&meeting).to_line().unwrap();
        assert_eq!(meeting_of(&Message::parse(line.trim_end()).unwrap()).unwrap(), meeting);
        assert!(meeting_of(&Message::new("braid-accept").with("address", "x").with("accepting", 0).with("connecting", 1)).is_err());
        assert!(size_of(&hello(4), "size").is_ok_and(|size| size == 4));
    }
}
