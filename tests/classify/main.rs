//! The classifier (spec §3) on the labelled corpus.

mod corpus;
mod hint_numbers;
