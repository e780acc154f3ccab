//! The sign-in page.

use leptos::html::Input;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;
use server_fn::ServerFn;

use crate::auth::{Login as LoginAction, sign_in_notes};
use crate::components::controls::BusyButton;
use crate::components::locale_switch::{LocaleSwitch, Switches};
use crate::i18n::t;

/// Sign-in form; a wrong user name or password gets one message, at the form.
#[component]
pub fn Login() -> impl IntoView {
    let login = ServerAction::<LoginAction>::new();
    let next = move || use_query_map().read().get("next").unwrap_or_default();
    let error = move || login.value().get().and_then(|r| r.err()).map(|e| e.message());
    let (username, password) = (NodeRef::<Input>::new(), NodeRef::<Input>::new());
    let mut notes = sign_in_notes().into_iter();
    let (how, down) = (notes.next(), notes.next());
    let value = |input: NodeRef<Input>| input.get().map(|i| i.value()).unwrap_or_default();
    // Without the browser bundle the form posts itself to the same server function.
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let next = Some(next()).filter(|n| !n.is_empty());
        login.dispatch(LoginAction { username: value(username), password: value(password), next });
    };
    // NB: drawn again on each switch of locale (see `Layout`).
    let switches = expect_context::<Switches>().0;
    move || {
        switches.track();
        let (how, down) = (how.clone(), down.clone());
        view! {
        <Title text=t("common.login.title") />
        <div class="login-page">
            <div class="login-card">
                <h1 class="brand">
                    <span class="brand-mark" aria-hidden="true">"lb"</span>
                    "lbdesk"
                </h1>
                <p class="muted">{t("common.login.tagline")}</p>
                {how.map(|how| view! { <p class="muted" data-testid="sign-in-how">{crate::i18n::t_of(&how)}</p> })}
                {down.map(|down| view! { <p class="notice-bad" role="status" data-testid="directory-down">{crate::i18n::t_of(&down)}</p> })}
                <form method="post" action=LoginAction::url() on:submit=submit>
                    <input type="hidden" name="next" value=next />
                    <div class="field">
                        <label for="username">{t("common.login.username")}</label>
                        <input node_ref=username id="username" name="username" type="text" autocomplete="username" required autofocus />
                    </div>
                    <div class="field">
                        <label for="password">{t("common.login.password")}</label>
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
                    <BusyButton label=t("common.login.submit") busy_label=t("common.login.busy") busy=login.pending() submit=true />
                </form>
                <LocaleSwitch />
            </div>
        </div>
        }
    }
}

crate::lazy_screen!(login_screen {
    /// The sign-in route: its code loads in its own browser chunk.
    LoginRoute => Login,
});
