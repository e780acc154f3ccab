//! Choosing the console's language: the switch in the header and on the sign-in page, and the
//! server function that remembers the choice.

use leptos::prelude::*;

use crate::error::AppError;
use crate::i18n::{Locale, t};

/// Counts the reader's switches of locale, provided by [`crate::App`]: the frames around the
/// pages (the signed-in layout, the sign-in page) draw themselves again in the new words on each.
#[derive(Clone, Copy)]
pub struct Switches(pub RwSignal<u32>);

/// Remembers `locale` (`zh-CN` or `en`) for this browser (a cookie) and, when signed in, for
/// the user (on the server, so their next sign-in anywhere opens in it); answers its dictionary.
#[server(prefix = "/api", endpoint = "locale", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn set_locale(locale: String) -> Result<String, AppError> {
    use crate::ssr;
    ssr::reply(
        async {
            let Some(chosen) = Locale::ALL.into_iter().find(|l| l.tag() == locale) else {
                return Err(AppError::invalid(
                    "locale",
                    crate::tf!("errors.locale_unknown", locale = crate::domain::policy::shown(&locale)),
                ));
            };
            match ssr::account().await {
                Ok(account) => ssr::state()?
                    .db
                    .set_locale(&account.username, chosen.tag())
                    .await
                    .map_err(|e| ssr::db_error("could not save the language", e))?,
                Err(AppError::Unauthorized) => {}
                Err(e) => return Err(e),
            }
            ssr::remember_locale(chosen);
            Ok(crate::i18n::dictionary_json(chosen).to_string())
        }
        .await,
    )
}

/// The two languages, the current one pressed; choosing the other redraws the page in it at
/// once (no reload).
#[component]
pub fn LocaleSwitch() -> impl IntoView {
    let switches = use_context::<Switches>();
    let current = crate::i18n::locale();
    let failed = RwSignal::new(false);
    let choose = move |wanted: Locale| {
        if wanted == crate::i18n::locale() {
            return;
        }
        // NB: not an action of this component: the redraw it causes disposes of the component.
        leptos::task::spawn_local(async move {
            let installed = match set_locale(wanted.tag().to_string()).await {
                Ok(json) => apply(wanted, &json),
                Err(_) => false,
            };
            failed.try_set(!installed);
            if let Some(Switches(n)) = switches.filter(|_| installed) {
                n.update(|n| *n = n.wrapping_add(1));
            }
        });
    };
    view! {
        <div class="locale-switch" role="group" aria-label=t("common.locale.switch")>
            {Locale::ALL
                .into_iter()
                .map(|l| {
                    view! {
                        <button type="button" class="btn btn-ghost" lang=l.tag()
                            aria-pressed=if l == current { "true" } else { "false" }
                            on:click=move |_| choose(l)>{l.own_name()}</button>
                    }
                })
                .collect_view()}
            {move || failed.get().then(|| view! { <span class="field-error" role="alert">{t("common.locale.failed")}</span> })}
        </div>
    }
}

/// Makes `json` the page's dictionary and `locale` its language.
fn apply(locale: Locale, json: &str) -> bool {
    #[cfg(feature = "hydrate")]
    {
        if !crate::i18n::install(locale, json) {
            return false;
        }
        if let Some(html) = document().document_element() {
            let _ = html.set_attribute("lang", locale.tag());
        }
        true
    }
    #[cfg(not(feature = "hydrate"))]
    {
        let _ = (locale, json);
        false
    }
}
