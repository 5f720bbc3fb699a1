//! Prints the spec's patterns as `autoretry::classify::patterns` holds them,
//! as the JSON object that `js/classify.mjs` reads
//! (`{"retryable", "overflow", "usageLimit"}`):
//!
//!     cargo run -q --bin patterns > patterns.json
//!     node js/classify.mjs patterns.json

#[allow(dead_code)]
mod common;

fn main() {
    let (retryable, overflow, usage_limit) = common::patterns();
    let json = serde_json::json!({
        "retryable": retryable,
        "overflow": overflow,
        "usageLimit": usage_limit,
    });
    println!("{json}");
}
