//! A page's data, once loaded.

use leptos::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::components::controls::Asking;
use crate::components::notice::NotAllowed;
use crate::error::AppError;
use crate::i18n::t;

/// How often a page asks for news while what it shows moves; when settled, every
/// `POLL_SETTLED_EVERY` beats.
const POLL_MOVING: std::time::Duration = std::time::Duration::from_millis(250);
const POLL_SETTLED_EVERY: u32 = 8;

/// Makes `tick` (a counter a page's resource reloads on) beat every 250 ms while `moving` says
/// what the page shows is still changing (or loading), every 2 s once settled. In the browser
/// only.
pub fn poll(tick: RwSignal<u32>, moving: Memo<bool>) {
    Effect::new(move |_| {
        let count = std::cell::Cell::new(0u32);
        let beat = move || {
            count.set(count.get().wrapping_add(1));
            if moving.get_untracked() || count.get().is_multiple_of(POLL_SETTLED_EVERY) {
                tick.update(|t| *t = t.wrapping_add(1));
            }
        };
        if let Ok(handle) = set_interval_with_handle(beat, POLL_MOVING) {
            on_cleanup(move || handle.clear());
        }
    });
}

/// Shows `show` of the resource's value once it is loaded (the last one stays on screen while it
/// reloads), or what failed: the "not allowed" page for a refusal of the role, else the message.
/// A confirmation asked on it stays open while it reloads ([`Asking`]).
#[component]
pub fn Loaded<T, S>(resource: Resource<Result<T, AppError>>, show: S) -> impl IntoView
where
    T: Clone + Send + Sync + Serialize + DeserializeOwned + 'static,
    S: Fn(T) -> AnyView + Clone + Send + Sync + 'static,
{
    provide_context(Asking(RwSignal::new(None)));
    view! {
        <Transition fallback=|| view! { <p class="muted">{t("common.loading")}</p> }>
            {move || {
                let show = show.clone();
                Suspend::new(async move {
                    match resource.await {
                        Err(e) => failure(e),
                        Ok(value) => show(value),
                    }
                })
            }}
        </Transition>
    }
}

/// What a page shows when loading its data failed: the "not allowed" page for a refusal of the
/// role, the message otherwise.
fn failure(e: AppError) -> AnyView {
    match e {
        AppError::Forbidden(_) => view! { <NotAllowed /> }.into_any(),
        AppError::Unauthorized => view! { <SessionEnded /> }.into_any(),
        e => view! { <div class="empty-state"><p class="field-error" role="alert">{e.message()}</p></div> }.into_any(),
    }
}

/// Shown when the session ended while the page was open (its idle time or lifetime passed, it
/// was signed out elsewhere or ended by an admin): leads to sign-in.
#[component]
fn SessionEnded() -> impl IntoView {
    Effect::new(|_| leptos_router::hooks::use_navigate()("/login", Default::default()));
    view! { <p class="muted">{t("common.session_ended")}</p> }
}
