#!/usr/bin/env sh
# Builds the WebAssembly module (the crate's core with its C ABI, features
# `ffi` and `extended`, for wasm32-unknown-unknown) and copies it next to
# the wrapper as `autoretry.wasm`. Needs the Rust toolchain (rustup).
set -eu
cd "$(dirname "$0")"
wasm=$(../tests/wasm/build.sh)
cp "../$wasm" autoretry.wasm
echo "js/autoretry.wasm: $(wc -c < autoretry.wasm) bytes"
