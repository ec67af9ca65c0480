//! Fault points: named places in a two-step write where a test stops the process, to kill it
//! there (`kill -9`) and show that what was acknowledged survives and what was cut short is
//! recovered. They exist only with the `fault-points` feature, which only the test build
//! enables; without it [`point`] is an empty function.

/// The environment variable naming the points at which the process stops, comma-separated.
pub const FAULT_POINTS_ENV: &str = "KNOWLEDGE_FAULT_POINTS";

/// What [`point`] prints to standard error, before the point's name, when it stops there.
pub const REACHED: &str = "fault point reached: ";

/// At the point `<place>.<moment>` (`CallAgent.end`, `delete.marked`), when
/// [`FAULT_POINTS_ENV`] names it: prints [`REACHED`] and the name to standard error and never
/// returns, so that the test which named it can kill the process exactly there; the rest of
/// the process goes on. Otherwise, and always without the feature, returns at once.
pub async fn point(place: &str, moment: &str) {
    #[cfg(feature = "fault-points")]
    {
        let name = format!("{place}.{moment}");
        let named = std::env::var(FAULT_POINTS_ENV)
            .is_ok_and(|points| points.split(',').any(|p| p.trim() == name));
        if named {
            eprintln!("{REACHED}{name}");
            std::future::pending::<()>().await;
        }
    }
    #[cfg(not(feature = "fault-points"))]
    let _ = (place, moment);
}

/// The environment variable that moves the process's clock by this many milliseconds, as
/// clock skew between two servers does: with it a test sees a second process take over the
/// runs of a first one whose leases are, by its clock, long run out. Read only with the
/// `fault-points` feature.
pub const CLOCK_OFFSET_ENV: &str = "KNOWLEDGE_TEST_CLOCK_OFFSET_MS";

/// The offset [`CLOCK_OFFSET_ENV`] names, in milliseconds; always 0 without the feature.
pub fn clock_offset_ms() -> i64 {
    #[cfg(feature = "fault-points")]
    {
        std::env::var(CLOCK_OFFSET_ENV)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }
    #[cfg(not(feature = "fault-points"))]
    0
}
