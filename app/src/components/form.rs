//! What every editor page shares: loading what it edits, fields with their errors, writing an
//! input into the form, and going on once the save succeeds.

use std::future::Future;

use leptos::ev::Event;
use leptos::prelude::*;
use leptos_router::hooks::{use_navigate, use_params_map};
use serde::Serialize;
use serde::de::DeserializeOwned;
use server_fn::ServerFn;

use super::loaded::Loaded;
use crate::error::AppError;

/// An editor page: loads the form's choices, and the object to edit when the route names one
/// (`…/:name/edit`; `None` for a new one, `…/new`), then shows `form` over them.
pub fn editor<C, D, FC, FD>(
    choices: impl Fn() -> FC + Copy + Send + Sync + 'static,
    get: impl Fn(String) -> FD + Copy + Send + Sync + 'static,
    form: impl Fn((C, Option<D>)) -> AnyView + Clone + Send + Sync + 'static,
) -> impl IntoView
where
    C: Clone + Send + Sync + Serialize + DeserializeOwned + 'static,
    D: Clone + Send + Sync + Serialize + DeserializeOwned + 'static,
    FC: Future<Output = Result<C, AppError>> + Send + 'static,
    FD: Future<Output = Result<D, AppError>> + Send + 'static,
{
    let params = use_params_map();
    let loaded = Resource::new(
        move || params.read().get("name"),
        move |name| async move {
            let choices = choices().await?;
            let edited = match name {
                Some(name) => Some(get(name).await?),
                None => None,
            };
            Ok((choices, edited))
        },
    );
    view! { <Loaded resource=loaded show=form /> }
}

/// The error of `action`'s last answer, when it failed.
pub fn action_error<S>(action: ServerAction<S>) -> Signal<Option<AppError>>
where
    S: ServerFn<Error = AppError> + Clone + Send + Sync + 'static,
    S::Output: Send + Sync + 'static,
{
    Signal::derive(move || action.value().with(|answer| answer.as_ref().and_then(|r| r.as_ref().err().cloned())))
}

/// Opens the page `to(answer)` names once `action` succeeds: a saved form shows what it saved,
/// a deletion goes back to the list.
pub fn navigate_on_success<S>(action: ServerAction<S>, to: impl Fn(&S::Output) -> String + Send + Sync + 'static)
where
    S: ServerFn<Error = AppError> + Clone + Send + Sync + 'static,
    S::Output: Send + Sync + 'static,
{
    Effect::new(move |_| {
        let next = action.value().with(|answer| match answer {
            Some(Ok(answer)) => Some(to(answer)),
            _ => None,
        });
        if let Some(next) = next {
            use_navigate()(&next, Default::default());
        }
    });
}

/// An input's handler that writes the input's value into the form with `put`.
pub fn set_field<F>(form: RwSignal<F>, put: fn(&mut F, String)) -> impl Fn(Event) + Copy + Send + Sync + 'static
where
    F: Send + Sync + 'static,
{
    move |ev: Event| form.update(|f| put(f, event_target_value(&ev)))
}

/// A labelled form field with help text and the error that belongs beside it.
#[component]
pub fn Field(
    /// What the field asks for.
    label: &'static str,
    /// The `id` of the input inside, which the label names.
    id: &'static str,
    /// Said under the input; nothing when empty.
    #[prop(optional)]
    help: &'static str,
    /// The message beside the field, from [`field_error`].
    #[prop(into)]
    error: Signal<Option<String>>,
    /// The input.
    children: Children,
) -> impl IntoView {
    let error_id = format!("{id}-error");
    view! {
        <div class="field" class:has-error=move || error.get().is_some()>
            <label for=id>{label}</label>
            {children()}
            {(!help.is_empty()).then(|| view! { <span class="help">{help}</span> })}
            <span class="field-error" id=error_id role="alert">{move || error.get()}</span>
        </div>
    }
}

/// The message of `error` that belongs beside `field`, as a signal for [`Field`].
pub fn field_error(error: Signal<Option<AppError>>, field: &'static str) -> Signal<Option<String>> {
    Signal::derive(move || error.get().and_then(|e| e.for_field(field)))
}

/// The message of `error` that belongs beside none of the form's `fields`, on top of the form.
#[component]
pub fn FormError(
    /// The save's error, from [`action_error`].
    error: Signal<Option<AppError>>,
    /// Every field a [`Field`] of the form shows errors for.
    fields: &'static [&'static str],
) -> impl IntoView {
    let message = move || match error.get() {
        Some(AppError::Invalid { field, .. }) if fields.contains(&field.as_str()) => None,
        other => other.map(|e| e.message()),
    };
    view! { <p class="field-error form-error" role="alert">{message}</p> }
}
