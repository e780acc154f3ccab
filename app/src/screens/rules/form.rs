//! `/rules/:ticket/:listener/new` and `…/:name/edit`: the rule form. Its condition builder is
//! checked as it is typed by the same domain function the server and admission use, and the
//! AS3 preview shows the listener's iRule as it would be.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;

use super::listener::route_keys;
use super::tester::{TesterState, TryRequest};
use super::{
    PreviewRule, RuleChoices, SaveRule, form_field, operator_label, operator_value, rule_form_choices, type_label,
};
use crate::components::address::{AddressLine, ServicesEditor};
use crate::components::controls::BusyButton;
use crate::components::form::{Field, FormError, action_error, navigate_on_success, set_field};
use crate::components::loaded::Loaded;
use crate::components::preview::PreviewPanel;
use crate::domain::crd::{LbruleSpec, MatchMode, Operator, Protocol, RuleCondition, RuleType, RuleValue};
use crate::domain::policy::{Refusal, needs_key, operators_for, validate_rule};
use crate::i18n::t;

/// `/rules/:ticket/:listener/new` and `/rules/:ticket/:listener/:name/edit`
#[component]
pub fn RuleFormPage() -> impl IntoView {
    let choices = Resource::new(route_keys(), |(ticket, listener, name)| rule_form_choices(ticket, listener, name));
    view! { <Loaded resource=choices show=|c| view! { <RuleFormBody c /> }.into_any() /> }
}

/// The fields the form shows errors beside (the conditions' own are shown at each input).
const FIELDS: &[&str] = &["name", "services"];

/// What a condition may look at on an HTTP listener; a TCP or UDP one sees only the client.
const HTTP_TYPES: &[RuleType] =
    &[RuleType::Header, RuleType::Domain, RuleType::Url, RuleType::Cookie, RuleType::Urlparam, RuleType::Ip];
const IP_ONLY: &[RuleType] = &[RuleType::Ip];

/// A new condition of type `kind`.
fn condition(kind: RuleType) -> RuleCondition {
    RuleCondition {
        type_: kind,
        key: None,
        values: vec![RuleValue { operator: Operator::Equal, value: String::new() }],
    }
}

/// The very check the server and admission make, of the form as the user changes it: `None`
/// while it passes (or nothing was changed yet). NB: browser-only, an effect writing a signal
/// (see `tickets::form`'s `address_check`), and the check in a browser chunk of its own, fetched
/// at the first change: the regexp engine it compiles patterns with is no part of the form's
/// first load.
fn live_check(current: Signal<super::RuleForm>, protocol: Protocol) -> ReadSignal<Option<Refusal>> {
    let (found, set_found) = signal(None);
    let typed = Memo::new(move |_| current.with(|f| (f.name.clone(), f.spec(0))));
    Effect::new(move |first: Option<()>| {
        let sent = typed.get();
        if first.is_none() {
            return;
        }
        leptos::task::spawn_local(async move {
            let verdict = check(sent.0.clone(), sent.1.clone(), protocol).await;
            // Only the verdict on what the form still holds: an older one must not win.
            if typed.try_with_untracked(|now| *now == sent) == Some(true) {
                set_found.try_set(verdict);
            }
        });
    });
    found
}

/// [`validate_rule`], in its own browser chunk.
#[leptos::lazy(rules_check)]
fn check(name: String, spec: LbruleSpec, protocol: Protocol) -> Option<Refusal> {
    validate_rule(&name, &spec, Some(protocol)).err()
}

