//! The device an address is held on: a BIG-IP VE (a load balancer's `ve.addr`) or an LTM (its
//! `ltm.url`). An address is unique per device, not per load balancer: two load balancers on
//! one VE hand out from one set of addresses. The device names the address objects, so that the
//! API server's create-if-absent keeps one holder per address on a device, whichever load
//! balancer asks.

use std::fmt;
use std::net::IpAddr;

use super::Side;
use crate::domain::crd::LoadbalancerSpec;

/// One device: its side and what identifies it, in a canonical form.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Device {
    pub side: Side,
    /// The VE's address as an IP address is written canonically, or the LTM's URL with its
    /// scheme and host in lower case, no default port and no trailing `/`.
    pub id: String,
}

impl Device {
    /// The device of `side` of a load balancer.
    pub fn of(spec: &LoadbalancerSpec, side: Side) -> Device {
        match side {
            Side::Ve => Device::ve(&spec.ve.addr),
            Side::Ltm => Device::ltm(&spec.ltm.url),
        }
    }

    /// The VE at `addr`.
    pub fn ve(addr: &str) -> Device {
        let addr = addr.trim();
        let id = addr.parse::<IpAddr>().map_or_else(|_| addr.to_ascii_lowercase(), |ip| ip.to_string());
        Device { side: Side::Ve, id }
    }

    /// The LTM whose API is at `url`.
    pub fn ltm(url: &str) -> Device {
        Device { side: Side::Ltm, id: canonical_url(url) }
    }

    /// The device an address object says it is held on (`None` for an object written before
    /// addresses were held per device).
    pub fn recorded(side: Side, id: &str) -> Option<Device> {
        (!id.is_empty()).then(|| Device { side, id: id.to_string() })
    }

    /// The key naming the device in object names and labels: the side and 16 hexadecimal digits
    /// of the FNV-1a hash of the identity (`domain::hash`: fixed, as stored object names carry
    /// it). Two devices whose keys collided would share one set of addresses: the safe side.
    pub fn key(&self) -> String {
        let hash = crate::domain::hash::fnv1a(format!("v1|{}|{}", self.side.key(), self.id).as_bytes());
        format!("{}-{hash:016x}", self.side.key())
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.side {
            Side::Ve => write!(f, "BIG-IP VE {}", self.id),
            Side::Ltm => write!(f, "LTM {}", self.id),
        }
    }
}

/// `url` with its scheme and host in lower case, without the scheme's default port or a
/// trailing `/`: the same LTM however its URL is written.
fn canonical_url(url: &str) -> String {
    let url = url.trim().trim_end_matches('/');
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let scheme = scheme.to_ascii_lowercase();
    let (authority, path) = rest.split_once('/').map_or((rest, ""), |(a, p)| (a, p));
    let mut authority = authority.to_ascii_lowercase();
    let default_port = match scheme.as_str() {
        "http" => ":80",
        "https" => ":443",
        _ => "",
    };
    if !default_port.is_empty() && authority.ends_with(default_port) {
        authority.truncate(authority.len() - default_port.len());
    }
    if path.is_empty() { format!("{scheme}://{authority}") } else { format!("{scheme}://{authority}/{path}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_device_however_it_is_written() {
        assert_eq!(Device::ve(" 200.1.1.1 "), Device::ve("200.1.1.1"));
        assert_eq!(Device::ve("fd00::1"), Device::ve("fd00:0:0:0:0:0:0:1"));
        assert_eq!(Device::ltm("HTTPS://LTM.Bank:443/api/"), Device::ltm("https://ltm.bank/api"));
        assert_eq!(Device::ltm("http://100.1.1.1:80/api").key(), Device::ltm("http://100.1.1.1/api").key());
        assert_ne!(Device::ltm("http://100.1.1.1/api").key(), Device::ltm("http://100.1.1.2/api").key());
        assert_ne!(Device::ltm("http://100.1.1.1/API"), Device::ltm("http://100.1.1.1/api"), "a path keeps its case");
    }

    #[test]
    fn keys_are_fixed_and_valid_in_object_names() {
        let ve = Device::ve("200.1.1.1");
        // NB: pinned: stored object names carry it.
        assert_eq!(ve.key(), "ve-801344c1beabbf52");
        let ltm = Device::ltm("http://100.1.1.1/api").key();
        assert!(ltm.starts_with("ltm-") && ltm.len() == 20, "{ltm}");
        assert!(ltm.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'));
        assert_ne!(Device::ve("10.0.0.1").key(), Device { side: Side::Ltm, id: "10.0.0.1".into() }.key());
    }
}
