//! The `retry` settings group (spec §4) and the host's fixed options.

/// The `retry` settings group (spec §4).
///
/// A plain `Copy` value: every combination of field values is valid, so the
/// machine never has to check it. Decoding from JSON (feature `serde`, see
/// [`crate::wire`]) is where bad input is rejected.
///
/// The defaults are `enabled: true`, `max_retries: 3`, `base_delay_ms: 2000`:
///
/// ```
/// use autoretry::RetrySettings;
/// let s = RetrySettings::default();
/// assert_eq!((s.enabled, s.max_retries, s.base_delay_ms), (true, 3, 2000));
/// let fast = RetrySettings::DEFAULT.with_max_retries(5).with_base_delay_ms(100);
/// assert_eq!(fast.delay_ms(3), 400);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RetrySettings {
    /// `retry.enabled`: the master switch.
    pub enabled: bool,
    /// `retry.maxRetries`: retries allowed in one chain.
    pub max_retries: u32,
    /// `retry.baseDelayMs`: the first backoff delay, doubled for each later attempt.
    pub base_delay_ms: u64,
}

impl RetrySettings {
    /// The defaults of spec §4: enabled, 3 retries, 2000 ms base delay.
    pub const DEFAULT: RetrySettings = RetrySettings {
        enabled: true,
        max_retries: 3,
        base_delay_ms: 2000,
    };

    /// The same settings with `enabled` set.
    pub const fn with_enabled(mut self, enabled: bool) -> Self {
        self.enabled = enabled;
        self
    }

    /// The same settings with `max_retries` set.
    pub const fn with_max_retries(mut self, max_retries: u32) -> Self {
        self.max_retries = max_retries;
        self
    }

    /// The same settings with `base_delay_ms` set.
    pub const fn with_base_delay_ms(mut self, base_delay_ms: u64) -> Self {
        self.base_delay_ms = base_delay_ms;
        self
    }

    /// The backoff before retry number `attempt` (1-based):
    /// `base_delay_ms × 2^(attempt − 1)`, saturating at `u64::MAX`
    /// (spec §5.1.3). Attempt 0 is treated as 1.
    ///
    /// ```
    /// use autoretry::RetrySettings;
    /// let s = RetrySettings::DEFAULT;
    /// assert_eq!([s.delay_ms(1), s.delay_ms(2), s.delay_ms(3)], [2000, 4000, 8000]);
    /// assert_eq!(s.delay_ms(64), u64::MAX);
    /// assert_eq!(RetrySettings::DEFAULT.with_base_delay_ms(0).delay_ms(200), 0);
    /// ```
    pub const fn delay_ms(&self, attempt: u32) -> u64 {
        let shift = attempt.saturating_sub(1);
        if self.base_delay_ms == 0 {
            0
        } else if shift >= 64 || self.base_delay_ms > (u64::MAX >> shift) {
            u64::MAX
        } else {
            self.base_delay_ms << shift
        }
    }
}

impl Default for RetrySettings {
    /// [`RetrySettings::DEFAULT`]: enabled, 3 retries, 2000 ms.
    fn default() -> Self {
        RetrySettings::DEFAULT
    }
}

/// What the host tells the machine about itself (spec §2).
///
/// ```
/// use autoretry::HostOptions;
/// let host = HostOptions::default().with_context_window(200_000).with_credential_store(true);
/// assert_eq!(host.context_window, 200_000);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct HostOptions {
    /// The model's context window in tokens; `0` means unknown.
    pub context_window: u64,
    /// Whether the host has a credential store that can rotate accounts on a
    /// usage limit (spec §5.1.4).
    pub credential_store: bool,
}

impl HostOptions {
    /// The same options with `context_window` set.
    pub const fn with_context_window(mut self, context_window: u64) -> Self {
        self.context_window = context_window;
        self
    }

    /// The same options with `credential_store` set.
    pub const fn with_credential_store(mut self, credential_store: bool) -> Self {
        self.credential_store = credential_store;
        self
    }
}
