#!/usr/bin/env bash
# Prints the footprint of the retry core (the machine and its classifier):
#
# - flash (.text + .rodata) on thumbv7m-none-eabi at opt-level "z": the
#   firmware's `footprint` binary (a machine fed every input kind) minus its
#   `baseline` binary (the same runtime without the machine), with the
#   largest parts by symbol (the crate's own, float parsing, compiler
#   helpers, anonymous constants such as the DFA tables);
#   the same again with the core's feature `extended` (the extended
#   classifier and the modern profile), reported apart;
# - the size of the default WebAssembly module (the C ABI, package
#   `autoretry-ffi`, the classic classifier alone), with its code and data
#   sections; the same for the module with the extended classifier
#   (`autoretry-extended.wasm`), the one with the rules loader too
#   (`autoretry-rules.wasm`) and the one with the curated classifier
#   (`autoretry-curated.wasm`), which have no goal.
#
# Goals, reported against (not asserted): the classic core + classifier
# <= 48 KiB of flash; .wasm <= 64 KiB. ELF and wasm headers are read with python3, so no
# binutils are needed.
set -euo pipefail
cd "$(dirname "$0")/../.."

rustup target add thumbv7m-none-eabi >/dev/null 2>&1 || true
elf=examples/firmware/target/thumbv7m-none-eabi/release
(cd examples/firmware && cargo build --quiet --release --bin footprint --features extended)
cp "$elf/footprint" "$elf/footprint-extended"
(cd examples/firmware && cargo build --quiet --release --bin footprint --features serde)
cp "$elf/footprint" "$elf/footprint-serde"
(cd examples/firmware && cargo build --quiet --release --bin footprint --bin baseline)
wasm=$(ffi/wasm/build.sh)
rules_wasm=$(ffi/wasm/build.sh rules)
extended_wasm=$(ffi/wasm/build.sh extended)
curated_wasm=$(ffi/wasm/build.sh curated)

python3 - "$elf/footprint" "$elf/baseline" "$wasm" "$elf/footprint-extended" "$elf/footprint-serde" "$rules_wasm" "$extended_wasm" "$curated_wasm" <<'PY'
import struct
import sys

def elf_sections(path):
    """{name: size} of an ELF32 little-endian file, and its symbols."""
    data = open(path, "rb").read()
    assert data[:4] == b"\x7fELF" and data[4] == 1 and data[5] == 1, "ELF32 LE expected"
    shoff, = struct.unpack_from("<I", data, 0x20)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x2E)
    headers = [struct.unpack_from("<IIIIIIIIII", data, shoff + i * shentsize) for i in range(shnum)]
    strtab = headers[shstrndx]
    def name(table, offset):
        start = table[4] + offset
        return data[start:data.index(b"\0", start)].decode()
    section_names = [name(strtab, h[0]) for h in headers]
    sections = {n: h[5] for n, h in zip(section_names, headers)}
    # Symbols in flash (.text, .rodata), each address counted once.
    symbols, seen = [], set()
    for h in headers:
        if h[1] == 2:  # SHT_SYMTAB
            names = headers[h[6]]
            for off in range(h[4], h[4] + h[5], 16):
                st_name, value, size, _info, _other, shndx = struct.unpack_from("<IIIBBH", data, off)
                if shndx < len(section_names) and section_names[shndx] in (".text", ".rodata") and size and value not in seen:
                    seen.add(value)
                    symbols.append((name(names, st_name), size))
    return sections, symbols

def flash(sections):
    return sections.get(".text", 0) + sections.get(".rodata", 0)

def leb(data, i):
    shift = value = 0
    while True:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, i

def wasm_sections(path):
    data = open(path, "rb").read()
    assert data[:4] == b"\0asm", "wasm expected"
    i, sizes = 8, {}
    while i < len(data):
        kind = data[i]
        size, i = leb(data, i + 1)
        sizes[kind] = sizes.get(kind, 0) + size
        i += size
    return len(data), sizes

kib = lambda n: f"{n / 1024:.1f} KiB"
footprint, symbols = elf_sections(sys.argv[1])
baseline, baseline_symbols = elf_sections(sys.argv[2])
delta = lambda name: footprint.get(name, 0) - baseline.get(name, 0)
core = flash(footprint) - flash(baseline)
# Symbols are mangled (`_ZN9autoretry...`); anonymous constants are `.Lanon.*`.
groups = [
    ("autoretry", "the crate's functions and named statics"),
    ("dec2flt", "decimal float parsing (core::num::dec2flt)"),
    ("compiler_builtins", "compiler helpers (compiler_builtins)"),
    (".Lanon", "anonymous constants (tables, strings)"),
]
def grouped(symbols):
    parts = {key: 0 for key, _ in groups}
    for name, size in symbols:
        for key, _ in groups:
            if key in name:
                parts[key] += size
                break
    return parts
