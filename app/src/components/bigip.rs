//! What BIG-IP runs of a listener, as lbdesk last read it back: live, waiting for CIS,
//! rejected (with BIG-IP's reason and what differs) or unreachable, and its pools' members.
//!
//! NB: read-only and static, so the server renders it to HTML ([`html`], escaped by Leptos's
//! renderer like every page) and the browser only places that: none of its code is in the
//! browser bundle, whose total is held at its limit.

use leptos::prelude::*;

use crate::components::list::table;
use crate::domain::bigip::MemberState;
use crate::domain::crd::{BigipStatus, Lbticket, OnBigip, PoolMember};

/// One listener on BIG-IP as its page shows it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OnBigipView {
    /// The badge's class and words; since when (RFC 3339, empty: never read back).
    pub badge: (String, String),
    pub since: String,
    /// BIG-IP's reason, when it refused the tenant's declaration.
    pub reason: String,
    /// What differs from what is expected, when not live.
    pub differs: Vec<String>,
    /// "2 of 3 members up".
    pub members_up: String,
    /// Each member: its pool, address, port, and its state's badge class and word.
    pub members: Vec<(String, String, u16, String, String)>,
    /// Why BIG-IP could not be read at the last attempt, and since when (empty: it could).
    pub unreachable: (String, String),
}

impl OnBigipView {
    /// The listener (or, with `ingress`, the F5 Ingress) `name` in a ticket's `status.bigip`.
    pub fn of(status: Option<&BigipStatus>, name: &str, ingress: bool) -> OnBigipView {
        let Some(status) = status else {
            return OnBigipView {
                badge: ("badge badge-neutral".into(), "Not read back yet".into()),
                ..Default::default()
            };
        };
        let mut view = OnBigipView {
            unreachable: (status.unreachable.clone(), status.unreachable_since.clone()),
            badge: ("badge badge-neutral".into(), "Not read back yet".into()),
            ..Default::default()
        };
        let things = if ingress { &status.ingresses } else { &status.listeners };
        if let Some(l) = things.iter().find(|l| l.name == name) {
            let (class, words) = match l.state {
                OnBigip::Live => ("badge badge-ok", "Live on BIG-IP"),
                OnBigip::Waiting => ("badge badge-info", "Waiting for CIS"),
                OnBigip::Rejected => ("badge badge-bad", "Rejected by BIG-IP"),
            };
            view.badge = (class.into(), words.into());
            view.since = l.since.clone();
            if l.state != OnBigip::Live {
                (view.reason, view.differs) = (l.reason.clone(), l.differs.clone());
            }
            view.members_up = members_up(&l.members);
            view.members = l
                .members
                .iter()
                .map(|m| {
                    let (class, word) = member_state(m.state);
                    (m.pool.clone(), m.address.clone(), m.port, class.into(), word.into())
                })
                .collect();
        }
        view
    }
}

/// "2 of 3 members up".
pub fn members_up(members: &[PoolMember]) -> String {
    let up = members.iter().filter(|m| m.state == MemberState::Up).count();
    format!("{up} of {} members up", members.len())
}

/// Per pool of `members`, what the request tester says of it: "2 of 3 members up".
pub fn pool_health(members: &[PoolMember]) -> Vec<(String, String)> {
    let mut pools: Vec<&str> = members.iter().map(|m| m.pool.as_str()).collect();
    pools.dedup();
    pools
        .into_iter()
        .map(|pool| {
            let of: Vec<PoolMember> = members.iter().filter(|m| m.pool == pool).cloned().collect();
            (pool.to_string(), members_up(&of))
        })
        .collect()
}

fn member_state(state: MemberState) -> (&'static str, &'static str) {
    match state {
        MemberState::Up => ("badge badge-ok", "Up"),
        MemberState::Down => ("badge badge-bad", "Down"),
        MemberState::Disabled => ("badge badge-neutral", "Disabled"),
        MemberState::Unknown => ("badge badge-warn", "Unknown"),
    }
}

/// An RFC 3339 time as the section shows it: to the second, in UTC.
fn shown(at: &str) -> String {
    match at.parse::<k8s_openapi::jiff::Timestamp>() {
        Ok(t) => t.strftime("%Y-%m-%d %H:%M:%S UTC").to_string(),
        Err(_) => at.to_string(),
    }
}

