//! Your own rules over the C ABI (`autoretry_rules_load`,
//! `autoretry_rules_clear`), natively: the verdicts steer the machine
//! through both output forms, every refused blob has its code and changes
//! nothing (the machine keeps the rules it had), a loaded blob is never
//! written over, and freeing a machine takes its rules away. (That the
//! module applies rules exactly as the library does, on random scripts, is
//! `ffi::rules_over_the_c_abi_answer_as_the_library`.)

#![cfg(feature = "rules")]

use crate::ffi::{turn, RULES_BLOB};
use crate::ffi_hostile::{agent_end, agent_end_input, every_output_call, snapshot, Machine};

use autoretry_ffi::*;

/// Retried without rules (a 503); forbidden by a `never` rule.
const BILLING: &str = "503 billing: insufficient funds";
/// Not retried without rules; retried by a `retry` rule.
const STALLED: &str = "stream stalled";

/// Whether an `agent_end` with `text` opens a retry chain on `h`.
fn retried(h: i32, text: &str) -> bool {
    let json = agent_end(h, text).expect("agent_end");
    let retried = json.contains("auto_retry_start");
    if retried {
        let mut out = vec![0u8; OUT_BUFFER_LEN];
        // SAFETY: `out` is live and of the given length.
        let n = unsafe { autoretry_abort_retry(h, out.as_mut_ptr(), out.len() as u32) };
        assert!(n >= 0, "abort_retry: {n}");
    }
    retried
}

/// Lends `blob` to `h`.
fn load(h: i32, blob: &[u8]) -> i32 {
    // SAFETY: every blob of these tests outlives the machines it is lent
    // to and is not written while lent (the tests free or clear first).
    unsafe { autoretry_rules_load(h, blob.as_ptr(), blob.len() as u32) }
}

/// A copy of `blob` at a 4-byte aligned address, `shift` bytes into a
/// buffer of `u32`s (so `shift % 4 != 0` misaligns it), with `extra`
/// bytes of room after it.
struct Copy {
    words: Vec<u32>,
    shift: usize,
    len: usize,
}

impl Copy {
    fn new(blob: &[u8], shift: usize, extra: usize) -> Self {
        let mut words = vec![0u32; (shift + blob.len() + extra).div_ceil(4)];
        let bytes = bytes_mut(&mut words);
        bytes[shift..shift + blob.len()].copy_from_slice(blob);
        Copy {
            words,
            shift,
            len: blob.len(),
        }
    }

    /// The copy, to change before it is lent.
    fn bytes(&mut self) -> &mut [u8] {
        let (shift, len) = (self.shift, self.len);
        &mut bytes_mut(&mut self.words)[shift..shift + len]
    }

    /// The copy, to lend: shared, so it stays valid while the module
    /// holds it (a `&mut` would not, by Rust's aliasing rules).
    fn shared(&self) -> &[u8] {
        // SAFETY: `shift + len` bytes of the `u32`s' own memory, borrowed
        // from `words` for the slice's life; any byte is a valid `u8`.
        unsafe {
            std::slice::from_raw_parts(self.words.as_ptr().cast::<u8>().add(self.shift), self.len)
        }
    }
}

fn bytes_mut(words: &mut [u32]) -> &mut [u8] {
    let len = words.len() * 4;
    // SAFETY: the `u32`s' own memory, `len` bytes, borrowed mutably from
    // `words` for the slice's life; any byte is a valid `u8`.
    unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), len) }
}

