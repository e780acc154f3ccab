//! Admission of the quotas themselves: an Lbquota's limits are checked as the Users page checks
//! them. (What counts against a quota is charged by `usage`.)

use app::domain::crd::Lbquota;
use app::domain::policy::validate_quota;

use super::{Denial, Review};

/// Checks a create or update of an Lbquota.
pub(super) async fn check(review: &Review) -> Result<(), Denial> {
    let Some(quota) = review.after::<Lbquota>()? else { return Ok(()) };
    validate_quota(&review.name, &quota.spec).map_err(Denial::invalid_field)
}
