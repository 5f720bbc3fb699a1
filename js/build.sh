#!/usr/bin/env sh
# Builds the two WebAssembly modules (the crate's core with its C ABI, for
# wasm32-unknown-unknown) and copies them next to the wrapper:
# `autoretry.wasm` (features `ffi`, `extended`) and `autoretry-rules.wasm`
# (`rules` too: `Machine.loadRules`). Needs the Rust toolchain (rustup).
set -eu
cd "$(dirname "$0")"
for flavour in default rules; do
    wasm=$(../tests/wasm/build.sh "$flavour")
    name=$(basename "$wasm")
    cp "../$wasm" "$name"
    echo "js/$name: $(wc -c < "$name") bytes"
done
