//! Saving and restoring a [`Machine`]: [`Snapshot`], [`Machine::snapshot`]
//! and [`Machine::restore`], so that a device keeps an open chain across
//! deep sleep and a server can move a session to another process.

use core::fmt;

use crate::classify::Classifier;
use crate::machine::{Machine, Made, Marked, Phase};
use crate::output::FallbackReason;
use crate::settings::{JitterPct, Profile, RetrySettings};
use crate::stream::Stream;

/// A saved [`Machine`]: its whole state, versioned and checked. Made by
/// [`Machine::snapshot`], turned back into a machine by
/// [`Machine::restore`].
///
/// A snapshot is the machine's whole state and nothing else, as plain
/// integers (26 to 40 bytes in postcard for usual machines, at most
/// [`Snapshot::MAX_POSTCARD_LEN`]; `no_std`, no allocation):
///
/// | part | fields |
/// |---|---|
/// | the format | `version` ([`Snapshot::VERSION`]) and `check`, a 32-bit FNV-1a digest of every other field |
/// | the settings in force | every field of [`RetrySettings`] (profile and classifier as codes) |
/// | the host options | `context_window`, `credential_store` (the seed lives on as the generator's state) |
/// | the jitter generator | its state now, so the restored machine draws what this one would draw next |
/// | the chain | where it is (idle, running, in a backoff, awaiting the usage-limit answer), the attempt, the last timer id (the pending one in a backoff) |
/// | the usage-limit answer | the figures fixed at the `agent_end` and a 32-bit digest of the marked text (not the text) |
/// | the watched stream (spec §12.2) | its start, last event and the due time of its pending watch timer (whose id is the last timer id), or the silence of a declared stall |
///
/// It holds no clock reading of its own: the stream's times are the
/// host's `nowMs` as the inputs gave them. A pending watch timer is
/// re-armed like a backoff (for the time left until its due time, on the
/// host's monotonic clock); a host whose monotonic clock does not survive
/// the move fires it at once, which re-arms it for what is left or
/// declares the stall. In a backoff, the host keeps
/// its own deadline next to the snapshot (a wall-clock or RTC time: a
/// monotonic instant does not survive a reboot) and, after restoring,
/// starts a timer for the time left (none when it has passed) and feeds
/// [`Input::TimerFired`](crate::Input::TimerFired) with
/// [`Machine::pending_timer`] when it fires; the async drivers do this
/// with `rearm` (`host::driver::Driver::rearm`). Awaiting the usage-limit
/// answer, the host keeps the marked error text too: the answer must carry
/// it.
///
/// With feature `serde` a snapshot is `Serialize` and `Deserialize`, in any
/// serde format (postcard on a firmware, JSON on a server). Decoding checks
/// only the shape; [`Machine::restore`] checks the rest, so a damaged,
/// foreign or other-version snapshot is a [`SnapshotError`], never a panic
/// and never a machine in a state it could not reach:
///
/// ```
/// use autoretry::{AssistantMessage, Input, Machine, Output, SnapshotError};
///
/// let mut machine = Machine::default();
/// let failed = Input::AgentEnd { message: AssistantMessage::error("503"), now_ms: None };
/// let _ = machine.handle(failed).unwrap(); // in a 2 s backoff
///
/// let snapshot = machine.snapshot(); // ... deep sleep ...
/// let mut restored = Machine::restore(snapshot).unwrap();
/// assert_eq!(restored, machine);
/// let timer = restored.pending_timer().unwrap(); // re-armed by the host
/// assert_eq!(restored.handle(Input::TimerFired { timer }).unwrap()[..], [Output::ContinueAgent]);
/// ```
///
/// In bytes, with postcard (`no_std`, into a caller's buffer):
///
/// ```
/// # #[cfg(feature = "serde")] {
/// use autoretry::{Machine, Snapshot, SnapshotError};
/// let mut buf = [0u8; Snapshot::MAX_POSTCARD_LEN];
/// let bytes = postcard::to_slice(&Machine::default().snapshot(), &mut buf).unwrap();
/// let snapshot: Snapshot = postcard::from_bytes(bytes).unwrap();
/// assert_eq!(Machine::restore(snapshot), Ok(Machine::default()));
///
/// // One byte changed: the digest says so.
/// bytes[bytes.len() / 2] ^= 1;
/// let damaged: Result<Snapshot, _> = postcard::from_bytes(bytes);
/// assert!(damaged.map_or(true, |s| Machine::restore(s).is_err()));
/// # }
/// ```
///
/// ```
/// use autoretry::{Machine, Snapshot};
/// assert_eq!(Machine::default().snapshot().version(), Snapshot::VERSION);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Snapshot {
    version: u16,
    check: u32,
    profile: u8,
    enabled: bool,
    max_retries: u32,
    base_delay_ms: u64,
    max_delay_ms: u64,
    backoff_cap_ms: u64,
    jitter_pct: u8,
    honor_hints: bool,
    classifier: u8,
    context_window: u64,
    credential_store: bool,
    jitter_state: u64,
    timer: u64,
    phase: u8,
    attempt: u32,
    marked_delay_ms: u64,
    marked_ceiling_ms: u64,
    marked_max_attempts: u32,
    marked_text_digest: u32,
    // Version 2 (spec §11); absent from a version 1 snapshot (zero).
    #[cfg_attr(feature = "serde", serde(default))]
    model_fallback: bool,
    #[cfg_attr(feature = "serde", serde(default))]
    max_usage_wait_ms: u64,
    #[cfg_attr(feature = "serde", serde(default))]
    max_total_delay_ms: u64,
    #[cfg_attr(feature = "serde", serde(default))]
    total_ms: u64,
    #[cfg_attr(feature = "serde", serde(default))]
    resume: bool,
    #[cfg_attr(feature = "serde", serde(default))]
    marked_total_limit_ms: u64,
    /// The decision's flags: 1 may ask for a model, 2 asked, 4 usage-reset
    /// wait applies, 8 continuation, 16 the attempt decided is 2^32.
    #[cfg_attr(feature = "serde", serde(default))]
    marked_flags: u8,
    /// The reason asked for: 0 exhausted, 1 throttled, 2 wait too long, 3
    /// total wait.
    #[cfg_attr(feature = "serde", serde(default))]
    marked_reason: u8,
    // Version 3 (spec §12); absent from versions 1 and 2 (zero).
    #[cfg_attr(feature = "serde", serde(default))]
    first_event_timeout_ms: u64,
    #[cfg_attr(feature = "serde", serde(default))]
    idle_timeout_ms: u64,
    #[cfg_attr(feature = "serde", serde(default))]
    retry_empty: bool,
    /// Whose text the awaited decision shows: 0 the message's, 1 the empty
    /// answer's, 2 the stall's (with `marked_silence_ms`).
    #[cfg_attr(feature = "serde", serde(default))]
    marked_made: u8,
    #[cfg_attr(feature = "serde", serde(default))]
    marked_silence_ms: u64,
    /// The stream: 0 none, 1 watched, 2 stalled (with `stall_silence_ms`).
    #[cfg_attr(feature = "serde", serde(default))]
    stream: u8,
    #[cfg_attr(feature = "serde", serde(default))]
    stream_start_ms: u64,
    #[cfg_attr(feature = "serde", serde(default))]
    stream_last_ms: u64,
    #[cfg_attr(feature = "serde", serde(default))]
    stream_due_ms: u64,
    /// The watched stream's flags: 1 a progress event came, 2 a watch
    /// timer is pending.
    #[cfg_attr(feature = "serde", serde(default))]
    stream_flags: u8,
    #[cfg_attr(feature = "serde", serde(default))]
    stall_silence_ms: u64,
}

