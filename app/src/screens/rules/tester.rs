//! The request tester: a sample request → the rule it matches (or the listener's own weights),
//! why each rule before it did not, the crc32 bucket, the Service and the AS3 pool. Computed in
//! the browser by `domain::routing`, the semantics of the generated iRule, as it is typed.

use leptos::prelude::*;

use super::condition_text;
use crate::domain::as3::names;
use crate::domain::crd::{LbruleSpec, Listener};
use crate::domain::routing::{Request, Router};
use crate::i18n::t;

/// The sample request's fields as typed.
#[derive(Clone, Debug, Default, PartialEq)]
struct Sample {
    host: String,
    /// The path with its query string, as `/path?query`.
    uri: String,
    client: String,
    /// One `Name: value` per line.
    headers: String,
    /// One `name=value` per line.
    cookies: String,
}

impl Sample {
    fn request(&self) -> Request {
        let (path, query) = self.uri.split_once('?').unwrap_or((&self.uri, ""));
        let pairs = |text: &str, sep: char| {
            text.lines()
                .filter_map(|l| l.split_once(sep))
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .filter(|(k, _)| !k.is_empty())
                .collect()
        };
        Request {
            host: self.host.trim().to_string(),
            path: path.to_string(),
            query: query.to_string(),
            client: self.client.trim().to_string(),
            headers: pairs(&self.headers, ':'),
            cookies: pairs(&self.cookies, '='),
        }
    }
}

/// What the tester says of a sample: where it goes, and why the rules before did not match.
#[derive(Clone, Debug, PartialEq)]
struct Answer {
    to: String,
    bucket: u32,
    backend: String,
    pool: String,
    not: Vec<String>,
}

fn answer(listener: &Listener, rules: &[(String, LbruleSpec)], sample: &Sample) -> Option<Answer> {
    let named: Vec<(&str, &LbruleSpec)> = rules.iter().map(|(n, s)| (n.as_str(), s)).collect();
    let router = Router::new(listener, &named);
    let req = sample.request();
    let decision = router.route(&req)?;
    let not = router
        .explain(&req)
        .into_iter()
        .filter_map(|tried| {
            let spec = rules.iter().find(|(n, _)| n == tried.rule).map(|(_, s)| s)?;
            let failed = spec.rules.get(tried.failed?)?;
            Some(crate::tf!("rules.tester.not_held", rule = tried.rule, condition = condition_text(failed)))
        })
        .collect();
    Some(Answer {
        to: decision
            .rule
            .map_or_else(|| t("rules.tester.own_weights").to_string(), |r| crate::tf!("rules.tester.rule", name = r)),
        bucket: decision.bucket,
        backend: format!("{}:{}", decision.service.service, decision.service.port),
        pool: names::pool(&decision.service.service, decision.service.port),
        not,
    })
}

/// What the tester holds across redraws of the page around it (after a reorder, say): whether
/// it is open, and the request typed, whose answer then follows the new order.
#[derive(Clone, Copy)]
pub struct TesterState {
    open: RwSignal<bool>,
    sample: RwSignal<Sample>,
}

impl Default for TesterState {
    fn default() -> Self {
        let sample = Sample { uri: "/".into(), client: "10.0.0.1".into(), ..Default::default() };
        TesterState { open: RwSignal::new(false), sample: RwSignal::new(sample) }
    }
}

