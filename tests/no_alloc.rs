//! The core allocates nothing: every vector step (sections 1–9 and the
//! options of section 10) and every corpus text runs under a counting
//! global allocator, and the count must stay at zero while the library
//! works (and the test kit's `no_std` vector host with it), the events'
//! terminal text and JSON (the fail-fast sentence included) written into
//! fixed buffers; the async driver and snapshots (postcard into a stack
//! buffer) through a whole chain. Decoding the JSON (test code) happens
//! outside the counted windows.
//!
//! On std the classifier's speed tables (feature `prefilter`) are allocated
//! once per process, when a classification first needs them: each test
//! that classifies runs its work once uncounted first, so that the counted
//! run finds the tables it reads built.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use autoretry::{classify, Input, Machine, Output};
use autoretry_testkit::vector::VectorLine;
use autoretry_testkit::VectorHost;
use serde_json::Value;

mod common;

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
    // `try_with`: the thread-local may be gone while a thread shuts down.
    let _ = COUNTING.try_with(|on| {
        if on.get() {
            COUNT.with(|c| c.set(c.get() + 1));
        }
    });
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs `f` and returns its result with the number of allocations it made.
fn counted<T>(f: impl FnOnce() -> T) -> (T, u64) {
    COUNT.with(|c| c.set(0));
    COUNTING.with(|on| on.set(true));
    let value = f();
    COUNTING.with(|on| on.set(false));
    (value, COUNT.with(|c| c.get()))
}

/// Counts what a `Display` writes, without storing it.
struct Sink(usize);

impl std::fmt::Write for Sink {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0 += s.len();
        Ok(())
    }
}

/// Runs every step of the vector files of `dir`; returns the steps run and
/// the allocations made while the machine handled them, the vector host
/// noted their outputs, and their events were written (terminal text and
/// JSON, into fixed buffers).
fn replay_counted(dir: &str) -> (usize, u64) {
    replay_counted_files(common::vector_files_in(dir))
}

/// [`replay_counted`] on these files.
fn replay_counted_files(paths: Vec<std::path::PathBuf>) -> (usize, u64) {
    let (mut steps, mut total_allocs) = (0, 0);
    for path in paths {
        let text = std::fs::read_to_string(path).unwrap();
        let lines: Vec<VectorLine> = text
            .split('\n')
            .filter_map(|l| VectorLine::parse(l).unwrap())
            .collect();
        let mut machine = Machine::default();
        let mut host = VectorHost::<&str>::new();
        let mut json = vec![0u8; 1 << 16];
        for line in &lines {
            let input = match line {
                VectorLine::Scenario(header) => {
                    machine = Machine::new(header.settings, header.host);
                    host.reset();
                    continue;
                }
                VectorLine::Step(input) => input,
            };
            // An invalid settings group is refused at the edge, before the
            // machine.
            let Ok(input) = input.as_input(host.marked().copied().unwrap_or("")) else {
                continue;
            };
            let (_, allocs) = counted(|| {
                let input = host.machine_input(input)?;
                // `stream_event` through the machine's own entry point
                // (what `handle` gives for it, tests/machine/stream_props.rs).
                let outputs = match input {
                    Input::StreamEvent { now_ms } => {
                        machine.stream_event(now_ms).into_iter().collect()
                    }
                    _ => machine.handle(input).ok()?,
                };
                for output in outputs {
                    if let Output::Emit(event) = output {
                        let mut sink = Sink(0);
                        std::fmt::write(&mut sink, format_args!("{event}")).unwrap();
                        serde_json::to_writer(&mut json[..], &event).unwrap();
                    }
                    host.vector_output(&input, output);
                }
                Some(())
            });
            total_allocs += allocs;
            steps += 1;
        }
    }
    (steps, total_allocs)
}

#[test]
fn the_machine_allocates_nothing_on_any_vector() {
    // The first pass builds the classifier's std tables.
    replay_counted("tests/vectors");
    let (steps, allocs) = replay_counted("tests/vectors");
    assert!(steps > 100, "only {steps} steps ran");
    assert_eq!(allocs, 0, "the machine or the vector host allocated");
}

#[test]
fn the_machine_allocates_nothing_on_any_option_vector() {
    // The first pass builds the classifier's std tables.
    replay_counted("tests/vectors/options");
    let (steps, allocs) = replay_counted("tests/vectors/options");
    assert!(steps > 100, "only {steps} steps ran");
    assert_eq!(allocs, 0, "the machine or the vector host allocated");
}