/// The rules decide for a message without a verdict of its own, in the
/// JSON form and in the C form, and clearing them gives the patterns back.
#[test]
fn abi_rules_steer_the_machine_in_both_forms() {
    let _turn = turn();
    let m = Machine::new();
    assert!(retried(m.0, BILLING) && !retried(m.0, STALLED));
    assert_eq!(load(m.0, RULES_BLOB), 0);
    assert!(!retried(m.0, BILLING) && retried(m.0, STALLED));
    // An overflow is never retried, whatever a rule says (spec §10.2).
    assert!(!retried(m.0, "upstream_error: prompt is too long"));

    // The C form applies them too, and the host's own verdict stays.
    let c_form = |text: &str, should_retry: i32| {
        let input = agent_end_input(text, should_retry);
        let mut out = [AutoretryOutput::default(); 8];
        // SAFETY: `input` and `out` are live; `out` holds 8 outputs.
        let n = unsafe { autoretry_handle_c(m.0, &input, out.as_mut_ptr(), 8) };
        assert!(n >= 0, "autoretry_handle_c: {n}");
        let retried = out[..n as usize].iter().any(|o| o.kind == OUTPUT_START);
        if retried {
            let mut out = vec![0u8; OUT_BUFFER_LEN];
            // SAFETY: `out` is live and of the given length.
            assert!(unsafe { autoretry_abort_retry(m.0, out.as_mut_ptr(), out.len() as u32) } >= 0);
        }
        retried
    };
    assert!(!c_form(BILLING, SHOULD_RETRY_ABSENT));
    assert!(c_form(STALLED, SHOULD_RETRY_ABSENT));
    assert!(c_form(BILLING, SHOULD_RETRY_YES));
    assert!(!c_form(STALLED, SHOULD_RETRY_NO));

    assert_eq!(autoretry_rules_clear(m.0), 0);
    assert!(retried(m.0, BILLING) && !retried(m.0, STALLED));
}

/// Every malformed blob gets its code, and the machine keeps the rules it
/// had; a bad range is refused before the blob is read.
#[test]
fn abi_bad_blobs_have_their_codes_and_change_nothing() {
    let _turn = turn();
    let m = Machine::new();
    assert_eq!(load(m.0, RULES_BLOB), 0);
    let n = RULES_BLOB.len();

    let mut flipped = Copy::new(RULES_BLOB, 0, 0);
    flipped.bytes()[n / 2] ^= 0x40; // the checksum no longer holds
    let mut version = Copy::new(RULES_BLOB, 0, 0);
    version.bytes()[8] = 2;
    let mut endian = Copy::new(RULES_BLOB, 0, 0);
    endian.bytes()[10] ^= 1;
    let mut padded = Copy::new(RULES_BLOB, 0, 1);
    padded.len += 1;
    let cases: [(&str, &[u8], i32); 8] = [
        ("no bytes", &[], ERR_RULES_FOREIGN),
        (
            "a rules file, not a blob",
            br#"{"retry":["x"]}"#,
            ERR_RULES_FOREIGN,
        ),
        ("another format version", version.bytes(), ERR_RULES_FOREIGN),
        ("the other byte order", endian.bytes(), ERR_RULES_FOREIGN),
        ("truncated", &RULES_BLOB[..n - 1], ERR_RULES_LENGTH),
        ("the header alone", &RULES_BLOB[..24], ERR_RULES_LENGTH),
        ("a byte too many", padded.bytes(), ERR_RULES_LENGTH),
        ("a flipped bit", flipped.bytes(), ERR_RULES_CORRUPT),
    ];
    for (what, blob, code) in cases {
        assert_eq!(load(m.0, blob), code, "{what}");
        assert!(!retried(m.0, BILLING), "{what}: the rules in force went");
    }

    // SAFETY: refused before any byte is read.
    unsafe {
        assert_eq!(autoretry_rules_load(m.0, std::ptr::null(), 10), ERR_ARG);
        assert_eq!(
            autoretry_rules_load(m.0, std::ptr::without_provenance(usize::MAX), 2),
            ERR_BUFFER
        );
        // A blob in an exchange buffer would be written over.
        assert_eq!(
            autoretry_rules_load(m.0, autoretry_text_buffer(), 64),
            ERR_BUFFER
        );
        assert_eq!(
            autoretry_rules_load(m.0, autoretry_out_buffer().add(8), 64),
            ERR_BUFFER
        );
    }
    assert!(!retried(m.0, BILLING), "the rules in force went");

    // A good blob for a machine that is not there.
    let gone = Machine::new();
    let h = gone.0;
    drop(gone);
    assert_eq!(load(h, RULES_BLOB), ERR_HANDLE);
    assert_eq!(autoretry_rules_clear(h), ERR_HANDLE);
    assert_eq!(load(-1, RULES_BLOB), ERR_HANDLE);
}

