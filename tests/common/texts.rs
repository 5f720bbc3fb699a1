//! The property tests' strategies over the test kit's texts
//! (`autoretry_testkit::corpus`).

use proptest::prelude::*;

pub use autoretry_testkit::corpus::*;

/// A text of the labelled corpus.
pub fn corpus_text() -> impl Strategy<Value = String> {
    (0..corpus().len()).prop_map(|i| corpus()[i].text.clone())
}

/// Indices of [`HINT_TEXTS`].
pub fn hint_index() -> impl Strategy<Value = usize> {
    let first = text_count() - HINT_TEXTS.len();
    first..text_count()
}
