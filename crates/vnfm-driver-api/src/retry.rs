//! Retry schedules shared by the core and the adapters around it.

use std::time::Duration;

/// The delay before retry number `attempt` (1 for the first retry): `base × 2^(attempt-1)`
/// capped at `max`, of which the upper half is random ("equal jitter"), so clients that
/// failed together do not retry together.
pub fn backoff_delay(attempt: u32, base: Duration, max: Duration) -> Duration {
    let exp = attempt.saturating_sub(1).min(32);
    let full = base.saturating_mul(1u32 << exp.min(31)).min(max);
    let half = full / 2;
    let half_ms = u64::try_from(half.as_millis()).unwrap_or(u64::MAX);
    let jitter = match half_ms {
        0 => 0,
        h => getrandom::u64().unwrap_or(0) % (h + 1),
    };
    half + Duration::from_millis(jitter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_caps_and_jitters_within_bounds() {
        let base = Duration::from_millis(100);
        let max = Duration::from_millis(1000);
        for _ in 0..50 {
            let d1 = backoff_delay(1, base, max);
            assert!(d1 >= Duration::from_millis(50) && d1 <= base, "{d1:?}");
            let d3 = backoff_delay(3, base, max);
            assert!(
                d3 >= Duration::from_millis(200) && d3 <= Duration::from_millis(400),
                "{d3:?}"
            );
            let d50 = backoff_delay(50, base, max);
            assert!(d50 >= max / 2 && d50 <= max, "{d50:?}");
        }
        assert_eq!(backoff_delay(1, Duration::ZERO, max), Duration::ZERO);
    }
}
