#!/usr/bin/env bash
# Builds the WebAssembly module: the core with the C ABI (feature `ffi`),
# no std, no allocator, optimized for size. Prints the module's path.
#
# `cargo rustc --crate-type cdylib` rather than a `crate-type` in Cargo.toml:
# a cdylib of the no_std core would need a panic handler on every target.
set -euo pipefail
cd "$(dirname "$0")/../.."

rustup target add wasm32-unknown-unknown >/dev/null 2>&1 || true
CARGO_PROFILE_RELEASE_OPT_LEVEL=z \
CARGO_PROFILE_RELEASE_LTO=true \
CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 \
CARGO_PROFILE_RELEASE_PANIC=abort \
CARGO_PROFILE_RELEASE_STRIP=symbols \
    cargo rustc --quiet --lib --crate-type cdylib --release \
        --target wasm32-unknown-unknown --no-default-features --features ffi,extended >&2
echo "target/wasm32-unknown-unknown/release/autoretry.wasm"
