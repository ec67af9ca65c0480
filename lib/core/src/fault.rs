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
