//! Stepwise traffic shift on a rule with two services: weight moves from the first to the
//! second along the steps the user chooses, one step per click, each an ordinary audited edit
//! that can be previewed first; "Back" returns a step, "Promote" sends everything to the second.

use leptos::prelude::*;

use super::{PreviewRule, RuleForm, ShiftRule, ShiftStep};
use crate::components::controls::BusyButton;
use crate::components::form::action_error;
use crate::components::list::table_or_none;
use crate::components::preview::PreviewPanel;
use crate::components::time::LocalTime;
use crate::i18n::t;

/// The steps offered until the user types others: the second service's share, in percent.
pub const STEPS: &str = "10, 25, 50, 100";

/// The steps typed, as whole percentages 1–100 in rising order, or why not.
fn parse_steps(text: &str) -> Result<Vec<u32>, String> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.trim_end_matches('%').parse::<u32>() {
            Ok(n) if (1..=100).contains(&n) && out.last().is_none_or(|last| *last < n) => out.push(n),
            _ => return Err(crate::tf!("rules.shift.bad_step", part = format!("{part:?}"))),
        }
    }
    if out.is_empty() { Err(t("rules.shift.no_step").into()) } else { Ok(out) }
}

/// Where "Shift" and "Back" go from `now` (the second service's weight) along `steps`.
fn around(steps: &[u32], now: u32) -> (Option<u32>, Option<u32>) {
    let next = steps.iter().copied().find(|s| *s > now);
    let back = (now > 0).then(|| steps.iter().copied().rev().find(|s| *s < now).unwrap_or(0));
    (next, back)
}

/// [`Shift`], in a browser chunk of its own.
#[leptos::lazy(rules_shift)]
pub fn shift_section(
    form: RuleForm,
    history: Vec<ShiftStep>,
    shift: ServerAction<ShiftRule>,
    steps: RwSignal<String>,
) -> AnyView {
    view! { <Shift form history shift steps /> }.into_any()
}

/// The traffic shift of the rule `form` (loaded with its version), with its step `history`;
/// `steps` holds the steps as typed.
#[component]
fn Shift(
    form: RuleForm,
    history: Vec<ShiftStep>,
    shift: ServerAction<ShiftRule>,
    steps: RwSignal<String>,
) -> impl IntoView {
    let [first, second] = form.services.as_slice() else { return ().into_any() };
    let (first, second, now) = (first.service.clone(), second.service.clone(), second.weight);
    let parsed = Memo::new(move |_| steps.with(|t| parse_steps(t)));
    let targets = move || parsed.get().map(|s| around(&s, now)).unwrap_or_default();
    let preview = ServerAction::<PreviewRule>::new();
    let error = action_error(shift);
    let set = {
        let form = form.clone();
        move |to: u32| ShiftRule {
            ticket: form.ticket.clone(),
            listener: form.listener.clone(),
            name: form.name.clone(),
            version: form.version.clone().unwrap_or_default(),
            second: to,
        }
    };
    let preview_next = {
        let form = form.clone();
        move || {
            let Some(to) = targets().0 else { return };
            let mut f = form.clone();
            if let [a, b] = f.services.as_mut_slice() {
                (a.weight, b.weight) = (100 - to, to);
            }
            preview.dispatch(PreviewRule { form: f });
        }
    };
    let (go, back, promote) = (set.clone(), set.clone(), set);
    view! {
        <section class="shift" aria-label=t("rules.shift.title")>
            <h2>{t("rules.shift.title")}</h2>
            <p data-testid="shift-now">{crate::tf!("rules.shift.now", rest = 100 - now, first = first, now = now, second = second)}</p>
            <label class="tester-field">{crate::tf!("rules.shift.steps", second = second)}
                <input prop:value=move || steps.get() on:input=move |ev| steps.set(event_target_value(&ev)) />
            </label>
            <span class="field-error" role="alert">{move || parsed.get().err()}</span>
            <div class="actions">
                <BusyButton label=t("rules.shift.preview_next") busy_label=t("common.rendering") busy=preview.pending()
                    blocked=Signal::derive(move || targets().0.is_none()) on_click=move |_| preview_next() />
                <button type="button" class="btn btn-primary" disabled=move || targets().0.is_none() || shift.pending().get()
                    on:click=move |_| { if let Some(to) = targets().0 { shift.dispatch(go(to)); } }>
                    {move || targets().0.map_or_else(|| t("rules.shift.shift").to_string(), |to| crate::tf!("rules.shift.shift_to", to = to))}
                </button>
                <button type="button" class="btn" disabled=move || targets().1.is_none() || shift.pending().get()
                    on:click=move |_| { if let Some(to) = targets().1 { shift.dispatch(back(to)); } }>
                    {move || targets().1.map_or_else(|| t("rules.shift.back").to_string(), |to| crate::tf!("rules.shift.back_to", to = to))}
                </button>
                <button type="button" class="btn" disabled=move || now == 100 || shift.pending().get()
                    on:click=move |_| { shift.dispatch(promote(100)); }>{t("rules.shift.promote")}</button>
            </div>
            <p class="field-error" role="alert">{move || error.get().map(|e| e.message())}</p>
            {move || preview.value().get().map(|p| match p {
                Ok(p) => view! { <PreviewPanel preview=p.preview /> }.into_any(),
                Err(e) => view! { <p class="field-error" role="alert">{e.message()}</p> }.into_any(),
            })}
            <h3>{t("rules.shift.taken")}</h3>
            {table_or_none(history, t("rules.shift.none"), &["rules.shift.col.when", "rules.shift.col.who", "rules.shift.col.weights"], |s| view! {
                <tr><td><LocalTime at=s.at /></td><td translate="no">{s.user}</td><td>{s.weights}</td></tr>
            })}
        </section>
    }
    .into_any()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_rise_from_1_to_100() {
        assert_eq!(parse_steps(STEPS), Ok(vec![10, 25, 50, 100]));
        assert_eq!(parse_steps("5%, 100"), Ok(vec![5, 100]));
        assert!(parse_steps("50, 25").is_err());
        assert!(parse_steps("0, 10").is_err());
        assert!(parse_steps("").is_err());
        assert!(parse_steps("ten").is_err());
    }

    #[test]
    fn shift_goes_to_the_next_step_and_back_to_the_one_before() {
        let s = [10, 25, 50, 100];
        assert_eq!(around(&s, 0), (Some(10), None));
        assert_eq!(around(&s, 10), (Some(25), Some(0)));
        assert_eq!(around(&s, 30), (Some(50), Some(25)));
        assert_eq!(around(&s, 100), (None, Some(50)));
    }
}
