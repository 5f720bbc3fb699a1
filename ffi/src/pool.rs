//! The pool of machines, the two exchange buffers and the host's
//! `(pointer, length)` pairs: every `unsafe` operation of the crate, each
//! argued where it happens. It needs `unsafe` for three things:
//!
//! 1. the pool in a static, behind an atomic lock ([`with_slots`]);
//! 2. the two static exchange buffers, whose addresses are exported;
//! 3. turning the host's `(pointer, length)` pairs into slices
//!    ([`host_out`], [`host_buffers`], and with feature `rules`
//!    `host_blob`), after [`check_range`] has refused every pair that is
//!    outside the memory or overlaps the module's own data (and, for a
//!    buffer the module writes, a rules blob a machine holds).
//!
//! Everything here is safe to use from the rest of the module except the
//! conversions, whose contracts are the exported functions' own.
//!
//! # No trap under the lock
//!
//! Every host range is checked, and every slice made, before the lock is
//! taken; under the lock the code only reads and writes the pool and the
//! already-checked slices. So no call traps (WebAssembly) while it holds
//! the lock. On WebAssembly without threads there is nothing to lock at all
//! (one thread, no reentrancy), so not even a trap the checks missed could
//! leave a lock held; and every change a call makes to a slot is committed
//! at its very end, after its outputs were written.
// The crate denies `unsafe_code`; this file is where it is needed.
#![allow(unsafe_code)]

use core::cell::UnsafeCell;
#[cfg(not(all(target_family = "wasm", not(target_feature = "atomics"))))]
use core::sync::atomic::AtomicBool;
#[cfg(any(
    feature = "rules",
    not(all(target_family = "wasm", not(target_feature = "atomics")))
))]
use core::sync::atomic::Ordering;

use super::budget::Budgets;
use super::codes::{ERR_ARG, ERR_BUFFER, ERR_TEXT_LEN, MAX_TEXT, OUT_BUFFER_LEN, POOL_SIZE};
use super::structs::AutoretryHeader;
#[cfg(feature = "rules")]
use autoretry::rules::Rules;
use autoretry::{read_headers, HeaderHints};
use autoretry::{ErrorText, Machine};
#[cfg(feature = "rules")]
use core::sync::atomic::AtomicUsize;

/// How many low bits of a handle hold its slot index.
const SLOT_BITS: u32 = 8;
/// The last generation of a slot, so that a handle
/// (`generation << SLOT_BITS | slot`) stays a positive `i32`: a slot whose
/// machine of this generation is freed is retired ([`RETIRED`]).
const LAST_GENERATION: u32 = (1 << (31 - SLOT_BITS)) - 1;
/// The generation of a retired slot: no handle carries it, and no machine
/// is put in the slot again, so that no handle or timer id ever comes back.
const RETIRED: u32 = LAST_GENERATION + 1;
/// How many low bits of a timer id, as the ABI shows it, are the machine's
/// own id; the bits above hold the slot's generation.
const TIMER_BITS: u32 = 40;
const TIMER_MASK: u64 = (1 << TIMER_BITS) - 1;
const _: () = assert!(POOL_SIZE <= 1 << SLOT_BITS);
const _: () = assert!(64 - TIMER_BITS >= 32 - SLOT_BITS);

/// The pool's machines, each slot's generation and the length of its kept
/// text, and the retry budgets.
pub(super) struct Slots {
    machines: [Option<Machine>; POOL_SIZE],
    /// Bumped when a slot's machine is freed, so that the handles and timer
    /// ids of a freed machine never match its slot's next machine; never
    /// past [`LAST_GENERATION`], after which the slot is [`RETIRED`].
    generation: [u32; POOL_SIZE],
    marked_len: [usize; POOL_SIZE],
    /// The rules each machine was lent (`autoretry_rules_load`): they
    /// borrow the host's blob, which the contract of `host_blob` keeps
    /// alive and unchanged until they are dropped here.
    #[cfg(feature = "rules")]
    rules: [Option<Rules<'static>>; POOL_SIZE],
    /// The retry budgets inputs may name, under the same lock.
    pub(super) budgets: Budgets,
}

/// A live machine's slot, found from its handle by [`Slots::live`].
#[derive(Clone, Copy)]
pub(super) struct Slot {
    index: usize,
    generation: u32,
}

impl Slot {
    /// The slot's place in the pool, `0..POOL_SIZE`.
    pub(super) fn index(self) -> usize {
        self.index
    }

