//! The `retry` settings group (spec §4, §10.1) and the host's fixed options.

use crate::classify::Classifier;

/// Which column of spec §10.1 gives the defaults of the keys a settings
/// group leaves out (`retry.profile`).
///
/// `Classic` is the behaviour of sections 1–9; `Modern` caps, jitters and
/// bounds the wait, honours server hints and uses the extended classifier.
///
/// ```
/// use autoretry::{Profile, RetrySettings};
/// assert_eq!(Profile::default(), Profile::Classic);
/// # #[cfg(feature = "extended")] {
/// assert_eq!(Profile::from_wire("modern"), Some(Profile::Modern));
/// assert_eq!(Profile::Modern.defaults(), RetrySettings::MODERN);
/// # }
/// ```
///
/// `Modern` exists only with feature `extended` (on with `std`): its
/// classifier is the extended one, so a build without those tables has no
/// modern profile to ask for, and a decoder refuses `"modern"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Profile {
    /// `"classic"`: the reference policy (the defaults of spec §4).
    #[default]
    Classic,
    /// `"modern"`: the `modern` column of spec §10.1 (feature `extended`).
    #[cfg(feature = "extended")]
    Modern,
}

impl Profile {
    /// The wire name: `"classic"` or `"modern"`.
    ///
    /// ```
    /// use autoretry::Profile;
    /// assert_eq!(Profile::Classic.as_str(), "classic");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            Profile::Classic => "classic",
            #[cfg(feature = "extended")]
            Profile::Modern => "modern",
        }
    }

    /// Parses a wire name; `None` for anything else (names are case-sensitive).
    ///
    /// ```
    /// use autoretry::Profile;
    /// assert_eq!(Profile::from_wire("classic"), Some(Profile::Classic));
    /// assert_eq!(Profile::from_wire("Modern"), None);
    /// ```
    pub fn from_wire(name: &str) -> Option<Profile> {
        Profile::ALL.iter().copied().find(|p| p.as_str() == name)
    }

    /// Every profile this build has (`Modern` needs feature `extended`).
    pub const ALL: &'static [Profile] = &[
        Profile::Classic,
        #[cfg(feature = "extended")]
        Profile::Modern,
    ];

    /// The settings of this profile's column: [`RetrySettings::CLASSIC`] or
    /// `RetrySettings::MODERN`.
    ///
    /// ```
    /// use autoretry::{Profile, RetrySettings};
    /// assert_eq!(Profile::Classic.defaults(), RetrySettings::DEFAULT);
    /// ```
    pub const fn defaults(self) -> RetrySettings {
        match self {
            Profile::Classic => RetrySettings::CLASSIC,
            #[cfg(feature = "extended")]
            Profile::Modern => RetrySettings::MODERN,
        }
    }
}

/// `retry.jitterPct`: a whole percentage from 0 to 100. It cannot hold more,
/// so [`RetrySettings`] stays valid whatever its fields.
///
/// ```
/// use autoretry::JitterPct;
/// assert_eq!(JitterPct::new(25).map(JitterPct::get), Some(25));
/// assert_eq!(JitterPct::new(101), None);
/// assert_eq!(JitterPct::saturating(200), JitterPct::MAX);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct JitterPct(u8);

impl JitterPct {
    /// 0 %: no jitter.
    pub const ZERO: JitterPct = JitterPct(0);
    /// 100 %: the largest share.
    pub const MAX: JitterPct = JitterPct(100);

    /// The percentage `pct`; `None` above 100.
    ///
    /// ```
    /// use autoretry::JitterPct;
    /// assert_eq!(JitterPct::new(100), Some(JitterPct::MAX));
    /// ```
    pub const fn new(pct: u8) -> Option<JitterPct> {
        if pct <= 100 {
            Some(JitterPct(pct))
        } else {
            None
        }
    }

    /// The percentage `pct`, read as 100 above 100 (usable in `const`
    /// items, where `Option::unwrap` is not on the crate's MSRV).
    ///
    /// ```
    /// use autoretry::JitterPct;
    /// const QUARTER: JitterPct = JitterPct::saturating(25);
    /// assert_eq!(QUARTER.get(), 25);
    /// ```
    pub const fn saturating(pct: u8) -> JitterPct {
        if pct <= 100 {
            JitterPct(pct)
        } else {
            JitterPct::MAX
        }
    }

