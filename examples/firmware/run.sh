#!/usr/bin/env bash
# Builds the firmware (thumbv7m-none-eabi, release) and runs it under QEMU's
# lm3s6965evb, with the extended classifier (the option vectors need it), the
# curated one (the `curated-*` response vectors) and a machine restored from
# postcard bytes of its snapshot before every step.
# Exits 0 only when the firmware reports every scenario passed (semihosting
# exit status), within the time limit.
set -euo pipefail
cd "$(dirname "$0")"

cargo build --release --bin autoretry-firmware --features extended,curated,snapshot
kernel=target/thumbv7m-none-eabi/release/autoretry-firmware

status=0
timeout 120 qemu-system-arm -cpu cortex-m3 -machine lm3s6965evb -nographic \
    -semihosting-config enable=on,target=native -kernel "$kernel" || status=$?
if [ "$status" -ne 0 ]; then
    if [ "$status" -eq 124 ]; then
        echo "firmware: timed out under QEMU" >&2
    else
        echo "firmware: failed under QEMU (exit status $status)" >&2
    fi
    exit 1
fi
echo "firmware: every scenario passed"
