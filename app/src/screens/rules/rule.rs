//! `/rules/:ticket/:listener/:name`: one rule, its conditions and where it sends what matches.

use leptos::prelude::*;

use super::listener::route_keys;
use super::shift::{STEPS, Shift};
use super::{DeleteRule, RuleDetail, ShiftRule, get_rule, operator_label, type_label};
use crate::components::address::{SplitBar, ThingHead};
use crate::components::form::{action_error, navigate_on_success};
use crate::components::list::table;
use crate::components::loaded::Loaded;
use crate::domain::crd::MatchMode;

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
    let combine = match f.match_ {
        MatchMode::Any => "When any condition holds",
        MatchMode::All => "When every condition holds",
    };
    view! {
        <ThingHead title=format!("Rule {name}") address=d.address.clone()
            edit_href=format!("/rules/{ticket}/{listener}/{name}/edit") edit=d.edit.clone()
            question=format!("Delete rule {name}? What it matches goes to the next rule, or the listener's own weights.")
            delete=None error=action_error(delete)
            on_delete=move |_| { delete.dispatch(DeleteRule { ticket: ticket.clone(), listener: listener.clone(), name: name.clone() }); } />
        <dl class="facts">
            <dt>"Listener"</dt><dd><a href=format!("/rules/{}/{}", f.ticket, f.listener)>{f.listener.clone()}</a></dd>
            <dt>"Priority"</dt><dd>{d.row.spec.priority}</dd>
            <dt>"Matches"</dt><dd>{d.row.summary.clone()}</dd>
        </dl>
        <h2>{combine}</h2>
        {table(&["Looks at", "Name", "Values"], f.conditions.clone(), |c| view! {
            <tr>
                <td>{type_label(c.type_)}</td>
                <td>{c.key.clone().unwrap_or_else(|| "—".into())}</td>
                <td>{c.values.iter().map(|v| format!("{} {}", operator_label(v.operator), v.value)).collect::<Vec<_>>().join(" or ")}</td>
            </tr>
        })}
        <h2>"Sends to"</h2>
        <SplitBar services=f.services.clone() />
        <Shift form=f.clone() history=d.history.clone() shift steps />
    }
}