    /// The percentage, 0 to 100.
    ///
    /// ```
    /// use autoretry::JitterPct;
    /// assert_eq!(JitterPct::ZERO.get(), 0);
    /// ```
    pub const fn get(self) -> u8 {
        self.0
    }

    /// Step 4 of spec §10.3 for the draw `r`:
    /// `backoff − floor(backoff × pct × r / (100 × 2^32))`, computed
    /// exactly in 128 bits. For a non-zero backoff the result lies in
    /// `(backoff × (1 − pct/100), backoff]`.
    ///
    /// ```
    /// use autoretry::JitterPct;
    /// let quarter = JitterPct::saturating(25);
    /// assert_eq!(quarter.reduce(2000, 0), 2000);
    /// assert_eq!(quarter.reduce(2000, u32::MAX), 1501);
    /// assert_eq!(JitterPct::MAX.reduce(u64::MAX, u32::MAX), 1 + (u64::MAX >> 32));
    /// ```
    pub const fn reduce(self, backoff_ms: u64, r: u32) -> u64 {
        let share = backoff_ms as u128 * self.0 as u128 * r as u128 / (100u128 << 32);
        // `share <= backoff_ms`, since `pct <= 100` and `r < 2^32`.
        backoff_ms.saturating_sub(if share > u64::MAX as u128 {
            u64::MAX
        } else {
            share as u64
        })
    }
}

/// The `retry` settings group (spec §4 and §10.1).
///
/// A plain `Copy` value: every combination of field values is valid, so the
/// machine never has to check it. Decoding from JSON (feature `serde`, see
/// `wire::SettingsGroup`) is where bad input is rejected.
///
/// The defaults ([`RetrySettings::DEFAULT`], the `classic` profile) and the
/// `modern` preset:
///
/// | field | `classic` | `modern` |
/// |---|---|---|
/// | `profile` | `Classic` | `Modern` |
/// | `enabled` | `true` | `true` |
/// | `max_retries` | `3` | `10` |
/// | `base_delay_ms` | `2000` | `500` |
/// | `max_delay_ms` | `0` (no ceiling) | `300000` |
/// | `backoff_cap_ms` | `0` (no cap) | `8000` |
/// | `jitter_pct` | `0` | `25` |
/// | `honor_hints` | `false` | `true` |
/// | `classifier` | `Classic` | `Extended` |
/// | `model_fallback`, `max_usage_wait_ms`, `max_total_delay_ms` | off | off |
/// | `first_event_timeout_ms` | `0` (not watched) | `300000` |
/// | `idle_timeout_ms` | `0` (not watched) | `300000` |
/// | `retry_empty` | `false` | `true` |
///
/// ```
/// use autoretry::RetrySettings;
/// let s = RetrySettings::default();
/// assert_eq!((s.enabled, s.max_retries, s.base_delay_ms), (true, 3, 2000));
/// let fast = RetrySettings::DEFAULT.with_max_retries(5).with_base_delay_ms(100);
/// assert_eq!(fast.delay_ms(3), 400);
/// let modern = RetrySettings::MODERN;
/// assert_eq!((modern.max_retries, modern.backoff_ms(6)), (10, 8000));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RetrySettings {
    /// `retry.profile`: the column whose defaults the decoder gave to the
    /// keys left out. It changes no decision by itself.
    pub profile: Profile,
    /// `retry.enabled`: the master switch.
    pub enabled: bool,
    /// `retry.maxRetries`: retries allowed in one chain.
    pub max_retries: u32,
    /// `retry.baseDelayMs`: the first backoff delay, doubled for each later attempt.
    pub base_delay_ms: u64,
    /// `retry.maxDelayMs`: the longest wait the machine accepts; a longer
    /// one (from a hint) ends the chain at once (spec §10.3). `0`: no ceiling.
    pub max_delay_ms: u64,
    /// `retry.backoffCapMs`: cap on the exponential backoff; `0`: none.
    pub backoff_cap_ms: u64,
    /// `retry.jitterPct`: the backoff is reduced by a random share of up to
    /// this percent (spec §10.6).
    pub jitter_pct: JitterPct,
    /// `retry.honorHints`: a server hint in any retryable error sets a
    /// longer wait (spec §10.4).
    pub honor_hints: bool,
    /// `retry.classifier`: which pattern set classifies texts (spec §10.5).
    pub classifier: Classifier,
    /// `retry.modelFallback`: before a chain ends for a policy reason, ask
    /// the host to switch to another model (spec §11.3).
    pub model_fallback: bool,
    /// `retry.maxUsageWaitMs`: a usage limit whose reset the provider
    /// announced may wait past `maxDelayMs`, up to this long; 0 = never
    /// (spec §11.5).
    pub max_usage_wait_ms: u64,
    /// `retry.maxTotalDelayMs`: the longest a chain may sleep in total; 0 =
    /// no limit (spec §11.6).
    pub max_total_delay_ms: u64,
    /// `retry.firstEventTimeoutMs`: the longest a request may wait for its
    /// first progress event before the stream counts as stalled; 0 = not
    /// watched (spec §12.2).
    pub first_event_timeout_ms: u64,
    /// `retry.idleTimeoutMs`: the longest silence between two progress
    /// events before the stream counts as stalled; 0 = not watched (spec
    /// §12.2).
    pub idle_timeout_ms: u64,
    /// `retry.retryEmpty`: an answer that stops normally with nothing in it
    /// (`empty` on the message) is a failure to retry (spec §12.3).
    pub retry_empty: bool,
}

