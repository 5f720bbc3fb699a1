#!/usr/bin/env sh
# Builds the four WebAssembly modules (the C ABI, package `autoretry-ffi`,
# for wasm32-unknown-unknown) and copies them next to the wrapper:
# `autoretry.wasm` (the classic classifier), `autoretry-extended.wasm` (the
# extended classifier and the modern profile too), `autoretry-rules.wasm`
# (both, and `Machine.loadRules`) and `autoretry-curated.wasm` (the
# extended classifier and the curated one of spec 13.2). Needs the Rust
# toolchain (rustup).
set -eu
cd "$(dirname "$0")"
for flavour in default extended rules curated; do
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