    /// The timer id the host sees for the machine's timer `id`: the
    /// machine's id in the low [`TIMER_BITS`] bits, the slot's generation
    /// above them.
    pub(super) fn timer_to_host(self, id: u64) -> u64 {
        (u64::from(self.generation) << TIMER_BITS) | (id & TIMER_MASK)
    }

    /// The machine's own id `pending` when `timer`, a timer id the host
    /// passed back, is that id as this slot shows it; `None` for any other.
    fn pending_from_host(self, pending: u64, timer: u64) -> Option<u64> {
        (self.timer_to_host(pending) == timer).then_some(pending)
    }
}

impl Slots {
    /// An empty pool: every slot free, of generation 0.
    const fn new() -> Self {
        Slots {
            machines: [const { None }; POOL_SIZE],
            generation: [0; POOL_SIZE],
            marked_len: [0; POOL_SIZE],
            #[cfg(feature = "rules")]
            rules: [const { None }; POOL_SIZE],
            budgets: Budgets::new(),
        }
    }

    /// The slot of a live handle: in range, of the slot's current
    /// generation, and holding a machine.
    pub(super) fn live(&self, handle: i32) -> Option<Slot> {
        let handle = u32::try_from(handle).ok()?;
        let index = (handle & ((1 << SLOT_BITS) - 1)) as usize;
        let generation = handle >> SLOT_BITS;
        (self.generation.get(index) == Some(&generation)
            && self.machines.get(index).is_some_and(Option::is_some))
        .then_some(Slot { index, generation })
    }

    /// The machine's own id of a timer id the host passed back, when it
    /// is the id of the machine's pending timer (backoff or watch) ([`Slot::timer_to_host`]);
    /// `None` for any other (a freed machine's, one that is not pending),
    /// which the machine would ignore (spec §6). Compared in full, so a
    /// machine whose own ids outgrow the low [`TIMER_BITS`] bits still
    /// gets its pending timer.
    pub(super) fn timer_from_host(&self, slot: Slot, timer: u64) -> Option<u64> {
        let machine = self.machine(slot)?;
        // At most one of the two is pending (spec §12.2: no stream is
        // watched during a backoff).
        let pending = machine.pending_timer().or(machine.pending_watch())?.get();
        slot.pending_from_host(pending, timer)
    }

    /// The machine in a live slot.
    pub(super) fn machine(&self, slot: Slot) -> Option<&Machine> {
        self.machines.get(slot.index)?.as_ref()
    }

    /// Replaces the machine of a live slot (the end of a successful call).
    pub(super) fn commit(&mut self, slot: Slot, machine: Machine) {
        if let Some(place) = self.machines.get_mut(slot.index) {
            *place = Some(machine);
        }
    }

    /// Puts `machine` in a free slot that is not retired; its handle, or
    /// `None` when there is none.
    pub(super) fn insert(&mut self, machine: Machine) -> Option<i32> {
        let index = (0..POOL_SIZE)
            .position(|i| self.machines[i].is_none() && self.generation[i] != RETIRED)?;
        self.machines[index] = Some(machine);
        self.marked_len[index] = 0;
        let handle = (self.generation[index] << SLOT_BITS) | index as u32;
        i32::try_from(handle).ok()
    }

    /// Frees a live slot; its next machine gets a new generation, or, after
    /// the machine of [`LAST_GENERATION`], the slot is retired.
    pub(super) fn remove(&mut self, slot: Slot) {
        if let (Some(machine), Some(generation), Some(len)) = (
            self.machines.get_mut(slot.index),
            self.generation.get_mut(slot.index),
            self.marked_len.get_mut(slot.index),
        ) {
            *machine = None;
            *generation = generation.saturating_add(1).min(RETIRED);
            *len = 0;
        }
        #[cfg(feature = "rules")]
        self.set_rules(slot, None);
    }

