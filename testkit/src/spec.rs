//! The arithmetic of the spec, computed independently of the crate: the
//! delay of §5.1.3, the wait of §10.3 and its jitter. The
//! [`Monitor`](crate::Monitor) and the [`model`](crate::model) predict
//! with these; the jitter draws come from [`SplitMix64`](crate::SplitMix64).

use autoretry::RetrySettings;

/// The delay of spec §5.1.3, computed independently: `base × 2^(attempt − 1)`
/// saturating at `u64::MAX`.
///
/// ```
/// use autoretry_testkit::spec::expected_delay;
/// assert_eq!(expected_delay(2000, 3), 8000);
/// assert_eq!(expected_delay(3, 64), u64::MAX);
/// assert_eq!(expected_delay(0, 200), 0);
/// ```
pub fn expected_delay(base: u64, attempt: u32) -> u64 {
    let shift = attempt.saturating_sub(1);
    if base == 0 {
        return 0;
    }
    if shift >= 64 {
        return u64::MAX;
    }
    let wide = u128::from(base) << shift;
    u64::try_from(wide).unwrap_or(u64::MAX)
}

/// The wait of spec §10.3 steps 1–3, computed independently: the delay of
/// §5.1.3, then at most `backoffCapMs` and at most `maxDelayMs` (each only
/// when non-zero).
///
/// ```
/// use autoretry::RetrySettings;
/// use autoretry_testkit::spec::expected_backoff;
/// assert_eq!(expected_backoff(&RetrySettings::CLASSIC, 3), 8000);
/// assert_eq!(expected_backoff(&RetrySettings::MODERN, 6), 8000); // 16000, capped
/// let ceiling = RetrySettings::CLASSIC.with_max_delay_ms(5000);
/// assert_eq!(expected_backoff(&ceiling, 40), 5000);
/// ```
pub fn expected_backoff(settings: &RetrySettings, attempt: u32) -> u64 {
    let mut backoff = expected_delay(settings.base_delay_ms, attempt);
    for limit in [settings.backoff_cap_ms, settings.max_delay_ms] {
        if limit > 0 {
            backoff = backoff.min(limit);
        }
    }
    backoff
}

/// Step 4 of spec §10.3: `backoff − floor(backoff × pct × r / (100 × 2^32))`,
/// computed exactly in 128 bits. For a non-zero backoff the result lies in
/// `(backoff × (1 − pct/100), backoff]`.
///
/// ```
/// use autoretry_testkit::spec::expected_jitter;
/// assert_eq!(expected_jitter(1000, 25, 0), 1000);
/// assert_eq!(expected_jitter(1000, 25, u32::MAX), 751);
/// assert_eq!(expected_jitter(u64::MAX, 100, u32::MAX), 1 << 32);
/// ```
pub fn expected_jitter(backoff: u64, pct: u8, r: u32) -> u64 {
    let share = u128::from(backoff) * u128::from(pct) * u128::from(r) / (100u128 << 32);
    u64::try_from(u128::from(backoff) - share).expect("the share is at most the backoff")
}

/// The test of spec §11.6, computed independently: whether a chain whose
/// waits total `total_ms` may not start a wait of `delay_ms` under
/// `maxTotalDelayMs` = `limit` (0: no limit). The sum is taken exactly, in
/// 128 bits: past u64::MAX it exceeds every limit.
///
/// ```
/// use autoretry_testkit::spec::expected_total_exceeds;
/// assert!(expected_total_exceeds(4000, 2000, 5000));
/// assert!(!expected_total_exceeds(3000, 2000, 5000));
/// assert!(!expected_total_exceeds(u64::MAX, 1, 0));
/// // A saturated total goes past even the largest limit.
/// assert!(expected_total_exceeds(u64::MAX, 1, u64::MAX));
/// assert!(!expected_total_exceeds(u64::MAX, 0, u64::MAX));
/// ```
pub fn expected_total_exceeds(total_ms: u64, delay_ms: u64, limit: u64) -> bool {
    limit > 0 && u128::from(total_ms) + u128::from(delay_ms) > u128::from(limit)
}

/// The `total + d` that the §11.6 sentence prints: the exact sum,
/// saturated at u64::MAX.
///
/// ```
/// use autoretry_testkit::spec::expected_total_printed;
/// assert_eq!(expected_total_printed(4000, 2000), 6000);
/// assert_eq!(expected_total_printed(u64::MAX - 1, 5), u64::MAX);
/// ```
pub fn expected_total_printed(total_ms: u64, delay_ms: u64) -> u64 {
    u64::try_from(u128::from(total_ms) + u128::from(delay_ms)).unwrap_or(u64::MAX)
}
