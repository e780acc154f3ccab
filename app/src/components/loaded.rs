//! A page's data, once loaded.

use leptos::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::components::notice::NotAllowed;
use crate::error::AppError;

/// Shows `show` of the resource's value once it is loaded (the last one stays on screen while it
/// reloads), or what failed: the "not allowed" page for a refusal of the role, else the message.
#[component]
pub fn Loaded<T, S>(resource: Resource<Result<T, AppError>>, show: S) -> impl IntoView
where
    T: Clone + Send + Sync + Serialize + DeserializeOwned + 'static,
    S: Fn(T) -> AnyView + Clone + Send + Sync + 'static,
{
    view! {
        <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
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
        e => {
            view! { <div class="empty-state"><p class="field-error" role="alert">{e.to_string()}</p></div> }.into_any()
        }
    }
}
