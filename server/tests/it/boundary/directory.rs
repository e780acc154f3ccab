//! The boundary for dora, a tenant of project-a as alice is, signing in from the directory.

use crate::directory::{Style, shared_options};
use crate::helpers::Backend;
use crate::shared::Shared;

/// lbdesk signing users in with the shared directory, read as Active Directory.
static LBDESK: Shared =
    Shared::with(|| shared_options("boundary-directory", Style::ActiveDirectory, |text| text), false);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_boundary_holds_for_a_directory_user_too() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    super::with_bobs_secret(&lbdesk).await;
    super::boundary_holds(&lbdesk, ("dora", "dora-directory")).await;
}
