//! Tables built where they live (feature `prefilter`, on std).
//!
//! The std tables are tens of kilobytes each. Built as values, they would
//! pass through the stack of the thread that classifies first (then be
//! moved into their `OnceLock`): more than a small host thread has. They
//! are allocated on the heap instead, and filled there.

extern crate std;

use std::boxed::Box;
use std::vec;

/// `N` copies of `fill` on the heap, built there: `Box::new([fill; N])`
/// would build the array on the stack first (in debug builds at least).
pub(super) fn filled<T: Copy, const N: usize>(fill: T) -> Box<[T; N]> {
    match vec![fill; N].into_boxed_slice().try_into() {
        Ok(array) => array,
        // Not reached (the slice holds `N` values); still a correct table.
        Err(_) => on_stack(fill),
    }
}

#[cold]
#[inline(never)]
fn on_stack<T: Copy, const N: usize>(fill: T) -> Box<[T; N]> {
    Box::new([fill; N])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_n_copies() {
        let rows: Box<[[u8; 64]; 256]> = filled([7; 64]);
        assert!(rows.iter().flatten().all(|&b| b == 7));
        let bits: Box<[u64; 4096]> = filled(0);
        assert_eq!(bits.len(), 4096);
    }
}
