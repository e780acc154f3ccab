//! `/audit`: the audit log, newest first, filtered by what the URL's query says (so back,
//! forward and bookmarks keep the filters), each entry expandable to the object before and after.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use super::{ACTIONS, AuditPage, AuditQuery, AuditRow, KINDS, list_audit};
use crate::components::list::{More, NoRows, load_more, read_pages, table};
use crate::components::loaded::Loaded;
use crate::components::time::LocalTime;

/// `/audit`
#[component]
pub fn AuditLog() -> impl IntoView {
    let params = use_query_map();
    let query = Memo::new(move |_| {
        let p = params.read();
        let get = |key: &str| p.get(key).unwrap_or_default();
        AuditQuery {
            user: get("user"),
            object: get("object"),
            kind: get("kind"),
            action: get("action"),
            from: get("from"),
            to: get("to"),
            cursor: String::new(),
        }
    });
    let more = More::default();
    let entries = Resource::new(
        move || (query.get(), more.pages(&query.get())),
        |(q, pages)| read_pages(pages, move |cursor| list_audit(AuditQuery { cursor, ..q.clone() })),
    );
    view! {
        <Title text="Audit log" />
        <div class="page-head"><h1>"Audit log"</h1></div>
        <Loaded resource=entries show=move |page: AuditPage| {
            let filtered = query.with(AuditQuery::filtered);
            let load = load_more(page.next.is_some(), move || more.add(query.get_untracked()));
            // NB: drawn with the entries, so the fields follow the URL (a link to `/audit` from a
            // filtered page clears them) with no reactive code of their own.
            view! { {filters(&query.get_untracked())} {rows(page.rows, filtered)} {load} }.into_any()
        } />
    }
}

/// The filter bar: a plain GET form, so the filters are the page's URL (back, forward and
/// bookmarks keep them) and it needs no code in the browser.
fn filters(q: &AuditQuery) -> impl IntoView + use<> {
    let options = |all: &'static [&'static str], now: &str| {
        all.iter().map(|a| view! { <option value=*a selected=now == *a>{*a}</option> }).collect_view()
    };
    view! {
        <form class="toolbar" method="get" action="/audit" role="search">
            <label for="audit-user">"User"</label>
            <input id="audit-user" name="user" value=q.user.clone() />
            <label for="audit-object">"Object"</label>
            <input id="audit-object" name="object" value=q.object.clone() />
            <label for="audit-kind">"Kind"</label>
            <select id="audit-kind" name="kind">
                <option value="">"Any"</option>
                {options(&KINDS, &q.kind)}
            </select>
            <label for="audit-action">"Action"</label>
            <select id="audit-action" name="action">
                <option value="">"Any"</option>
                {options(&ACTIONS, &q.action)}
            </select>
            <label for="audit-from">"From (UTC)"</label>
            <input id="audit-from" name="from" type="date" value=q.from.clone() />
            <label for="audit-to">"To (UTC)"</label>
            <input id="audit-to" name="to" type="date" value=q.to.clone() />
            <button type="submit" class="btn btn-primary">"Filter"</button>
            <a class="btn btn-ghost" href="/audit">"Clear"</a>
        </form>
    }
}

/// The entries, or why there are none.
fn rows(rows: Vec<AuditRow>, filtered: bool) -> AnyView {
    if rows.is_empty() {
        let message = if filtered { "No audit entry matches these filters." } else { "No changes recorded yet." };
        return view! { <NoRows message=message hint="Every change to a load balancer, address request or rule is recorded here." /> }
            .into_any();
    }
    table(&["Time", "User", "Via", "Action", "Object", "Project", "Change"], rows, |r| {
        let object = format!("{} {}", r.kind, r.name);
        view! {
            <tr data-testid="audit-entry">
                <td><LocalTime at=r.at /></td>
                <td>{r.user}</td>
                <td>{r.via}</td>
                <td>{r.action}</td>
                <td>{object}</td>
                <td>{if r.project.is_empty() { "—".to_string() } else { r.project }}</td>
                <td>
                    <details>
                        <summary>"Before / after"</summary>
                        <p class="muted">"Before"</p>
                        <pre data-testid="before">{json_or_none(r.before)}</pre>
                        <p class="muted">"After"</p>
                        <pre data-testid="after">{json_or_none(r.after)}</pre>
                    </details>
                </td>
            </tr>
        }
    })
}

fn json_or_none(json: String) -> String {
    if json.is_empty() { "(none)".to_string() } else { json }
}
