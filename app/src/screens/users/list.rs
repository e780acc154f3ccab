//! `/users`: the accounts, each with a button that ends the user's sessions after asking; the
//! projects, each with its quota.

use leptos::prelude::*;
use leptos_meta::Title;

use super::{Accounts, EndSessions, QuotaForm, SaveQuota, UserRow, list_users};
use crate::components::controls::ConfirmButton;
use crate::components::form::action_error;
use crate::components::list::{NoRows, table};
use crate::components::loaded::Loaded;
use crate::components::time::LocalTime;
use crate::i18n::t;

/// `/users`
#[component]
pub fn Users() -> impl IntoView {
    let end = ServerAction::<EndSessions>::new();
    let save = ServerAction::<SaveQuota>::new();
    // NB: read again after each change that took, not after a refused save: the table would be
    // drawn anew and the values being corrected lost.
    let saved_version = Memo::new(move |last: Option<&usize>| match save.value().with(|v| matches!(v, Some(Ok(())))) {
        true => save.version().get(),
        false => last.copied().unwrap_or_default(),
    });
    let accounts = Resource::new(move || (end.version().get(), saved_version.get()), |_| list_users());
    let (ending, saving) = (action_error(end), action_error(save));
    let ended = move || end.value().with(|v| matches!(v, Some(Ok(()))));
    let saved = move || save.value().with(|v| matches!(v, Some(Ok(()))));
    view! {
        <Title text=t("users.title") />
        <div class="page-head"><h1>{t("users.title")}</h1></div>
        <p class="muted">{t("users.sessions_note")}</p>
        <p class="field-error" role="alert">{move || ending.get().map(|e| e.message())}</p>
        <Show when=ended><p class="notice-ok" role="status" data-testid="sessions-ended">{t("users.sessions_ended")}</p></Show>
        <Loaded resource=accounts show=move |a: Accounts| {
            view! {
                {users(a.users, end)}
                <h2>{t("users.quotas.title")}</h2>
                <p class="muted">{t("users.quotas.note")}</p>
                <p class="field-error" role="alert">{move || saving.get().map(|e| e.message())}</p>
                <Show when=saved><p class="notice-ok" role="status" data-testid="quota-saved">{t("users.quotas.saved")}</p></Show>
                {quota_table(a.quotas, save)}
            }
            .into_any()
        } />
    }
}

fn quota_table(rows: Vec<QuotaForm>, save: ServerAction<SaveQuota>) -> AnyView {
    if rows.is_empty() {
        return view! { <NoRows message=t("users.quotas.empty") /> }.into_any();
    }
    let headers = &[
        "users.quotas.col.project",
        "users.quotas.col.addresses",
        "users.quotas.col.listeners",
        "users.quotas.col.rules",
        "users.quotas.col.ingresses",
        "users.quotas.col.declaration_kib",
        "",
    ];
    table(headers, rows, move |q| view! { <QuotaRow quota=q save /> })
}

/// The limits a quota row edits, in its columns' order (the keys of their words).
const LIMITS: [&str; 5] = [
    "users.quotas.limit.addresses",
    "users.quotas.limit.listeners",
    "users.quotas.limit.rules",
    "users.quotas.limit.ingresses",
    "users.quotas.limit.declaration_kib",
];

/// The `i`-th of [`LIMITS`] in a quota form. NB: one accessor for every column, so the page
/// carries one input's code, not five.
fn limit_of(f: &mut QuotaForm, i: usize) -> &mut String {
    match i {
        0 => &mut f.addresses,
        1 => &mut f.listeners,
        2 => &mut f.rules,
        3 => &mut f.ingresses,
        _ => &mut f.declaration_kib,
    }
}

#[component]
fn QuotaRow(quota: QuotaForm, save: ServerAction<SaveQuota>) -> impl IntoView {
    let project = quota.project.clone();
    let form = RwSignal::new(quota);
    let inputs = LIMITS
        .iter()
        .enumerate()
        .map(|(i, label)| {
            view! {
                <td><input class="quota" inputmode="numeric" aria-label=crate::tf!("users.quotas.limit_of", limit = t(label), project = project) placeholder=t("users.quotas.default")
                    prop:value=move || form.with(|f| limit_of(&mut f.clone(), i).clone())
                    on:input=move |ev| form.update(|f| *limit_of(f, i) = event_target_value(&ev)) /></td>
            }
        })
        .collect_view();
    view! {
        <tr data-testid="quota-row">
            <td translate="no">{project.clone()}</td>
            {inputs}
            <td><button type="button" class="btn" on:click=move |_| { save.dispatch(SaveQuota { form: form.get_untracked() }); }>{t("common.save")}</button></td>
        </tr>
    }
}
/// The accounts, or why there are none.
fn users(rows: Vec<UserRow>, end: ServerAction<EndSessions>) -> AnyView {
    if rows.is_empty() {
        return view! { <NoRows message=t("users.empty") /> }.into_any();
    }
    let headers = &[
        "users.col.user",
        "users.col.name",
        "users.col.signs_in_with",
        "users.col.role",
        "users.col.projects",
        "users.col.sessions_ended",
        "",
    ];
    table(headers, rows, move |u| {
        let name = u.username.clone();
        view! {
            <tr data-testid="user-row">
                <td translate="no">{u.username.clone()}</td>
                <td translate="no">{u.display_name}</td>
                <td>{if u.directory { t("users.directory") } else { t("users.local") }}</td>
                <td>{u.role}</td>
                <td translate="no">{if u.projects.is_empty() { "—".to_string() } else { u.projects.join(", ") }}</td>
                <td>{if u.sessions_ended.is_empty() {
                    view! { <span class="muted">{t("users.never")}</span> }.into_any()
                } else {
                    view! { <LocalTime at=u.sessions_ended /> }.into_any()
                }}</td>
                <td>
                    <ConfirmButton label=t("users.end_sessions")
                        question=crate::tf!("users.end_sessions_question", user = u.username)
                        reason=Signal::stored(None::<String>)
                        on_confirm=move |_| { end.dispatch(EndSessions { username: name.clone() }); } />
                </td>
            </tr>
        }
    })
}