/// The form, once its choices (and the rule it edits) are loaded.
#[component]
fn RuleFormBody(c: RuleChoices) -> impl IntoView {
    let protocol = c.listener.protocol;
    let types = if protocol.is_http() { HTTP_TYPES } else { IP_ONLY };
    let mut initial = c.rule.clone();
    if initial.conditions.is_empty() {
        initial.conditions.push(condition(types[0]));
    }
    let form = RwSignal::new(initial);
    let services = RwSignal::new(form.with_untracked(|f| f.services.clone()));
    let current = move || {
        let mut f = form.get();
        f.services = services.get();
        f
    };
    let live = live_check(Signal::derive(current), protocol);
    let save = ServerAction::<SaveRule>::new();
    let preview = ServerAction::<PreviewRule>::new();
    let (save_error, preview_error) = (action_error(save), action_error(preview));
    let error = Signal::derive(move || save_error.get().or_else(|| preview_error.get()));
    // The message beside `field`: the live check's, else the server's.
    let at = move |field: String| {
        Signal::derive(move || {
            live.with(|r| {
                r.as_ref().filter(|r| r.field.as_deref().map(form_field) == Some(&field)).map(|r| r.reason.text())
            })
            .or_else(|| error.get().and_then(|e| e.for_field(&field)))
        })
    };
    let (ticket, listener) = (c.rule.ticket.clone(), c.rule.listener.clone());
    let back = format!("/rules/{ticket}/{listener}");
    navigate_on_success(save, move |name| format!("/rules/{ticket}/{listener}/{name}"));
    let title = if c.editing {
        crate::tf!("rules.form.title_edit", name = c.rule.name)
    } else {
        crate::tf!("rules.form.title_new", listener = c.rule.listener)
    };
    let blocked = c.add.clone();
    let cannot_save = Signal::derive(move || blocked.is_some() || live.with(Option::is_some));
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        if !cannot_save.get_untracked() {
            save.dispatch(SaveRule { form: current() });
        }
    };
    let count = Memo::new(move |_| form.with(|f| f.conditions.len()));
    let editing = c.editing;
    // NB: the tester tries the listener's rules as this form would leave them.
    let (others, priority) = (c.others.clone(), c.priority);
    let edited = Signal::derive(move || {
        let f = current();
        let mut all = others.clone();
        all.push((f.name.clone(), f.spec(priority)));
        all
    });
    view! {
        <Title text=title.clone() />
        <h1>{title}</h1>
        <AddressLine address=c.address.clone() />
        {c.add.clone().map(|r| view! { <div class="callout callout-bad">{r}</div> })}
        <form class="form" on:submit=submit novalidate>
            <FormError error fields=FIELDS />
            <Field label=t("rules.col.name") id="name" help=t("rules.form.name_help") error=at("name".into())>
                <input id="name" required disabled=editing prop:value=move || form.with(|f| f.name.clone())
                    on:input=set_field(form, |f, v| f.name = v.trim().to_string()) />
            </Field>
            <Field label=t("rules.form.match") id="match" error=at("match".into())>
                <select id="match" on:change=set_field(form, |f, v| f.match_ = if v == "all" { MatchMode::All } else { MatchMode::Any })>
                    <option value="any" selected=move || form.with(|f| f.match_ == MatchMode::Any)>{t("rules.form.match_any")}</option>
                    <option value="all" selected=move || form.with(|f| f.match_ == MatchMode::All)>{t("rules.form.match_all")}</option>
                </select>
            </Field>
            <div class="field" role="group" aria-label=t("rules.form.conditions")>
                <span class="label">{t("rules.form.conditions")}</span>
                {(!protocol.is_http()).then(|| view! { <p class="help">{t("rules.form.ip_only")}</p> })}
                {move || (0..count.get()).map(|i| view! { <ConditionRow form i types at /> }).collect_view()}
                <button type="button" class="btn btn-ghost" on:click=move |_| form.update(|f| f.conditions.push(condition(types[0])))>{t("rules.form.add_condition")}</button>
                <span class="field-error" role="alert">{move || at("rules".into()).get()}</span>
            </div>
            <ServicesEditor services offered=c.services.clone() error=at("services".into()) />
            <div class="form-actions">
                <BusyButton label=t("common.preview_as3") busy_label=t("common.rendering") busy=preview.pending() blocked=cannot_save
                    on_click=move |_| { preview.dispatch(PreviewRule { form: current() }); } />
                <BusyButton label=t("common.save") busy_label=t("common.saving") busy=save.pending() blocked=cannot_save submit=true />
                <A href=back attr:class="btn btn-ghost">{t("common.cancel")}</A>
            </div>
        </form>
        <TryRequest listener=c.listener.listener() rules=edited health=c.health.clone() state=TesterState::default() />
        {move || preview.value().get().and_then(Result::ok).map(|p| view! {
            <PreviewPanel preview=p.preview />
            {p.irule.map(|text| view! { <h2>{t("rules.form.irule")}</h2><pre class="irule" data-testid="irule">{text}</pre> })}
        })}
    }
}

