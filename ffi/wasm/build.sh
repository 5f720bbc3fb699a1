#!/usr/bin/env bash
# Builds a WebAssembly module: the C ABI (package `autoretry-ffi`) for
# wasm32-unknown-unknown, no std, no allocator, optimized for size (the
# workspace's profile `wasm-module`). Prints the module's path.
#
#     ffi/wasm/build.sh          # target/wasm/autoretry.wasm
#     ffi/wasm/build.sh rules    # target/wasm/autoretry-rules.wasm: feature rules too
#
# The default module keeps within its 64 KiB goal; the `rules` one adds the
# loader of compiled rules blobs (`autoretry_rules_load`, regex-automata's
# validation and search), about 21 KB more, so it is a module of its own.
# Neither has the package's default `prefilter` (it needs std).
#
# Then binaryen's `wasm-opt -Oz` (npm package `binaryen`, pinned, installed
# into target/ on first use) shrinks the module by about a sixth; the
# features enabled are those rustc's wasm32-unknown-unknown target emits.
# `AUTORETRY_WASM_OPT=0` skips it (the path printed is then rustc's module).
set -euo pipefail
cd "$(dirname "$0")/../.."

case "${1:-default}" in
    default) features= name=autoretry ;;
    rules) features=rules name=autoretry-rules ;;
    *)
        echo "usage: ffi/wasm/build.sh [default|rules]" >&2
        exit 2
        ;;
esac

BINARYEN_VERSION=132.0.0

rustup target add wasm32-unknown-unknown >/dev/null 2>&1 || true
# `cargo rustc --crate-type cdylib`: cargo runs LTO only when every crate
# type of the package is one LTO applies to, and the rlib (the tests' and
# the fuzz target's) is not; without LTO the module is about 3.4 KB larger.
cargo rustc --quiet -p autoretry-ffi --lib --crate-type cdylib --profile wasm-module \
    --target wasm32-unknown-unknown --no-default-features --features "$features" >&2
# The module has one name whatever the features: keep each flavour's.
mkdir -p target/wasm
raw=target/wasm/$name.raw.wasm
cp target/wasm32-unknown-unknown/wasm-module/autoretry_ffi.wasm "$raw"
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
