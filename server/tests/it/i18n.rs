//! The console's language over HTTP: which locale a page is rendered in, the switch remembered
//! per browser and per user, and answers of server functions in the reader's words.

use app::error::AppError;
use app::i18n::{Locale, Msg};
use reqwest::StatusCode;
use reqwest::header::{ACCEPT_LANGUAGE, COOKIE, SET_COOKIE};

use crate::helpers::{Backend, Lbdesk, browser};
use crate::on_both_databases;
use crate::shared::Shared;

/// Shared: alice's saved language is the only thing a test here changes, and only one reads it.
static LBDESK: Shared = Shared::new();

on_both_databases!(a_users_choice_of_language_follows_them_to_another_browser);

/// The words of `key` in `locale`.
fn words(key: &'static str, locale: Locale) -> String {
    Msg::new(key).text_in(locale)
}

/// The sign-in page as a browser sending `headers` gets it.
async fn sign_in_page(lbdesk: &Lbdesk, headers: &[(reqwest::header::HeaderName, &str)]) -> String {
    let mut req = reqwest::Client::new().get(format!("{}/login", lbdesk.url));
    for (name, value) in headers {
        req = req.header(name, *value);
    }
    let res = req.send().await.expect("request");
    assert_eq!(res.status(), StatusCode::OK);
    res.text().await.expect("page")
}