/// Why [`Machine::restore`] refused a snapshot. Nothing was made.
///
/// ```
/// use autoretry::{Machine, SnapshotError};
/// let err = Machine::restore(Machine::default().snapshot().with_version(9)).unwrap_err();
/// assert_eq!(err, SnapshotError::Version { found: 9 });
/// assert_eq!(err.to_string(), "snapshot format version 9, this build reads versions 1 to 3");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum SnapshotError {
    /// The snapshot is of another format version.
    Version {
        /// Its version.
        found: u16,
    },
    /// The digest does not match the fields: damaged, edited or not a
    /// snapshot at all.
    Check,
    /// A field holds a value no machine has (named, with what it must be).
    Field {
        /// The field.
        field: &'static str,
        /// What it must be.
        expected: &'static str,
    },
    /// The profile or classifier needs feature `extended`, which this
    /// build lacks.
    NeedsExtended,
    /// The fields disagree with each other: no machine reaches that state.
    Inconsistent(&'static str),
}

impl fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            SnapshotError::Version { found } => write!(
                f,
                "snapshot format version {found}, this build reads versions 1 to {}",
                Snapshot::VERSION
            ),
            SnapshotError::Check => f.write_str(
                "snapshot check digest does not match its fields (damaged, edited or not a snapshot)",
            ),
            SnapshotError::Field { field, expected } => {
                write!(f, "snapshot field {field}: expected {expected}")
            }
            SnapshotError::NeedsExtended => f.write_str(
                "snapshot uses the extended classifier or the modern profile: this build lacks feature `extended`",
            ),
            SnapshotError::Inconsistent(why) => write!(f, "snapshot is inconsistent: {why}"),
        }
    }
}

impl core::error::Error for SnapshotError {}

/// What the snapshot's `classifier` code must be.
const CLASSIFIER_CODES: &str = "0 (classic), 1 (extended) or 2 (curated)";

const PHASES: [Phase; 5] = [
    Phase::Idle,
    Phase::Running,
    Phase::Backoff,
    Phase::AwaitingUsageLimit,
    Phase::AwaitingModelSwitch,
];

/// The decision flags of `marked_flags`.
const MAY_ASK: u8 = 1;
const ASKED: u8 = 2;
const USAGE_RESET: u8 = 4;
const CONTINUATION: u8 = 8;
const BEYOND: u8 = 16;

/// The stream flags of `stream_flags`.
const HAS_LAST: u8 = 1;
const PENDING: u8 = 2;

/// A snapshot in format version 1 (before spec §11), as a build of that
/// version wrote it, for formats that are not self-describing.
///
/// In JSON (and any format with field names) a version 1 snapshot decodes
/// as a [`Snapshot`] directly: the fields version 2 added are absent and
/// read as zero. Postcard and other positional formats write no field
/// names, so bytes of version 1 end where version 2 goes on: decode them as
/// a `SnapshotV1` and convert it, then restore as usual (its digest is
/// checked as version 1's).
///
/// ```
/// # #[cfg(feature = "serde")] {
/// use autoretry::{Machine, Snapshot, SnapshotV1};
/// // A machine in its first backoff, saved by a version 1 build.
/// let old: &[u8] = &[1, 178, 190, 132, 158, 13, 0, 1, 5, 208, 15, 0, 0, 0, 0, 0, 192, 154, 12, 0, 9, 1, 2, 1, 0, 0, 0, 0];
/// let v1: SnapshotV1 = postcard::from_bytes(old).unwrap();
/// let machine = Machine::restore(Snapshot::from(v1)).unwrap();
/// assert_eq!((machine.retry_attempt(), machine.settings().max_retries), (1, 5));
/// assert!(machine.pending_timer().is_some());
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SnapshotV1 {
    version: u16,
    check: u32,
    profile: u8,
    enabled: bool,
    max_retries: u32,
    base_delay_ms: u64,
    max_delay_ms: u64,
    backoff_cap_ms: u64,
    jitter_pct: u8,
    honor_hints: bool,
    classifier: u8,
    context_window: u64,
    credential_store: bool,
    jitter_state: u64,
    timer: u64,
    phase: u8,
    attempt: u32,
    marked_delay_ms: u64,
    marked_ceiling_ms: u64,
    marked_max_attempts: u32,
    marked_text_digest: u32,
}

