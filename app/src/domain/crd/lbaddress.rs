//! The Lbaddress resource: one address handed out, as Kubernetes' own Service IP allocator
//! records one (KEP-1880 `IPAddress`). Its name is the load balancer, the side and the address
//! in canonical form, so the API server's create-if-absent is what makes an address unique: a
//! second claim is a 409, and no object grows with the number of addresses handed out.

use std::collections::BTreeMap;
use std::net::IpAddr;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{BondState, IpPair, LABEL_LOADBALANCER};

/// Which of the two ranges an address belongs to; also the form field it came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
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
}

/// Label carrying the side (`ve` or `ltm`) of an Lbaddress, to list one side's addresses.
pub const LABEL_SIDE: &str = "ebcpaas.io/side";

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
}

/// The name of the Lbaddress of `addr` on `side` of load balancer `lb`: an IPv4 address as
/// written, an IPv6 one as its eight groups in full joined by `-` (a name holds no `:`, and the
/// full form is as canonical as the short one).
pub fn address_name(lb: &str, side: Side, addr: IpAddr) -> String {
    let side = match side {
        Side::Ve => "ve",
        Side::Ltm => "ltm",
    };
    let addr = match addr {
        IpAddr::V4(a) => a.to_string(),
        IpAddr::V6(a) => a.segments().iter().map(|s| format!("{s:04x}")).collect::<Vec<_>>().join("-"),
    };
    format!("{lb}.{side}.{addr}")
}

impl LbaddressSpec {
    /// The address as an `IpAddr` (`None` for a hand-written object that holds none).
    pub fn ip(&self) -> Option<IpAddr> {
        self.address.parse().ok()
    }
}

impl Lbaddress {
    /// The object saying that `ticket` holds `ip` on `side` of load balancer `lb`, the other
    /// address of its pair being `partner`; labelled with the load balancer and the side.
    pub fn held(lb: &str, side: Side, ip: IpAddr, partner: IpAddr, ticket: &str, state: BondState) -> Lbaddress {
        let spec = LbaddressSpec {
            loadbalancer: lb.into(),
            side,
            address: ip.to_string(),
            partner: partner.to_string(),
            ticket: ticket.into(),
            state,
        };
        let mut address = Lbaddress::new(&address_name(lb, side, ip), spec);
        let side = if side == Side::Ve { "ve" } else { "ltm" };
        address.metadata.labels =
            Some(BTreeMap::from([(LABEL_LOADBALANCER.into(), lb.into()), (LABEL_SIDE.into(), side.into())]));
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
    fn names_are_canonical_and_valid_object_names() {
        let v4: IpAddr = "10.1.0.7".parse().expect("ip");
        assert_eq!(address_name("big", Side::Ve, v4), "big.ve.10.1.0.7");
        let short: IpAddr = "fd00::".parse().expect("ip");
        let long: IpAddr = "fd00:0:0:0:0:0:0:0".parse().expect("ip");
        let name = address_name("big", Side::Ltm, short);
        assert_eq!(name, address_name("big", Side::Ltm, long), "one name per address, however written");
        assert_eq!(name, "big.ltm.fd00-0000-0000-0000-0000-0000-0000-0000");
    }
}
