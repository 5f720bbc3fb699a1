#!/usr/bin/env bash
# Builds a WebAssembly module: the C ABI (package `autoretry-ffi`) for
# wasm32-unknown-unknown, no std, no allocator, optimized for size (the
# workspace's profile `wasm-module`). Prints the module's path: under
# cargo's target directory (`target/`, or `CARGO_TARGET_DIR` when set),
# relative to the repository's root when it lies inside it.
#
#     ffi/wasm/build.sh            # target/wasm/autoretry.wasm
#     ffi/wasm/build.sh extended   # target/wasm/autoretry-extended.wasm: feature extended too
#     ffi/wasm/build.sh rules      # target/wasm/autoretry-rules.wasm: features rules and extended
#     ffi/wasm/build.sh curated    # target/wasm/autoretry-curated.wasm: features curated and extended
#
# The default module keeps within its 64 KiB goal with the classic
# classifier alone: it refuses the extended classifier and the modern
# profile, whose classifier it is (`AUTORETRY_ERR_SETTINGS`). The
# `extended` one adds them (their tables and scan, about 14 KB); the
# `rules` one adds, besides, the loader of compiled rules blobs
# (`autoretry_rules_load`, regex-automata's validation and search), about
# 24 KB more; the `curated` one adds, to the extended one, the curated
# classifier of spec 13.2 (its tables, scan and hints) and nothing else
# (no rules loader). docs/size.md gives each module's size. None has the
# package's default `prefilter` (it needs std).
#
# Then binaryen's `wasm-opt -Oz` (npm package `binaryen`, pinned, installed
# into target/ on first use) shrinks the module by about a sixth; the
# features enabled are those rustc's wasm32-unknown-unknown target emits.
# `AUTORETRY_WASM_OPT=0` skips it (the path printed is then rustc's module).
set -euo pipefail
cd "$(dirname "$0")/../.."

case "${1:-default}" in
    default) features= name=autoretry ;;
    extended) features=extended name=autoretry-extended ;;
    rules) features=rules,extended name=autoretry-rules ;;
    curated) features=curated,extended name=autoretry-curated ;;
    *)
        echo "usage: ffi/wasm/build.sh [default|extended|rules|curated]" >&2
        exit 2
        ;;
esac

BINARYEN_VERSION=132.0.0

rustup target add wasm32-unknown-unknown >/dev/null 2>&1 || true
# `cargo rustc --crate-type cdylib`: cargo runs LTO only when every crate
# type of the package is one LTO applies to, and the rlib (the tests' and
# the fuzz target's) is not; without LTO the module is about 3.4 KB larger.
# Cargo says where it wrote the module (its JSON messages on stdout, the
# diagnostics rendered on stderr): `CARGO_TARGET_DIR` or a config's
# `build.target-dir` move it.
artefacts=$(cargo rustc --quiet -p autoretry-ffi --lib --crate-type cdylib --profile wasm-module \
    --target wasm32-unknown-unknown --no-default-features --features "$features" \
    --message-format=json-render-diagnostics)
built=$(printf '%s\n' "$artefacts" | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "autoretry_ffi":
        print(*[f for f in m["filenames"] if f.endswith(".wasm")], sep="\n")
')
if [ -z "$built" ] || [ ! -f "$built" ]; then
    echo "ffi/wasm/build.sh: cargo reported no .wasm for autoretry_ffi" >&2
    exit 1
fi
target_dir=$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
# Relative to the root when inside it (the path printed, as before).
case "$target_dir" in
    "$PWD"/*) target_dir=${target_dir#"$PWD"/} ;;
esac
# The module has one name whatever the features: keep each flavour's.
mkdir -p "$target_dir/wasm"
raw=$target_dir/wasm/$name.raw.wasm
cp "$built" "$raw"
if [ "${AUTORETRY_WASM_OPT:-1}" = 0 ]; then
    echo "$raw"
    exit 0
fi
tools=$target_dir/binaryen-$BINARYEN_VERSION
if [ ! -x "$tools/node_modules/.bin/wasm-opt" ]; then
    npm install --silent --no-audit --no-fund --prefix "$tools" "binaryen@$BINARYEN_VERSION" >&2
fi
"$tools/node_modules/.bin/wasm-opt" -Oz \
    --enable-bulk-memory --enable-bulk-memory-opt --enable-sign-ext --enable-mutable-globals \
    --enable-nontrapping-float-to-int --enable-multivalue --enable-reference-types \
    "$raw" -o "$target_dir/wasm/$name.wasm"
echo "$target_dir/wasm/$name.wasm"