/// The same fields, with those of version 2 zero; the version and digest
/// are kept as they were, so [`Machine::restore`] checks them as version
/// 1's.
impl From<SnapshotV1> for Snapshot {
    fn from(v1: SnapshotV1) -> Self {
        Snapshot {
            version: v1.version,
            check: v1.check,
            profile: v1.profile,
            enabled: v1.enabled,
            max_retries: v1.max_retries,
            base_delay_ms: v1.base_delay_ms,
            max_delay_ms: v1.max_delay_ms,
            backoff_cap_ms: v1.backoff_cap_ms,
            jitter_pct: v1.jitter_pct,
            honor_hints: v1.honor_hints,
            classifier: v1.classifier,
            context_window: v1.context_window,
            credential_store: v1.credential_store,
            jitter_state: v1.jitter_state,
            timer: v1.timer,
            phase: v1.phase,
            attempt: v1.attempt,
            marked_delay_ms: v1.marked_delay_ms,
            marked_ceiling_ms: v1.marked_ceiling_ms,
            marked_max_attempts: v1.marked_max_attempts,
            marked_text_digest: v1.marked_text_digest,
            model_fallback: false,
            max_usage_wait_ms: 0,
            max_total_delay_ms: 0,
            total_ms: 0,
            resume: false,
            marked_total_limit_ms: 0,
            marked_flags: 0,
            marked_reason: 0,
            ..SnapshotV2::V3_ZERO
        }
    }
}

/// A snapshot in format version 2 (spec §11, before §12), as a build of
/// that version wrote it, for formats that are not self-describing: as
/// [`SnapshotV1`] is for version 1. In JSON a version 2 snapshot decodes
/// as a [`Snapshot`] directly (the fields of version 3 read as zero).
///
/// ```
/// # #[cfg(feature = "serde")] {
/// use autoretry::{Machine, Snapshot, SnapshotV2};
/// // A default machine, saved by a version 2 build.
/// let old: &[u8] = &[2, 226, 195, 235, 144, 15, 0, 1, 3, 208, 15, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
/// let v2: SnapshotV2 = postcard::from_bytes(old).unwrap();
/// assert_eq!(Machine::restore(Snapshot::from(v2)), Ok(Machine::default()));
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SnapshotV2 {
    version: u16,
    check: u32,
    profile: u8,
    enabled: bool,
    max_retries: u32,
    base_delay_ms: u64,
    max_delay_ms: u64,
    backoff_cap_ms: u64,
    jitter_pct: u8,
    honor_hints: bool,
    classifier: u8,
    context_window: u64,
    credential_store: bool,
    jitter_state: u64,
    timer: u64,
    phase: u8,
    attempt: u32,
    marked_delay_ms: u64,
    marked_ceiling_ms: u64,
    marked_max_attempts: u32,
    marked_text_digest: u32,
    model_fallback: bool,
    max_usage_wait_ms: u64,
    max_total_delay_ms: u64,
    total_ms: u64,
    resume: bool,
    marked_total_limit_ms: u64,
    marked_flags: u8,
    marked_reason: u8,
}

impl SnapshotV2 {
    /// A snapshot whose fields of version 3 are zero (the rest too).
    const V3_ZERO: Snapshot = Snapshot {
        version: 0,
        check: 0,
        profile: 0,
        enabled: false,
        max_retries: 0,
        base_delay_ms: 0,
        max_delay_ms: 0,
        backoff_cap_ms: 0,
        jitter_pct: 0,
        honor_hints: false,
        classifier: 0,
        context_window: 0,
        credential_store: false,
        jitter_state: 0,
        timer: 0,
        phase: 0,
        attempt: 0,
        marked_delay_ms: 0,
        marked_ceiling_ms: 0,
        marked_max_attempts: 0,
        marked_text_digest: 0,
        model_fallback: false,
        max_usage_wait_ms: 0,
        max_total_delay_ms: 0,
        total_ms: 0,
        resume: false,
        marked_total_limit_ms: 0,
        marked_flags: 0,
        marked_reason: 0,
        first_event_timeout_ms: 0,
        idle_timeout_ms: 0,
        retry_empty: false,
        marked_made: 0,
        marked_silence_ms: 0,
        stream: 0,
        stream_start_ms: 0,
        stream_last_ms: 0,
        stream_due_ms: 0,
        stream_flags: 0,
        stall_silence_ms: 0,
    };
}

/// The same fields, with those of version 3 zero; the version and digest
/// are kept as they were, so [`Machine::restore`] checks them as version
/// 2's.
impl From<SnapshotV2> for Snapshot {
    fn from(v2: SnapshotV2) -> Self {
        Snapshot {
            version: v2.version,
            check: v2.check,
            profile: v2.profile,
            enabled: v2.enabled,
            max_retries: v2.max_retries,
            base_delay_ms: v2.base_delay_ms,
            max_delay_ms: v2.max_delay_ms,
            backoff_cap_ms: v2.backoff_cap_ms,
            jitter_pct: v2.jitter_pct,
            honor_hints: v2.honor_hints,
            classifier: v2.classifier,
            context_window: v2.context_window,
            credential_store: v2.credential_store,
            jitter_state: v2.jitter_state,
            timer: v2.timer,
            phase: v2.phase,
            attempt: v2.attempt,
            marked_delay_ms: v2.marked_delay_ms,
            marked_ceiling_ms: v2.marked_ceiling_ms,
            marked_max_attempts: v2.marked_max_attempts,
            marked_text_digest: v2.marked_text_digest,
            model_fallback: v2.model_fallback,
            max_usage_wait_ms: v2.max_usage_wait_ms,
            max_total_delay_ms: v2.max_total_delay_ms,
            total_ms: v2.total_ms,
            resume: v2.resume,
            marked_total_limit_ms: v2.marked_total_limit_ms,
            marked_flags: v2.marked_flags,
            marked_reason: v2.marked_reason,
            ..SnapshotV2::V3_ZERO
        }
    }
}

impl Snapshot {
    /// The format version this build writes. It reads this one, version 2
    /// (before spec §12) and version 1 (before spec §11), whose later
    /// fields are absent (zero).
    pub const VERSION: u16 = 3;

