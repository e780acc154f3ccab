//! Small controls used on every screen: badges, buttons disabled with a reason, confirmation,
//! the key/value editor, the timeline, the usage bar.

use leptos::prelude::*;

use crate::domain::crd::{HistoryEntry, Phase};

use super::time::LocalTime;
use crate::i18n::t;

/// The colour of a phase.
fn tone(phase: Phase) -> &'static str {
    match phase {
        Phase::Enabled => "badge badge-ok",
        Phase::Failed => "badge badge-bad",
        Phase::Requested | Phase::Created => "badge badge-info",
        Phase::Disabled => "badge badge-warn",
        Phase::Deleted => "badge badge-neutral",
    }
}

/// A ticket phase as a badge.
#[component]
pub fn PhaseBadge(phase: Phase) -> impl IntoView {
    view! { <span class=tone(phase) data-testid="phase">{t(phase.word_key())}</span> }
}

/// A button that stays focusable when not allowed, and says why on hover and focus.
#[component]
pub fn ReasonButton(
    label: &'static str,
    /// Why the action is not allowed now; `None` when it is.
    #[prop(into)]
    reason: Signal<Option<String>>,
    #[prop(optional)] danger: bool,
    #[prop(into)] on_click: Callback<()>,
) -> impl IntoView {
    let class = if danger { "btn btn-danger" } else { "btn" };
    view! {
        <span class="with-reason">
            <button
                type="button"
                class=class
                aria-disabled=move || reason.get().is_some().then_some("true")
                title=move || reason.get()
                on:click=move |_| {
                    if reason.get_untracked().is_none() {
                        on_click.run(());
                    }
                }
            >
                {label}
            </button>
            {move || reason.get().map(|r| view! { <span class="reason" role="tooltip">{r}</span> })}
        </span>
    }
}

/// A form's button that says what it is doing while `busy` (and cannot be pressed again), or is
/// disabled while `blocked`. One component for every form: each inline copy of its two closures
/// costs code in the browser bundle.
#[component]
pub fn BusyButton(
    label: &'static str,
    /// Said while busy ("Saving…").
    busy_label: &'static str,
    #[prop(into)] busy: Signal<bool>,
    /// Whether the button cannot be pressed for another reason.
    #[prop(optional, into)]
    blocked: Signal<bool>,
    /// A submit button (the form's primary action) rather than a plain one.
    #[prop(optional)]
    submit: bool,
    #[prop(optional, into)] on_click: Option<Callback<()>>,
) -> impl IntoView {
    let (kind, class) = if submit { ("submit", "btn btn-primary") } else { ("button", "btn") };
    view! {
        <button type=kind class=class disabled=move || busy.get() || blocked.get()
            on:click=move |_| if let Some(f) = on_click { f.run(()) }>
            {move || if busy.get() { busy_label } else { label }}
        </button>
    }
}

/// The question a page's confirmation is asking, kept by [`super::loaded::Loaded`] outside what
/// it draws again: a page reloads its data every 2 s (`poll`), and drew the dialog away with it.
#[derive(Clone, Copy)]
pub struct Asking(pub RwSignal<Option<String>>);

/// A destructive action that asks first. The question stays open while the page reloads its
/// data, until answered, or until the action is no longer allowed.
#[component]
pub fn ConfirmButton(
    label: &'static str,
    /// The question asked before acting.
    question: String,
    #[prop(into)] reason: Signal<Option<String>>,
    #[prop(into)] on_confirm: Callback<()>,
) -> impl IntoView {
    let asking = use_context::<Asking>().map_or_else(|| RwSignal::new(None), |a| a.0);
    let (asked, shown) = (question.clone(), question.clone());
    let open = move || reason.with(Option::is_none) && asking.with(|a| a.as_ref() == Some(&shown));
    view! {
        <ReasonButton label reason danger=true on_click=move |_| asking.set(Some(asked.clone())) />
        <Show when=open>
            <div class="confirm" role="dialog" aria-modal="true" aria-label=t("common.confirm")>
                <p>{question.clone()}</p>
                <button type="button" class="btn btn-danger" on:click=move |_| {
                    asking.set(None);
                    on_confirm.run(());
                }>{crate::tf!("common.confirm.yes", action = label.to_lowercase())}</button>
                <button type="button" class="btn" on:click=move |_| asking.set(None)>{t("common.cancel")}</button>
            </div>
        </Show>
    }
}

/// Edits key/value pairs (labels, selectors).
#[component]
pub fn KeyValueEditor(
    id: &'static str,
    pairs: RwSignal<Vec<(String, String)>>,
    #[prop(into)] disabled: Signal<bool>,
) -> impl IntoView {
    view! {
        <div class="kv" id=id>
            <For each={move || (0..pairs.get().len()).collect::<Vec<_>>()} key={|i| *i} let:i>
                <div class="kv-row">
                    <input
                        aria-label=crate::tf!("common.kv.key", n = i + 1)
                        value=move || pairs.get().get(i).map(|p| p.0.clone()).unwrap_or_default()
                        disabled=disabled
                        on:input=move |ev| pairs.update(|p| if let Some(row) = p.get_mut(i) { row.0 = event_target_value(&ev) })
                    />
                    <span>"="</span>
                    <input
                        aria-label=crate::tf!("common.kv.value", n = i + 1)
                        value=move || pairs.get().get(i).map(|p| p.1.clone()).unwrap_or_default()
                        disabled=disabled
                        on:input=move |ev| pairs.update(|p| if let Some(row) = p.get_mut(i) { row.1 = event_target_value(&ev) })
                    />
                    <button type="button" class="btn btn-ghost" disabled=disabled aria-label=t("common.remove")
                        on:click=move |_| pairs.update(|p| { if i < p.len() { p.remove(i); } })>"×"</button>
                </div>
            </For>
            <button type="button" class="btn btn-ghost" disabled=disabled on:click=move |_| pairs.update(|p| p.push(Default::default()))>
                {t("common.kv.add")}
            </button>
        </div>
    }
}

/// The state timeline of a ticket, oldest first.
#[component]
pub fn Timeline(history: Vec<HistoryEntry>) -> impl IntoView {
    view! {
        <ol class="timeline" aria-label=t("common.timeline")>
            {history
                .into_iter()
                .map(|h| view! {
                    <li>
                        <PhaseBadge phase=h.phase />
                        <LocalTime at=h.at.clone() />
                        <span class="muted">{crate::tf!("common.timeline.by", user = h.by)}</span>
                        <span lang="en">{h.message.clone()}</span>
                    </li>
                })
                .collect_view()}
        </ol>
    }
}

/// A usage bar (used of total).
#[component]
pub fn UsageBar(used: u64, free: u64) -> impl IntoView {
    let total = (used + free).max(1);
    let percent = (used * 100 / total).min(100);
    view! {
        <div class="usage" title=crate::tf!("common.usage.title", used = used, free = free)>
            <div class="usage-bar"><div class="usage-fill" style=format!("width: {percent}%")></div></div>
            <span class="muted">{crate::tf!("common.usage.text", used = used, free = free)}</span>
        </div>
    }
}
