//! The Lbaddress resource: one address handed out, as Kubernetes' own Service IP allocator
//! records one (KEP-1880 `IPAddress`). Its name is the device the address is held on (a BIG-IP
//! VE, an LTM: `ipam::Device`) and the address in canonical form, so the API server's
//! create-if-absent is what makes an address unique on its device, whichever load balancer
//! asks: a second claim is a 409, and no object grows with the number of addresses handed out.

use std::collections::BTreeMap;
use std::net::IpAddr;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{BondState, IpPair, LABEL_LOADBALANCER};
use crate::domain::ipam::Device;

/// Which of the two ranges an address belongs to; also the form field it came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The tier-2 VE range (`ve.cidr`, the ticket's `veip`).
    Ve,
    /// The tier-1 LTM range (`ltm.cidr`, the ticket's `ltmip`).
    Ltm,
}

impl Side {
    /// The ticket field an address of this side is requested in.
    pub fn field(self) -> &'static str {
        match self {
            Side::Ve => "veip",
            Side::Ltm => "ltmip",
        }
    }

    /// The Loadbalancer field holding this side's range.
    pub fn cidr_field(self) -> &'static str {
        match self {
            Side::Ve => "ve.cidr",
            Side::Ltm => "ltm.cidr",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Side::Ve => "VE",
            Side::Ltm => "LTM",
        }
    }

    /// The side in object names and labels: `ve`, `ltm`.
    pub fn key(self) -> &'static str {
        match self {
            Side::Ve => "ve",
            Side::Ltm => "ltm",
        }
    }
}

/// Label carrying the side (`ve` or `ltm`) of an Lbaddress, to list one side's addresses.
pub const LABEL_SIDE: &str = "ebcpaas.io/side";

/// Label carrying the key of the device an Lbaddress is held on (`Device::key`).
pub const LABEL_DEVICE: &str = "ebcpaas.io/device";

/// One address of a load balancer's range, held by one ticket.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[kube(
    group = "ebcpaas.io",
    version = "v1",
    kind = "Lbaddress",
    plural = "lbaddresses",
    derive = "PartialEq",
    shortname = "lba",
    printcolumn = r#"{"name":"Address","type":"string","jsonPath":".spec.address"}"#,
    printcolumn = r#"{"name":"Side","type":"string","jsonPath":".spec.side"}"#,
    printcolumn = r#"{"name":"Pair","type":"string","jsonPath":".spec.partner"}"#,
    printcolumn = r#"{"name":"Ticket","type":"string","jsonPath":".spec.ticket"}"#,
    printcolumn = r#"{"name":"State","type":"string","jsonPath":".spec.state"}"#,
    printcolumn = r#"{"name":"Loadbalancer","type":"string","jsonPath":".spec.loadbalancer"}"#,
    printcolumn = r#"{"name":"Device","type":"string","jsonPath":".spec.device"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
pub struct LbaddressSpec {
    pub loadbalancer: String,
    pub side: Side,
    /// The address, in canonical form.
    pub address: String,
    /// The other address of the pair (the LTM address of a VE address, and back).
    pub partner: String,
    /// The ticket holding it.
    pub ticket: String,
    pub state: BondState,
    /// The device the address is held on (`Device::id`: the VE's address, the LTM's URL).
    /// NB: empty on an object written before addresses were held per device (named after its
    /// load balancer), until lbdesk renames it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub device: String,
}

/// The name of the Lbaddress of `addr` on `device`: the device's key and the address, an IPv4
/// address as written, an IPv6 one as its eight groups in full joined by `-` (a name holds no
/// `:`, and the full form is as canonical as the short one).
pub fn address_name(device: &Device, addr: IpAddr) -> String {
    format!("{}.{}", device.key(), canonical(addr))
}

/// The name an object of `lb` had before addresses were held per device.
pub fn legacy_address_name(lb: &str, side: Side, addr: IpAddr) -> String {
    format!("{lb}.{}.{}", side.key(), canonical(addr))
}

fn canonical(addr: IpAddr) -> String {
    match addr {
        IpAddr::V4(a) => a.to_string(),
        IpAddr::V6(a) => a.segments().iter().map(|s| format!("{s:04x}")).collect::<Vec<_>>().join("-"),
    }
}

impl LbaddressSpec {
    /// The address as an `IpAddr` (`None` for a hand-written object that holds none).
    pub fn ip(&self) -> Option<IpAddr> {
        self.address.parse().ok()
    }

    /// The device it is held on, as recorded (`None` for an object of an earlier version).
    pub fn device(&self) -> Option<Device> {
        Device::recorded(self.side, &self.device)
    }
}

impl Lbaddress {
    /// The object saying that `ticket` holds `ip` on `device` for load balancer `lb`, the other
    /// address of its pair being `partner`; labelled with the load balancer, the side and the
    /// device.
    pub fn held(lb: &str, device: &Device, ip: IpAddr, partner: IpAddr, ticket: &str, state: BondState) -> Lbaddress {
        let spec = LbaddressSpec {
            loadbalancer: lb.into(),
            side: device.side,
            address: ip.to_string(),
            partner: partner.to_string(),
            ticket: ticket.into(),
            state,
            device: device.id.clone(),
        };
        let mut address = Lbaddress::new(&address_name(device, ip), spec);
        address.metadata.labels = Some(BTreeMap::from([
            (LABEL_LOADBALANCER.into(), lb.into()),
            (LABEL_SIDE.into(), device.side.key().into()),
            (LABEL_DEVICE.into(), device.key()),
        ]));
        address
    }

    /// The pair-list row of a VE address.
    pub fn row(&self) -> IpPair {
        IpPair {
            veip: self.spec.address.clone(),
            ltmip: self.spec.partner.clone(),
            ticket: self.spec.ticket.clone(),
            status: self.spec.state,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_device_and_the_address_in_canonical_form() {
        let ve = Device::ve("200.1.1.1");
        let v4: IpAddr = "10.1.0.7".parse().expect("ip");
        assert_eq!(address_name(&ve, v4), format!("{}.10.1.0.7", ve.key()));
        let ltm = Device::ltm("http://100.1.1.1/api");
        let short: IpAddr = "fd00::".parse().expect("ip");
        let long: IpAddr = "fd00:0:0:0:0:0:0:0".parse().expect("ip");
        let name = address_name(&ltm, short);
        assert_eq!(name, address_name(&ltm, long), "one name per address, however written");
        assert_eq!(name, format!("{}.fd00-0000-0000-0000-0000-0000-0000-0000", ltm.key()));
        assert_eq!(legacy_address_name("big", Side::Ve, v4), "big.ve.10.1.0.7");
        let held = Lbaddress::held("a", &ve, v4, v4, "t", BondState::Pending);
        assert_eq!(held.spec.device(), Some(ve.clone()));
        assert_eq!(held.metadata.name, Some(address_name(&ve, v4)), "whichever load balancer holds it");
    }
}
