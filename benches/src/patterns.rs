//! Prints the spec's patterns as `autoretry::classify::patterns` holds them,
//! as the JSON object that `js/classify.mjs` reads:
//!
//!     cargo run -q --bin patterns > patterns.json
//!     node js/classify.mjs patterns.json

#[allow(dead_code)]
mod common;

fn main() {
    println!("{}", common::patterns_json());
}