    /// The most bytes a snapshot takes in postcard (varints at their
    /// longest): a buffer for `postcard::to_slice`.
    pub const MAX_POSTCARD_LEN: usize = 3
        + 5
        + 1
        + 1
        + 5
        + 3 * 10
        + 1
        + 1
        + 1
        + 10
        + 1
        + 2 * 10
        + 1
        + 5
        + 2 * 10
        + 2 * 5
        + 1
        + 4 * 10
        + 1
        + 1
        + 1
        // Version 3: the two limits, `retryEmpty`, the decision's text and
        // silence, the stream's kind, three times and flags, the stall.
        + 2 * 10
        + 1
        + 1
        + 10
        + 1
        + 3 * 10
        + 1
        + 10;

    /// The snapshot's format version.
    pub const fn version(&self) -> u16 {
        self.version
    }

    /// The same snapshot marked with another format version (its digest
    /// made again): what an older or newer build would have written, for
    /// tests of a host's upgrade path.
    pub fn with_version(mut self, version: u16) -> Self {
        self.version = version;
        self.check = self.digest();
        self
    }

    /// FNV-1a over every field but `check`, little-endian.
    fn digest(&self) -> u32 {
        let mut hash = 0x811c_9dc5_u32;
        let mut feed = |bytes: &[u8]| {
            for &byte in bytes {
                hash = (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193);
            }
        };
        feed(&self.version.to_le_bytes());
        feed(&[self.profile, u8::from(self.enabled)]);
        feed(&self.max_retries.to_le_bytes());
        feed(&self.base_delay_ms.to_le_bytes());
        feed(&self.max_delay_ms.to_le_bytes());
        feed(&self.backoff_cap_ms.to_le_bytes());
        feed(&[self.jitter_pct, u8::from(self.honor_hints), self.classifier]);
        feed(&self.context_window.to_le_bytes());
        feed(&[u8::from(self.credential_store)]);
        feed(&self.jitter_state.to_le_bytes());
        feed(&self.timer.to_le_bytes());
        feed(&[self.phase]);
        feed(&self.attempt.to_le_bytes());
        feed(&self.marked_delay_ms.to_le_bytes());
        feed(&self.marked_ceiling_ms.to_le_bytes());
        feed(&self.marked_max_attempts.to_le_bytes());
        feed(&self.marked_text_digest.to_le_bytes());
        if self.version >= 2 {
            feed(&[u8::from(self.model_fallback)]);
            feed(&self.max_usage_wait_ms.to_le_bytes());
            feed(&self.max_total_delay_ms.to_le_bytes());
            feed(&self.total_ms.to_le_bytes());
            feed(&[u8::from(self.resume)]);
            feed(&self.marked_total_limit_ms.to_le_bytes());
            feed(&[self.marked_flags, self.marked_reason]);
        }
        if self.version >= 3 {
            feed(&self.first_event_timeout_ms.to_le_bytes());
            feed(&self.idle_timeout_ms.to_le_bytes());
            feed(&[u8::from(self.retry_empty), self.marked_made]);
            feed(&self.marked_silence_ms.to_le_bytes());
            feed(&[self.stream]);
            feed(&self.stream_start_ms.to_le_bytes());
            feed(&self.stream_last_ms.to_le_bytes());
            feed(&self.stream_due_ms.to_le_bytes());
            feed(&[self.stream_flags]);
            feed(&self.stall_silence_ms.to_le_bytes());
        }
        hash
    }
}

impl Machine {
    /// The machine's whole state as a [`Snapshot`] (see
    /// [`Snapshot`] for what it holds and how a host
    /// re-arms its timer). Take it between inputs, after carrying out the
    /// outputs of the last one.
    ///
    /// ```
    /// use autoretry::{HostOptions, Machine, RetrySettings};
    /// let machine = Machine::new(RetrySettings::DEFAULT.with_max_retries(7), HostOptions::DEFAULT.with_seed(3));
    /// assert_eq!(Machine::restore(machine.snapshot()), Ok(machine));
    /// ```
    pub fn snapshot(&self) -> Snapshot {
        let s = self.settings;
        let mut snapshot = Snapshot {
            version: Snapshot::VERSION,
            check: 0,
            profile: match s.profile {
                Profile::Classic => 0,
                #[cfg(feature = "extended")]
                Profile::Modern => 1,
            },
            enabled: s.enabled,
            max_retries: s.max_retries,
            base_delay_ms: s.base_delay_ms,
            max_delay_ms: s.max_delay_ms,
            backoff_cap_ms: s.backoff_cap_ms,
            jitter_pct: s.jitter_pct.get(),
            honor_hints: s.honor_hints,
            classifier: match s.classifier {
                Classifier::Classic => 0,
                #[cfg(feature = "extended")]
                Classifier::Extended => 1,
                #[cfg(feature = "curated")]
                Classifier::Curated => 2,
            },
            context_window: self.context_window,
            credential_store: self.credential_store,
            jitter_state: self.jitter,
            timer: self.timer,
            phase: match self.phase {
                Phase::Idle => 0,
                Phase::Running => 1,
                Phase::Backoff => 2,
                Phase::AwaitingUsageLimit => 3,
                Phase::AwaitingModelSwitch => 4,
            },
            attempt: self.attempt,
            marked_delay_ms: self.marked.delay_ms,
            marked_ceiling_ms: self.marked.exceeded_ceiling_ms,
            marked_max_attempts: self.marked.max_attempts,
            marked_text_digest: self.marked.text_fingerprint,
            model_fallback: s.model_fallback,
            max_usage_wait_ms: s.max_usage_wait_ms,
            max_total_delay_ms: s.max_total_delay_ms,
            total_ms: self.total_ms,
            resume: self.resume,
            marked_total_limit_ms: self.marked.max_total_delay_ms,
            marked_flags: [
                (self.marked.may_ask, MAY_ASK),
                (self.marked.asked, ASKED),
                (self.marked.usage_reset, USAGE_RESET),
                (self.marked.continuation, CONTINUATION),
                (self.marked.beyond, BEYOND),
            ]
            .iter()
            .filter(|(on, _)| *on)
            .fold(0, |flags, (_, bit)| flags | bit),
            marked_reason: match self.marked.reason {
                FallbackReason::Exhausted => 0,
                FallbackReason::Throttled => 1,
                FallbackReason::WaitTooLong => 2,
                FallbackReason::TotalWait => 3,
            },
            first_event_timeout_ms: s.first_event_timeout_ms,
            idle_timeout_ms: s.idle_timeout_ms,
            retry_empty: s.retry_empty,
            marked_made: match self.marked.made {
                Made::Host => 0,
                Made::Empty => 1,
                Made::Stalled => 2,
            },
            marked_silence_ms: self.marked.silence_ms,
            ..SnapshotV2::V3_ZERO
        };
        match self.stream {
            Stream::None => {}
            Stream::Watched {
                start_ms,
                last_ms,
                due_ms,
                has_last,
                pending,
            } => {
                snapshot.stream = 1;
                snapshot.stream_start_ms = start_ms;
                snapshot.stream_last_ms = last_ms;
                snapshot.stream_due_ms = due_ms;
                snapshot.stream_flags =
                    if has_last { HAS_LAST } else { 0 } | if pending { PENDING } else { 0 };
            }
            Stream::Stalled { silence_ms } => {
                snapshot.stream = 2;
                snapshot.stall_silence_ms = silence_ms;
            }
        }
        snapshot.check = snapshot.digest();
        snapshot
    }

