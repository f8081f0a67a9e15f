//! Which local interfaces become network rails: every usable one under `BRAID_RAILS=auto` (the
//! management network excluded), or the ones `BRAID_RAILS` names, in that order.

use std::io;
use std::net::Ipv4Addr;

use braid_config::Rails;
use braid_sys::net::{self as sysnet, Interface};

/// The management network of a virtual cluster: never a data rail under `BRAID_RAILS=auto`.
pub const MANAGEMENT_INTERFACE: &str = "mgmt";

/// One network rail: a local interface and the IPv4 address its traffic leaves from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rail {
    /// Interface name (`eth1`); ranks on different nodes pair up rails by this name.
    pub name: String,
    pub address: Ipv4Addr,
}

/// The rails `selection` names: `Auto` is every up, non-loopback interface with an IPv4 address
/// except the management network; `Named` is those interfaces in that order (an interface that is
/// missing, down or without IPv4 is an error naming it). One rail per interface (its first address).
pub fn rails(selection: &Rails) -> io::Result<Vec<Rail>> {
    match selection {
        Rails::None => Ok(Vec::new()),
        _ => select_rails(&sysnet::interfaces()?, selection),
    }
}

fn select_rails(all: &[Interface], selection: &Rails) -> io::Result<Vec<Rail>> {
    let rail_of = |interface: &Interface| Rail { name: interface.name.clone(), address: interface.address };
    let names = match selection {
        Rails::None => return Ok(Vec::new()),
        Rails::Named(names) => names,
        Rails::Auto => {
            let mut rails: Vec<Rail> = Vec::new();
            for interface in all.iter().filter(|i| i.up && !i.loopback && i.name != MANAGEMENT_INTERFACE) {
                if !rails.iter().any(|rail| rail.name == interface.name) {
                    rails.push(rail_of(interface));
                }
            }
            return Ok(rails);
        }
    };
    names
        .iter()
        .map(|name| match all.iter().find(|i| i.name == *name) {
            Some(interface) if interface.up => Ok(rail_of(interface)),
            Some(_) => Err(io::Error::new(io::ErrorKind::NotConnected, format!("rail interface {name} is down"))),
            None => Err(io::Error::new(io::ErrorKind::NotFound, format!("rail interface {name} does not exist or has no IPv4 address"))),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interface(name: &str, address: [u8; 4], up: bool, loopback: bool) -> Interface {
        Interface { name: name.to_string(), address: Ipv4Addr::from(address), prefix_len: 24, up, loopback }
    }

    #[test]
    fn auto_skips_loopback_down_and_management_and_keeps_one_address_per_interface() {
        let all = [
            interface("lo", [127, 0, 0, 1], true, true),
            interface("mgmt", [10, 99, 0, 2], true, false),
            interface("eth1", [10, 1, 0, 2], true, false),
            interface("eth1", [10, 1, 1, 2], true, false),
            interface("eth2", [10, 2, 0, 2], false, false),
            interface("eth3", [10, 3, 0, 2], true, false),
        ];
        let rails = select_rails(&all, &Rails::Auto).unwrap();
        let expected = vec![Rail { name: "eth1".into(), address: Ipv4Addr::new(10, 1, 0, 2) }, Rail { name: "eth3".into(), address: Ipv4Addr::new(10, 3, 0, 2) }];
        assert_eq!(rails, expected);
    }

    #[test]
    fn named_rails_keep_their_order_and_missing_or_down_ones_are_errors() {
        let all = [interface("eth1", [10, 1, 0, 2], true, false), interface("eth2", [10, 2, 0, 2], false, false), interface("eth3", [10, 3, 0, 2], true, false)];
        let named = |names: &[&str]| select_rails(&all, &Rails::Named(names.iter().map(|n| n.to_string()).collect()));
        let ordered = named(&["eth3", "eth1"]).unwrap();
        assert_eq!(ordered.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), ["eth3", "eth1"]);
        assert!(named(&["eth9"]).unwrap_err().to_string().contains("eth9"));
        assert!(named(&["eth2"]).unwrap_err().to_string().contains("down"));
        assert_eq!(rails(&Rails::None).unwrap(), Vec::new());
    }
}