impl RetrySettings {
    /// The `classic` profile: the defaults of spec §4 (enabled, 3 retries,
    /// 2000 ms base delay) and every option of §10 off.
    pub const CLASSIC: RetrySettings = RetrySettings {
        profile: Profile::Classic,
        enabled: true,
        max_retries: 3,
        base_delay_ms: 2000,
        max_delay_ms: 0,
        backoff_cap_ms: 0,
        jitter_pct: JitterPct::ZERO,
        honor_hints: false,
        classifier: Classifier::Classic,
        model_fallback: false,
        max_usage_wait_ms: 0,
        max_total_delay_ms: 0,
        first_event_timeout_ms: 0,
        idle_timeout_ms: 0,
        retry_empty: false,
    };

    /// The defaults: [`RetrySettings::CLASSIC`].
    pub const DEFAULT: RetrySettings = RetrySettings::CLASSIC;

    /// The `modern` profile of spec §10.1: 10 retries from 500 ms, capped
    /// at 8 s, jittered down by up to 25 %, waits over 300 s refused, hints
    /// honoured, the extended classifier (feature `extended`); streams
    /// watched for 300 s before their first event and between two events,
    /// empty answers retried (spec §12.1).
    #[cfg(feature = "extended")]
    pub const MODERN: RetrySettings = RetrySettings {
        profile: Profile::Modern,
        enabled: true,
        max_retries: 10,
        base_delay_ms: 500,
        max_delay_ms: 300_000,
        backoff_cap_ms: 8000,
        jitter_pct: JitterPct::saturating(25),
        honor_hints: true,
        classifier: Classifier::Extended,
        model_fallback: false,
        max_usage_wait_ms: 0,
        max_total_delay_ms: 0,
        first_event_timeout_ms: 300_000,
        idle_timeout_ms: 300_000,
        retry_empty: true,
    };

    /// The same settings with `profile` set; no other field changes (start
    /// from [`Profile::defaults`] for a profile's values).
    pub const fn with_profile(mut self, profile: Profile) -> Self {
        self.profile = profile;
        self
    }

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

    /// The same settings with `max_delay_ms` set (`0`: no ceiling).
    ///
    /// ```
    /// use autoretry::RetrySettings;
    /// assert_eq!(RetrySettings::DEFAULT.with_max_delay_ms(3000).backoff_ms(3), 3000);
    /// ```
    pub const fn with_max_delay_ms(mut self, max_delay_ms: u64) -> Self {
        self.max_delay_ms = max_delay_ms;
        self
    }

