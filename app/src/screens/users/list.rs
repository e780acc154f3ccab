//! `/users`: the accounts, each with a button that ends the user's sessions after asking.

use leptos::prelude::*;
use leptos_meta::Title;

use super::{EndSessions, UserRow, list_users};
use crate::components::controls::ConfirmButton;
use crate::components::form::action_error;
use crate::components::list::{NoRows, table};
use crate::components::loaded::Loaded;
use crate::components::time::LocalTime;

/// `/users`
#[component]
pub fn Users() -> impl IntoView {
    let end = ServerAction::<EndSessions>::new();
    let users = Resource::new(move || end.version().get(), |_| list_users());
    let error = action_error(end);
    let ended = move || end.value().with(|v| matches!(v, Some(Ok(()))));
    view! {
        <Title text="Users" />
        <div class="page-head"><h1>"Users"</h1></div>
        <p class="muted">
            "Ending a user's sessions signs them out of every browser at once: their next click leads to sign-in. "
            "A password reset does the same."
        </p>
        <p class="field-error" role="alert">{move || error.get().map(|e| e.to_string())}</p>
        <Show when=ended><p class="notice-ok" role="status" data-testid="sessions-ended">"The sessions are ended."</p></Show>
        <Loaded resource=users show=move |rows| accounts(rows, end) />
    }
}

/// The accounts, or why there are none.
fn accounts(rows: Vec<UserRow>, end: ServerAction<EndSessions>) -> AnyView {
    if rows.is_empty() {
        return view! { <NoRows message="No accounts yet." /> }.into_any();
    }
    table(&["User", "Name", "Role", "Projects", "Sessions last ended", ""], rows, move |u| {
        let name = u.username.clone();
        view! {
            <tr data-testid="user-row">
                <td>{u.username.clone()}</td>
                <td>{u.display_name}</td>
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
