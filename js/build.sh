#!/usr/bin/env sh
# Builds the two WebAssembly modules (the C ABI, package `autoretry-ffi`, for
# wasm32-unknown-unknown) and copies them next to the wrapper:
# `autoretry.wasm` and `autoretry-rules.wasm` (feature `rules` too:
# `Machine.loadRules`). Needs the Rust toolchain (rustup).
set -eu
cd "$(dirname "$0")"
for flavour in default rules; do
    # The path is the repository root's, or absolute (CARGO_TARGET_DIR).
    wasm=$(../ffi/wasm/build.sh "$flavour")
    case "$wasm" in
        /*) ;;
        *) wasm=../$wasm ;;
    esac
    name=$(basename "$wasm")
    cp "$wasm" "$name"
    echo "js/$name: $(wc -c < "$name") bytes"
done
