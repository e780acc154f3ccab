//! `/audit`: the audit log, newest first, filtered by what the URL's query says (so back,
//! forward and bookmarks keep the filters), each entry expandable to the object before and after.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use super::{ACTIONS, AuditPage, AuditQuery, AuditRow, KINDS, list_audit};
use crate::components::list::{More, NoRows, load_more, read_pages, table};
use crate::components::loaded::Loaded;
use crate::components::time::LocalTime;
use crate::i18n::t;

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
        <Title text=t("audit.title") />
        <div class="page-head"><h1>{t("audit.title")}</h1></div>
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
    let options = |all: &'static [&'static str], now: &str, words: fn(&str) -> Option<&'static str>| {
        all.iter()
            .map(|a| view! { <option value=*a selected=now == *a>{words(a).unwrap_or(*a)}</option> })
            .collect_view()
    };
    view! {
        <form class="toolbar" method="get" action="/audit" role="search">
            <label for="audit-user">{t("audit.filter.user")}</label>
            <input id="audit-user" name="user" value=q.user.clone() />
            <label for="audit-object">{t("audit.filter.object")}</label>
            <input id="audit-object" name="object" value=q.object.clone() />
            <label for="audit-kind">{t("audit.filter.kind")}</label>
            <select id="audit-kind" name="kind">
                <option value="">{t("audit.filter.any")}</option>
                {options(&KINDS, &q.kind, kind_words)}
            </select>
            <label for="audit-action">{t("audit.filter.action")}</label>
            <select id="audit-action" name="action">
                <option value="">{t("audit.filter.any")}</option>
                {options(&ACTIONS, &q.action, action_words)}
            </select>
            <label for="audit-from">{t("audit.filter.from")}</label>
            <input id="audit-from" name="from" type="date" value=q.from.clone() />
            <label for="audit-to">{t("audit.filter.to")}</label>
            <input id="audit-to" name="to" type="date" value=q.to.clone() />
            <button type="submit" class="btn btn-primary">{t("audit.filter.submit")}</button>
            <a class="btn btn-ghost" href="/audit">{t("audit.filter.clear")}</a>
        </form>
    }
}

/// A kind in the reader's words: lbdesk's own records (users, quotas) are named; Kubernetes
/// kinds stay as kubectl names them.
fn kind_words(kind: &str) -> Option<&'static str> {
    match kind {
        "User" => Some(t("audit.kind.user")),
        "Lbquota" => Some(t("audit.kind.quota")),
        _ => None,
    }
}

/// The entries, or why there are none.
fn rows(rows: Vec<AuditRow>, filtered: bool) -> AnyView {
    if rows.is_empty() {
        let message = if filtered { t("audit.no_match") } else { t("audit.empty") };
        return view! { <NoRows message=message hint=t("audit.empty_hint") /> }.into_any();
    }
    let headers = &[
        "audit.col.time",
        "audit.col.user",
        "audit.col.via",
        "audit.col.action",
        "audit.col.object",
        "audit.col.project",
        "audit.col.change",
    ];
    table(headers, rows, |r| {
        let object = format!("{} {}", kind_words(&r.kind).unwrap_or(&r.kind), r.name);
        view! {
            <tr data-testid="audit-entry">
                <td><LocalTime at=r.at /></td>
                <td translate="no">{r.user}</td>
                <td>{words_or_stored(via_words(&r.via), r.via)}</td>
                <td>{words_or_stored(action_words(&r.action), r.action)}</td>
                <td translate="no">{object}</td>
                <td translate="no">{if r.project.is_empty() { "—".to_string() } else { r.project }}</td>
                <td>
                    <details>
                        <summary>{t("audit.before_after")}</summary>
                        <p class="muted">{t("audit.before")}</p>
                        <pre data-testid="before">{json_or_none(r.before)}</pre>
                        <p class="muted">{t("audit.after")}</p>
                        <pre data-testid="after">{json_or_none(r.after)}</pre>
                    </details>
                </td>
            </tr>
        }
    })
}

fn json_or_none(json: String) -> String {
    if json.is_empty() { t("common.none").to_string() } else { json }
}

/// The words of a stored value, or the value as stored when it has none.
fn words_or_stored(words: Option<&'static str>, stored: String) -> String {
    words.map_or(stored, String::from)
}

/// An action the log records, in words (none for an action this version does not know).
fn action_words(action: &str) -> Option<&'static str> {
    Some(match action {
        "create" => t("audit.action.create"),
        "update" => t("audit.action.update"),
        "delete" => t("audit.action.delete"),
        "enable" => t("audit.action.enable"),
        "disable" => t("audit.action.disable"),
        "end sessions" => t("audit.action.end_sessions"),
        "set quota" => t("audit.action.set_quota"),
        "shift" => t("audit.action.shift"),
        "move" => t("audit.action.move"),
        "add listener" => t("audit.action.add_listener"),
        "update listener" => t("audit.action.update_listener"),
        "delete listener" => t("audit.action.delete_listener"),
        "add F5 Ingress" => t("audit.action.add_ingress"),
        "update F5 Ingress" => t("audit.action.update_ingress"),
        "delete F5 Ingress" => t("audit.action.delete_ingress"),
        _ => return None,
    })
}

/// The path a change came by (page, api, admission), in words.
fn via_words(via: &str) -> Option<&'static str> {
    Some(match via {
        "page" => t("audit.via.page"),
        "api" => t("audit.via.api"),
        "admission" => t("audit.via.admission"),
        _ => return None,
    })
}
