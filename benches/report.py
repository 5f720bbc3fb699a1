"""Turns criterion's estimates, the JavaScript timings and the sizes into
one Markdown report (see report.sh).

    python3 report.py CRITERION_DIR JS_JSON SIZES_JSON NO_ALLOC_STATUS [SIZE_REPORT_TXT [FIRST_USE_JSON]]

Every row gives ours and the alternatives measured in the same run, with
the ratio alternative/ours; the goals table says, per goal, what was
measured and whether it is met; the sizes table comes from
examples/firmware/size-report.sh.
"""

import json
import re
import statistics
import sys
from pathlib import Path

crit, js_path, sizes_path, no_alloc = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
size_report = Path(sys.argv[5]).read_text() if len(sys.argv) > 5 and Path(sys.argv[5]).exists() else ""
first_use = json.loads(Path(sys.argv[6]).read_text()) if len(sys.argv) > 6 and Path(sys.argv[6]).exists() else None
js = json.loads(Path(js_path).read_text())
sizes = json.loads(Path(sizes_path).read_text())
BODIES = ["2KB", "64KB", "1MB", "1MB_match_at_end", "lorem_1MB", "dense_1MB", "limits_1MB"]


def median_ns(*parts):
    """criterion's median point estimate (ns) of one benchmark, or None."""
    f = crit.joinpath(*parts, "new", "estimates.json")
    if not f.exists():
        return None
    return json.loads(f.read_text())["median"]["point_estimate"]


