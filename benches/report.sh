#!/usr/bin/env bash
# The whole performance report in one command: the criterion benches
# (classifier against regex, RegexSet, aho-corasick and a naive baseline;
# the machine per input), the JavaScript RegExp reference, size_of, and the
# allocation test and the size report, then one Markdown report of medians and ratios on stdout
# (also written to benches/target/report/report.md).
#
#     bash benches/report.sh
#
# Needs cargo, node (20+) and python3. About 5 minutes on two cores once
# built, 7 from a clean build.
set -euo pipefail
cd "$(dirname "$0")"
start=$(date +%s)
out=target/report
mkdir -p "$out"
log() { printf '==> %s\n' "$*" >&2; }
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# Only this run's numbers: criterion would otherwise keep stale ones.
rm -rf target/criterion

log "criterion benches (log: benches/$out/criterion.log)"
if ! cargo bench --benches > "$out/criterion.log" 2>&1; then
    tail -40 "$out/criterion.log" >&2
    exit 1
fi

log "size_of"
cargo run -q --bin sizes > "$out/sizes.json"

log "first use"
cargo run -q --release --bin first_use > "$out/first_use.json"

log "JavaScript RegExp reference ($(node --version))"
cargo run -q --bin patterns > "$out/patterns.json"
node js/classify.mjs "$out/patterns.json" > "$out/js.json"

log "examples/firmware/size-report.sh (log: benches/$out/size-report.txt)"
(cd .. && bash examples/firmware/size-report.sh) > "$out/size-report.txt" 2>&1 || true

log "tests/no_alloc.rs"
if (cd .. && cargo test -q --test no_alloc) > "$out/no_alloc.log" 2>&1; then
    no_alloc=passed
else
    no_alloc=failed
fi

aho=$(grep -m1 '^aho-corasick literals:' "$out/criterion.log" || true)
elapsed=$(($(date +%s) - start))
{
    echo "Machine: $(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1), $(nproc) cores;" \
        "$(rustc --version); Node $(node --version); commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- .. || echo ' (with local changes)')."
    echo "Load average before/after: $load_before / $(cut -d' ' -f1-3 /proc/loadavg);" \
        "the report took ${elapsed} s."
    echo
    python3 report.py target/criterion "$out/js.json" "$out/sizes.json" "$no_alloc" "$out/size-report.txt" "$out/first_use.json"
    echo
    echo "${aho:-aho-corasick literals: no comparison found in the log.}"
} > "$out/report.md"
cat "$out/report.md"