/// One condition of the builder (`i`, from 0): what it looks at, the name where one applies,
/// its values each with an operator, and the messages beside them.
#[component]
fn ConditionRow(
    form: RwSignal<super::RuleForm>,
    i: usize,
    types: &'static [RuleType],
    at: impl Fn(String) -> Signal<Option<String>> + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let n = i + 1;
    let get = move |f: &super::RuleForm| f.conditions.get(i).cloned();
    let edit = move |change: &dyn Fn(&mut RuleCondition)| {
        form.update(|f| {
            if let Some(c) = f.conditions.get_mut(i) {
                change(c)
            }
        })
    };
    let kind = Memo::new(move |_| form.with(|f| get(f).map(|c| c.type_)).unwrap_or(RuleType::Ip));
    let values = Memo::new(move |_| form.with(|f| get(f).map(|c| c.values.len())).unwrap_or_default());
    let pick_type = move |ev| {
        let v: usize = event_target_value(&ev).parse().unwrap_or_default();
        let kind = types.get(v).copied().unwrap_or(types[0]);
        edit(&|c| {
            c.type_ = kind;
            if !needs_key(kind) {
                c.key = None;
            }
            for value in &mut c.values {
                if !operators_for(kind).contains(&value.operator) {
                    value.operator = Operator::Equal;
                }
            }
        });
    };
    view! {
        <fieldset class="condition" aria-label=crate::tf!("rules.condition.label", n = n)>
            <select aria-label=crate::tf!("rules.condition.looks_at", n = n) on:change=pick_type>
                {types.iter().enumerate().map(|(k, offered)| view! {
                    <option value=k.to_string() selected=move || kind.get() == *offered>{type_label(*offered)}</option>
                }).collect_view()}
            </select>
            {move || needs_key(kind.get()).then(|| view! {
                <input aria-label=crate::tf!("rules.condition.name", n = n) placeholder="X-Canary"
                    prop:value=move || form.with(|f| get(f).and_then(|c| c.key).unwrap_or_default())
                    on:input=move |ev| { let v = event_target_value(&ev); edit(&|c| c.key = Some(v.trim().to_string())); } />
            })}
            <span class="field-error" role="alert">{move || at(format!("rules[{i}].key")).get().or_else(|| at(format!("rules[{i}].type")).get())}</span>
            {move || (0..values.get()).map(|j| view! {
                <div class="condition-value">
                    <select aria-label=crate::tf!("rules.condition.operator", n = n, m = j + 1) on:change=move |ev| {
                        let v = event_target_value(&ev);
                        let op = operators_for(kind.get_untracked()).iter().copied().find(|o| operator_value(*o) == v).unwrap_or(Operator::Equal);
                        edit(&|c| if let Some(value) = c.values.get_mut(j) { value.operator = op; });
                    }>
                        {move || operators_for(kind.get()).iter().map(|o| view! {
                            <option value=operator_value(*o) selected=move || form.with(|f| get(f).and_then(|c| c.values.get(j).map(|v| v.operator == *o)).unwrap_or_default())>{operator_label(*o)}</option>
                        }).collect_view()}
                    </select>
                    <input aria-label=crate::tf!("rules.condition.value", n = n, m = j + 1)
                        prop:value=move || form.with(|f| get(f).and_then(|c| c.values.get(j).map(|v| v.value.clone())).unwrap_or_default())
                        on:input=move |ev| { let v = event_target_value(&ev); edit(&|c| if let Some(value) = c.values.get_mut(j) { value.value = v.clone(); }); } />
                    <button type="button" class="btn btn-ghost" aria-label=crate::tf!("rules.condition.remove_value", n = n, m = j + 1)
                        on:click=move |_| edit(&|c| { if c.values.len() > 1 && j < c.values.len() { c.values.remove(j); } })>"×"</button>
                    <span class="field-error" role="alert">{move || at(format!("rules[{i}].values[{j}].value")).get().or_else(|| at(format!("rules[{i}].values[{j}].operator")).get())}</span>
                </div>
            }).collect_view()}
            <button type="button" class="btn btn-ghost" on:click=move |_| edit(&|c| c.values.push(RuleValue { operator: Operator::Equal, value: String::new() }))>{t("rules.condition.add_value")}</button>
            <button type="button" class="btn btn-ghost" aria-label=crate::tf!("rules.condition.remove", n = n)
                on:click=move |_| form.update(|f| { if f.conditions.len() > 1 && i < f.conditions.len() { f.conditions.remove(i); } })>{t("common.remove")}</button>
        </fieldset>
    }
}
