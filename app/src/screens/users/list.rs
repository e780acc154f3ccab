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
        <Title text="Users" />
        <div class="page-head"><h1>"Users"</h1></div>
        <p class="muted">
            "Ending a user's sessions signs them out of every browser at once: their next click leads to sign-in. "
            "A password reset does the same."
        </p>
        <p class="field-error" role="alert">{move || ending.get().map(|e| e.to_string())}</p>
        <Show when=ended><p class="notice-ok" role="status" data-testid="sessions-ended">"The sessions are ended."</p></Show>
        <Loaded resource=accounts show=move |a: Accounts| {
            view! {
                {users(a.users, end)}
                <h2>"Project quotas"</h2>
                <p class="muted">
                    "What each project may hold. Empty is the default: half of each load balancer's address pairs, "
                    "half of each shared AS3 tenant, and no limit on listeners, rules and F5 Ingresses. "
                    "Lowering a quota takes nothing away; it refuses what would grow past it."
                </p>
                <p class="field-error" role="alert">{move || saving.get().map(|e| e.to_string())}</p>
                <Show when=saved><p class="notice-ok" role="status" data-testid="quota-saved">"The quota is saved."</p></Show>
                {quota_table(a.quotas, save)}
            }
            .into_any()
        } />
    }
}

fn quota_table(rows: Vec<QuotaForm>, save: ServerAction<SaveQuota>) -> AnyView {
    if rows.is_empty() {
        return view! { <NoRows message="No projects yet." /> }.into_any();
    }
    let headers = &[
        "Project",
        "Address requests per load balancer",
        "Listeners",
        "Rules",
        "F5 Ingresses",
        "AS3 KiB per shared tenant",
        "",
    ];
    table(headers, rows, move |q| view! { <QuotaRow quota=q save /> })
}

/// The limits a quota row edits, in its columns' order.
const LIMITS: [&str; 5] = ["Address requests", "Listeners", "Rules", "F5 Ingresses", "AS3 KiB"];

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
                <td><input class="quota" inputmode="numeric" aria-label=format!("{label} of {project}") placeholder="default"
                    prop:value=move || form.with(|f| limit_of(&mut f.clone(), i).clone())
                    on:input=move |ev| form.update(|f| *limit_of(f, i) = event_target_value(&ev)) /></td>
            }
        })
        .collect_view();
    view! {
        <tr data-testid="quota-row">
            <td>{project.clone()}</td>
            {inputs}
            <td><button type="button" class="btn" on:click=move |_| { save.dispatch(SaveQuota { form: form.get_untracked() }); }>"Save"</button></td>
        </tr>
    }
}
/// The accounts, or why there are none.
fn users(rows: Vec<UserRow>, end: ServerAction<EndSessions>) -> AnyView {
    if rows.is_empty() {
        return view! { <NoRows message="No accounts yet." /> }.into_any();
    }
    table(&["User", "Name", "Signs in with", "Role", "Projects", "Sessions last ended", ""], rows, move |u| {
        let name = u.username.clone();
        view! {
            <tr data-testid="user-row">
                <td>{u.username.clone()}</td>
                <td>{u.display_name}</td>
                <td>{if u.directory { "Directory" } else { "Local account" }}</td>
                <td>{u.role}</td>
                <td>{if u.projects.is_empty() { "—".to_string() } else { u.projects.join(", ") }}</td>
                <td>{if u.sessions_ended.is_empty() {
                    view! { <span class="muted">"never"</span> }.into_any()
                } else {
                    view! { <LocalTime at=u.sessions_ended /> }.into_any()
                }}</td>
                <td>
                    <ConfirmButton label="End sessions"
                        question=format!("End every session of {}? They are signed out everywhere at once.", u.username)
                        reason=Signal::stored(None::<String>)
                        on_confirm=move |_| { end.dispatch(EndSessions { username: name.clone() }); } />
                </td>
            </tr>
        }
    })
}
