//! The one refusal every outbound adapter shares: a destination the deployment does not
//! connect to (loopback, private, link-local, ...), by its settings. Use cases find it in an
//! adapter's error chain ([`DestinationRefused::find`]) and answer it as the admin's to fix.

use std::error::Error;

/// An outbound request refused before it was sent: `host` resolves to (or is) `address`, in
/// a range the deployment never connects to. Displays the rule, for the admin and the log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{host} is {address}, {rule}: this deployment connects to public addresses only \
     (KNOWLEDGE_ALLOW_PRIVATE_DESTINATIONS=false)"
)]
pub struct DestinationRefused {
    pub host: String,
    pub address: String,
    /// The range, in words: "a loopback address", "a private address (RFC 1918)", ...
    pub rule: &'static str,
}

impl DestinationRefused {
    /// The refusal in `e` or among its causes, if any.
    pub fn find<'a>(e: &'a (dyn Error + 'static)) -> Option<&'a DestinationRefused> {
        let mut cause = Some(e);
        while let Some(e) = cause {
            if let Some(refused) = e.downcast_ref::<DestinationRefused>() {
                return Some(refused);
            }
            cause = e.source();
        }
        None
    }
}
