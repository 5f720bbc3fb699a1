//! Prints, as one JSON object, what the first use of the classifier costs
//! on std: the time and the heap of the first `classify` of a long text
//! (feature `prefilter` builds its tables and the factor searcher then,
//! once per process), against the same call once they are built; then
//! the first use of the extended and the curated classifiers (the
//! curated one builds its own factor searcher), and the curated call
//! once built.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use autoretry::classify::{classify, Classifier};

/// Counts the bytes allocated (never freed: the tables live on).
struct Counting;

static ALLOCATED: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's layout, handed on unchanged.
        unsafe { System.alloc(layout) }
    }

    /// Zeroed memory from the system's allocator, as a program without a
    /// counting allocator gets it (the default would write the zeros, and
    /// touch every page of a large table at once).
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's layout, handed on unchanged.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        ALLOCATED.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` or `alloc_zeroed` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Nanoseconds and bytes kept by one call of `f`.
fn cost(f: impl FnOnce()) -> (u128, usize) {
    let heap = ALLOCATED.load(Ordering::Relaxed);
    let t = Instant::now();
    f();
    let ns = t.elapsed().as_nanos();
    (ns, ALLOCATED.load(Ordering::Relaxed).saturating_sub(heap))
}

fn main() {
    let text = "lorem ipsum dolor sit amet, rate limit. ".repeat(100);
    let (first_ns, first_heap) = cost(|| {
        std::hint::black_box(classify(&text));
    });
    let (again_ns, _) = cost(|| {
        std::hint::black_box(classify(&text));
    });
    let (ext_ns, ext_heap) = cost(|| {
        std::hint::black_box(Classifier::Extended.classify(&text));
    });
    let (cur_ns, cur_heap) = cost(|| {
        std::hint::black_box(Classifier::Curated.classify(&text));
    });
    let (cur_again_ns, _) = cost(|| {
        std::hint::black_box(Classifier::Curated.classify(&text));
    });
    println!(
        "{{\"text_bytes\":{},\"classic_first_ns\":{first_ns},\"classic_first_heap\":{first_heap},\"classic_again_ns\":{again_ns},\"extended_first_ns\":{ext_ns},\"extended_first_heap\":{ext_heap},\"curated_first_ns\":{cur_ns},\"curated_first_heap\":{cur_heap},\"curated_again_ns\":{cur_again_ns}}}",
        text.len()
    );
}
