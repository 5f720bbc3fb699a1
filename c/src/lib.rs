//! The C ABI of `autoretry` (its `host::ffi` module, feature `ffi`) as a
//! static library (`libautoretry_c.a`) and a shared one
//! (`libautoretry_c.so`) for C hosts, declared by `include/autoretry.h`.
//!
//! The library is built with std, so it brings std's panic handler and a
//! C program links it as it is (the core never panics; a panic would abort
//! at the C boundary). Build and link:
//!
//! ```text
//! cargo build --release -p autoretry-c
//! gcc -Iinclude host.c target/release/libautoretry_c.a -lpthread -ldl -lm
//! gcc -Iinclude host.c -Ltarget/release -lautoretry_c   # the shared one
//! ```
//!
//! Nothing is defined here: the exported functions are the library's own.
//!
//! ```
//! let h = autoretry_c::autoretry_new(1, 3, 2000, 0, 0);
//! assert!(h >= 0);
//! assert_eq!(autoretry_c::autoretry_free(h), 0);
//! ```

pub use autoretry::host::ffi::*;
