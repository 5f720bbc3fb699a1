//! The pool of machines, the two exchange buffers and the host's
//! `(pointer, length)` pairs: every `unsafe` operation of the crate, each
//! argued where it happens. It needs `unsafe` for three things:
//!
//! 1. the pool in a static, behind an atomic lock ([`with_slots`]);
//! 2. the two static exchange buffers, whose addresses are exported;
//! 3. turning the host's `(pointer, length)` pairs into slices
//!    ([`host_text`], [`host_out`]).
//!
//! Everything here is safe to use from the rest of the module except the
//! two conversions, whose contracts are the exported functions' own.
// The crate denies `unsafe_code`; this file is where it is needed.
#![allow(unsafe_code)]

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, Ordering};

use super::{ERR_ARG, ERR_TEXT_LEN, MAX_TEXT, OUT_BUFFER_LEN, POOL_SIZE};
use crate::Machine;

/// The pool's machines, and the length of each slot's kept text.
pub(super) struct Slots {
    pub(super) machines: [Option<Machine>; POOL_SIZE],
    pub(super) marked_len: [usize; POOL_SIZE],
}

impl Slots {
    /// The slot index of a live handle.
    pub(super) fn live(&self, handle: i32) -> Option<usize> {
        usize::try_from(handle)
            .ok()
            .filter(|&i| self.machines.get(i).is_some_and(Option::is_some))
    }

    /// The machine of a live handle.
    pub(super) fn machine(&mut self, handle: i32) -> Option<&mut Machine> {
        let i = self.live(handle)?;
        self.machines.get_mut(i)?.as_mut()
    }
}

/// The text each slot keeps for the usage-limit answer,
/// `texts[i][..marked_len[i]]`. A static of its own: all zeros, it takes no
/// room in the module's data section or the firmware's flash.
pub(super) type Texts = [[u8; MAX_TEXT]; POOL_SIZE];

/// Data shared by every call, guarded by `LOCK`.
struct Guarded<T>(UnsafeCell<T>);

// SAFETY: the contents are only reached through `with_slots`, which holds
// `LOCK` (acquired with compare-exchange, released with a release store)
// for the whole borrow, so no two threads ever touch them at once.
unsafe impl<T> Sync for Guarded<T> {}

static LOCK: AtomicBool = AtomicBool::new(false);
static SLOTS: Guarded<Slots> = Guarded(UnsafeCell::new(Slots {
    machines: [const { None }; POOL_SIZE],
    marked_len: [0; POOL_SIZE],
}));
static TEXTS: Guarded<Texts> = Guarded(UnsafeCell::new([[0; MAX_TEXT]; POOL_SIZE]));

/// Runs `f` with exclusive access to the pool. Nothing in `f` calls back
/// into this module, so the lock is never taken twice by one thread; other
/// threads (native hosts only: wasm32 has one) spin until it is free.
pub(super) fn with_slots<R>(f: impl FnOnce(&mut Slots, &mut Texts) -> R) -> R {
    while LOCK
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        core::hint::spin_loop();
    }
    // SAFETY: the lock is held (see `impl Sync for Guarded`), so these are
    // the only references to the pool until the release below; `f` cannot
    // keep them, as the borrows end with the call.
    let result = f(unsafe { &mut *SLOTS.0.get() }, unsafe {
        &mut *TEXTS.0.get()
    });
    LOCK.store(false, Ordering::Release);
    result
}

/// A static byte buffer whose address the host receives.
#[repr(C, align(8))]
struct Exchange<const N: usize>(UnsafeCell<[u8; N]>);

// SAFETY: Rust code never reads or writes these buffers by name; it only
// hands out their address. Accesses happen through pointers the host passes
// back, under the contracts of the functions that take them.
unsafe impl<const N: usize> Sync for Exchange<N> {}

static TEXT_BUFFER: Exchange<MAX_TEXT> = Exchange(UnsafeCell::new([0; MAX_TEXT]));
static OUT_BUFFER: Exchange<OUT_BUFFER_LEN> = Exchange(UnsafeCell::new([0; OUT_BUFFER_LEN]));

/// The address of the [`MAX_TEXT`]-byte text buffer.
pub(super) fn text_buffer() -> *mut u8 {
    TEXT_BUFFER.0.get().cast()
}

/// The address of the [`OUT_BUFFER_LEN`]-byte output buffer.
pub(super) fn out_buffer() -> *mut u8 {
    OUT_BUFFER.0.get().cast()
}

/// The output buffer as a slice; `None` for a null pointer with a length.
///
/// # Safety
///
/// `out` valid for writes of `out_cap` bytes, and not otherwise accessed,
/// for `'a` (the call that received it).
pub(super) unsafe fn host_out<'a>(out: *mut u8, out_cap: u32) -> Option<&'a mut [u8]> {
    if out_cap == 0 {
        return Some(&mut []);
    }
    if out.is_null() {
        return None;
    }
    // SAFETY: non-null, and valid for `out_cap` bytes by the caller's
    // contract; the slice lives only for the call.
    Some(unsafe { core::slice::from_raw_parts_mut(out, out_cap as usize) })
}

/// The bytes of a text argument: `Ok(None)` for `text_len == -1` (no text),
/// else the `text_len` bytes at `text`; [`ERR_TEXT_LEN`] for a length
/// beyond [`MAX_TEXT`] or negative other than `-1`, [`ERR_ARG`] for a null
/// pointer with a length or a text that overlaps `(out, out_cap)`. Only the
/// addresses of `out` are compared; it is not read.
///
/// # Safety
///
/// `text` valid for reads of `text_len` bytes when `text_len > 0`, and not
/// written, for `'a` (the call that received it).
pub(super) unsafe fn host_text<'a>(
    text: *const u8,
    text_len: i32,
    out: *mut u8,
    out_cap: u32,
) -> Result<Option<&'a [u8]>, i32> {
    let n = match text_len {
        -1 => return Ok(None),
        n => match usize::try_from(n) {
            Ok(n) if n <= MAX_TEXT => n,
            _ => return Err(ERR_TEXT_LEN),
        },
    };
    if n == 0 {
        return Ok(Some(&[]));
    }
    if text.is_null() {
        return Err(ERR_ARG);
    }
    // Address comparison only: the ranges must be disjoint.
    let (t, o) = (text as usize, out as usize);
    if out_cap > 0 && t < o.saturating_add(out_cap as usize) && o < t.saturating_add(n) {
        return Err(ERR_ARG);
    }
    // SAFETY: non-null (checked), valid for `n` bytes by the caller's
    // contract, disjoint from `out` (checked); read-only for the call.
    Ok(Some(unsafe { core::slice::from_raw_parts(text, n) }))
}
