//! Retry delays: the interval grown by the backoff rate, capped, and scaled by full jitter.

use super::*;

#[test]
fn retry_delays_grow_by_the_backoff_rate_up_to_the_cap_and_full_jitter_scales_them() {
    let r = Retrier {
        errors: vec![],
        interval_secs: 1.0,
        max_attempts: 5,
        backoff_rate: 2.0,
        max_delay_secs: Some(5.0),
        full_jitter: false,
    };
    let secs: Vec<f64> = (1..=4).map(|a| r.delay(a, 0.5).as_secs_f64()).collect();
    assert_eq!(secs, [1.0, 2.0, 4.0, 5.0]);
    let jittered = Retrier {
        full_jitter: true,
        ..r
    };
    assert_eq!(jittered.delay(3, 0.5).as_secs_f64(), 2.0);
}
