"""Turns criterion's estimates, the JavaScript timings and the sizes into
one Markdown report (see report.sh).

    python3 report.py CRITERION_DIR JS_JSON SIZES_JSON NO_ALLOC_STATUS
"""

import json
import statistics
import sys
from pathlib import Path

crit, js_path, sizes_path, no_alloc = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
js = json.loads(Path(js_path).read_text())
sizes = json.loads(Path(sizes_path).read_text())
BODIES = ["2KB", "64KB", "1MB", "1MB_match_at_end"]


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
say(f"### Corpus: median over the {n_texts} texts of the per-text median time")
say("")
say(table(header, [
    ["labels (retryable, overflow, usage limit)"] + [fmt_cell(labels[k], labels["ours"]) for k in ("ours", "regex", "regexset")]
    + ["–"] + [fmt_cell(labels[k], labels["ours"]) for k in ("naive", "js")],
    ["`classify` (labels + hint)", fmt_cell(classify_full, None), "–", "–", "–", "–", "–"],
    ["`classify_with(.., Extended)` (spec 10.5 labels + 10.4 hint)", fmt_cell(classify_extended, None), "–", "–", "–", "–", "–"],
    ["retryable pattern alone"] + [fmt_cell(retry["ours"], retry["ours"]), fmt_cell(retry["regex"], retry["ours"]), "–"]
    + [fmt_cell(retry[k], retry["ours"]) for k in ("aho-corasick", "naive", "js")],
]))
say("")

# Bodies.
say("### Bodies: median time per body, throughput (GB = 10^9 bytes) and ratio")
say("")
rows = []
for b in BODIES:
    size = js["bytes"][b]
    ours = median_ns("body_labels", "ours", b)
    rows.append([f"labels, {b}", fmt_cell(ours, ours, size)]
                + [fmt_cell(median_ns("body_labels", k, b), ours, size) for k in ("regex", "regexset")]
                + ["–", fmt_cell(median_ns("body_labels", "naive", b), ours, size),
                   fmt_cell(js["body_labels"][b], ours, size)])
for b in BODIES:
    size = js["bytes"][b]
    ours = median_ns("body_retryable", "ours", b)
    rows.append([f"retryable alone, {b}", fmt_cell(ours, ours, size),
                 fmt_cell(median_ns("body_retryable", "regex", b), ours, size), "–"]
                + [fmt_cell(median_ns("body_retryable", k, b), ours, size) for k in ("aho-corasick", "naive")]
                + [fmt_cell(js["body_retryable"][b], ours, size)])
say(table(["body"] + header[1:], rows))
say("")
full = {b: median_ns("body_labels", "ours_classify", b) for b in BODIES}
say("`classify` (labels + hint) on the bodies: "
    + ", ".join(f"{b} {fmt_cell(full[b], None, js['bytes'][b])}" for b in BODIES) + ".")
extended = {b: median_ns("body_labels", "ours_extended", b) for b in BODIES}
say("`classify_with(.., Extended)` on the bodies: "
    + ", ".join(f"{b} {fmt_cell(extended[b], None, js['bytes'][b])}" for b in BODIES) + ".")
say("")

# Machine.
MACHINE = [
    ("timer_fired", "`timer_fired`, the pending timer (→ continue)"),
    ("timer_fired_stale", "`timer_fired`, a stale timer (→ nothing)"),
    ("abort_retry", "`abort_retry` during a backoff (→ 4 outputs)"),
    ("abort_retry_idle", "`abort_retry` with no chain (→ nothing)"),
    ("agent_end_success", "`agent_end`, a good run, no chain"),
    ("agent_end_not_retryable", "`agent_end`, non-retryable error (401)"),
    ("agent_end_retryable", "`agent_end`, retryable error (529 overloaded) opens a chain"),
    ("default_chain", "a whole default chain: 4 × `agent_end` + 3 × `timer_fired`"),
]
say("### The machine: median time per input")
say("")
mrows = []
for key, what in MACHINE:
    ns = median_ns("machine", key)
    extra = f" ({fmt_time(ns / 7)} per input)" if key == "default_chain" and ns else ""
    mrows.append([what, fmt_time(ns) + extra])
say(table(["input", "ours"], mrows))
say("")
say("`size_of`: " + ", ".join(f"`{k}` {v}" + ("" if k == "MAX_OUTPUTS" else " B") for k, v in sizes.items()) + ".")
say("")

# Goals.
def mark(ok):
    return "met" if ok else "**not met**"

alts_labels = [v for k, v in labels.items() if k != "ours" and v is not None]
alts_retry = [v for k, v in retry.items() if k != "ours" and v is not None]
rate_1mb = js["bytes"]["1MB"] / median_ns("body_labels", "ours", "1MB")
rate_1mb_r = js["bytes"]["1MB"] / median_ns("body_retryable", "ours", "1MB")
non_classifying = ["timer_fired", "timer_fired_stale", "abort_retry", "abort_retry_idle", "agent_end_success"]
worst = max(median_ns("machine", k) for k in non_classifying)
say("### Goals")
say("")
say(table(["goal", "measured", "status"], [
    ["corpus median at least as fast as every alternative (labels)",
     f"ours {fmt_time(labels['ours'])}, fastest alternative {fmt_time(min(alts_labels))}",
     mark(labels["ours"] <= min(alts_labels))],
    ["… and on the retryable pattern alone",
     f"ours {fmt_time(retry['ours'])}, fastest alternative {fmt_time(min(alts_retry))}",
     mark(retry["ours"] <= min(alts_retry))],
    ["≥ 1 GB/s on 1 MB non-matching bodies (labels)", fmt_rate(js["bytes"]["1MB"], median_ns("body_labels", "ours", "1MB")),
     mark(rate_1mb >= 1)],
    ["… retryable pattern alone", fmt_rate(js["bytes"]["1MB"], median_ns("body_retryable", "ours", "1MB")),
     mark(rate_1mb_r >= 1)],
    ["≤ 20 ns per non-classifying input", f"slowest {fmt_time(worst)}", mark(worst <= 20)],
    ["zero heap allocations in the core", f"tests/no_alloc.rs: {no_alloc}", mark(no_alloc == "passed")],
    ["`size_of::<Machine>()` ≤ 96 B", f"{sizes['Machine']} B", mark(sizes["Machine"] <= 96)],
]))
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