/// The section saying what BIG-IP runs of the listener (or, with `ingress`, the F5 Ingress)
/// `name` of `ticket`, as HTML.
pub fn section(ticket: &Lbticket, name: &str, ingress: bool) -> String {
    html(OnBigipView::of(ticket.status.as_ref().and_then(|s| s.bigip.as_ref()), name, ingress))
}

/// The section saying what BIG-IP runs of a listener, as HTML.
fn html(view: OnBigipView) -> String {
    view! { <OnBigipSection view /> }.to_html()
}

/// The section of a listener's (or F5 Ingress's) page saying what BIG-IP runs of it.
#[component]
fn OnBigipSection(view: OnBigipView) -> impl IntoView {
    let OnBigipView { badge: (class, words), since, reason, differs, members_up, members, unreachable } = view;
    let since = (!since.is_empty()).then(|| format!(" since {}", shown(&since)));
    let unreachable = (!unreachable.0.is_empty()).then(|| {
        view! {
            <div class="callout callout-bad" role="status" data-testid="bigip-unreachable">
                <strong>"BIG-IP unreachable"</strong> {format!(" since {}: ", shown(&unreachable.1))} {unreachable.0}
                " — what is shown below was seen before."
            </div>
        }
    });
    let why = (!reason.is_empty() || !differs.is_empty()).then(|| {
        view! {
            <div class="callout callout-bad" data-testid="bigip-differs">
                {(!reason.is_empty()).then(|| view! { <p><strong>"BIG-IP's reason: "</strong>{reason}</p> })}
                <ul>{differs.into_iter().map(|d| view! { <li>{d}</li> }).collect_view()}</ul>
            </div>
        }
    });
    let members = (!members.is_empty()).then(|| {
        table(&["Pool", "Address", "Port", "State"], members, |(pool, address, port, class, word)| {
            view! { <tr><td>{pool}</td><td>{address}</td><td>{port}</td><td><span class=class>{word}</span></td></tr> }
        })
    });
    view! {
        <h2>"On BIG-IP"</h2>
        <p><span class=class data-testid="on-bigip">{words}</span>{since}</p>
        {unreachable}
        {why}
        <p class="muted" data-testid="members-up">{members_up}</p>
        {members}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::crd::ListenerOnBigip;

    #[test]
    fn the_section_says_the_state_and_escapes_what_bigip_answered() {
        let member = |address: &str, state| PoolMember {
            pool: "web_8080_pool".into(),
            address: address.into(),
            port: 8080,
            state,
        };
        let status = BigipStatus {
            unreachable: "503 <b>proxy</b>".into(),
            unreachable_since: "2026-11-25T10:00:00Z".into(),
            listeners: vec![ListenerOnBigip {
                name: "web".into(),
                state: OnBigip::Rejected,
                since: "2026-11-25T09:59:01.5Z".into(),
                reason: "invalid (422): <script>alert(1)</script>".into(),
                differs: vec!["a/vs_shop_80: BIG-IP holds another version".into()],
                members: vec![member("10.2.0.5", MemberState::Up), member("10.2.0.6", MemberState::Down)],
            }],
            ingresses: vec![],
        };
        let shown = html(OnBigipView::of(Some(&status), "web", false));
        for said in [
            "Rejected by BIG-IP",
            " since 2026-11-25 09:59:01 UTC",
            "BIG-IP unreachable",
            "2026-11-25 10:00:00 UTC",
            "1 of 2 members up",
            "10.2.0.6",
            "BIG-IP holds another version",
        ] {
            assert!(shown.contains(said), "{said}: {shown}");
        }
        assert!(!shown.contains("<script>") && shown.contains("&lt;script&gt;"), "escaped: {shown}");
        assert!(!shown.contains("<b>proxy"), "escaped: {shown}");
        let never = html(OnBigipView::of(None, "web", false));
        assert!(never.contains("Not read back yet"), "{never}");
        let other = html(OnBigipView::of(Some(&status), "api", false));
        assert!(html(OnBigipView::of(Some(&status), "web", true)).contains("Not read back yet"), "not an F5 Ingress");
        assert!(other.contains("Not read back yet") && !other.contains("10.2.0.5"), "{other}");
    }
}