/// "Try a request": opens the tester over `rules` (as they stand, or as the open form would
/// make them) on `listener`, fetching its code the first time.
#[component]
pub fn TryRequest(
    listener: Listener,
    #[prop(into)] rules: Signal<Vec<(String, LbruleSpec)>>,
    /// Per pool, what BIG-IP last reported of its members.
    health: Vec<(String, String)>,
    state: TesterState,
) -> impl IntoView {
    let TesterState { open, sample } = state;
    let tester = move || {
        let (listener, health) = (listener.clone(), health.clone());
        open.get().then(move || {
            view! {
                <Suspense fallback=|| view! { <p class="muted">{t("rules.tester.loading")}</p> }>
                    {move || {
                        let (listener, health) = (listener.clone(), health.clone());
                        Suspend::new(async move { tester(listener, rules, health, sample).await })
                    }}
                </Suspense>
            }
        })
    };
    view! {
        <p><button type="button" class="btn" aria-expanded=move || open.get().to_string()
            on:click=move |_| open.update(|o| *o = !*o)>{t("rules.tester.try")}</button></p>
        {tester}
    }
}

/// The tester, in a browser chunk of its own: request evaluation (the regex matcher among it) is
/// code only a user who opens it needs.
#[leptos::lazy(rules_tester)]
fn tester(
    listener: Listener,
    rules: Signal<Vec<(String, LbruleSpec)>>,
    health: Vec<(String, String)>,
    sample: RwSignal<Sample>,
) -> AnyView {
    view! { <Tester listener rules health sample /> }.into_any()
}

/// The tester over `rules` on `listener`.
#[component]
fn Tester(
    listener: Listener,
    rules: Signal<Vec<(String, LbruleSpec)>>,
    health: Vec<(String, String)>,
    sample: RwSignal<Sample>,
) -> impl IntoView {
    let http = listener.protocol.is_http();
    let result = Memo::new(move |_| rules.with(|r| sample.with(|s| answer(&listener, r, s))));
    let input = move |label: &'static str, put: fn(&mut Sample, String), get: fn(&Sample) -> String| {
        view! {
            <label class="tester-field">{label}
                <input prop:value=move || sample.with(get) on:input=move |ev| sample.update(|s| put(s, event_target_value(&ev))) />
            </label>
        }
    };
    let area =
        move |label: &'static str, hint: &'static str, put: fn(&mut Sample, String), get: fn(&Sample) -> String| {
            view! {
                <label class="tester-field">{label}
                    <textarea rows="2" placeholder=hint prop:value=move || sample.with(get)
                        on:input=move |ev| sample.update(|s| put(s, event_target_value(&ev)))></textarea>
                </label>
            }
        };
    view! {
        <section class="tester" aria-label=t("rules.tester.label")>
            <h2>{t("rules.tester.try")}</h2>
            <div class="tester-fields">
                {http.then(|| view! {
                    {input(t("rules.tester.host"), |s, v| s.host = v, |s| s.host.clone())}
                    {input(t("rules.tester.path"), |s, v| s.uri = v, |s| s.uri.clone())}
                })}
                {input(t("rules.type.ip"), |s, v| s.client = v, |s| s.client.clone())}
                {http.then(|| view! {
                    {area(t("rules.tester.headers"), "X-Canary: 1", |s, v| s.headers = v, |s| s.headers.clone())}
                    {area(t("rules.tester.cookies"), "ab_test=v2", |s, v| s.cookies = v, |s| s.cookies.clone())}
                })}
            </div>
            <div class="tester-result" data-testid="tester" role="status">
                {move || match result.get() {
                    None => view! { <p class="muted">{t("rules.tester.nowhere")}</p> }.into_any(),
                    Some(a) => view! {
                        <p><strong data-testid="tester-to">{crate::tf!("rules.tester.goes_to", to = a.to)}</strong></p>
                        <p class="muted">{crate::tf!("rules.tester.bucket", bucket = a.bucket, backend = a.backend, pool = a.pool)}</p>
                        <p class="muted" data-testid="tester-members">{health.iter().find(|(p, _)| *p == a.pool)
                            .map(|(pool, up)| crate::tf!("rules.tester.members", pool = pool, up = up))}</p>
                        <ul>{a.not.into_iter().map(|n| view! { <li>{n}</li> }).collect_view()}</ul>
                    }.into_any(),
                }}
            </div>
        </section>
    }
}
