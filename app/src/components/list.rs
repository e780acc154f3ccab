//! What lists on pages share: a list page's head, what it says when it has no rows, a table
//! that says when it is empty, and long lists read a page at a time.

use leptos::prelude::*;
use leptos_router::components::A;

use super::layout::{ProjectSwitches, UserResource};
use crate::domain::access::{Target, Verb};
use crate::error::AppError;
use crate::i18n::t;
pub use crate::wire::Page;

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

/// A table of `rows`, each drawn by `row`, under `headers` (the keys of their words).
pub fn table<T, V>(headers: &'static [&'static str], rows: impl IntoIterator<Item = T>, row: impl Fn(T) -> V) -> AnyView
where
    V: IntoView + 'static,
{
    view! {
        <table class="table">
            <thead><tr>{headers.iter().map(|h| view! { <th>{t(h)}</th> }).collect_view()}</tr></thead>
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
                            <label for="project-filter">{t("common.project")}</label>
                            <select id="project-filter" on:change=move |ev| project.set(event_target_value(&ev))>
                                <option value="">{t("common.all_projects")}</option>
                                {u.projects.iter().map(|p| view! { <option value=p.clone()>{p.clone()}</option> }).collect_view()}
                            </select>
                        </div>
                    }.into_any()
                } else {
                    view! { <p class="muted" data-testid="project">{crate::tf!("common.project_is", project = u.project.unwrap_or_else(|| t("common.none").into()))}</p> }.into_any()
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

/// How many pages "Load more" added to a list read for a key (a list's filters); another key
/// starts over at the first page.
pub struct More<K: Send + Sync + 'static>(RwSignal<(K, usize)>);

impl<K: Send + Sync + 'static> Clone for More<K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K: Send + Sync + 'static> Copy for More<K> {}

impl<K: Default + Send + Sync + 'static> Default for More<K> {
    fn default() -> Self {
        More(RwSignal::new((K::default(), 0)))
    }
}

impl<K: Clone + PartialEq + Send + Sync + 'static> More<K> {
    /// The pages added for `key`.
    pub fn pages(self, key: &K) -> usize {
        self.0.with(|(k, n)| if k == key { *n } else { 0 })
    }

    /// One more page for `key`.
    pub fn add(self, key: K) {
        let pages = self.pages(&key);
        self.0.set((key, pages + 1));
    }
}

/// The first page and the `more` after it, as one page; `fetch(cursor)` reads the page starting
/// at `cursor` (empty: the first).
// NB: one resource reads them all, in order (each an index read on the server): a second way of
// calling a list (an action and effects to append its answers) would cost the browser bundle
// more than the few requests it saves.
pub async fn read_pages<T, F, Fut>(more: usize, fetch: F) -> Result<Page<T>, AppError>
where
    F: Fn(String) -> Fut,
    Fut: Future<Output = Result<Page<T>, AppError>>,
{
    let mut all = fetch(String::new()).await?;
    for _ in 0..more {
        let Some(cursor) = all.next.take() else { break };
        let page = fetch(cursor).await?;
        all.rows.extend(page.rows);
        all.next = page.next;
    }
    Ok(all)
}

/// "Load more" under a list, when it has a next page.
pub fn load_more(next: bool, on_click: impl Fn() + 'static) -> Option<impl IntoView> {
    next.then(|| view! { <p><button type="button" class="btn" on:click=move |_| on_click()>{t("common.load_more")}</button></p> })
}