    /// The rules of a live slot's machine, if it was lent any.
    #[cfg(feature = "rules")]
    pub(super) fn rules(&self, slot: Slot) -> Option<&Rules<'static>> {
        self.rules.get(slot.index)?.as_ref()
    }

    /// Gives a live slot's machine the rules of `blob` (their blob's bytes),
    /// or takes its rules away (`None`); records the blob's range, so that
    /// no buffer the module writes may overlap it ([`check_writable`]).
    #[cfg(feature = "rules")]
    pub(super) fn set_rules(&mut self, slot: Slot, rules: Option<(Rules<'static>, &'static [u8])>) {
        let (start, end) = rules.as_ref().map_or((0, 0), |(_, blob)| {
            let start = blob.as_ptr() as usize;
            (start, start + blob.len())
        });
        if let (Some(place), Some([lo, hi])) =
            (self.rules.get_mut(slot.index), BLOBS.get(slot.index))
        {
            *place = rules.map(|(rules, _)| rules);
            lo.store(start, Ordering::Relaxed);
            hi.store(end, Ordering::Relaxed);
        }
    }

    /// The slot's kept text (the usage-limit answer's).
    pub(super) fn kept<'t>(&self, kept: &'t Kept, slot: Slot) -> &'t [u8] {
        (kept.get(slot.index).zip(self.marked_len.get(slot.index)))
            .and_then(|(text, &len)| text.get(..len))
            .unwrap_or_default()
    }

    /// Keeps a copy of `text` in the slot (at most [`MAX_TEXT`] bytes, as
    /// every text the module accepts).
    pub(super) fn keep(&mut self, kept: &mut Kept, slot: Slot, text: &[u8]) {
        if let (Some(kept), Some(len)) = (
            kept.get_mut(slot.index)
                .and_then(|t| t.get_mut(..text.len())),
            self.marked_len.get_mut(slot.index),
        ) {
            kept.copy_from_slice(text);
            *len = text.len();
        }
    }
}

/// The texts each slot keeps. A static of its own: all zeros, it takes no
/// room in the module's data section or the firmware's flash.
pub(super) struct Texts {
    /// The text kept for the usage-limit answer,
    /// `kept[i][..marked_len[i]]`.
    pub(super) kept: Kept,
    /// The stall sentence of spec §12.2 rule 4 (`Stream stalled: no event
    /// for <s>ms`), written by the C form of the outputs that carry it
    /// (the machine keeps it as a number): their `text` points here until
    /// the next call on the slot's machine.
    pub(super) stalled: [[u8; ErrorText::STALLED_MAX_LEN]; POOL_SIZE],
}

/// The usage-limit texts of [`Texts`], one per slot.
pub(super) type Kept = [[u8; MAX_TEXT]; POOL_SIZE];

impl Texts {
    /// The slot's buffer for the stall sentence.
    pub(super) fn stalled(&mut self, slot: Slot) -> &mut [u8] {
        match self.stalled.get_mut(slot.index) {
            Some(buffer) => buffer,
            None => &mut [],
        }
    }
}

/// Data shared by every call, guarded by the lock.
struct Guarded<T>(UnsafeCell<T>);

// SAFETY: the contents are only reached through `with_slots`, which holds
// the lock (acquired with compare-exchange, released with a release store;
// on WebAssembly without threads there is one thread and no reentrancy)
// for the whole borrow, so no two calls ever touch them at once.
unsafe impl<T> Sync for Guarded<T> {}

#[cfg(not(all(target_family = "wasm", not(target_feature = "atomics"))))]
static LOCK: AtomicBool = AtomicBool::new(false);
static SLOTS: Guarded<Slots> = Guarded(UnsafeCell::new(Slots::new()));