    /// The machine a [`Snapshot`] saved, exactly: the same state, the same
    /// next outputs for the same inputs. A snapshot of another version, one
    /// whose digest does not match, or one whose fields no machine could
    /// hold is refused with a [`SnapshotError`] that says which. Beyond each
    /// field's own range, the fields must agree as a live machine's do: an
    /// attempt only in an open chain; a backoff or an awaited answer only
    /// from attempt 1; a continuation's resume only in a backoff; a timer
    /// id for every retry started (the last id at least the attempt, or the
    /// attempt − 1 while its start awaits an answer); decision figures only
    /// while an answer is awaited, and then as its decision fixed them: a
    /// total of 0 at attempt 1; never a continuation allowed to ask for
    /// another model; the flag of the attempt past u32::MAX only at
    /// u32::MAX; a usage-reset wait only over a kept ceiling, and a kept
    /// ceiling only under a kept delay that exceeds it (but for a total
    /// checked after a switched credential, with a wait of 0). Awaiting
    /// the usage-limit answer, the decision passed the max check (the
    /// attempt within the kept `maxAttempts`, a timer id left for the
    /// start; see [`Machine::pending_timer`]) and asked for no model.
    /// Awaiting the model-switch answer, it asked once, for the reason
    /// its figures give: past the maximum exactly when `"exhausted"`, no
    /// wait kept for `"exhausted"` or `"throttled"`, the kept delay over
    /// the kept ceiling for `"wait_too_long"`, and the total plus the kept
    /// delay over the kept limit for `"total_wait"` (spec §11.6, exactly).
    ///
    /// ```
    /// use autoretry::{Machine, SnapshotError};
    /// let old = Machine::default().snapshot().with_version(0);
    /// assert_eq!(Machine::restore(old), Err(SnapshotError::Version { found: 0 }));
    /// ```
    pub fn restore(snapshot: Snapshot) -> Result<Machine, SnapshotError> {
        let s = snapshot;
        if !(1..=Snapshot::VERSION).contains(&s.version) {
            return Err(SnapshotError::Version { found: s.version });
        }
        if s.check != s.digest() {
            return Err(SnapshotError::Check);
        }
        let version_2 = s.model_fallback
            || s.max_usage_wait_ms != 0
            || s.max_total_delay_ms != 0
            || s.total_ms != 0
            || s.resume
            || s.marked_total_limit_ms != 0
            || s.marked_flags != 0
            || s.marked_reason != 0;
        if s.version == 1 && version_2 {
            return Err(SnapshotError::Inconsistent(
                "a version 1 snapshot with fields of version 2",
            ));
        }
        let version_3 = s.first_event_timeout_ms != 0
            || s.idle_timeout_ms != 0
            || s.retry_empty
            || s.marked_made != 0
            || s.marked_silence_ms != 0
            || s.stream != 0
            || s.stream_start_ms != 0
            || s.stream_last_ms != 0
            || s.stream_due_ms != 0
            || s.stream_flags != 0
            || s.stall_silence_ms != 0;
        if s.version < 3 && version_3 {
            return Err(SnapshotError::Inconsistent(
                "a snapshot before version 3 with fields of version 3",
            ));
        }
        if s.marked_flags & !(MAY_ASK | ASKED | USAGE_RESET | CONTINUATION | BEYOND) != 0 {
            return Err(field("marked_flags", "bits 1, 2, 4, 8 and 16 only"));
        }
        let reason = *FallbackReason::ALL
            .get(usize::from(s.marked_reason))
            .ok_or(field("marked_reason", "0 to 3"))?;
        let profile = match s.profile {
            0 => Profile::Classic,
            #[cfg(feature = "extended")]
            1 => Profile::Modern,
            #[cfg(not(feature = "extended"))]
            1 => return Err(SnapshotError::NeedsExtended),
            _ => return Err(field("profile", "0 (classic) or 1 (modern)")),
        };
        let classifier = match s.classifier {
            0 => Classifier::Classic,
            #[cfg(feature = "extended")]
            1 => Classifier::Extended,
            #[cfg(not(feature = "extended"))]
            1 => return Err(SnapshotError::NeedsExtended),
            #[cfg(feature = "curated")]
            2 => Classifier::Curated,
            #[cfg(not(feature = "curated"))]
            2 => {
                return Err(field(
                    "classifier",
                    "0 (classic) or 1 (extended): 2 (curated) needs feature `curated`",
                ))
            }
            _ => return Err(field("classifier", CLASSIFIER_CODES)),
        };
        let jitter_pct =
            JitterPct::new(s.jitter_pct).ok_or(field("jitter_pct", "a percentage, 0 to 100"))?;
        let phase = *PHASES
            .get(usize::from(s.phase))
            .ok_or(field("phase", "0 to 4"))?;
        let made = match s.marked_made {
            0 => Made::Host,
            1 => Made::Empty,
            2 => Made::Stalled,
            _ => return Err(field("marked_made", "0 to 2")),
        };
        let stream = restore_stream(&s, phase)?;
        let marked = Marked {
            delay_ms: s.marked_delay_ms,
            exceeded_ceiling_ms: s.marked_ceiling_ms,
            max_attempts: s.marked_max_attempts,
            text_fingerprint: s.marked_text_digest,
            max_total_delay_ms: s.marked_total_limit_ms,
            reason,
            may_ask: s.marked_flags & MAY_ASK != 0,
            asked: s.marked_flags & ASKED != 0,
            usage_reset: s.marked_flags & USAGE_RESET != 0,
            continuation: s.marked_flags & CONTINUATION != 0,
            beyond: s.marked_flags & BEYOND != 0,
            made,
            silence_ms: s.marked_silence_ms,
        };
        // A stall's silence is at least its limit, which is at least 1.
        if (made == Made::Stalled) != (marked.silence_ms > 0) {
            return Err(SnapshotError::Inconsistent(
                "a decision's stall silence without a stall, or a stall without one",
            ));
        }
        match phase {
            Phase::Idle if s.attempt != 0 => {
                return Err(SnapshotError::Inconsistent("an attempt with no chain open"))
            }
            Phase::Backoff | Phase::AwaitingUsageLimit | Phase::AwaitingModelSwitch
                if s.attempt == 0 =>
            {
                return Err(SnapshotError::Inconsistent(
                    "a backoff or an awaited answer at attempt 0",
                ))
            }
            Phase::Idle | Phase::Running | Phase::Backoff if marked != Marked::NONE => {
                return Err(SnapshotError::Inconsistent(
                    "decision figures with no answer awaited",
                ))
            }
            Phase::AwaitingUsageLimit if marked.asked || reason != FallbackReason::Exhausted => {
                return Err(SnapshotError::Inconsistent(
                    "a model-switch question before the usage-limit answer",
                ))
            }
            Phase::AwaitingModelSwitch if !marked.asked || !marked.may_ask => {
                return Err(SnapshotError::Inconsistent(
                    "a model-switch answer awaited that was never asked",
                ))
            }
            // From here on, an answer is awaited: the decision's own flags
            // agree with each other and with the attempt.
            _ if marked.may_ask && marked.continuation => {
                return Err(SnapshotError::Inconsistent(
                    "a continuation allowed to ask for another model (it never may)",
                ))
            }
            _ if marked.beyond && s.attempt != u32::MAX => {
                return Err(SnapshotError::Inconsistent(
                    "the attempt past u32::MAX flagged at an attempt below u32::MAX",
                ))
            }
            // Every retry started has its own timer id: the attempt being
            // decided had attempt − 1 starts before it (u32::MAX past it).
            Phase::AwaitingUsageLimit | Phase::AwaitingModelSwitch
                if s.timer < u64::from(s.attempt) - u64::from(!marked.beyond) =>
            {
                return Err(SnapshotError::Inconsistent(
                    "an awaited answer for an attempt above the last timer id plus one \
                     (every retry started has its own id)",
                ))
            }
            // A new chain's decision (attempt 1) restarted the total, and
            // nothing was added before its answer.
            Phase::AwaitingUsageLimit | Phase::AwaitingModelSwitch
                if s.attempt == 1 && s.total_ms != 0 =>
            {
                return Err(SnapshotError::Inconsistent(
                    "an awaited answer at attempt 1 with a total of earlier waits",
                ))
            }
            // Past the maximum (or with no timer id left), the max check
            // asks; within it, it passed and only later reasons ask.
            Phase::AwaitingModelSwitch
                if (reason == FallbackReason::Exhausted)
                    != (marked.beyond
                        || s.attempt > marked.max_attempts
                        || s.timer == u64::MAX) =>
            {
                return Err(SnapshotError::Inconsistent(
                    "a model-switch question whose reason the max check does not give",
                ))
            }
            // The max check and the throttle come before the wait is
            // computed: their questions keep no wait.
            Phase::AwaitingModelSwitch
                if matches!(
                    reason,
                    FallbackReason::Exhausted | FallbackReason::Throttled
                ) && (marked.delay_ms != 0
                    || marked.exceeded_ceiling_ms != 0
                    || marked.usage_reset) =>
            {
                return Err(SnapshotError::Inconsistent(
                    "an exhausted or throttled question with a wait kept",
                ))
            }
            // A total-wait question over a kept ceiling comes only from a
            // switched credential, which checks the total with a wait of 0.
            Phase::AwaitingModelSwitch
                if reason == FallbackReason::TotalWait
                    && marked.exceeded_ceiling_ms != 0
                    && marked.delay_ms != 0 =>
            {
                return Err(SnapshotError::Inconsistent(
                    "a total-wait question over a kept ceiling with a wait other than 0",
                ))
            }
            Phase::AwaitingUsageLimit if marked.beyond => {
                return Err(SnapshotError::Inconsistent(
                    "a usage-limit answer awaited for a retry past every maximum",
                ))
            }
            // The policy reason the host is asked about was found with the
            // kept figures: over the ceiling, or over the total.
            Phase::AwaitingModelSwitch
                if reason == FallbackReason::WaitTooLong
                    && (marked.exceeded_ceiling_ms == 0
                        || marked.delay_ms <= marked.exceeded_ceiling_ms) =>
            {
                return Err(SnapshotError::Inconsistent(
                    "a wait-too-long question whose kept delay does not exceed its kept ceiling",
                ))
            }
            Phase::AwaitingModelSwitch
                if reason == FallbackReason::TotalWait
                    && (marked.max_total_delay_ms == 0
                        || s.total_ms
                            .checked_add(marked.delay_ms)
                            .is_some_and(|total| total <= marked.max_total_delay_ms)) =>
            {
                return Err(SnapshotError::Inconsistent(
                    "a total-wait question whose kept total does not exceed its kept limit",
                ))
            }
            _ if marked.usage_reset && marked.exceeded_ceiling_ms == 0 => {
                return Err(SnapshotError::Inconsistent(
                    "a usage-reset wait with no ceiling exceeded",
                ))
            }
            _ if s.resume && phase != Phase::Backoff => {
                return Err(SnapshotError::Inconsistent(
                    "a continuation with no backoff pending",
                ))
            }
            // Every start issued a timer id: attempt n has had n sleeps (n − 1
            // while its own start awaits the usage-limit answer).
            Phase::Running | Phase::Backoff if u64::from(s.attempt) > s.timer => {
                return Err(SnapshotError::Inconsistent(
                    "an attempt above the last timer id (every retry started has its own id)",
                ))
            }
            // The decision that awaits the answer passed the max check with
            // a timer id left for its sleep (`Machine::next_attempt`).
            Phase::AwaitingUsageLimit if s.timer == u64::MAX => {
                return Err(SnapshotError::Inconsistent(
                    "a usage-limit answer awaited with no timer id left for its start",
                ))
            }
            Phase::AwaitingUsageLimit if s.attempt > marked.max_attempts => {
                return Err(SnapshotError::Inconsistent(
                    "a usage-limit answer awaited for an attempt above its kept maxAttempts",
                ))
            }
            Phase::AwaitingUsageLimit
                if marked.exceeded_ceiling_ms > 0
                    && marked.delay_ms <= marked.exceeded_ceiling_ms =>
            {
                return Err(SnapshotError::Inconsistent(
                    "a kept wait ceiling that the kept delay does not exceed",
                ))
            }
            _ => {}
        }
        Ok(Machine {
            settings: RetrySettings {
                profile,
                enabled: s.enabled,
                max_retries: s.max_retries,
                base_delay_ms: s.base_delay_ms,
                max_delay_ms: s.max_delay_ms,
                backoff_cap_ms: s.backoff_cap_ms,
                jitter_pct,
                honor_hints: s.honor_hints,
                classifier,
                model_fallback: s.model_fallback,
                max_usage_wait_ms: s.max_usage_wait_ms,
                max_total_delay_ms: s.max_total_delay_ms,
                first_event_timeout_ms: s.first_event_timeout_ms,
                idle_timeout_ms: s.idle_timeout_ms,
                retry_empty: s.retry_empty,
            },
            context_window: s.context_window,
            jitter: s.jitter_state,
            timer: s.timer,
            total_ms: s.total_ms,
            marked,
            attempt: s.attempt,
            phase,
            credential_store: s.credential_store,
            resume: s.resume,
            stream,
        })
    }
}

