//! What lists on pages share: a list page's head, what it says when it has no rows, and a
//! table that says when it is empty.

use leptos::prelude::*;
use leptos_router::components::A;

use super::layout::{ProjectSwitches, UserResource};
use crate::domain::access::{Target, Verb};

/// The head of a list page: its heading, the link to create one more, and the search box.
#[component]
pub fn ListHead(
    /// The page's heading.
    title: &'static str,
    /// Where one more is created.
    create_href: &'static str,
    /// The create link's text.
    create_label: &'static str,
    /// The search box's accessible name.
    search_label: &'static str,
    /// What the search box searches, said inside it.
    placeholder: &'static str,
    /// What is typed in the search box.
    search: RwSignal<String>,
) -> impl IntoView {
    view! {
        <div class="page-head">
            <h1>{title}</h1>
            <A href=create_href attr:class="btn btn-primary">{create_label}</A>
        </div>
        <div class="toolbar">
            <input type="search" placeholder=placeholder aria-label=search_label
                on:input=move |ev| search.set(event_target_value(&ev)) />
        </div>
    }
}

/// What a list shows instead of its table when it has no rows: why, and what to do about it.
#[component]
pub fn NoRows(
    /// Why there are no rows.
    #[prop(into)]
    message: String,
    /// What to do about it, said under it; none when empty.
    #[prop(optional)]
    hint: &'static str,
) -> impl IntoView {
    view! {
        <div class="empty-state">
            <p>{message}</p>
            {(!hint.is_empty()).then(|| view! { <p class="muted">{hint}</p> })}
        </div>
    }
}

/// A table of `rows`, each drawn by `row`, under `headers`.
pub fn table<T, V>(headers: &'static [&'static str], rows: impl IntoIterator<Item = T>, row: impl Fn(T) -> V) -> AnyView
where
    V: IntoView + 'static,
{
    view! {
        <table class="table">
            <thead><tr>{headers.iter().map(|h| view! { <th>{*h}</th> }).collect_view()}</tr></thead>
            <tbody>{rows.into_iter().map(row).collect_view()}</tbody>
        </table>
    }
    .into_any()
}

/// A [`table`] of `rows` under `headers`, or the muted note `none` when there are no rows.
pub fn table_or_none<T, V>(
    rows: Vec<T>,
    none: &'static str,
    headers: &'static [&'static str],
    row: impl Fn(T) -> V,
) -> AnyView
where
    V: IntoView + 'static,
{
    if rows.is_empty() {
        return view! { <p class="muted">{none}</p> }.into_any();
    }
    table(headers, rows, row)
}

/// What a list of the user's projects shows: for an admin, a project picker writing `project`
/// (empty: every project); for a tenant, their current project.
#[component]
pub fn ProjectFilter(project: RwSignal<String>) -> impl IntoView {
    let user = expect_context::<UserResource>();
    view! {
        <Suspense fallback=|| ()>
            {move || Suspend::new(async move {
                let u = user.await.ok()?;
                Some(if u.may(Verb::Read, Target::AllProjects) {
                    view! {
                        <div class="toolbar">
                            <label for="project-filter">"Project"</label>
                            <select id="project-filter" on:change=move |ev| project.set(event_target_value(&ev))>
                                <option value="">"All projects"</option>
                                {u.projects.iter().map(|p| view! { <option value=p.clone()>{p.clone()}</option> }).collect_view()}
                            </select>
                        </div>
                    }.into_any()
                } else {
                    view! { <p class="muted" data-testid="project">{format!("Project: {}", u.project.unwrap_or_else(|| "(none)".into()))}</p> }.into_any()
                })
            })}
        </Suspense>
    }
}

/// What a list of `project` reloads on: the project, and every switch of the user's project.
pub fn project_key(project: RwSignal<String>) -> impl Fn() -> (String, usize) + Copy + Send + Sync + 'static {
    let switches = expect_context::<ProjectSwitches>().0;
    move || (project.get(), switches.get())
}
