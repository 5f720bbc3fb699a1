//! The classifier (spec §3) on the labelled corpus.

#[path = "../common/mod.rs"]
mod common;

mod accuracy;
mod corpus;
mod headers;
mod hint_numbers;
mod patterns;
mod props;
mod speed;
