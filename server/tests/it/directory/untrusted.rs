//! A directory whose certificate lbdesk cannot trust.

use app::error::AppError;

use super::{Style, refused, shared_options};
use crate::helpers::Backend;
use crate::shared::Shared;

/// Without its CA file, the test directory's certificate (of a CA made for it) is checked
/// against the system's CAs, and refused.
static LBDESK: Shared = Shared::with(
    || {
        shared_options("directory-untrusted", Style::OpenLdap, |text| {
            text.lines().filter(|l| !l.starts_with("caFile:")).map(|l| format!("{l}\n")).collect()
        })
    },
    false,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_whose_certificate_is_not_trusted_is_not_sent_a_password() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let capture = crate::log_capture::Capture::start();
    let AppError::Refused(message) = refused(&lbdesk, "dora", "dora-directory").await else { panic!("refused") };
    assert!(message.starts_with("The directory cannot be reached"), "{message}");
    let log = capture.text();
    assert!(log.contains("could not connect") && log.to_lowercase().contains("certificate"), "{log}");
}