/// The byte range `[start, end)` of the rules blob each slot's machine
/// holds (`[0, 0)`: none). Written under the lock by [`Slots::set_rules`],
/// read by [`check_writable`] before it is taken: on a native host another
/// thread may change a range meanwhile, but only by loading a blob that a
/// buffer of this call overlaps, which breaks both calls' contracts.
#[cfg(feature = "rules")]
static BLOBS: [[AtomicUsize; 2]; POOL_SIZE] =
    [const { [AtomicUsize::new(0), AtomicUsize::new(0)] }; POOL_SIZE];
static TEXTS: Guarded<Texts> = Guarded(UnsafeCell::new(Texts {
    kept: [[0; MAX_TEXT]; POOL_SIZE],
    stalled: [[0; ErrorText::STALLED_MAX_LEN]; POOL_SIZE],
}));

/// Runs `f` with exclusive access to the pool. Nothing in `f` calls back
/// into this module, so the lock is never taken twice by one thread; other
/// threads (native hosts only) spin until it is free. Callers check and
/// convert every host range before, so nothing in `f` can trap.
pub(super) fn with_slots<R>(f: impl FnOnce(&mut Slots, &mut Texts) -> R) -> R {
    #[cfg(not(all(target_family = "wasm", not(target_feature = "atomics"))))]
    while LOCK
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        core::hint::spin_loop();
    }
    // SAFETY: the lock is held (see `impl Sync for Guarded`), so these are
    // the only references to the pool until the release below; `f` cannot
    // keep them, as the borrows end with the call. No host slice overlaps
    // them (`check_range`).
    let result = f(unsafe { &mut *SLOTS.0.get() }, unsafe {
        &mut *TEXTS.0.get()
    });
    #[cfg(not(all(target_family = "wasm", not(target_feature = "atomics"))))]
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

/// The two exchange buffers, as (address, length).
fn exchange_buffers() -> [(usize, usize); 2] {
    [
        (text_buffer() as usize, MAX_TEXT),
        (out_buffer() as usize, OUT_BUFFER_LEN),
    ]
}

/// The start and end addresses of a static.
fn span<T>(value: &T) -> (usize, usize) {
    let start = core::ptr::from_ref(value) as usize;
    (start, start + core::mem::size_of::<T>())
}

/// Checks a host range `[addr, addr + len)` before anything is touched:
/// [`ERR_ARG`] for a null pointer with a length; [`ERR_BUFFER`] for a range
/// whose end wraps, that runs past the end of an exchange buffer it
/// overlaps, or that overlaps the module's own data (the pool, the kept
/// texts, the lock). On WebAssembly the module knows its memory, so also a
/// range past the end of the memory, or below `__heap_base` (the stack,
/// the constants and every static) other than within an exchange buffer.
/// An empty range is never touched and always fine. Addresses only: no
/// byte is read.
pub(super) fn check_range(addr: usize, len: usize) -> Result<(), i32> {
    if len == 0 {
        return Ok(());
    }
    if addr == 0 {
        return Err(ERR_ARG);
    }
    let end = addr.checked_add(len).ok_or(ERR_BUFFER)?;
    let overlaps = |(start, stop): (usize, usize)| addr < stop && start < end;
    for (start, n) in exchange_buffers() {
        if overlaps((start, start + n)) {
            return if start <= addr && end <= start + n {
                Ok(())
            } else {
                Err(ERR_BUFFER)
            };
        }
    }
    #[cfg(not(all(target_family = "wasm", not(target_feature = "atomics"))))]
    if overlaps(span(&LOCK)) {
        return Err(ERR_BUFFER);
    }
    if overlaps(span(&SLOTS)) || overlaps(span(&TEXTS)) {
        return Err(ERR_BUFFER);
    }
    #[cfg(target_arch = "wasm32")]
    {
        extern "C" {
            /// The end of the module's own data (the linker's symbol): the
            /// stack, the constants and the statics lie below it.
            static __heap_base: u8;
        }
        // Only the address of the linker's symbol is taken (safe).
        let heap_base = core::ptr::addr_of!(__heap_base) as usize;
        let memory = core::arch::wasm32::memory_size::<0>().saturating_mul(65536);
        if addr < heap_base || end > memory {
            return Err(ERR_BUFFER);
        }
    }
    Ok(())
}

