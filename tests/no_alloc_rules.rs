//! Your own rules allocate nothing on the `no_std` path: loading a dense
//! blob in place (`Rules::from_bytes`) and matching every corpus text
//! against dense and sparse blobs (`verdict`, `apply`, `apply_input`,
//! `classify_with`) run under a counting global allocator with the count at
//! zero. (A binary of its own: the global allocator is per binary; building
//! the blobs, which is test code, allocates outside the counted windows.)
//!
//! Loading a *sparse* blob is counted apart: where an allocator exists
//! (regex-automata's `alloc` feature, on in every std build), its
//! validation collects the state IDs in a `BTreeSet`; without one it does
//! not, which the firmware, linked with no allocator, shows.
#![cfg(feature = "rules-compile")]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use autoretry::classify::Classifier;
use autoretry::rules::Rules;
use autoretry::{AssistantMessage, Input};
use autoretry_testkit::rules_fuzz::{aligned, example_blobs};
use serde_json::Value;

struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<u64> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, size: usize) -> *mut u8 {
        note();
        System.realloc(ptr, layout, size)
    }
}

fn note() {
    let _ = COUNTING.try_with(|on| {
        if on.get() {
            COUNT.with(|c| c.set(c.get() + 1));
        }
    });
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn counted<T>(f: impl FnOnce() -> T) -> (T, u64) {
    COUNT.with(|c| c.set(0));
    COUNTING.with(|on| on.set(true));
    let value = f();
    COUNTING.with(|on| on.set(false));
    (value, COUNT.with(|c| c.get()))
}

fn loaded_kind(blob: &[u8]) -> autoretry::rules::DfaKind {
    Rules::load(blob).expect("the example blob").kind()
}

/// Every text of the labelled corpora.
fn corpus_texts() -> Vec<String> {
    let mut texts = Vec::new();
    for path in [
        "tests/corpus/errors.jsonl",
        "tests/corpus/extended/errors.jsonl",
    ] {
        let path = format!("{}/{path}", env!("CARGO_MANIFEST_DIR"));
        for line in std::fs::read_to_string(path).unwrap().lines() {
            let value: Value = serde_json::from_str(line).unwrap();
            texts.push(value["text"].as_str().unwrap().to_owned());
        }
    }
    texts
}

#[test]
fn loading_and_matching_a_blob_allocates_nothing() {
    let texts = corpus_texts();
    assert!(texts.len() > 200, "{} texts", texts.len());
    let [sparse, dense] = example_blobs();
    for (blob, load_counted) in [(dense, true), (sparse, false)] {
        let (buf, at) = aligned(blob);
        let bytes = &buf[at..at + blob.len()];
        let (loaded, load_allocs) = counted(|| Rules::from_bytes(bytes).expect("the example blob"));
        if load_counted {
            assert_eq!(
                load_allocs, 0,
                "loading a dense blob: {load_allocs} allocations"
            );
        }
        let (verdicts, allocs) = counted(|| {
            let rules = loaded;
            let mut verdicts = [0usize; 3];
            for text in &texts {
                let v = rules.verdict(text);
                verdicts[match v {
                    None => 0,
                    Some(false) => 1,
                    Some(true) => 2,
                }] += 1;
                let message = rules.apply(AssistantMessage::error(text));
                let input = rules.apply_input(Input::AgentEnd {
                    message: AssistantMessage::error(text),
                    now_ms: None,
                });
                assert!(matches!(input, Input::AgentEnd { message: m, .. } if m == message));
                let c = rules.classify_with(text, Classifier::Extended);
                assert_eq!(c.verdict, v);
            }
            verdicts
        });
        assert_eq!(
            allocs,
            0,
            "matching a {:?} blob: {allocs} allocations",
            loaded_kind(blob)
        );
        println!("verdicts on the corpus (none, never, retry): {verdicts:?}");
    }
    // The counter counts.
    let ((), allocs) = counted(|| drop(std::hint::black_box(vec![1u8])));
    assert_eq!(allocs, 1);
}
