//! `/rules/:ticket/:listener`: a listener's rules in the order they are tried, each movable up
//! or down, the listener's own weights last as the default, and its iRule as the member cluster
//! holds it.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_navigate, use_params_map};

use super::tester::{TesterState, TryRequest};
use super::{MoveRule, RulesOfListener, listener_rules};
use crate::components::address::{AddressLine, CarriedBadge, Deployed, SplitBar};
use crate::components::controls::ReasonButton;
use crate::components::form::action_error;
use crate::components::list::table;
use crate::components::loaded::Loaded;
use crate::components::server_html::ServerHtml;
use crate::i18n::t;

/// The route's `:ticket`, `:listener` and `:name` (empty when absent).
pub fn route_keys() -> impl Fn() -> (String, String, String) + Copy + Send + Sync + 'static {
    let params = use_params_map();
    move || {
        params.with(|p| {
            let get = |k: &str| p.get(k).unwrap_or_default();
            (get("ticket"), get("listener"), get("name"))
        })
    }
}

/// `/rules/:ticket/:listener`
#[component]
pub fn ListenerRulesPage() -> impl IntoView {
    let keys = route_keys();
    let moved = ServerAction::<MoveRule>::new();
    let rules = Resource::new(
        move || (keys(), moved.version().get()),
        |((ticket, listener, _), _)| listener_rules(ticket, listener),
    );
    let error = action_error(moved);
    let tester = TesterState::default();
    view! {
        <Loaded resource=rules show=move |r| view! { <RulesBody r moved error tester /> }.into_any() />
    }
}

#[component]
fn RulesBody(
    r: RulesOfListener,
    moved: ServerAction<MoveRule>,
    error: Signal<Option<crate::error::AppError>>,
    tester: TesterState,
) -> impl IntoView {
    let (ticket, listener) = (r.address.ticket.clone(), r.listener.name.clone());
    let title = crate::tf!("rules.listener.title", listener = listener);
    let new = format!("/rules/{ticket}/{listener}/new");
    let last = r.rules.len().saturating_sub(1);
    let specs: Vec<_> = r.rules.iter().map(|rule| (rule.name.clone(), rule.spec.clone())).collect();
    let locked = r.add.clone();
    let row = move |(i, rule): (usize, super::RuleRow)| {
        let (ticket, listener, name) = (ticket.clone(), listener.clone(), rule.name.clone());
        let href = format!("/rules/{ticket}/{listener}/{name}");
        let shift = move |up: bool| {
            let (ticket, listener, name) = (ticket.clone(), listener.clone(), name.clone());
            move |_| {
                moved.dispatch(MoveRule { ticket: ticket.clone(), listener: listener.clone(), name: name.clone(), up });
            }
        };
        let why = |edge: bool, said: &str| locked.clone().or_else(|| edge.then(|| said.to_string()));
        let (first, end) =
            (why(i == 0, t("rules.listener.first_already")), why(i == last, t("rules.listener.last_already")));
        view! {
            <tr>
                <td>{i + 1}</td>
                <td translate="no"><a href=href>{rule.name.clone()}</a></td>
                <td>{rule.summary.clone()}</td>
                <td><SplitBar services=rule.spec.services.clone() /></td>
                <td class="actions">
                    <ReasonButton label=t("rules.listener.move_up") reason=Signal::derive(move || first.clone()) on_click=shift(true) />
                    <ReasonButton label=t("rules.listener.move_down") reason=Signal::derive(move || end.clone()) on_click=shift(false) />
                </td>
            </tr>
        }
    };
    view! {
        <Title text=title.clone() />
        <div class="page-head">
            <h1>{title} " " <CarriedBadge carried=r.address.carried.clone() /></h1>
            <ReasonButton label=t("rules.listener.add") reason=Signal::derive(move || r.add.clone())
                on_click=move |_| use_navigate()(&new, Default::default()) />
        </div>
        <AddressLine address=r.address.clone() />
        <p class="field-error" role="alert">{move || error.get().map(|e| e.message())}</p>
        {table(&["#", "rules.col.rule", "rules.col.when", "rules.col.services", ""], r.rules.into_iter().enumerate(), row)}
        <p class="muted">{t("rules.listener.otherwise")}</p>
        <SplitBar services=r.listener.services.clone() />
        <ServerHtml html=r.on_bigip.clone() />
        <TryRequest listener=r.listener.listener() rules=Signal::stored(specs) health=r.health state=tester />
        <Deployed deployed=r.deployed held=t("rules.listener.held")
            missing=t("rules.listener.missing") />
    }
}