/// A dense blob must start at a 4-byte aligned address; a sparse one may
/// start anywhere.
#[cfg_attr(miri, ignore = "builds and minimizes a DFA: far too slow interpreted")]
#[test]
fn abi_a_dense_blob_needs_its_alignment() {
    use autoretry::rules::{DfaKind, Endian, RuleSet, Rules};
    let set = RuleSet::from_json(include_str!("../../../tests/rules/example.json")).unwrap();
    let dense = Rules::compile(&set)
        .unwrap()
        .to_bytes(Endian::NATIVE, DfaKind::Dense)
        .unwrap();
    let _turn = turn();
    let m = Machine::new();
    let aligned = Copy::new(&dense, 0, 0);
    let off = Copy::new(&dense, 1, 0);
    let sparse_off = Copy::new(RULES_BLOB, 3, 0);
    assert_eq!(load(m.0, off.shared()), ERR_RULES_MISALIGNED);
    assert!(retried(m.0, BILLING));
    assert_eq!(load(m.0, aligned.shared()), 0);
    assert!(!retried(m.0, BILLING) && retried(m.0, STALLED));
    assert_eq!(load(m.0, sparse_off.shared()), 0);
    assert!(!retried(m.0, BILLING) && retried(m.0, STALLED));
    assert_eq!(autoretry_rules_clear(m.0), 0);
}

/// While a machine holds a blob, no call writes over it: every entry point
/// refuses an output buffer that overlaps it and changes nothing. Once
/// the rules are cleared, or the machine freed, the memory is the host's
/// again. One blob may serve several machines.
#[test]
fn abi_a_loaded_blob_is_never_written_over() {
    let _turn = turn();
    let blob = Copy::new(RULES_BLOB, 0, 16);
    // Only passed to calls that must refuse it: never written through.
    let (ptr, len) = (blob.shared().as_ptr().cast_mut(), blob.len);
    let a = Machine::new();
    let b = Machine::new();
    assert_eq!(load(a.0, blob.shared()), 0);
    assert_eq!(load(b.0, blob.shared()), 0);
    assert!(!retried(a.0, BILLING) && !retried(b.0, BILLING));

    let before = snapshot(&[a.0, b.0]);
    // The last 16 bytes of the blob and 16 past it; the whole blob.
    for (out, cap) in [(ptr.wrapping_add(len - 16), 32u32), (ptr, len as u32)] {
        // SAFETY: the module refuses these ranges before writing.
        for (name, got) in unsafe { every_output_call(a.0, out, cap) } {
            assert_eq!(got, ERR_BUFFER, "{name}");
        }
        let state = out.cast::<AutoretryState>();
        // SAFETY: refused before writing.
        assert_eq!(unsafe { autoretry_state_c(b.0, state) }, ERR_BUFFER);
        let settings = out.cast::<AutoretrySettings>();
        // SAFETY: refused before writing.
        assert_eq!(
            unsafe { autoretry_settings_defaults(PROFILE_CLASSIC, settings) },
            ERR_BUFFER
        );
    }
    assert_eq!(snapshot(&[a.0, b.0]), before);

    // `b` still holds it; once `b` is freed and `a` cleared, it is free.
    drop(b);
    // SAFETY: refused before writing.
    assert_eq!(unsafe { autoretry_state(a.0, ptr, 128) }, ERR_BUFFER);
    assert_eq!(autoretry_rules_clear(a.0), 0);
    let mut blob = blob;
    // SAFETY: the test's own memory, no longer lent, `len >= 128` bytes.
    let n = unsafe { autoretry_state(a.0, blob.bytes().as_mut_ptr(), 128) };
    assert!(n > 0, "autoretry_state: {n}");
    assert!(retried(a.0, BILLING), "the rules were cleared");

    // A freed machine's rules go with it: the slot's next machine has none.
    assert_eq!(load(a.0, RULES_BLOB), 0);
    drop(a);
    let next = Machine::new();
    assert!(retried(next.0, BILLING) && !retried(next.0, STALLED));
}

#[cfg_attr(miri, ignore = "builds and minimizes a DFA: far too slow interpreted")]
#[test]
fn the_committed_dense_wasm_fixture_is_current() {
    use autoretry::rules::{DfaKind, Endian, RuleSet, Rules};
    // The WebAssembly tests lend it to a machine at a misaligned address.
    let set = RuleSet::from_json(include_str!("../../wasm/dense.json")).unwrap();
    let blob = Rules::compile(&set)
        .unwrap()
        .to_bytes(Endian::Little, DfaKind::Dense)
        .unwrap();
    assert!(
        include_bytes!("../../wasm/dense.bin")[..] == blob[..],
        "ffi/wasm/dense.bin is stale: regenerate it with `cargo run -- rules compile \
         --kind dense ffi/wasm/dense.json -o ffi/wasm/dense.bin`"
    );
}
