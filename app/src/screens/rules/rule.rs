//! `/rules/:ticket/:listener/:name`: one rule, its conditions and where it sends what matches.

use leptos::prelude::*;

use super::listener::route_keys;
use super::shift::{STEPS, shift_section};
use super::{DeleteRule, RuleDetail, ShiftRule, get_rule, type_label, values_text};
use crate::components::address::{SplitBar, ThingHead};
use crate::components::form::{action_error, navigate_on_success};
use crate::components::list::table;
use crate::components::loaded::Loaded;
use crate::domain::crd::MatchMode;
use crate::i18n::t;

/// `/rules/:ticket/:listener/:name`
#[component]
pub fn RulePage() -> impl IntoView {
    let keys = route_keys();
    let shift = ServerAction::<ShiftRule>::new();
    // NB: here, not in the body the page redraws after each step, so the steps typed stay.
    let steps = RwSignal::new(STEPS.to_string());
    let detail = Resource::new(
        move || (keys(), shift.version().get()),
        |((ticket, listener, name), _)| get_rule(ticket, listener, name),
    );
    view! { <Loaded resource=detail show=move |d| view! { <RuleBody d shift steps /> }.into_any() /> }
}

#[component]
fn RuleBody(d: RuleDetail, shift: ServerAction<ShiftRule>, steps: RwSignal<String>) -> impl IntoView {
    let f = d.form.clone();
    let (ticket, listener, name) = (f.ticket.clone(), f.listener.clone(), f.name.clone());
    let back = format!("/rules/{ticket}/{listener}");
    let delete = ServerAction::<DeleteRule>::new();
    navigate_on_success(delete, move |_| back.clone());
    // NB: the traffic shift is code only this page needs, in a browser chunk of its own, drawn
    // once the page runs in the browser (the server sends the page without it).
    let running = RwSignal::new(false);
    Effect::new(move |_| running.set(true));
    let (form, history) = (f.clone(), d.history.clone());
    let shift_part = move || {
        let (form, history) = (form.clone(), history.clone());
        running.get().then(move || {
            view! {
                <Suspense fallback=|| ()>
                    {move || {
                        let (form, history) = (form.clone(), history.clone());
                        Suspend::new(async move { shift_section(form, history, shift, steps).await })
                    }}
                </Suspense>
            }
        })
    };
    let combine = match f.match_ {
        MatchMode::Any => t("rules.rule.when_any"),
        MatchMode::All => t("rules.rule.when_all"),
    };
    view! {
        <ThingHead title=crate::tf!("rules.rule.title", name = name) address=d.address.clone()
            edit_href=format!("/rules/{ticket}/{listener}/{name}/edit") edit=d.edit.clone()
            question=crate::tf!("rules.rule.delete_question", name = name)
            delete=None error=action_error(delete)
            on_delete=move |_| { delete.dispatch(DeleteRule { ticket: ticket.clone(), listener: listener.clone(), name: name.clone() }); } />
        <dl class="facts">
            <dt>{t("rules.col.listener")}</dt><dd translate="no"><a href=format!("/rules/{}/{}", f.ticket, f.listener)>{f.listener.clone()}</a></dd>
            <dt>{t("rules.rule.priority")}</dt><dd>{d.row.spec.priority}</dd>
            <dt>{t("rules.rule.matches")}</dt><dd>{d.row.summary.clone()}</dd>
        </dl>
        <h2>{combine}</h2>
        {table(&["rules.col.looks_at", "rules.col.name", "rules.col.values"], f.conditions.clone(), |c| view! {
            <tr>
                <td>{type_label(c.type_)}</td>
                <td translate="no">{c.key.clone().unwrap_or_else(|| "—".into())}</td>
                <td translate="no">{values_text(&c)}</td>
            </tr>
        })}
        <h2>{t("rules.rule.sends_to")}</h2>
        <SplitBar services=f.services.clone() />
        {shift_part}
    }
}
