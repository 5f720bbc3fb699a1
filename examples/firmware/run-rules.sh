#!/usr/bin/env bash
# Builds the firmware's `rules` program (the example rules from the
# compiled blob tests/rules/example.bin, thumbv7m-none-eabi, release) and
# runs it under QEMU's lm3s6965evb. Exits 0 only when the program reports
# every check passed (semihosting exit status) within the time limit.
set -euo pipefail
cd "$(dirname "$0")"

cargo build --release --bin rules --features rules
kernel=target/thumbv7m-none-eabi/release/rules

status=0
timeout 120 qemu-system-arm -cpu cortex-m3 -machine lm3s6965evb -nographic \
    -semihosting-config enable=on,target=native -kernel "$kernel" || status=$?
if [ "$status" -ne 0 ]; then
    if [ "$status" -eq 124 ]; then
        echo "firmware rules: timed out under QEMU" >&2
    else
        echo "firmware rules: failed under QEMU (exit status $status)" >&2
    fi
    exit 1
fi
echo "firmware rules: every check passed"