parts = grouped(symbols)
for key, size in grouped(baseline_symbols).items():
    parts[key] -= size
rest = core - sum(parts.values())
total, sections = wasm_sections(sys.argv[3])

print("Footprint of the retry core (machine + classifier)")
print(f"  thumbv7m-none-eabi, opt-level z, flash (.text + .rodata): {core} bytes ({kib(core)}; goal <= 48 KiB: {'met' if core <= 48 * 1024 else 'NOT met'})")
print(f"    .text {delta('.text')} bytes, .rodata {delta('.rodata')} bytes; by symbol:")
for key, label in groups:
    print(f"      {parts[key]:>7} bytes  {label}")
print(f"      {rest:>7} bytes  the rest: code inlined into the program, data without symbols")
print(f"    also .data {delta('.data')} bytes (flash and RAM), .bss {delta('.bss')} bytes (RAM)")
extended, _ = elf_sections(sys.argv[4])
ext_core = flash(extended) - flash(baseline)
print(f"  the same with feature extended (the extended classifier, the modern profile): {ext_core} bytes ({kib(ext_core)}; {ext_core - core:+} bytes), .data {extended.get('.data', 0) - baseline.get('.data', 0)} bytes")
with_serde, _ = elf_sections(sys.argv[5])
serde_core = flash(with_serde) - flash(baseline)
print(f"  the same with feature serde on (the program decodes nothing, so only what the core links): {serde_core} bytes ({kib(serde_core)}; {serde_core - core:+} bytes), .data {with_serde.get('.data', 0) - baseline.get('.data', 0)} bytes")
print(f"  wasm32-unknown-unknown (the C ABI, autoretry-ffi, the classic classifier), autoretry.wasm: {total} bytes ({kib(total)}; goal <= 64 KiB: {'met' if total <= 64 * 1024 else 'NOT met'})")
print(f"    code section {sections.get(10, 0)} bytes, data section {sections.get(11, 0)} bytes")
ext_total, ext_sections = wasm_sections(sys.argv[7])
print(f"  the module with the extended classifier and the modern profile (feature extended), autoretry-extended.wasm, {ext_total} bytes ({kib(ext_total)}; {ext_total - total:+} bytes; no goal)")
print(f"    code section {ext_sections.get(10, 0)} bytes, data section {ext_sections.get(11, 0)} bytes")
rules_total, rules_sections = wasm_sections(sys.argv[6])
print(f"  the module with the rules loader (features rules and extended), autoretry-rules.wasm, {rules_total} bytes ({kib(rules_total)}; {rules_total - ext_total:+} bytes over autoretry-extended.wasm; no goal)")
print(f"    code section {rules_sections.get(10, 0)} bytes, data section {rules_sections.get(11, 0)} bytes")
curated_total, curated_sections = wasm_sections(sys.argv[8])
print(f"  the module with the curated classifier (features curated and extended), autoretry-curated.wasm, {curated_total} bytes ({kib(curated_total)}; {curated_total - ext_total:+} bytes over autoretry-extended.wasm; no goal)")
print(f"    code section {curated_sections.get(10, 0)} bytes, data section {curated_sections.get(11, 0)} bytes")
PY

# Your own rules (feature `rules`): the firmware's `rules_footprint` (the
# example blob, `Rules::from_bytes`, `Rules::verdict`) minus `baseline`.
(cd examples/firmware && cargo build --quiet --release --bin rules_footprint --features rules)
python3 - "$elf/rules_footprint" "$elf/baseline" tests/rules/example.bin <<'PY'
import os
import struct
import sys

def flash(path):
    data = open(path, "rb").read()
    shoff, = struct.unpack_from("<I", data, 0x20)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x2E)
    headers = [struct.unpack_from("<IIIIIIIIII", data, shoff + i * shentsize) for i in range(shnum)]
    strtab = headers[shstrndx]
    def name(offset):
        start = strtab[4] + offset
        return data[start:data.index(b"\0", start)].decode()
    sections = {name(h[0]): h[5] for h in headers}
    return sections.get(".text", 0) + sections.get(".rodata", 0)

cost = flash(sys.argv[1]) - flash(sys.argv[2])
blob = os.path.getsize(sys.argv[3])
print("Your own rules (feature rules), thumbv7m-none-eabi, opt-level z")
print(f"  the example rule set (tests/rules/example.json, 7 rules) as a sparse blob + Rules::from_bytes + verdict: {cost} bytes of flash")
print(f"    the blob {blob} bytes, the code (regex-automata's validation and search, the header) {cost - blob} bytes")
PY