/// The watched stream of a snapshot, checked (spec §12.2): a stream is
/// watched or a stall kept only while the agent may run (no backoff, no
/// awaited answer); a pending watch is the last timer id issued; the times
/// that do not apply are 0; a stall's silence is at least 1 (its limit).
fn restore_stream(s: &Snapshot, phase: Phase) -> Result<Stream, SnapshotError> {
    if s.stream_flags & !(HAS_LAST | PENDING) != 0 {
        return Err(field("stream_flags", "bits 1 and 2 only"));
    }
    let has_last = s.stream_flags & HAS_LAST != 0;
    let pending = s.stream_flags & PENDING != 0;
    let stream = match s.stream {
        0 => Stream::None,
        1 => Stream::Watched {
            start_ms: s.stream_start_ms,
            last_ms: s.stream_last_ms,
            due_ms: s.stream_due_ms,
            has_last,
            pending,
        },
        2 => Stream::Stalled {
            silence_ms: s.stall_silence_ms,
        },
        _ => return Err(field("stream", "0 (none), 1 (watched) or 2 (stalled)")),
    };
    let agent_may_run = matches!(phase, Phase::Idle | Phase::Running);
    let why = match stream {
        Stream::None | Stream::Stalled { .. } if s.stream_flags != 0 => {
            "stream flags with no stream watched"
        }
        Stream::None | Stream::Stalled { .. }
            if s.stream_start_ms != 0 || s.stream_last_ms != 0 || s.stream_due_ms != 0 =>
        {
            "stream times with no stream watched"
        }
        Stream::None | Stream::Watched { .. } if s.stall_silence_ms != 0 => {
            "a stall's silence with no stall declared"
        }
        Stream::Stalled { silence_ms: 0 } => "a stall after no silence",
        Stream::Watched { .. } | Stream::Stalled { .. } if !agent_may_run => {
            "a stream watched, or a stall kept, while the agent may not run"
        }
        Stream::Watched {
            has_last: false,
            last_ms,
            ..
        } if last_ms != 0 => "a last event time with no event",
        Stream::Watched {
            pending: false,
            due_ms,
            ..
        } if due_ms != 0 => "a due time with no watch timer pending",
        Stream::Watched { pending: true, .. } if s.timer == 0 => {
            "a watch timer pending with no timer id issued"
        }
        _ => return Ok(stream),
    };
    Err(SnapshotError::Inconsistent(why))
}