    /// The same settings with `backoff_cap_ms` set (`0`: no cap).
    ///
    /// ```
    /// use autoretry::RetrySettings;
    /// assert_eq!(RetrySettings::DEFAULT.with_backoff_cap_ms(5000).backoff_ms(3), 5000);
    /// ```
    pub const fn with_backoff_cap_ms(mut self, backoff_cap_ms: u64) -> Self {
        self.backoff_cap_ms = backoff_cap_ms;
        self
    }

    /// The same settings with `jitter_pct` set.
    ///
    /// ```
    /// use autoretry::{JitterPct, RetrySettings};
    /// const S: RetrySettings = RetrySettings::DEFAULT.with_jitter_pct(JitterPct::saturating(10));
    /// assert_eq!(S.jitter_pct.get(), 10);
    /// ```
    pub const fn with_jitter_pct(mut self, jitter_pct: JitterPct) -> Self {
        self.jitter_pct = jitter_pct;
        self
    }

    /// The same settings with `honor_hints` set.
    pub const fn with_honor_hints(mut self, honor_hints: bool) -> Self {
        self.honor_hints = honor_hints;
        self
    }

    /// The same settings with `classifier` set.
    ///
    /// ```
    /// use autoretry::{classify::Classifier, RetrySettings};
    /// let s = RetrySettings::DEFAULT.with_classifier(Classifier::Extended);
    /// assert_eq!(s.classifier, Classifier::Extended);
    /// ```
    pub const fn with_classifier(mut self, classifier: Classifier) -> Self {
        self.classifier = classifier;
        self
    }

    /// The same settings with `model_fallback` set (spec §11.3).
    ///
    /// ```
    /// use autoretry::RetrySettings;
    /// assert!(RetrySettings::DEFAULT.with_model_fallback(true).model_fallback);
    /// ```
    pub const fn with_model_fallback(mut self, model_fallback: bool) -> Self {
        self.model_fallback = model_fallback;
        self
    }

    /// The same settings with `max_usage_wait_ms` set (spec §11.5).
    ///
    /// ```
    /// use autoretry::RetrySettings;
    /// let s = RetrySettings::DEFAULT.with_max_usage_wait_ms(18_000_000);
    /// assert_eq!(s.max_usage_wait_ms, 18_000_000);
    /// ```
    pub const fn with_max_usage_wait_ms(mut self, max_usage_wait_ms: u64) -> Self {
        self.max_usage_wait_ms = max_usage_wait_ms;
        self
    }

    /// The same settings with `max_total_delay_ms` set (spec §11.6).
    ///
    /// ```
    /// use autoretry::RetrySettings;
    /// let s = RetrySettings::DEFAULT.with_max_total_delay_ms(60_000);
    /// assert_eq!(s.max_total_delay_ms, 60_000);
    /// ```
    pub const fn with_max_total_delay_ms(mut self, max_total_delay_ms: u64) -> Self {
        self.max_total_delay_ms = max_total_delay_ms;
        self
    }

    /// The same settings with `first_event_timeout_ms` set (spec §12.1; 0:
    /// not watched).
    ///
    /// ```
    /// use autoretry::RetrySettings;
    /// const S: RetrySettings = RetrySettings::DEFAULT.with_first_event_timeout_ms(120_000);
    /// assert_eq!(S.first_event_timeout_ms, 120_000);
    /// ```
    pub const fn with_first_event_timeout_ms(mut self, first_event_timeout_ms: u64) -> Self {
        self.first_event_timeout_ms = first_event_timeout_ms;
        self
    }

    /// The same settings with `idle_timeout_ms` set (spec §12.1; 0: not
    /// watched).
    ///
    /// ```
    /// use autoretry::RetrySettings;
    /// const S: RetrySettings = RetrySettings::DEFAULT.with_idle_timeout_ms(90_000);
    /// assert_eq!(S.idle_timeout_ms, 90_000);
    /// ```
    pub const fn with_idle_timeout_ms(mut self, idle_timeout_ms: u64) -> Self {
        self.idle_timeout_ms = idle_timeout_ms;
        self
    }

    /// The same settings with `retry_empty` set (spec §12.3).
    ///
    /// ```
    /// use autoretry::RetrySettings;
    /// assert!(RetrySettings::DEFAULT.with_retry_empty(true).retry_empty);
    /// ```
    pub const fn with_retry_empty(mut self, retry_empty: bool) -> Self {
        self.retry_empty = retry_empty;
        self
    }

