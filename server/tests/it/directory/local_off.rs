//! Local accounts switched off: break-glass accounts sign no one in, and the sign-in page does not
//! offer them.

use reqwest::StatusCode;

use super::{Style, directory_bob, me, notes, refused, shared_options, sign_in, signed_in, wrong};
use crate::helpers::Backend;
use crate::shared::Shared;

static LBDESK: Shared = Shared::with(
    || shared_options("directory-local-off", Style::ActiveDirectory, |text| format!("{text}localAccounts: false\n")),
    false,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_accounts_switched_off_sign_no_one_in_and_the_page_does_not_offer_them() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let (client, status, body) = sign_in(&lbdesk, "admin", "admin-demo").await;
    assert!(!status.is_success(), "{body}");
    assert_eq!(serde_json::from_str(&body).ok(), Some(wrong()));
    assert_eq!(me(&lbdesk, &client).await, Err(StatusCode::UNAUTHORIZED));
    let how = notes(&lbdesk).await.how;
    assert_eq!(how.as_deref(), Some("Sign in with your directory account."), "local accounts are not offered");
    signed_in(&lbdesk, "gina", "gina-directory").await;
}

/// The directory's `bob` against the local one: the name stays the local account's, which signs in
/// no more (with local accounts on: `active_directory::a_directory_account_cannot_take_over_a_local_one`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_account_cannot_take_over_a_local_one() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    directory_bob();
    assert_eq!(refused(&lbdesk, "bob", "bob-directory").await, wrong());
    assert_eq!(refused(&lbdesk, "bob", "bob-demo").await, wrong());
}