const fn field(field: &'static str, expected: &'static str) -> SnapshotError {
    SnapshotError::Field { field, expected }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A snapshot with one field changed and its digest made again.
    fn forged(edit: impl FnOnce(&mut Snapshot)) -> Snapshot {
        let mut s = Machine::default().snapshot();
        edit(&mut s);
        s.check = s.digest();
        s
    }

    /// An edit of a snapshot and the error it must give.
    type Case = (fn(&mut Snapshot), SnapshotError);

    #[test]
    fn every_bad_field_is_named() {
        let cases: [Case; 6] = [
            (
                |s| s.profile = 7,
                field("profile", "0 (classic) or 1 (modern)"),
            ),
            (|s| s.classifier = 3, field("classifier", CLASSIFIER_CODES)),
            (
                |s| s.jitter_pct = 101,
                field("jitter_pct", "a percentage, 0 to 100"),
            ),
            (|s| s.phase = 5, field("phase", "0 to 4")),
            (
                |s| s.attempt = 1,
                SnapshotError::Inconsistent("an attempt with no chain open"),
            ),
            (
                |s| s.phase = 2,
                SnapshotError::Inconsistent("a backoff or an awaited answer at attempt 0"),
            ),
        ];
        for (edit, want) in cases {
            assert_eq!(Machine::restore(forged(edit)), Err(want));
        }
        let marked = forged(|s| s.marked_delay_ms = 5);
        assert!(matches!(
            Machine::restore(marked),
            Err(SnapshotError::Inconsistent(_))
        ));
    }

    #[test]
    fn a_changed_field_fails_the_digest() {
        let mut s = Machine::default().snapshot();
        s.max_retries += 1;
        assert_eq!(Machine::restore(s), Err(SnapshotError::Check));
    }

    #[test]
    fn the_version_is_checked_first() {
        let mut s = Machine::default().snapshot();
        s.version = 4;
        assert_eq!(
            Machine::restore(s),
            Err(SnapshotError::Version { found: 4 })
        );
    }

    #[test]
    fn a_version_2_snapshot_still_restores() {
        let machine = Machine::new(
            RetrySettings::DEFAULT.with_max_total_delay_ms(9),
            crate::HostOptions::DEFAULT.with_seed(11),
        );
        let old = machine.snapshot().with_version(2);
        assert_eq!(Machine::restore(old), Ok(machine));
        // A version 2 snapshot cannot carry a §12 figure.
        let mut forged = old;
        forged.idle_timeout_ms = 5;
        forged.check = forged.digest();
        assert!(matches!(
            Machine::restore(forged),
            Err(SnapshotError::Inconsistent(_))
        ));
    }

    #[test]
    fn unreachable_stream_states_are_refused() {
        let cases: [Case; 10] = [
            (
                |s| s.stream = 3,
                field("stream", "0 (none), 1 (watched) or 2 (stalled)"),
            ),
            (
                |s| s.stream_flags = 4,
                field("stream_flags", "bits 1 and 2 only"),
            ),
            (|s| s.marked_made = 3, field("marked_made", "0 to 2")),
            (
                |s| s.stream_flags = PENDING,
                SnapshotError::Inconsistent("stream flags with no stream watched"),
            ),
            (
                |s| s.stream_due_ms = 4,
                SnapshotError::Inconsistent("stream times with no stream watched"),
            ),
            (
                |s| s.stall_silence_ms = 4,
                SnapshotError::Inconsistent("a stall's silence with no stall declared"),
            ),
            (
                |s| s.stream = 2,
                SnapshotError::Inconsistent("a stall after no silence"),
            ),
            (
                |s| {
                    s.stream = 1;
                    s.stream_last_ms = 3;
                },
                SnapshotError::Inconsistent("a last event time with no event"),
            ),
            (
                |s| {
                    s.stream = 1;
                    s.stream_due_ms = 3;
                },
                SnapshotError::Inconsistent("a due time with no watch timer pending"),
            ),
            (
                |s| {
                    s.stream = 1;
                    s.stream_flags = PENDING;
                },
                SnapshotError::Inconsistent("a watch timer pending with no timer id issued"),
            ),
        ];
        for (edit, want) in cases {
            assert_eq!(Machine::restore(forged(edit)), Err(want));
        }
        // A stream during a backoff.
        let mut m = Machine::default();
        let _ = m
            .handle(crate::Input::agent_end(crate::AssistantMessage::error(
                "503",
            )))
            .unwrap();
        let mut s = m.snapshot();
        s.stream = 1;
        s.check = s.digest();
        assert_eq!(
            Machine::restore(s),
            Err(SnapshotError::Inconsistent(
                "a stream watched, or a stall kept, while the agent may not run"
            ))
        );
        // A decision's stall text with no silence.
        let forged_made = forged(|s| s.marked_made = 2);
        assert!(matches!(
            Machine::restore(forged_made),
            Err(SnapshotError::Inconsistent(_))
        ));
    }

    #[test]
    fn a_watched_stream_and_a_stall_round_trip() {
        use crate::{Input, Output};
        let settings = RetrySettings::DEFAULT
            .with_first_event_timeout_ms(100)
            .with_idle_timeout_ms(50)
            .with_retry_empty(true);
        let mut m = Machine::new(settings, crate::HostOptions::DEFAULT);
        let _ = m.handle(Input::stream_start(10)).unwrap();
        assert_eq!(Machine::restore(m.snapshot()), Ok(m.clone()));
        let _ = m.handle(Input::stream_event(100)).unwrap();
        assert_eq!(Machine::restore(m.snapshot()), Ok(m.clone()));
        let timer = m.pending_watch().unwrap();
        let _ = m.handle(Input::timer_fired(timer)).unwrap(); // re-armed for 30
        let timer = m.pending_watch().unwrap();
        assert_eq!(
            m.handle(Input::timer_fired(timer)).unwrap()[..],
            [Output::AbortAgent]
        );
        let restored = Machine::restore(m.snapshot()).unwrap();
        assert_eq!(restored, m);
        assert_eq!(restored.stalled_ms(), Some(50));
    }

    #[test]
    fn a_version_1_snapshot_still_restores() {
        // What a build before spec §11 wrote: the same fields, without the
        // new ones, digested as version 1.
        let machine = Machine::new(
            RetrySettings::DEFAULT.with_max_retries(5),
            crate::HostOptions::DEFAULT.with_seed(11),
        );
        let old = machine.snapshot().with_version(1);
        assert_eq!(Machine::restore(old), Ok(machine));
        // A version 1 snapshot cannot carry a §11 figure.
        let mut forged = old;
        forged.max_total_delay_ms = 5;
        forged.check = forged.digest();
        assert!(matches!(
            Machine::restore(forged),
            Err(SnapshotError::Inconsistent(_))
        ));
    }
}