/// A range the module writes: [`check_range`], and with feature `rules`
/// [`ERR_BUFFER`] for a range that overlaps a rules blob a machine holds
/// (the module would write over the DFA it searches).
pub(super) fn check_writable(addr: usize, len: usize) -> Result<(), i32> {
    check_range(addr, len)?;
    #[cfg(feature = "rules")]
    if len > 0 {
        let end = addr + len; // no wrap: `check_range` refused it
        if BLOBS
            .iter()
            .any(|[lo, hi]| addr < hi.load(Ordering::Relaxed) && lo.load(Ordering::Relaxed) < end)
        {
            return Err(ERR_BUFFER);
        }
    }
    Ok(())
}

/// The output buffer, `out_cap` elements of `T` (bytes for the JSON form,
/// output structs for the C form), as a slice once checked:
/// [`check_writable`] on its bytes ([`ERR_BUFFER`] also for a byte length
/// beyond the address space), and [`ERR_ARG`] for a pointer not aligned for
/// `T`.
///
/// # Safety
///
/// `out` valid for writes of `out_cap` elements, and not otherwise
/// accessed, for `'a` (the call that received it), when the range passes
/// these checks.
pub(super) unsafe fn host_out<'a, T>(out: *mut T, out_cap: u32) -> Result<&'a mut [T], i32> {
    let len = out_cap as usize;
    let bytes = len
        .checked_mul(core::mem::size_of::<T>())
        .ok_or(ERR_BUFFER)?;
    check_writable(out as usize, bytes)?;
    if len == 0 {
        return Ok(&mut []);
    }
    if (out as usize) % core::mem::align_of::<T>() != 0 {
        return Err(ERR_ARG);
    }
    // SAFETY: non-null, aligned, outside the module's own data (checked),
    // and valid for `len` elements by the caller's contract; `T` is a byte
    // or a plain `repr(C)` struct of integers and a pointer, for which any
    // bytes the host left there are only overwritten; the slice lives only
    // for the call.
    Ok(unsafe { core::slice::from_raw_parts_mut(out, len) })
}

/// One value of the host's, read by copy once checked: [`check_range`] on
/// its bytes, [`ERR_ARG`] for a null or misaligned pointer.
///
/// # Safety
///
/// `value` valid for reads of one `T` when it passes these checks, and
/// its bytes a valid `T` (a `repr(C)` struct of integers and pointers).
pub(super) unsafe fn host_value<T: Copy>(value: *const T) -> Result<T, i32> {
    if value.is_null() || (value as usize) % core::mem::align_of::<T>() != 0 {
        return Err(ERR_ARG);
    }
    check_range(value as usize, core::mem::size_of::<T>())?;
    // SAFETY: non-null, aligned, outside the module's own data (checked),
    // valid for reads by the caller's contract.
    Ok(unsafe { core::ptr::read(value) })
}