def corpus_median(group, impl):
    d = crit / group / impl
    if not d.is_dir():
        return None
    values = [median_ns(group, impl, p.name) for p in sorted(d.iterdir()) if p.is_dir()]
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt_time(ns):
    if ns is None:
        return "–"
    for unit, scale in (("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def fmt_cell(ns, ours, bytes_=None):
    """Time, throughput when `bytes_` is given, and the ratio
    alternative/ours (×2.0: ours takes half the time)."""
    if ns is None:
        return "–"
    s = fmt_time(ns)
    if bytes_:
        s += f", {fmt_rate(bytes_, ns)}"
    if ours is not None and ns is not ours:
        s += f" (×{ns / ours:.2f})"
    return s


def fmt_rate(bytes_, ns):
    gbs = bytes_ / ns  # bytes per ns = GB/s
    return f"{gbs:.2f} GB/s" if gbs >= 1 else f"{gbs * 1000:.0f} MB/s"


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


lines = []
say = lines.append

# Corpus.
n_texts = len(js["corpus_labels"])
labels = {
    "ours": corpus_median("corpus_labels", "ours"),
    "regex": corpus_median("corpus_labels", "regex"),
    "regexset": corpus_median("corpus_labels", "regexset"),
    "naive": corpus_median("corpus_labels", "naive"),
    "js": statistics.median(js["corpus_labels"]),
}
retry = {
    "ours": corpus_median("corpus_retryable", "ours"),
    "regex": corpus_median("corpus_retryable", "regex"),
    "aho-corasick": corpus_median("corpus_retryable", "aho-corasick"),
    "naive": corpus_median("corpus_retryable", "naive"),
    "js": statistics.median(js["corpus_retryable"]),
}
classify_full = corpus_median("corpus_classify", "ours")
classify_extended = corpus_median("corpus_classify", "extended")

header = ["task", "ours", "regex, one per rule", "RegexSet", "aho-corasick", "naive lowercase + contains", "JS RegExp (Node)"]
# The alternatives the goals compare with (naive is shown, not a goal).
RIVALS = ("regex", "regexset", "aho-corasick", "js")
goals = []  # [goal, measured, met]


def rival_row(task, ours, alts, bytes_=None, goal=None):
    """A row: ours, then each alternative with its ratio; a goal row that
    ours is at least as fast as every rival present."""
    cells = [task, fmt_cell(ours, ours, bytes_)]
    for k in ("regex", "regexset", "aho-corasick", "naive", "js"):
        cells.append(fmt_cell(alts.get(k), ours, bytes_) if alts.get(k) is not None else "–")
    rivals = {k: v for k, v in alts.items() if k in RIVALS and v is not None}
    if goal and ours is not None and rivals:
        best = min(rivals, key=rivals.get)
        goals.append([goal, f"ours {fmt_time(ours)}, fastest rival {best} {fmt_time(rivals[best])} (×{rivals[best] / ours:.2f})",
                      ours <= rivals[best]])
    return cells


say(f"### Corpus: median over the {n_texts} texts of the per-text median time")
say("")
lab_alts = {k: v for k, v in labels.items() if k != "ours"}
say(table(header, [
    rival_row("labels: `matches_overflow` + `matches_retryable` + `matches_usage_limit`", labels["ours"], lab_alts,
              goal="corpus, the three `matches_*`, at least as fast as every rival"),
    rival_row("`classify` (labels + hint; the others: labels)", classify_full, lab_alts,
              goal="corpus, `classify`, at least as fast as every rival"),
    rival_row("`Classifier::Extended.classify` (spec 10.5 labels + 10.4 hint; the others: classic labels)",
              classify_extended, lab_alts),
    rival_row("`matches_retryable` (retryable pattern alone)", retry["ours"], {k: v for k, v in retry.items() if k != "ours"},
              goal="corpus, retryable alone, at least as fast as every rival"),
]))
say("")

# Bodies.
say("### Bodies: median time per body, throughput (GB = 10^9 bytes) and ratio")
say("")
rows = []
def body_alts(group, b):
    alts = {k: median_ns(group, k, b) for k in ("regex", "regexset", "aho-corasick", "naive")}
    alts["js"] = js[group][b]
    return alts
for b in BODIES:
    size = js["bytes"][b]
    rows.append(rival_row(f"labels (three `matches_*`), {b}", median_ns("body_labels", "ours", b), body_alts("body_labels", b), size,
                          goal=f"body {b}, the three `matches_*`, at least as fast as every rival"))
for b in BODIES:
    size = js["bytes"][b]
    rows.append(rival_row(f"`classify`, {b}", median_ns("body_labels", "ours_classify", b), body_alts("body_labels", b), size,
                          goal=f"body {b}, `classify`, at least as fast as every rival"))
for b in BODIES:
    size = js["bytes"][b]
    rows.append(rival_row(f"`Classifier::Extended.classify`, {b}", median_ns("body_labels", "ours_extended", b), body_alts("body_labels", b), size))
for b in BODIES:
    size = js["bytes"][b]
    rows.append(rival_row(f"retryable alone, {b}", median_ns("body_retryable", "ours", b), body_alts("body_retryable", b), size,
                          goal=f"body {b}, retryable alone, at least as fast as every rival"))
say(table(["body"] + header[1:], rows))
say("")
say("The extended rows compare with the alternatives' classic labels, for scale: the alternatives implement the classic patterns only.")
say("")
# The curated classifier (spec 13.2) against a RegexSet of its own patterns
# (alt::CuratedSet): the alternatives above implement the classic patterns.
curated_ours = corpus_median("curated_corpus", "ours")
curated_set = corpus_median("curated_corpus", "regexset")
if curated_ours is not None or (crit / "curated_body").is_dir():
    d = crit / "curated_corpus" / "ours"
    n_curated = len([p for p in d.iterdir() if p.is_dir()]) if d.is_dir() else 0
    say("### Curated classifier: ours against a RegexSet of spec 13.2's patterns")
    say("")
    crows = []
    if curated_ours is not None:
        crows.append([f"corpus (`tests/corpus/curated/`), median over the {n_curated} texts of the per-text median",
                      fmt_cell(curated_ours, curated_ours), fmt_cell(curated_set, curated_ours)])
    mixed_ours, mixed_set = median_ns("curated_mixed", "ours"), median_ns("curated_mixed", "regexset")
    if mixed_ours is not None:
        per_ours = mixed_ours / max(n_curated, 1)
        per_set = None if mixed_set is None else mixed_set / max(n_curated, 1)
        crows.append([f"the same {n_curated} texts one after the other (per text, mean)",
                      fmt_cell(per_ours, per_ours), fmt_cell(per_set, per_ours)])
    for b in BODIES:
        size = js["bytes"][b]
        ours_ns = median_ns("curated_body", "ours", b)
        crows.append([f"body {b}", fmt_cell(ours_ns, ours_ns, size),
                      fmt_cell(median_ns("curated_body", "regexset", b), ours_ns, size)])
    say(table(["`Classifier::Curated.classify` (13.2 labels + hint; RegexSet: labels)", "ours", "RegexSet"], crows))
    say("")
    say("The RegexSet holds 13.2's retryable, usage-limit, never-retried and throttle patterns, `/too many tokens/i` "
        "and the other overflow patterns, with the semantics of 3.1 and an ASCII `\\b` (`benches/src/alt.rs`); "
        "`benches/tests/curated_regexset.rs` and the bench itself check that it gives ours' labels on the curated "
        "and real corpora (the usage limit by its pattern: the long-wait rule reads the hint, which the set does "
        "not compute, while ours does).")
    say("")
    if curated_ours is not None and curated_set is not None:
        goals.append(["curated corpus median faster than its RegexSet",
                      f"ours {fmt_time(curated_ours)}, RegexSet {fmt_time(curated_set)} (×{curated_set / curated_ours:.2f})",
                      curated_ours < curated_set])
    for b in ("lorem_1MB", "1MB"):
        ns = median_ns("curated_body", "ours", b)
        if ns is not None:
            goals.append([f"`Classifier::Curated.classify` ≥ 1 GB/s on body {b}" + (" (`body.html`)" if b == "1MB" else ""), fmt_rate(js["bytes"][b], ns),
                          js["bytes"][b] / ns >= 1.0])
    for b in ("dense_1MB", "limits_1MB"):
        ours_ns, theirs = median_ns("curated_body", "ours", b), median_ns("curated_body", "regexset", b)
        if ours_ns is not None and theirs is not None:
            goals.append([f"body {b}, `Classifier::Curated.classify` not slower than its RegexSet",
                          f"ours {fmt_time(ours_ns)}, RegexSet {fmt_time(theirs)} (×{theirs / ours_ns:.2f})",
                          ours_ns <= theirs])

# The speed goals of issue #23 (GB = 10^9 bytes).
SPEED_GOALS = (
    ("`classify`", "ours_classify", "lorem_1MB", 2.0),
    ("`classify`", "ours_classify", "1MB", 1.5),
    ("`classify`", "ours_classify", "1MB_match_at_end", 1.5),
    ("`Classifier::Extended.classify`", "ours_extended", "lorem_1MB", 1.0),
    ("`Classifier::Extended.classify`", "ours_extended", "1MB", 1.0),
    ("`Classifier::Extended.classify`", "ours_extended", "1MB_match_at_end", 1.0),
)
for what, key, b, goal in SPEED_GOALS:
    ns = median_ns("body_labels", key, b)
    if ns is not None:
        rate = js["bytes"][b] / ns
        goals.append([f"{what} ≥ {goal:g} GB/s on body {b}", fmt_rate(js["bytes"][b], ns), rate >= goal])
for what, ours_ns, theirs in (
    ("corpus median, `classify` faster than RegexSet", classify_full, labels.get("regexset")),
    ("body dense_1MB, `classify` not slower than RegexSet", median_ns("body_labels", "ours_classify", "dense_1MB"),
     median_ns("body_labels", "regexset", "dense_1MB")),
    ("body limits_1MB, `classify` not slower than RegexSet", median_ns("body_labels", "ours_classify", "limits_1MB"),
     median_ns("body_labels", "regexset", "limits_1MB")),
):
    if ours_ns is not None and theirs is not None:
        goals.append([what, f"ours {fmt_time(ours_ns)}, RegexSet {fmt_time(theirs)} (×{theirs / ours_ns:.2f})",
                      ours_ns < theirs if what.startswith("corpus") else ours_ns <= theirs])

# Machine.
MACHINE = [
    ("timer_fired", "`timer_fired`, the pending timer (→ continue)"),
    ("timer_fired_stale", "`timer_fired`, a stale timer (→ nothing)"),
    ("abort_retry", "`abort_retry` during a backoff (→ 4 outputs)"),
    ("abort_retry_idle", "`abort_retry` with no chain (→ nothing)"),
    ("abort_idle", "`abort` with no chain (→ abort the agent)"),
    ("settings", "`settings` (replace the group)"),
    ("set_auto_retry", "`set_auto_retry`"),
    ("message_end_success", "`message_end`, a good message, no chain"),
    ("agent_end_success", "`agent_end`, a good run, no chain"),
    ("agent_end_not_retryable", "`agent_end`, non-retryable error (401)"),
    ("agent_end_retryable", "`agent_end`, retryable error (529 overloaded) opens a chain"),
    ("agent_end_retryable_jitter", "… with jitter 25 % (one draw)"),
    ("agent_end_retryable_hint", "… with hints honoured, `retry-after: 7` in the text"),
    ("agent_end_retryable_modern", "… the modern profile (extended classifier, jitter, hints, cap, ceiling), same text"),
    ("default_chain", "a whole default chain: 4 × `agent_end` + 3 × `timer_fired`"),
    ("stream_event", "`Machine::stream_event` with the stream's watch pending (stores its time)"),
    ("stream_event_handle", "… the same input through `Machine::handle` (its output buffer)"),
    ("stream_event_thread", "… through `ThreadDriver::stream_event`, its clock read included"),
    ("stream_event_tokio", "… through the tokio driver's `stream_event`, its clock read included"),
]
NON_CLASSIFYING = ["timer_fired", "timer_fired_stale", "abort_retry", "abort_retry_idle", "abort_idle", "settings",
                   "set_auto_retry", "message_end_success", "agent_end_success", "stream_event",
                   "stream_event_handle"]
base = median_ns("machine", "agent_end_retryable")
say("### The machine: median time per input")
say("")
mrows = []
for key, what in MACHINE:
    ns = median_ns("machine", key)
    extra = ""
    if key == "default_chain" and ns:
        extra = f" ({fmt_time(ns / 7)} per input)"
    elif key.startswith("agent_end_retryable_") and ns and base:
        extra = f" ({ns - base:+.3g} ns against no option)"
    mrows.append([what, fmt_time(ns) + extra])
say(table(["input", "ours"], mrows))
say("")
if first_use:
    f = first_use
    say(f"First use (`benches/src/first_use.rs`, one process): the first `classify` of a {f['text_bytes']}-byte text "
        f"builds the std tables and the factor searcher, once per process: {fmt_time(f['classic_first_ns'])} and "
        f"{f['classic_first_heap'] / 1024:.0f} KiB of heap kept, against {fmt_time(f['classic_again_ns'])} for the same call "
        f"once built; the extended classifier's first use adds {fmt_time(f['extended_first_ns'])} and "
        f"{f['extended_first_heap'] / 1024:.0f} KiB" +
        (f"; the curated classifier's first use (its tables and its own factor searcher) adds "
         f"{fmt_time(f['curated_first_ns'])} and {f['curated_first_heap'] / 1024:.0f} KiB, against "
         f"{fmt_time(f['curated_again_ns'])} for the same call once built." if "curated_first_ns" in f else "."))
    say("")
say("`size_of`: " + ", ".join(f"`{k}` {v}" + ("" if k == "MAX_OUTPUTS" else " B") for k, v in sizes.items()) + ".")
say("")
measured = {k: median_ns("machine", k) for k in NON_CLASSIFYING}
measured = {k: v for k, v in measured.items() if v is not None}
if measured:
    slowest = max(measured, key=measured.get)
    goals.append(["≤ 20 ns for every input that classifies nothing", f"slowest `{slowest}` {fmt_time(measured[slowest])}",
                  measured[slowest] <= 20])
stream = median_ns("machine", "stream_event")
if stream is not None:
    goals.append(["≤ 5 ns for `stream_event` with the watch pending (`Machine::stream_event`, same run as "
                  "`timer_fired`)", fmt_time(stream), stream <= 5])
goals.append(["zero heap allocations in the core", f"tests/no_alloc.rs: {no_alloc}", no_alloc == "passed"])
goals.append(["`size_of::<Machine>()` ≤ 192 B", f"{sizes['Machine']} B", sizes["Machine"] <= 192])

# Sizes.
def grab(pattern):
    m = re.search(pattern, size_report)
    return int(m.group(1)) if m else None

size_rows = [
    ("firmware flash, classic core (`default-features = false`)", grab(r"flash \(\.text \+ \.rodata\): (\d+) bytes"), 48 * 1024),
    ("… `.data`", grab(r"also \.data (\d+) bytes"), 0),
    ("firmware flash, feature `extended`", grab(r"feature extended \(.*?\): (\d+) bytes"), None),
    ("firmware flash, feature `serde` on", grab(r"feature serde on \(.*?\): (\d+) bytes"), None),
    ("firmware flash, feature `rules` (the example rule set's blob + search)", grab(r"verdict: (\d+) bytes of flash"), None),
    ("default .wasm (`autoretry.wasm`, the classic classifier)", grab(r"\.wasm: (\d+) bytes"), 64 * 1024),
    ("`autoretry-extended.wasm` (feature `extended`)", grab(r"autoretry-extended\.wasm, (\d+) bytes"), None),
    ("`autoretry-curated.wasm` (features `curated` and `extended`)", grab(r"autoretry-curated\.wasm, (\d+) bytes"), None),
]
if size_report:
    say("### Sizes (examples/firmware/size-report.sh, thumbv7m-none-eabi at opt-level z; wasm32-unknown-unknown)")
    say("")
    say(table(["feature set", "bytes", "budget"], [
        [what, "–" if n is None else f"{n:,} B ({n / 1024:.1f} KiB)", "–" if budget is None else (f"≤ {budget:,} B" if budget else "0 B")]
        for what, n, budget in size_rows]))
    say("")
    for what, n, budget in size_rows:
        if budget is not None and n is not None:
            goals.append([f"{what} within budget", f"{n:,} B of {budget:,} B", n <= budget])

say("### Goals")
say("")
say(table(["goal", "measured", "status"], [[g, m, "met" if ok else "**not met**"] for g, m, ok in goals]))
say("")
say(f"JS RegExp disagrees with the corpus labels on {js['disagreements']} of {n_texts} texts "
    "(its `.` is one UTF-16 code unit and its `\\s` Unicode white space).")

# Your own rules (the example rule set) against a RegexSet of its patterns.
if median_ns("rules_corpus", "dense") is not None:
    impls = [("dense", "`Rules::compile` (dense)"), ("sparse", "the committed blob (sparse)"),
             ("regexset", "RegexSet")]
    per_text = {k: median_ns("rules_corpus", k) / n_texts for k, _ in impls}
    rows = [["corpus, per text"] + [fmt_cell(per_text[k], per_text["dense"]) for k, _ in impls]]
    for size, n in (("2KB", 2 << 10), ("64KB", 64 << 10)):
        times = {k: median_ns("rules_body", k, size) for k, _ in impls}
        rows.append([f"body, {size}"] + [fmt_cell(times[k], times["dense"], n) for k, _ in impls])
    say("")
    say("#### Your own rules: the example rule set (tests/rules/example.json, 7 patterns)")
    say("")
    say(table(["verdict of"] + [label for _, label in impls], rows))
    say("")
    say("Ratios are each column's time over the dense DFA's.")

print("\n".join(lines))