#[test]
fn the_machine_allocates_nothing_on_the_stream_vectors() {
    let files = common::vector_files_in("tests/vectors/stream");
    let events = files
        .iter()
        .map(|path| std::fs::read_to_string(path).unwrap())
        .map(|text| text.matches(r#""type":"stream_event""#).count())
        .sum::<usize>();
    assert!(events > 10, "only {events} stream_event steps");
    // The first pass builds the classifier's std tables.
    replay_counted_files(files.clone());
    let (steps, allocs) = replay_counted_files(files);
    assert!(steps > 50, "only {steps} steps ran");
    assert_eq!(allocs, 0, "the machine or the vector host allocated");
}

#[test]
fn the_machine_allocates_nothing_on_the_header_vectors() {
    replay_counted_files(common::response_vector_files());
    let (steps, allocs) = replay_counted_files(common::response_vector_files());
    assert!(steps > 30, "only {steps} steps ran");
    assert_eq!(allocs, 0, "the machine or the vector host allocated");
}

#[test]
fn the_header_reading_allocates_nothing() {
    let corpus = include_str!("corpus/headers.jsonl");
    let cases: Vec<_> = corpus
        .split('\n')
        .filter(|l| !l.is_empty())
        .map(|l| autoretry::wire::json::headers_line(l).unwrap())
        .collect();
    let (read, allocs) = counted(|| {
        cases
            .iter()
            .map(|(pairs, now)| autoretry::Headers::from_owned(pairs).read(*now))
            .filter(|h| h.retry_after_ms.is_some())
            .count()
    });
    assert!(read > 20, "{read}");
    assert_eq!(allocs, 0, "the header reading allocated");
}

#[test]
fn classification_allocates_nothing() {
    let corpus = include_str!("corpus/errors.jsonl");
    let texts: Vec<String> = corpus
        .split('\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["text"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let mut lossy = b"overloaded \xF0\x9F\x92 retry-after: 5".to_vec();
    lossy.extend_from_slice(&[0xC0, 0xFF, b'5', b'0', b'3']);
    let classify_all = || {
        let mut hits = 0usize;
        for text in &texts {
            let c = classify::classify(text);
            hits += usize::from(c.retryable)
                + usize::from(classify::classify_bytes(text.as_bytes()).overflow);
            hits += usize::from(classify::retry_hint_ms(text, Some(1_790_000_000_000)).is_some());
        }
        hits + usize::from(classify::classify_bytes(&lossy).retryable)
    };
    // The first run builds the classifier's std tables.
    classify_all();
    let (labels, allocs) = counted(classify_all);
    assert!(labels > 0);
    assert_eq!(allocs, 0, "classification allocated");
}

/// The curated classifier (spec 13.2): its labels, predicates and hints
/// on every text of its corpus, by text and by bytes, allocate nothing.
#[cfg(feature = "curated")]
#[test]
fn curated_classification_allocates_nothing() {
    use classify::Classifier;
    let corpus = include_str!("corpus/curated/errors.jsonl");
    let texts: Vec<String> = corpus
        .split('\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["text"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert!(texts.len() >= 1000);
    let lossy =
        b"\xE8\xAF\xB7\xE6\xB1\x82\xFF\xF0\x9F\x92 daily \xC0 quota try again in 16m".to_vec();
    let c = Classifier::Curated;
    let classify_all = || {
        let mut hits = 0usize;
        for text in &texts {
            let l = c.classify(text);
            hits += usize::from(l.retryable) + usize::from(l.usage_limit);
            hits += usize::from(c.classify_bytes(text.as_bytes()).overflow);
            hits += usize::from(c.matches_retryable(text))
                + usize::from(c.matches_usage_limit_bytes(text.as_bytes()))
                + usize::from(c.matches_overflow(text));
            hits += usize::from(classify::curated_hint_ms(text, Some(1_790_000_000_000)).is_some());
        }
        hits + usize::from(c.classify_bytes(&lossy).usage_limit)
    };
    classify_all();
    let (labels, allocs) = counted(classify_all);
    assert!(labels > 1000, "{labels}");
    assert_eq!(allocs, 0, "curated classification allocated");
}

/// The counter is live: an allocation inside a counted window is seen, so
/// the zero counts above cannot pass by accident.
/// A clock that stands at 0 and timers that are always due.
struct Instantly;

impl autoretry::host::driver::Sleeper for Instantly {
    type Instant = u64;
    type Sleep = std::future::Ready<()>;
    fn now(&self) -> u64 {
        0
    }
    fn after(&self, at: u64, ms: u64) -> Option<u64> {
        at.checked_add(ms)
    }
    fn sleep_until(&self, _: u64) -> Self::Sleep {
        std::future::ready(())
    }
    fn ms_between(&self, from: u64, to: u64) -> u64 {
        to.saturating_sub(from)
    }
}

#[test]
fn the_async_driver_and_snapshots_allocate_nothing() {
    use autoretry::host::driver::Driver;
    use autoretry::{AssistantMessage, Input, StopReason};
    use embassy_futures::block_on;

    let failed = Input::AgentEnd {
        message: AssistantMessage::error("529 overloaded_error"),
        now_ms: None,
    };
    let done = Input::AgentEnd {
        message: AssistantMessage::new(StopReason::Stop),
        now_ms: None,
    };
    let (names, allocs) = counted(|| {
        let mut names = heapless::Vec::<&str, 16>::new();
        let mut driver = Driver::new(Machine::default(), Instantly);
        let mut record = |outputs: &[Output<'_>]| {
            for output in outputs {
                let _ = names.push(output.type_name());
            }
        };
        record(driver.handle(failed).outputs.as_deref().unwrap_or(&[]));
        // Saved and restored in the backoff, then re-armed.
        let restored = Machine::restore(driver.machine().snapshot()).unwrap();
        #[cfg(feature = "serde")]
        let restored = {
            let mut buf = [0; autoretry::Snapshot::MAX_POSTCARD_LEN];
            let bytes = postcard::to_slice(&restored.snapshot(), &mut buf).unwrap();
            Machine::restore(postcard::from_bytes(bytes).unwrap()).unwrap()
        };
        let mut driver = Driver::new(restored, Instantly);
        driver.rearm(2000);
        // No input comes: the timer fires.
        let fired = block_on(driver.next(std::future::pending::<Option<Input<'_>>>()));
        record(fired.and_then(|s| s.outputs.ok()).as_deref().unwrap_or(&[]));
        record(driver.handle(done).outputs.as_deref().unwrap_or(&[]));
        names
    });
    assert_eq!(allocs, 0);
    assert_eq!(
        names,
        [
            "emit",
            "drop_trailing_error",
            "sleep",
            "continue_agent",
            "emit",
            "settled",
            "check_compaction"
        ]
    );
}

#[test]
fn the_async_drivers_stream_watch_allocates_nothing() {
    use autoretry::host::driver::Driver;
    use autoretry::{HostOptions, Input, RetrySettings};
    use embassy_futures::block_on;

    let settings = RetrySettings::DEFAULT
        .with_first_event_timeout_ms(1000)
        .with_idle_timeout_ms(1000);
    let (names, allocs) = counted(|| {
        let mut names = heapless::Vec::<&str, 8>::new();
        let mut driver: Driver<Instantly, Input<'_>> =
            Driver::new(Machine::new(settings, HostOptions::DEFAULT), Instantly);
        let mut record = |outputs: &[Output<'_>]| {
            for output in outputs {
                let _ = names.push(output.type_name());
            }
        };
        record(driver.stream_start().outputs.as_deref().unwrap_or(&[]));
        record(driver.stream_event().outputs.as_deref().unwrap_or(&[]));
        // No input comes: the watch fires, and the stream stalled.
        let fired = block_on(driver.next(std::future::pending::<Option<Input<'_>>>()));
        record(fired.and_then(|s| s.outputs.ok()).as_deref().unwrap_or(&[]));
        names
    });
    assert_eq!(allocs, 0);
    assert_eq!(names, ["watch", "abort_agent"]);
}

#[test]
fn the_counter_sees_an_allocation() {
    let (boxed, allocs) = counted(|| std::hint::black_box(Box::new(7u64)));
    assert_eq!(*boxed, 7);
    assert!(allocs >= 1, "the counting allocator saw nothing");
    let (_, none) = counted(|| std::hint::black_box(7u64));
    assert_eq!(none, 0);
}

// Your own rules (features `rules`, `rules-compile`).
#[cfg(feature = "rules-compile")]
mod rules {
    //! Your own rules allocate nothing on the `no_std` path: loading a dense
    //! blob in place (`Rules::from_bytes`) and matching every corpus text
    //! against dense and sparse blobs (`verdict`, `apply`, `apply_input`,
    //! `Rules::classify_with`) run under a counting global allocator with the count at
    //! zero. (Building the blobs, which is test code, allocates outside the counted
    //! windows.)
    //!
    //! Loading a *sparse* blob is counted apart: where an allocator exists
    //! (regex-automata's `alloc` feature, on in every std build), its
    //! validation collects the state IDs in a `BTreeSet`; without one it does
    //! not, which the firmware, linked with no allocator, shows.

    use super::counted;
    use autoretry::classify::Classifier;
    use autoretry::rules::Rules;
    use autoretry::{AssistantMessage, Input};
    use autoretry_testkit::rules_fuzz::{aligned, example_blobs};
    use serde_json::Value;

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
            let (loaded, load_allocs) =
                counted(|| Rules::from_bytes(bytes).expect("the example blob"));
            if load_counted {
                assert_eq!(
                    load_allocs, 0,
                    "loading a dense blob: {load_allocs} allocations"
                );
            }
            let matching = |rules: &Rules| {
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
            };
            // The first run builds the classifier's std tables.
            matching(&loaded);
            let (verdicts, allocs) = counted(|| matching(&loaded));
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
}
