//! A stand-in for the classifier choice of spec 10.5 with its final API:
//! the extended pattern set and the hints of 10.4 answer as the classic
//! ones do until their tables land.

use super::{
    classify, matches_overflow, matches_retryable, matches_usage_limit, retry_hint_ms,
    Classification,
};

/// Which pattern set classifies error texts (`retry.classifier`, spec 10.5).
///
/// ```
/// use autoretry::classify::Classifier;
/// assert_eq!(Classifier::default(), Classifier::Classic);
/// assert_eq!(Classifier::from_wire("extended"), Some(Classifier::Extended));
/// assert_eq!(Classifier::Extended.as_str(), "extended");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Classifier {
    /// `"classic"`: the patterns of spec 3.2–3.4.
    #[default]
    Classic,
    /// `"extended"`: the patterns of spec 10.5.
    Extended,
}

impl Classifier {
    /// The wire name: `"classic"` or `"extended"`.
    ///
    /// ```
    /// use autoretry::classify::Classifier;
    /// assert_eq!(Classifier::Classic.as_str(), "classic");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            Classifier::Classic => "classic",
            Classifier::Extended => "extended",
        }
    }

    /// Parses a wire name; `None` for anything else (case-sensitive).
    ///
    /// ```
    /// use autoretry::classify::Classifier;
    /// assert_eq!(Classifier::from_wire("classic"), Some(Classifier::Classic));
    /// assert_eq!(Classifier::from_wire("Extended"), None);
    /// ```
    pub fn from_wire(s: &str) -> Option<Self> {
        [Classifier::Classic, Classifier::Extended]
            .into_iter()
            .find(|c| c.as_str() == s)
    }
}

/// [`classify`] with the chosen pattern set.
///
/// ```
/// use autoretry::classify::{classify, classify_with, Classifier};
/// assert_eq!(classify_with("503", Classifier::Classic), classify("503"));
/// ```
pub fn classify_with(text: &str, classifier: Classifier) -> Classification {
    let _ = classifier;
    classify(text)
}

/// Rule 4 of spec 3 for the chosen pattern set.
///
/// ```
/// use autoretry::classify::{matches_retryable_with, Classifier};
/// assert!(matches_retryable_with("overloaded", Classifier::Classic));
/// ```
pub fn matches_retryable_with(text: &str, classifier: Classifier) -> bool {
    let _ = classifier;
    matches_retryable(text)
}

/// The context-overflow text rules of the chosen pattern set.
///
/// ```
/// use autoretry::classify::{matches_overflow_with, Classifier};
/// assert!(matches_overflow_with("prompt is too long", Classifier::Classic));
/// ```
pub fn matches_overflow_with(text: &str, classifier: Classifier) -> bool {
    let _ = classifier;
    matches_overflow(text)
}

/// The usage-limit pattern of the chosen pattern set.
///
/// ```
/// use autoretry::classify::{matches_usage_limit_with, Classifier};
/// assert!(matches_usage_limit_with("usage limit", Classifier::Classic));
/// ```
pub fn matches_usage_limit_with(text: &str, classifier: Classifier) -> bool {
    let _ = classifier;
    matches_usage_limit(text)
}

/// The wait hint of spec 10.4 in milliseconds.
///
/// ```
/// use autoretry::classify::wait_hint_ms;
/// assert_eq!(wait_hint_ms("retry-after-ms: 5", None), Some(5));
/// ```
pub fn wait_hint_ms(text: &str, now_ms: Option<u64>) -> Option<u64> {
    retry_hint_ms(text, now_ms)
}
