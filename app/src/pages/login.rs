//! The sign-in page.

use leptos::html::Input;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;
use server_fn::ServerFn;

use crate::auth::{Login as LoginAction, SignInChoices, sign_in_info};
use crate::components::controls::BusyButton;

/// Sign-in form; a wrong user name or password gets one message, at the form.
#[component]
pub fn Login() -> impl IntoView {
    let login = ServerAction::<LoginAction>::new();
    let next = move || use_query_map().read().get("next").unwrap_or_default();
    let error = move || login.value().get().and_then(|r| r.err()).map(|e| e.to_string());
    let (username, password) = (NodeRef::<Input>::new(), NodeRef::<Input>::new());
    let info = Resource::new(|| (), |_| sign_in_info());
    let value = |input: NodeRef<Input>| input.get().map(|i| i.value()).unwrap_or_default();
    // Without the browser bundle the form posts itself to the same server function.
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let next = Some(next()).filter(|n| !n.is_empty());
        login.dispatch(LoginAction { username: value(username), password: value(password), next });
    };
    view! {
        <Title text="Sign in" />
        <div class="login-page">
            <div class="login-card">
                <h1 class="brand">
                    <span class="brand-mark" aria-hidden="true">"lb"</span>
                    "lbdesk"
                </h1>
                <p class="muted">"F5 load-balancer desk"</p>
                <Suspense>{move || info.get().and_then(Result::ok).map(|i| view! { <HowToSignIn info=i /> })}</Suspense>
                <form method="post" action=LoginAction::url() on:submit=submit>
                    <input type="hidden" name="next" value=next />
                    <div class="field">
                        <label for="username">"User name"</label>
                        <input node_ref=username id="username" name="username" type="text" autocomplete="username" required autofocus />
                    </div>
                    <div class="field">
                        <label for="password">"Password"</label>
                        <input
                            node_ref=password
                            id="password"
                            name="password"
                            type="password"
                            autocomplete="current-password"
                            required
                            aria-describedby="login-error"
                        />
                    </div>
                    <p id="login-error" class="field-error" role="alert">{error}</p>
                    <BusyButton label="Sign in" busy_label="Signing in…" busy=login.pending() submit=true />
                </form>
            </div>
        </div>
    }
}

/// How to sign in here: with a directory account, and whether local break-glass accounts may
/// (said only where a directory is configured); a plain warning while the directory is down.
#[component]
fn HowToSignIn(info: SignInChoices) -> impl IntoView {
    let how = match (info.directory, info.local_accounts) {
        (false, _) => None,
        (true, true) => Some("Sign in with your directory account. Local break-glass accounts may sign in here too."),
        (true, false) => Some("Sign in with your directory account."),
    };
    let down = info.directory_down.map(|why| {
        let still = if info.local_accounts { " Local break-glass accounts still can." } else { "" };
        view! {
            <p class="notice-bad" role="status" data-testid="directory-down">
                {format!("The directory cannot be reached ({why}): directory accounts cannot sign in now.{still}")}
            </p>
        }
    });
    view! {
        {how.map(|text| view! { <p class="muted" data-testid="sign-in-how">{text}</p> })}
        {down}
    }
}

crate::lazy_screen!(login_screen {
    /// The sign-in route: its code loads in its own browser chunk.
    LoginRoute => Login,
});
