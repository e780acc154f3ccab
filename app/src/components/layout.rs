//! The signed-in frame: navigation, the current user, the project switcher, sign-out.

use leptos::prelude::*;
use leptos_router::components::{A, Outlet};
use leptos_router::hooks::use_navigate;
use server_fn::ServerFn;

use crate::auth::{Logout, SwitchProject, whoami};
use crate::components::locale_switch::{LocaleSwitch, Switches};
use crate::domain::access::{Target, Verb};
use crate::domain::user::CurrentUser;
use crate::error::AppError;
use crate::i18n::t;

/// The signed-in user, provided by [`Layout`] to every screen.
pub type UserResource = Resource<Result<CurrentUser, AppError>>;

/// Counts the user's switches of project, provided by [`Layout`]: a screen whose data depends on
/// the current project keys its resources on it (the server reads the project from the session).
#[derive(Clone, Copy)]
pub struct ProjectSwitches(pub RwSignal<usize>);

/// One entry of the navigation.
struct NavItem {
    href: &'static str,
    /// The key of its words.
    label: &'static str,
    /// What the screen shows: it is offered to those who may read it.
    target: Target<'static>,
}

const NAV: [NavItem; 7] = [
    NavItem { href: "/loadbalancers", label: "common.nav.loadbalancers", target: Target::Loadbalancers },
    NavItem { href: "/tickets", label: "common.nav.tickets", target: Target::Desk },
    NavItem { href: "/listeners", label: "common.nav.listeners", target: Target::Desk },
    NavItem { href: "/rules", label: "common.nav.rules", target: Target::Desk },
    NavItem { href: "/ingresses", label: "common.nav.ingresses", target: Target::Desk },
    NavItem { href: "/audit", label: "common.nav.audit", target: Target::Desk },
    NavItem { href: "/users", label: "common.nav.users", target: Target::Accounts },
];

/// The frame around every signed-in screen.
#[component]
pub fn Layout() -> impl IntoView {
    let switch = ServerAction::<SwitchProject>::new();
    let logout = ServerAction::<Logout>::new();
    let user: UserResource = Resource::new(move || switch.version().get(), |_| whoami());
    provide_context(user);
    provide_context(ProjectSwitches(switch.version()));

    // A session that ends while the page is open (expiry, sign-out elsewhere) leads to sign-in.
    Effect::new(move |_| {
        if let Some(Err(AppError::Unauthorized)) = user.get() {
            use_navigate()("/login", Default::default());
        }
    });

    // NB: drawn again, the page in it too, on each switch of locale: its words are read as
    // it is drawn (no node of it tracks the locale, which would be code for every word).
    let switches = expect_context::<Switches>().0;
    move || {
        switches.track();
        view! {
        <div class="app">
            <aside class="sidebar">
                <a class="brand" href="/">
                    <span class="brand-mark" aria-hidden="true">"lb"</span>
                    "lbdesk"
                </a>
                <nav aria-label=t("common.nav.main")>
                    <Transition fallback=|| ()>
                        {move || Suspend::new(async move {
                            let user = user.await.ok();
                            NAV.iter()
                                .filter(|item| user.as_ref().is_some_and(|u| u.may(Verb::Read, item.target)))
                                .map(|item| view! { <A href=item.href>{t(item.label)}</A> })
                                .collect_view()
                        })}
                    </Transition>
                </nav>
            </aside>
            <div class="main">
                <header class="topbar">
                    <Transition fallback=|| view! { <span class="muted">{t("common.loading")}</span> }>
                        {move || Suspend::new(async move {
                            user.await.ok().map(|u| view! { <UserBar user=u switch logout /> })
                        })}
                    </Transition>
                    <LocaleSwitch />
                </header>
                // The screen is built once, outside any suspense: the resources it creates must be
                // created in the same order on the server and in the browser.
                <main class="content"><Outlet /></main>
            </div>
        </div>
        }
    }
}

/// The current user, role, project switcher and sign-out button.
#[component]
fn UserBar(user: CurrentUser, switch: ServerAction<SwitchProject>, logout: ServerAction<Logout>) -> impl IntoView {
    let current = user.project.clone().unwrap_or_default();
    let options = user
        .projects
        .iter()
        .map(|p| {
            let selected = *p == current;
            view! { <option value=p.clone() selected=selected>{p.clone()}</option> }
        })
        .collect_view();
    let has_projects = !user.projects.is_empty();
    view! {
        <div class="project-switcher">
            <label for="project">{t("common.project")}</label>
            <select
                id="project"
                name="project"
                disabled=!has_projects
                on:change=move |ev| {
                    switch.dispatch(SwitchProject { project: event_target_value(&ev) });
                }
            >
                {options}
                {(!has_projects).then(|| view! { <option>{t("common.no_project")}</option> })}
            </select>
        </div>
        <div class="whoami">
            <span class="user" data-testid="current-user">{user.display_name.clone()}</span>
            <span class="role badge badge-neutral" data-testid="role">{t(user.role.word_key())}</span>
            <form
                method="post"
                action=Logout::url()
                class="inline"
                on:submit=move |ev| {
                    ev.prevent_default();
                    logout.dispatch(Logout {});
                }
            >
                <button type="submit" class="btn btn-ghost">{t("common.sign_out")}</button>
            </form>
        </div>
    }
}
