//! What BIG-IP runs of a listener, as lbdesk last read it back: live, waiting for CIS,
//! rejected (with BIG-IP's reason and what differs) or unreachable, and its pools' members.
//!
//! NB: read-only and static, so the server renders it to HTML ([`html`], escaped by Leptos's
//! renderer like every page) and the browser only places that: none of its code is in the
//! browser bundle, whose total is held at its limit.

use leptos::prelude::*;

use crate::components::list::table;
use crate::domain::bigip::{self, MemberState, Rollup};
use crate::domain::crd::{ANNOTATION_READ_BIGIP, BigipStatus, Lbticket, OnBigip, PoolMember};
use crate::error::AppError;
use crate::i18n::t;

/// How long asking for a read waits for BIG-IP's answer (a read of an unreachable BIG-IP takes
/// up to its timeout).
const ANSWER_WITHIN: std::time::Duration = std::time::Duration::from_secs(20);

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
    /// The request whose BIG-IP a reader may ask to be read now (empty: nothing of it is on
    /// BIG-IP to read).
    pub ticket: String,
    /// When a read was last asked and not answered yet; when the last one asked was answered.
    pub asked: String,
    pub answered: String,
}

impl OnBigipView {
    /// The listener (or, with `ingress`, the F5 Ingress) `name` in a ticket's `status.bigip`.
    pub fn of(status: Option<&BigipStatus>, name: &str, ingress: bool) -> OnBigipView {
        let Some(status) = status else {
            return OnBigipView {
                badge: ("badge badge-neutral".into(), t("bigip.not_read").into()),
                ..Default::default()
            };
        };
        let mut view = OnBigipView {
            unreachable: (status.unreachable.clone(), status.unreachable_since.clone()),
            badge: ("badge badge-neutral".into(), t("bigip.not_read").into()),
            ..Default::default()
        };
        let things = if ingress { &status.ingresses } else { &status.listeners };
        if let Some(l) = things.iter().find(|l| l.name == name) {
            let (class, words) = match l.state {
                OnBigip::Live => ("badge badge-ok", t("bigip.live")),
                OnBigip::Waiting => ("badge badge-info", t("bigip.waiting")),
                OnBigip::Rejected => ("badge badge-bad", t("bigip.rejected")),
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
    crate::tf!("bigip.members_up", up = up, total = members.len())
}

/// A ticket's roll-up in the reader's words: "BIG-IP: 2 live, 1 rejected", and that BIG-IP is
/// unreachable when it is (empty when nothing is on BIG-IP and it answers).
pub fn rollup_words(r: &Rollup) -> String {
    let mut parts = Vec::new();
    if r.live > 0 {
        parts.push(crate::tf!("bigip.rollup.live", n = r.live));
    }
    if r.waiting > 0 {
        parts.push(crate::tf!("bigip.rollup.waiting", n = r.waiting));
    }
    if r.rejected > 0 {
        parts.push(crate::tf!("bigip.rollup.rejected", n = r.rejected));
    }
    let mut out = if parts.is_empty() {
        String::new()
    } else {
        crate::tf!("bigip.rollup.some", parts = parts.join(t("bigip.rollup.and")))
    };
    if r.unreachable {
        out.push_str(if out.is_empty() { t("bigip.rollup.unreachable") } else { t("bigip.rollup.unreachable_now") });
    }
    out
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
        MemberState::Up => ("badge badge-ok", t("bigip.member.up")),
        MemberState::Down => ("badge badge-bad", t("bigip.member.down")),
        MemberState::Disabled => ("badge badge-neutral", t("bigip.member.disabled")),
        MemberState::Unknown => ("badge badge-warn", t("bigip.member.unknown")),
    }
}

/// An RFC 3339 time as the server writes it: to the second, in UTC (the browser shows it in
/// the reader's locale and time zone, [`crate::components::server_html`]).
fn shown(at: &str) -> String {
    match at.parse::<k8s_openapi::jiff::Timestamp>() {
        Ok(t) => t.strftime("%Y-%m-%d %H:%M:%S UTC").to_string(),
        Err(_) => at.to_string(),
    }
}

/// The words of `key` with its `{at}` the time `at`, as a `<time>` the browser localizes.
fn with_time(key: &'static str, at: &str) -> impl IntoView + use<> {
    let words = t(key);
    let (before, after) = words.split_once("{at}").unwrap_or((words, ""));
    view! { {before}<time datetime=at.to_string()>{shown(at)}</time>{after} }
}

/// The section saying what BIG-IP runs of the listener (or, with `ingress`, the F5 Ingress)
/// `name` of `ticket`, as HTML.
pub fn section(ticket: &Lbticket, name: &str, ingress: bool) -> String {
    let status = ticket.status.as_ref().and_then(|s| s.bigip.as_ref());
    let mut view = OnBigipView::of(status, name, ingress);
    if bigip::placed(ticket) {
        view.ticket = kube::ResourceExt::name_any(ticket);
        view.asked = bigip::read_asked(ticket).unwrap_or_default().to_string();
        view.answered = status.map(|s| s.answered.clone()).unwrap_or_default();
    }
    html(view)
}

/// Asks lbdesk's BIG-IP reader to read the request `ticket`'s BIG-IP now (by its
/// `ebcpaas.io/read-bigip` annotation, which every replica's reader sees) and waits for the
/// answer. A plain form posts it: the browser is sent back to the page, which then shows it.
#[server(prefix = "/api", endpoint = "bigip/read")]
pub async fn read_bigip_now(ticket: String) -> Result<(), AppError> {
    crate::ssr::reply(read_now(&ticket).await)
}

async fn read_now(name: &str) -> Result<(), AppError> {
    use crate::domain::access::Verb;
    use crate::ssr::{address, guard::caller, retrying};
    use kube::api::{Api, Patch, PatchParams};
    address::check_names(name, "")?;
    let caller = caller().await?;
    let asked = k8s_openapi::jiff::Timestamp::now().to_string();
    let api: Api<Lbticket> = Api::all(crate::ssr::mgmt()?);
    let written = retrying(|| async {
        // NB: only a reader of the request may ask; the ask is read afresh on each attempt.
        let t = address::ticket(&caller, Verb::Read, name).await?;
        if !bigip::placed(&t) {
            return Err(AppError::Refused(crate::i18n::t("bigip.nothing_to_read").into()));
        }
        let patch = serde_json::json!({"metadata": {
            "resourceVersion": t.metadata.resource_version,
            "annotations": {ANNOTATION_READ_BIGIP: asked},
        }});
        api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|e| crate::ssr::kube_error("address request", e))
    })
    .await?;
    let caches = crate::ssr::state()?.caches;
    // NB: until the cache holds the ask, it holds the last one, maybe answered already.
    caches.seen(&written).await;
    let deadline = tokio::time::Instant::now() + ANSWER_WITHIN;
    while tokio::time::Instant::now() < deadline {
        let t = caches.get::<Lbticket>(name).await.ok().flatten();
        let answered = t.as_ref().and_then(|t| t.status.as_ref()?.bigip.as_ref().map(|b| b.answered.clone()));
        // NB: a later ask (another reader's) answered answers this one too.
        let later = t.as_ref().and_then(|t| t.metadata.annotations.as_ref()?.get(ANNOTATION_READ_BIGIP).cloned());
        if answered.as_deref() == Some(asked.as_str())
            || (later.as_deref() != Some(asked.as_str())
                && t.as_deref().is_some_and(|t| bigip::read_asked(t).is_none()))
        {
            return Ok(());
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    Err(AppError::Refused(crate::tf!("bigip.not_read_within", seconds = ANSWER_WITHIN.as_secs())))
}

/// The section saying what BIG-IP runs of a listener, as HTML.
fn html(view: OnBigipView) -> String {
    view! { <OnBigipSection view /> }.to_html()
}

/// The section of a listener's (or F5 Ingress's) page saying what BIG-IP runs of it.
#[component]
fn OnBigipSection(view: OnBigipView) -> impl IntoView {
    let OnBigipView {
        badge: (class, words),
        since,
        reason,
        differs,
        members_up,
        members,
        unreachable,
        ticket,
        asked,
        answered,
    } = view;
    let since = (!since.is_empty()).then(|| with_time("bigip.since", &since));
    let unreachable = (!unreachable.0.is_empty()).then(|| {
        view! {
            <div class="callout callout-bad" role="status" data-testid="bigip-unreachable">
                <strong>{t("bigip.unreachable")}</strong> {with_time("bigip.unreachable_since", &unreachable.1)} <span lang="en">{unreachable.0}</span>
                {t("bigip.seen_before")}
            </div>
        }
    });
    // NB: BIG-IP's answers and what differs are the ticket's status, English as every
    // Kubernetes object field is: marked so.
    let why = (!reason.is_empty() || !differs.is_empty()).then(|| {
        view! {
            <div class="callout callout-bad" data-testid="bigip-differs">
                {(!reason.is_empty()).then(|| view! { <p><strong>{t("bigip.reason")}</strong><span lang="en">{reason}</span></p> })}
                <ul lang="en">{differs.into_iter().map(|d| view! { <li>{d}</li> }).collect_view()}</ul>
            </div>
        }
    });
    let members = (!members.is_empty()).then(|| {
        table(&["bigip.col.pool", "bigip.col.address", "bigip.col.port", "bigip.col.state"], members, |(pool, address, port, class, word)| {
            view! { <tr><td translate="no">{pool}</td><td translate="no">{address}</td><td>{port}</td><td><span class=class>{word}</span></td></tr> }
        })
    });
    // NB: a plain form, no browser code: the answer comes back as the page, read anew.
    let read_now = (!ticket.is_empty()).then(|| {
        let said = match (asked.is_empty(), answered.is_empty()) {
            (false, _) => with_time("bigip.read.pending", &asked).into_any(),
            (true, false) => with_time("bigip.read.last", &answered).into_any(),
            (true, true) => t("bigip.read.periodic").into_any(),
        };
        view! {
            <form method="post" action="/api/bigip/read" class="toolbar">
                <input type="hidden" name="ticket" value=ticket />
                <button type="submit" class="btn">{t("bigip.read.now")}</button>
                " "<span class="muted" data-testid="bigip-read">{said}</span>
            </form>
        }
    });
    view! {
        <h2>{t("bigip.heading")}</h2>
        <p><span class=class data-testid="on-bigip">{words}</span>{since}</p>
        {read_now}
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
            answered: String::new(),
        };
        // NB: without the renderer's hydration markers, to read the text.
        let shown = html(OnBigipView::of(Some(&status), "web", false)).replace("<!>", "");
        for said in [
            "Rejected by BIG-IP",
            r#" since <time datetime="2026-11-25T09:59:01.5Z">2026-11-25 09:59:01 UTC</time>"#,
            "BIG-IP unreachable",
            r#" since <time datetime="2026-11-25T10:00:00Z">2026-11-25 10:00:00 UTC</time>: "#,
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

    #[test]
    fn a_list_says_in_short_what_bigip_runs_in_the_readers_words() {
        let counts = |live, waiting, rejected, unreachable| Rollup { live, waiting, rejected, unreachable };
        // (the counts, in English, in Chinese)
        let rows = [
            (counts(0, 0, 0, false), "", ""),
            (counts(2, 0, 0, false), "BIG-IP: 2 live", "BIG-IP：2 个已生效"),
            (
                counts(1, 1, 1, false),
                "BIG-IP: 1 live, 1 waiting for CIS, 1 rejected",
                "BIG-IP：1 个已生效，1 个等待 CIS 下发，1 个被拒绝",
            ),
            (
                counts(1, 0, 0, true),
                "BIG-IP: 1 live (BIG-IP unreachable now)",
                "BIG-IP：1 个已生效（目前无法连接 BIG-IP）",
            ),
            (counts(0, 0, 0, true), "BIG-IP unreachable", "无法连接 BIG-IP"),
        ];
        for (r, en, zh) in rows {
            assert_eq!(rollup_words(&r), en, "{r:?}");
            let owner = Owner::new();
            owner.with(|| {
                provide_context(crate::i18n::Locale::ZhCn);
                assert_eq!(rollup_words(&r), zh, "{r:?}");
            });
        }
    }

    #[test]
    fn a_reader_may_ask_for_a_read_and_sees_whether_it_was_answered() {
        let at = |asked: &str, answered: &str| {
            let view = OnBigipView {
                ticket: "shop".into(),
                asked: asked.into(),
                answered: answered.into(),
                ..OnBigipView::of(None, "web", false)
            };
            html(view).replace("<!>", "")
        };
        let asked = at("2026-11-25T10:00:00Z", "");
        assert!(asked.contains(r#"action="/api/bigip/read""#) && asked.contains(r#"value="shop""#), "{asked}");
        let said = r#"A read asked at <time datetime="2026-11-25T10:00:00Z">2026-11-25 10:00:00 UTC</time> is not answered yet."#;
        assert!(asked.contains(said), "{asked}");
        let answered = at("", "2026-11-25T10:00:01Z");
        assert!(
            answered.contains(
                "Last read on request at <time datetime=\"2026-11-25T10:00:01Z\">2026-11-25 10:00:01 UTC</time>."
            ),
            "{answered}"
        );
        assert!(at("", "").contains("Read again every polling period."));
        let nothing = html(OnBigipView::of(None, "web", false));
        assert!(!nothing.contains("Read BIG-IP now"), "nothing placed, nothing to read: {nothing}");
    }
}