    /// The exponential backoff before retry number `attempt` (1-based):
    /// `base_delay_ms × 2^(attempt − 1)`, saturating at `u64::MAX`
    /// (spec §5.1.3, step 1 of §10.3). Attempt 0 is treated as 1.
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

    /// Steps 1–3 of spec §10.3: [`RetrySettings::delay_ms`], then at most
    /// `backoff_cap_ms` and at most `max_delay_ms` (each when non-zero).
    /// Jitter (step 4) is the machine's, with its generator.
    ///
    /// ```
    /// use autoretry::RetrySettings;
    /// let s = RetrySettings::DEFAULT.with_backoff_cap_ms(5000).with_max_delay_ms(4500);
    /// assert_eq!([s.backoff_ms(1), s.backoff_ms(2), s.backoff_ms(3)], [2000, 4000, 4500]);
    /// assert_eq!(RetrySettings::DEFAULT.backoff_ms(3), 8000);
    /// ```
    pub const fn backoff_ms(&self, attempt: u32) -> u64 {
        let mut backoff = self.delay_ms(attempt);
        if self.backoff_cap_ms > 0 && backoff > self.backoff_cap_ms {
            backoff = self.backoff_cap_ms;
        }
        if self.max_delay_ms > 0 && backoff > self.max_delay_ms {
            backoff = self.max_delay_ms;
        }
        backoff
    }
}

impl Default for RetrySettings {
    /// [`RetrySettings::DEFAULT`]: the `classic` profile (enabled, 3
    /// retries, 2000 ms, no ceiling, no cap, no jitter, no hints, the
    /// classic classifier).
    fn default() -> Self {
        RetrySettings::DEFAULT
    }
}

/// What the host tells the machine about itself (spec §2, §10.1).
///
/// The defaults ([`HostOptions::DEFAULT`]): context window unknown (`0`),
/// no credential store, jitter seed `0`.
///
/// ```
/// use autoretry::HostOptions;
/// let host = HostOptions::DEFAULT.with_context_window(200_000).with_credential_store(true);
/// assert_eq!(host.context_window, 200_000);
/// assert_eq!(HostOptions::default(), HostOptions::DEFAULT);
/// ```
///
/// Settings, host options and the machine itself are made in `const`
/// context, so a firmware fixes them at compile time (a `static` machine
/// in flash to copy from, no start-up code):
///
/// ```
/// use autoretry::{HostOptions, JitterPct, Machine, RetrySettings};
/// const SETTINGS: RetrySettings = RetrySettings::DEFAULT
///     .with_max_retries(5)
///     .with_base_delay_ms(250)
///     .with_backoff_cap_ms(4000)
///     .with_jitter_pct(JitterPct::saturating(20));
/// const HOST: HostOptions = HostOptions::DEFAULT.with_context_window(32_000).with_seed(0x5eed);
/// static INITIAL: Machine = Machine::new(SETTINGS, HOST);
///
/// let machine = INITIAL.clone();
/// assert_eq!((machine.settings(), machine.host_options()), (SETTINGS, HOST));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct HostOptions {
    /// The model's context window in tokens; `0` means unknown.
    pub context_window: u64,
    /// Whether the host has a credential store that can rotate accounts on a
    /// usage limit (spec §5.1.4).
    pub credential_store: bool,
    /// The seed of the jitter generator (spec §10.6), read when the machine
    /// is made. A real host seeds from its own entropy; tests and vectors
    /// use a fixed seed to get the same waits.
    pub seed: u64,
}

impl HostOptions {
    /// No context window, no credential store, seed 0.
    pub const DEFAULT: HostOptions = HostOptions {
        context_window: 0,
        credential_store: false,
        seed: 0,
    };

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

    /// The same options with `seed` set.
    ///
    /// ```
    /// use autoretry::HostOptions;
    /// assert_eq!(HostOptions::DEFAULT.with_seed(42).seed, 42);
    /// ```
    pub const fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }
}

impl Default for HostOptions {
    /// [`HostOptions::DEFAULT`].
    fn default() -> Self {
        HostOptions::DEFAULT
    }
}