/// A message's text and the output buffer, both checked before either slice
/// is made. The text is `None` for `text_len == -1` (no text), else the
/// `text_len` bytes at `text`: [`ERR_TEXT_LEN`] for a length beyond
/// [`MAX_TEXT`] or negative other than `-1`; each range as
/// [`check_range`] (the output's as [`host_out`]); [`ERR_ARG`] for a text
/// that overlaps the output buffer.
///
/// # Safety
///
/// `text` valid for reads of `text_len` bytes when `text_len > 0`, and not
/// written, for `'a`; `out` as [`host_out`].
pub(super) unsafe fn host_buffers<'a, T>(
    (text, text_len): (*const u8, i32),
    (out, out_cap): (*mut T, u32),
) -> Result<(Option<&'a [u8]>, &'a mut [T]), i32> {
    let n = match text_len {
        -1 => None,
        n => match usize::try_from(n) {
            Ok(n) if n <= MAX_TEXT => Some(n),
            _ => return Err(ERR_TEXT_LEN),
        },
    };
    let (t, o) = (text as usize, out as usize);
    let cap = (out_cap as usize)
        .checked_mul(core::mem::size_of::<T>())
        .ok_or(ERR_BUFFER)?;
    if let Some(n) = n {
        check_range(t, n)?;
        check_range(o, cap)?;
        // Address comparison only: the ranges must be disjoint (both are
        // checked, so neither end wraps).
        if n > 0 && cap > 0 && t < o + cap && o < t + n {
            return Err(ERR_ARG);
        }
    }
    // SAFETY: the caller's contract; checked here (`check_range`).
    let out = unsafe { host_out(out, out_cap) }?;
    let text = match n {
        None => None,
        Some(0) => Some(&[][..]),
        // SAFETY: non-null, outside the module's own data and disjoint from
        // `out` (checked), valid for `n` bytes by the caller's contract;
        // read-only for the call.
        Some(n) => Some(unsafe { core::slice::from_raw_parts(text, n) }),
    };
    Ok((text, out))
}

/// The header reading of spec §13.1 over the host's `len` header fields at
/// `headers`, each checked before any is read: [`ERR_ARG`] for a null or
/// misaligned array with a length, [`check_range`] on the array and on
/// every name and value. No slice outlives the call, and none is made
/// before every range passed.
///
/// # Safety
///
/// `headers` valid for reads of `len` structs, and each one's `name` and
/// `value` for their lengths, not written during the call, when the ranges
/// pass these checks.
pub(super) unsafe fn host_header_hints(
    headers: *const AutoretryHeader,
    len: u32,
    now_ms: Option<u64>,
) -> Result<HeaderHints, i32> {
    let n = len as usize;
    if n == 0 {
        return Ok(HeaderHints::default());
    }
    if headers.is_null() || (headers as usize) % core::mem::align_of::<AutoretryHeader>() != 0 {
        return Err(ERR_ARG);
    }
    let bytes = n
        .checked_mul(core::mem::size_of::<AutoretryHeader>())
        .ok_or(ERR_BUFFER)?;
    check_range(headers as usize, bytes)?;
    // SAFETY: non-null, aligned, outside the module's own data (checked),
    // valid for `n` structs by the caller's contract; read-only for the call.
    let list = unsafe { core::slice::from_raw_parts(headers, n) };
    for h in list {
        check_range(h.name as usize, h.name_len as usize)?;
        check_range(h.value as usize, h.value_len as usize)?;
    }
    let bytes_at = |at: *const u8, len: u32| -> &[u8] {
        if len == 0 {
            return &[];
        }
        // SAFETY: non-null and outside the module's own data (checked
        // above), valid for `len` bytes by the caller's contract;
        // read-only for the call.
        unsafe { core::slice::from_raw_parts(at, len as usize) }
    };
    let pairs = list
        .iter()
        .map(|h| (bytes_at(h.name, h.name_len), bytes_at(h.value, h.value_len)));
    Ok(read_headers(pairs, now_ms))
}

/// A rules blob the host lends a machine (`autoretry_rules_load`), as a
/// slice once checked: [`check_range`], and [`ERR_BUFFER`] for a blob that
/// overlaps an exchange buffer (the module writes the out buffer, and the
/// host the text buffer, on later calls).
///
/// # Safety
///
/// `blob` valid for reads of `len` bytes, and neither written nor freed
/// until the machine's rules are cleared or replaced or the machine is
/// freed: the slice's `'static` is that span. It stays in the pool
/// ([`Slots::set_rules`]), is only read under the lock, and is dropped at
/// the end of the span.
#[cfg(feature = "rules")]
pub(super) unsafe fn host_blob(blob: *const u8, len: u32) -> Result<&'static [u8], i32> {
    let (addr, len) = (blob as usize, len as usize);
    check_range(addr, len)?;
    if len == 0 {
        return Ok(&[]);
    }
    let end = addr + len; // no wrap: `check_range` refused it
    for (start, n) in exchange_buffers() {
        if addr < start + n && start < end {
            return Err(ERR_BUFFER);
        }
    }
    // SAFETY: non-null, outside the module's own data and the exchange
    // buffers (checked), valid for reads and unchanged for the slice's
    // life by the caller's contract.
    Ok(unsafe { core::slice::from_raw_parts(blob, len) })
}