/// `POST /api/locale` from `client` (its cookies), for `locale`.
async fn set_locale(client: &reqwest::Client, lbdesk: &Lbdesk, locale: &str) -> reqwest::Response {
    client
        .post(format!("{}/api/locale", lbdesk.url))
        .header("origin", &lbdesk.url)
        .json(&serde_json::json!({ "locale": locale }))
        .send()
        .await
        .expect("request")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_speaks_what_the_browser_asks_for_and_the_cookie_remembers() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let user_name = |l| words("common.login.username", l);
    let chinese = sign_in_page(&lbdesk, &[(ACCEPT_LANGUAGE, "zh-CN,zh;q=0.9,en;q=0.8")]).await;
    assert!(chinese.contains(r#"<html lang="zh-CN""#), "{chinese}");
    assert!(chinese.contains(&user_name(Locale::ZhCn)) && !chinese.contains(&user_name(Locale::En)), "{chinese}");
    // The page carries its locale's dictionary, and only that one, to the browser.
    let block = chinese.split(r#"<script type="application/json" id="lbdesk-i18n""#).nth(1).expect("the data block");
    let json = block.split_once('>').and_then(|(_, rest)| rest.split("</script>").next()).expect("its JSON");
    let words: serde_json::Value = serde_json::from_str(json).expect("a JSON object");
    assert_eq!(words["common.login.title"], "登录");
    let english = sign_in_page(&lbdesk, &[(ACCEPT_LANGUAGE, "en-GB,en;q=0.9")]).await;
    assert!(english.contains(r#"<html lang="en""#) && english.contains(&user_name(Locale::En)), "{english}");
    assert!(!english.contains("登录"), "no Chinese in an English page: {english}");
    let nothing_said = sign_in_page(&lbdesk, &[]).await;
    assert!(nothing_said.contains(r#"<html lang="en""#), "a client naming no language reads English");
    let french_first = sign_in_page(&lbdesk, &[(ACCEPT_LANGUAGE, "fr-FR, zh;q=0.5, en;q=0.4")]).await;
    assert!(french_first.contains(r#"<html lang="zh-CN""#), "the first of ours it prefers");
    // The cookie (the switch on the sign-in page) wins over the browser's languages.
    let cookie = sign_in_page(&lbdesk, &[(ACCEPT_LANGUAGE, "en-US"), (COOKIE, "lbdesk_locale=zh-CN")]).await;
    assert!(cookie.contains(r#"<html lang="zh-CN""#), "{cookie}");
    let bad_cookie = sign_in_page(&lbdesk, &[(ACCEPT_LANGUAGE, "en-US"), (COOKIE, "lbdesk_locale=<script>")]).await;
    assert!(bad_cookie.contains(r#"<html lang="en""#), "an unknown one is ignored");

    // Switching on the sign-in page: a cookie for a year, HttpOnly, and the dictionary.
    let anonymous = browser();
    let res = set_locale(&anonymous, &lbdesk, "zh-CN").await;
    assert_eq!(res.status(), StatusCode::OK);
    let set_cookie = res.headers().get(SET_COOKIE).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    for part in ["lbdesk_locale=zh-CN", "Path=/", "Max-Age=31536000", "SameSite=Lax", "HttpOnly"] {
        assert!(set_cookie.contains(part), "{part}: {set_cookie}");
    }
    let dictionary: String = res.json().await.expect("the dictionary, as JSON text");
    let dictionary: serde_json::Value = serde_json::from_str(&dictionary).expect("a JSON object");
    assert_eq!(dictionary["common.login.title"], "登录");
    let page = anonymous.get(format!("{}/login", lbdesk.url)).send().await.expect("request");
    assert!(page.text().await.expect("page").contains(r#"<html lang="zh-CN""#), "the cookie is sent back");

    // A language lbdesk does not speak: refused naming the field, in the reader's words.
    let res = set_locale(&anonymous, &lbdesk, "fr").await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let refused: AppError = res.json().await.expect("typed error");
    let said = refused.for_field("locale").expect("beside the field");
    assert!(said.starts_with("lbdesk 不支持界面语言") && said.contains("\"fr\""), "{said}");
}

async fn a_users_choice_of_language_follows_them_to_another_browser(backend: Backend) {
    let lbdesk = LBDESK.get(backend).await;
    let first = crate::helpers::signed_in(&lbdesk, "alice").await;
    assert_eq!(set_locale(&first, &lbdesk, "zh-CN").await.status(), StatusCode::OK);

    // Another browser, asking for English, with no cookie: signing in brings her choice.
    let second = browser();
    let res = second
        .post(format!("{}/api/login", lbdesk.url))
        .header("origin", &lbdesk.url)
        .header(ACCEPT_LANGUAGE, "en-US")
        .form(&[("username", "alice"), ("password", "alice-demo")])
        .send()
        .await
        .expect("request");
    let cookies: Vec<_> = res.headers().get_all(SET_COOKIE).iter().filter_map(|v| v.to_str().ok()).collect();
    assert!(cookies.iter().any(|c| c.starts_with("lbdesk_locale=zh-CN")), "{cookies:?}");
    // Her saved choice wins over this browser's languages, cookie or not.
    let page = browser_page(&second, &lbdesk, "/tickets").await;
    assert!(page.contains(r#"<html lang="zh-CN""#), "{page}");
    assert!(page.contains(&words("common.nav.tickets", Locale::ZhCn)), "{page}");

    // Another user in the same lbdesk is untouched by her choice.
    let bob = crate::helpers::signed_in(&lbdesk, "bob").await;
    assert!(browser_page(&bob, &lbdesk, "/tickets").await.contains(r#"<html lang="en""#));

    // Switching back in English is saved too.
    assert_eq!(set_locale(&second, &lbdesk, "en").await.status(), StatusCode::OK);
    let third = crate::helpers::signed_in(&lbdesk, "alice").await;
    let page = third
        .get(format!("{}/tickets", lbdesk.url))
        .header(ACCEPT_LANGUAGE, "zh-CN")
        .send()
        .await
        .expect("request")
        .text()
        .await
        .expect("page");
    assert!(page.contains(r#"<html lang="en""#), "{page}");
}

/// A page as `client` (signed in, English-speaking unless its cookie or user says otherwise)
/// gets it.
async fn browser_page(client: &reqwest::Client, lbdesk: &Lbdesk, path: &str) -> String {
    let res =
        client.get(format!("{}{path}", lbdesk.url)).header(ACCEPT_LANGUAGE, "en-US").send().await.expect("request");
    assert_eq!(res.status(), StatusCode::OK, "{path}");
    res.text().await.expect("page")
}
