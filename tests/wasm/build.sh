#!/usr/bin/env bash
# Builds a WebAssembly module: the core with the C ABI (feature `ffi`), no
# std, no allocator, optimized for size. Prints the module's path.
#
#     tests/wasm/build.sh          # target/wasm/autoretry.wasm: features ffi, extended
#     tests/wasm/build.sh rules    # target/wasm/autoretry-rules.wasm: ffi, extended, rules
#
# The default module keeps within its 64 KiB goal; the `rules` one adds the
# loader of compiled rules blobs (`autoretry_rules_load`, regex-automata's
# validation and search), about 21 KB more, so it is a module of its own.
#
# `cargo rustc --crate-type cdylib` rather than a `crate-type` in Cargo.toml:
# a cdylib of the no_std core would need a panic handler on every target.
#
# Then binaryen's `wasm-opt -Oz` (npm package `binaryen`, pinned, installed
# into target/ on first use) shrinks the module by about a sixth; the
# features enabled are those rustc's wasm32-unknown-unknown target emits.
# `AUTORETRY_WASM_OPT=0` skips it (the path printed is then rustc's module).
set -euo pipefail
cd "$(dirname "$0")/../.."

case "${1:-default}" in
    default) features=ffi,extended name=autoretry ;;
    rules) features=ffi,extended,rules name=autoretry-rules ;;
    *)
        echo "usage: tests/wasm/build.sh [default|rules]" >&2
        exit 2
        ;;
esac

BINARYEN_VERSION=132.0.0

rustup target add wasm32-unknown-unknown >/dev/null 2>&1 || true
CARGO_PROFILE_RELEASE_OPT_LEVEL=z \
CARGO_PROFILE_RELEASE_LTO=true \
CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 \
CARGO_PROFILE_RELEASE_PANIC=abort \
CARGO_PROFILE_RELEASE_STRIP=symbols \
    cargo rustc --quiet --lib --crate-type cdylib --release \
        --target wasm32-unknown-unknown --no-default-features --features "$features" >&2
# rustc's module has one name whatever the features: keep each flavour's.
mkdir -p target/wasm
raw=target/wasm/$name.raw.wasm
cp target/wasm32-unknown-unknown/release/autoretry.wasm "$raw"
if [ "${AUTORETRY_WASM_OPT:-1}" = 0 ]; then
    echo "$raw"
    exit 0
fi
tools=target/binaryen-$BINARYEN_VERSION
if [ ! -x "$tools/node_modules/.bin/wasm-opt" ]; then
    npm install --silent --no-audit --no-fund --prefix "$tools" "binaryen@$BINARYEN_VERSION" >&2
fi
"$tools/node_modules/.bin/wasm-opt" -Oz \
    --enable-bulk-memory --enable-bulk-memory-opt --enable-sign-ext --enable-mutable-globals \
    --enable-nontrapping-float-to-int --enable-multivalue --enable-reference-types \
    "$raw" -o "target/wasm/$name.wasm"
echo "target/wasm/$name.wasm"