#[cfg(test)]
mod tests {
    use super::{Slots, LAST_GENERATION, POOL_SIZE, RETIRED, SLOT_BITS, TIMER_BITS};
    use autoretry::{AssistantMessage, Input, Machine};

    /// Every slot of the pool a step before its last generation.
    fn near_the_end() -> Slots {
        let mut slots = Slots::new();
        slots.generation = [LAST_GENERATION - 1; POOL_SIZE];
        slots
    }

    /// A machine in a backoff whose pending timer is its own id 1.
    fn in_backoff() -> Machine {
        let mut machine = Machine::default();
        let failed = Input::AgentEnd {
            message: AssistantMessage::error("529 overloaded_error"),
            now_ms: None,
        };
        assert!(machine.handle(failed).is_ok());
        assert_eq!(machine.pending_timer().map(|t| t.get()), Some(1));
        machine
    }

    #[test]
    fn a_slot_is_retired_before_its_generation_wraps() {
        let mut slots = near_the_end();
        let mut seen = Vec::new();
        // Two machines per slot (its last two generations), then none.
        for _ in 0..2 * POOL_SIZE {
            let handle = slots.insert(Machine::default()).expect("a slot");
            assert!(handle >= 0 && !seen.contains(&handle), "handle {handle}");
            seen.push(handle);
            let slot = slots.live(handle).expect("live");
            slots.remove(slot);
        }
        assert_eq!(slots.generation, [RETIRED; POOL_SIZE]);
        assert_eq!(slots.insert(Machine::default()), None, "every slot retired");
        for &handle in &seen {
            assert!(
                slots.live(handle).is_none(),
                "freed handle {handle} live again"
            );
        }
        // A retired slot's handles (the first generation's among them)
        // name no machine.
        for index in 0..POOL_SIZE as i32 {
            assert!(slots.live(index).is_none());
            assert!(slots
                .live((LAST_GENERATION << SLOT_BITS) as i32 | index)
                .is_none());
        }
    }

    #[test]
    fn a_freed_machines_timer_never_fires_at_a_later_one() {
        // Slot 0 alone (timer ids are told apart within a slot).
        let mut slots = near_the_end();
        slots.generation[1..].fill(RETIRED);
        let first = slots.insert(in_backoff()).unwrap();
        let stale = slots.live(first).unwrap().timer_to_host(1);
        slots.remove(slots.live(first).unwrap());
        // Every later machine of the slot has a timer of the same own id
        // pending; the freed one's id is none of theirs.
        let mut next = slots.insert(in_backoff());
        while let Some(handle) = next {
            let slot = slots.live(handle).unwrap();
            assert_eq!(slots.timer_from_host(slot, stale), None, "handle {handle}");
            let own = slot.timer_to_host(1);
            assert_eq!(slots.timer_from_host(slot, own), Some(1));
            slots.remove(slot);
            next = slots.insert(in_backoff());
        }
    }

    #[test]
    fn a_pending_timer_beyond_the_low_bits_still_fires() {
        // The comparison alone: no machine needs 2^40 timers for it.
        let mut slots = Slots::new();
        for own in [1 << TIMER_BITS, (1 << TIMER_BITS) + 1, u64::MAX] {
            let handle = slots.insert(Machine::default()).unwrap();
            let slot = slots.live(handle).unwrap();
            let host = slot.timer_to_host(own);
            assert_eq!(slot.pending_from_host(own, host), Some(own));
            // The earlier ids that share its low bits are not pending.
            let older = slot.timer_to_host(own - (1 << TIMER_BITS));
            if older != host {
                assert_eq!(slot.pending_from_host(own, older), None);
            }
            slots.remove(slot);
        }
    }
}
