//! Admission of Lbrules: valid fields on every create and update. The checks that need the
//! rule's ticket (its phase and type, the listener named, unique priorities) land here too.

use app::domain::crd::Lbrule;
use app::domain::policy::validate_rule;

use super::{Denial, Review};

/// Checks a create, update or delete of an Lbrule.
pub(super) fn check(review: &Review) -> Result<(), Denial> {
    // NB: only the new object is read: a stored rule that no longer parses can still be deleted.
    match review.after::<Lbrule>()? {
        Some(rule) => validate_rule(&review.name, &rule.spec, None).map_err(Denial::invalid_field),
        None => Ok(()),
    }
}
