#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets into fuzz/corpus/<target>/.

The seeds come from the committed vectors (tests/vectors/,
tests/vectors/options/ and tests/vectors/stream/, whose scenarios become
machine seeds too), the error-text corpus (tests/corpus/errors.jsonl),
the header cases (tests/corpus/headers.jsonl and the header vectors of
tests/vectors/response/),
plus machine inputs encoded in the byte format that
`autoretry_testkit::fuzzing::fuzz_machine` reads (the policy options of spec
section 10 and the stream of section 12 included). Deterministic: running
it again writes the same files.
"""
import hashlib
import json
import pathlib
import random
import struct

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "fuzz" / "corpus"


def write(target, data):
    d = OUT / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()).write_bytes(data)


def corpus_texts():
    with open(ROOT / "tests" / "corpus" / "errors.jsonl", encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f if line.strip()]


def vector_lines():
    paths = sorted((ROOT / "tests" / "vectors").glob("*.jsonl"))
    paths += sorted((ROOT / "tests" / "vectors" / "options").glob("*.jsonl"))
    paths += sorted((ROOT / "tests" / "vectors" / "stream").glob("*.jsonl"))
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    yield json.loads(line)


texts = corpus_texts()
lines = list(vector_lines())

# classify: every corpus text, and a few with invalid UTF-8 and folding letters.
for t in texts:
    write("classify", t.encode())
for extra in [b"rate\xe2\x80limit", b"\xff400 (no body)", "ſervice unavailable".encode(),
              "too many to\u212aens".encode(), "İnternal error".encode()]:
    write("classify", extra)

# hint: the corpus texts that carry a hint, with and without a clock.
now = struct.pack(">Q", 1_700_000_000_000)
for t in texts:
    low = t.lower()
    if "retry-after" in low or "ratelimit-reset" in low:
        write("hint", b"\x00" + t.encode())
        write("hint", b"\x01" + now + t.encode())
for v in lines:
    msg = (v.get("in") or {}).get("message") or {}
    t = msg.get("errorMessage")
    if t and ("retry" in t.lower() or "reset" in t.lower()):
        write("hint", b"\x01" + now + t.encode())

# headers: every case of the header corpus (spec 13.1), and every message
# headers of the response vectors, as `name:value` lines after the clock.
def headers_seed(pairs, now_ms):
    head = b"\x00" if now_ms is None else b"\x01" + struct.pack(">Q", now_ms)
    return head + b"\n".join(n.encode() + b":" + v.encode() for n, v in pairs)


with open(ROOT / "tests" / "corpus" / "headers.jsonl", encoding="utf-8") as f:
    for line in f:
        if line.strip():
            case = json.loads(line)
            write("headers", headers_seed(case["headers"], case["nowMs"]))
for path in sorted((ROOT / "tests" / "vectors" / "response").glob("headers-*.jsonl")):
    with open(path, encoding="utf-8") as f:
        for line in f:
            headers = ((json.loads(line).get("in") or {}).get("message") or {}).get("headers")
            if isinstance(headers, list) and all(
                isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p)
                for p in headers
            ):
                write("headers", headers_seed(headers, 1_790_000_000_000))

# settings_json: every settings group of the vectors, valid or not.
for v in lines:
    if "settings" in v:
        write("settings_json", json.dumps(v["settings"]).encode())
    inp = v.get("in") or {}
    if inp.get("type") == "settings":
        write("settings_json", json.dumps(inp["settings"]).encode())
for raw in ['{"maxRetries":-0}', '{"maxRetries":3.0}', '{"baseDelayMs":18446744073709551616}',
            '{"enabled":null}', '[]', '{"maxRetries":1,"maxRetries":2}',
            # Spec 10.1: the profile's defaults and the new keys' validation.
            '{"profile":"modern"}', '{"profile":"modern","maxRetries":2,"classifier":"classic"}',
            '{"jitterPct":101}', '{"jitterPct":100,"honorHints":true}', '{"profile":null}',
            '{"classifier":"Extended"}', '{"maxDelayMs":18446744073709551615,"backoffCapMs":0}']:
    write("settings_json", raw.encode())

# rpc_line: the commands of spec 7 on each of the four machine states.
for state in range(4):
    for raw in ['{"type":"set_auto_retry","enabled":true,"id":"r1"}',
                '{"type":"abort_retry","id":"r2"}', '{"type":"get_retry_state"}',
                '{"type":"set_auto_retry","id":5}', '{"type":"reboot"}', 'not json']:
        write("rpc_line", bytes([state]) + raw.encode())
    for raw in ['{"type":"set_retry_settings","settings":{"profile":"modern"},"id":"s1"}',
                '{"type":"set_retry_settings","settings":{"jitterPct":101}}']:
        write("rpc_line", bytes([state]) + raw.encode())

# machine: hand-written chains, then random op sequences.
DEFAULT = bytes([1, 3, 2, 0, 0])  # enabled, maxRetries 3, 2000 ms, no window, no store
STORE = bytes([1, 3, 2, 0, 1])    # ... with a credential store
FAIL = bytes([0, 4, 1, 1, 1, 0])  # agent_end, error, "529 overloaded_error", no usage, no clock
USAGE = bytes([0, 4, 1, 6, 1, 2])  # agent_end, error, usage-limit text, clock
OK = bytes([0, 0, 0, 1, 0])       # agent_end stop
FIRE = bytes([14])
ANSWER = lambda switched: bytes([8, 0 if switched else 1, 1])
seeds = [
    DEFAULT + FAIL + FIRE + OK,
    DEFAULT + (FAIL + FIRE) * 4,
    DEFAULT + FAIL + bytes([10]) + FIRE,
    DEFAULT + FAIL + FIRE + bytes([11]),
    DEFAULT + FAIL + bytes([12, 1]) + FIRE + FAIL,
    DEFAULT + FAIL + bytes([13, 1, 1, 1]) + FIRE + FAIL,
    DEFAULT + FAIL + FAIL + bytes([6, 2]),
    STORE + USAGE + ANSWER(True) + FIRE + USAGE + ANSWER(False),
    STORE + USAGE + bytes([10]) + ANSWER(True),
    STORE + USAGE + bytes([8, 0, 0, 5]),
    bytes([1, 0, 2, 0, 0]) + FAIL,
    bytes([1, 4, 5, 1, 0]) + bytes([0, 4, 1, 1, 0, 3, 6, 0]),
]
for s in seeds:
    write("machine", s)

# machine, spec section 10: settings with the options (a set high bit of the
# group's first byte), seeded hosts, messages with the host's fields.
def options(profile=1, ceiling=4, cap=3, jitter=1, honor=1, classifier=1, retries=4, base=2):
    """ceiling and cap pick from LIMITS (4: 300000, 3: 8000), jitter 1 is 25 %,
    retries 4 is 5, base 2 is 2000 ms."""
    return bytes([0x81, profile, ceiling, cap, jitter, honor, classifier, retries, base])

def host(window=0, store=False, seed=42):
    return bytes([window, 2 | int(store)]) + struct.pack(">Q", seed)

def message(first, text=1, usage=b"\x01"):
    """An agent_end: `first` is the stop reason and the field bits, then the
    text pick, the usage, no clock."""
    return bytes([0, first]) + bytes([1, text]) + usage + b"\x00"

MODERN = options() + host()
MODERN_STORE = options() + host(store=True)
FAIL_HINTED = bytes([0, 0x24, 6, 1, 1, 1, 0])        # retryAfterMs 11180000
OPTION_TEXT = lambda i: message(0x44, i)              # a text of OPTION_TEXTS
VERDICT = lambda verdict, text: message(4 | (8 if verdict else 16), text)
CACHE_WRITE = message(4, 1, bytes([4, 1, 0, 2]))      # 1000 input + 600 written
option_seeds = [
    MODERN + (FAIL + FIRE) * 3 + OK,
    MODERN + FAIL_HINTED,
    MODERN + FAIL + FIRE + FAIL_HINTED,
    MODERN_STORE + OPTION_TEXT(0) + ANSWER(False),
    MODERN_STORE + OPTION_TEXT(0) + ANSWER(True) + FIRE + OK,
    MODERN + OPTION_TEXT(3) + FIRE + OPTION_TEXT(4) + FIRE + OPTION_TEXT(6),
    MODERN + VERDICT(True, 13) + VERDICT(False, 1),
    options() + host(window=1) + CACHE_WRITE,
    options(classifier=0, honor=0, jitter=2, ceiling=2) + host(seed=7) + (FAIL + FIRE) * 4,
    DEFAULT + FAIL + bytes([13]) + options(ceiling=1) + FIRE + FAIL,
]
for s in option_seeds:
    write("machine", s)
rng = random.Random(5)
for _ in range(30):
    write("machine", bytes(rng.randrange(256) for _ in range(rng.randrange(8, 200))))

# machine, spec section 12: settings with the stream's keys (bit 5 of the
# group's first byte: firstEventTimeoutMs, idleTimeoutMs, retryEmpty),
# stream inputs (an op byte of 14 with bit 7, bit 4 for an event; a clock
# byte: 0 a step forward, 1 the same time, 2 a step back, 3 an absolute
# u64), empty messages (bit 3 of the usage byte). Every scenario of
# tests/vectors/stream/ in that format, then hand-written ones.
MAX_RETRIES = [0, 1, 2, 3, 5, 64, 2**32 - 1]
DELAYS = [0, 1, 2000, 1 << 62, (2**64 - 1) // 3, 2**64 - 1]
STREAM_LIMITS = [0, 1, 100, 1000, 300_000, 2**64 - 1]
STOPS = {"stop": 0, "length": 1, "toolUse": 2, "aborted": 3, "error": 4}

def number(v, table):
    """A figure as `Reader::number` reads it: its index in the table, or
    the table's length and the u64."""
    return bytes([table.index(v)]) if v in table else bytes([len(table)]) + struct.pack(">Q", v)

def stream_settings(g):
    """A settings group of the vectors in the fuzz format, or None when the
    format cannot say it (a refused group)."""
    known = {"profile", "enabled", "maxRetries", "baseDelayMs", "jitterPct",
             "firstEventTimeoutMs", "idleTimeoutMs", "retryEmpty"}
    if not isinstance(g, dict) or set(g) - known:
        return None
    modern = g.get("profile") == "modern"
    d = (300_000, 300_000, True) if modern else (0, 0, False)
    first, idle = g.get("firstEventTimeoutMs", d[0]), g.get("idleTimeoutMs", d[1])
    empty = g.get("retryEmpty", d[2])
    ints = [g.get("maxRetries", 3), g.get("baseDelayMs", 2000), first, idle]
    if not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**64 for v in ints) \
            or not isinstance(empty, bool) or g.get("enabled", True) is not True:
        return None
    head = bytes([0x21 | (0x80 if modern else 0)])
    if modern:
        # The modern column: a 300 s ceiling, an 8 s cap, the jitter given
        # (0 or 25 %), hints honoured, the extended classifier.
        head += bytes([1, 4, 3, 0 if g.get("jitterPct", 25) == 0 else 1, 1, 1])
    return (head + number(ints[0], MAX_RETRIES) + number(ints[1], DELAYS)
            + number(first, STREAM_LIMITS) + number(idle, STREAM_LIMITS) + bytes([int(empty)]))

def stream_message(m):
    """A message in the fuzz format (stop reason, text, empty, partial), or
    None when the format cannot say it (a field the host refuses)."""
    empty = m.get("empty")
    if empty is not None and not isinstance(empty, bool):
        return None
    first = STOPS[m["stopReason"]]
    if m.get("shouldRetry") is not None:
        first |= 8 if m["shouldRetry"] else 16
    partial = m.get("partial", "none")
    if partial != "none":
        first |= 0x80
    text = m.get("errorMessage")
    raw = bytes([1, 200, len(text.encode()[:255])]) + text.encode()[:255] if text else bytes([0])
    out = bytes([first]) + raw + bytes([1 | (8 if empty else 0)])
    if partial != "none":
        out += bytes([0 if partial == "text" else 1])
    return out

def stream_seed(path):
    with open(path, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f if line.strip()]
    seed = stream_settings(lines[0].get("settings", {}))
    if seed is None:
        return None
    seed += bytes([0, 0])  # no window, no store
    pending = None
    for v in lines[1:]:
        inp, out = v["in"], v.get("out", [])
        kind = inp.get("type")
        if kind in ("stream_start", "stream_event"):
            now = inp.get("nowMs")
            if not isinstance(now, int) or isinstance(now, bool) or not 0 <= now < 2**64:
                continue
            seed += bytes([0x8E if kind == "stream_start" else 0x9E, 3]) + struct.pack(">Q", now)
        elif kind in ("agent_end", "message_end"):
            m = stream_message(inp["message"])
            if m is None:
                continue
            seed += bytes([0]) + m + bytes([0]) if kind == "agent_end" else bytes([4]) + m
        elif kind == "timer_fired":
            if inp["timer"] == pending:
                seed += bytes([6, 0])
                pending = None
            else:
                seed += bytes([6, 3]) + struct.pack(">Q", 0)  # a stale id
        elif kind == "settings":
            group = stream_settings(inp["settings"])
            if group is None:
                continue
            seed += bytes([13]) + group
        elif kind in ("abort", "abort_retry"):
            seed += bytes([11 if kind == "abort" else 10])
        elif kind == "set_auto_retry":
            seed += bytes([12, 0 if inp.get("enabled") else 1])
        else:
            continue
        for o in out:
            if o["type"] in ("sleep", "watch"):
                pending = o["timer"]
            elif o["type"] == "cancel_timer" and o["timer"] == pending:
                pending = None
    return seed

stream_paths = sorted((ROOT / "tests" / "vectors" / "stream").glob("*.jsonl"))
stream_seeds = [seed for seed in map(stream_seed, stream_paths) if seed]
assert len(stream_seeds) >= 15, len(stream_seeds)
STREAM = bytes([0x21, 3, 2, 3, 3, 1, 0, 0])  # 1000 ms limits, retryEmpty
START = lambda clock=b"\x00\x06": bytes([0x8E]) + clock  # 1000 ms on
EVENT = lambda clock=b"\x00\x05": bytes([0x9E]) + clock  # 999 ms on
ABORTED = bytes([0, 3, 1, 1, 1, 0])
stream_seeds += [
    # A watch re-armed, a stall, its retry; an empty answer retried.
    STREAM + START() + EVENT() + FIRE * 2 + ABORTED + FIRE + bytes([0, 0, 0, 9, 0]),
    # The clock stalls, goes back and jumps; pings never come in.
    STREAM + START() + EVENT(b"\x01") + EVENT(b"\x02\x08") + FIRE + EVENT(b"\x03" + struct.pack(">Q", 2**64 - 2)) + FIRE * 3,
    # A stall after visible text: a continuation; then a restart mid-watch.
    STREAM + START() + EVENT() + FIRE * 2 + bytes([0, 0x83, 1, 1, 1, 0, 0]) + FIRE + START() + START(b"\x00\x02") + FIRE,
    # The first-event stall under the modern profile's figures.
    bytes([0xA1, 1, 4, 3, 0, 1, 1, 3, 2, 4, 4, 1]) + bytes([0, 0]) + START() + FIRE + ABORTED,
]
for s in stream_seeds:
    write("machine", s)

# rules_from_bytes (autoretry_testkit::rules_fuzz::fuzz_rules_from_bytes):
# the first byte picks the mode: 0 raw bytes, 1/2 damaged sparse/dense
# example blob (offset hi, offset lo, value triples), 3 truncation, 4
# misalignment.
example_blob = (ROOT / "tests" / "rules" / "example.bin").read_bytes()
write("rules_from_bytes", bytes([0]) + example_blob)
write("rules_from_bytes", bytes([0]) + example_blob[:24])
write("rules_from_bytes", bytes([0]) + b'{"retry": ["x"]}')
for mode in (1, 2):
    for _ in range(6):
        write("rules_from_bytes", bytes([mode]) + bytes(rng.randrange(256) for _ in range(3 * rng.randrange(1, 6))))
for keep in (0, 7, 24, 25, 1000, 23000):
    write("rules_from_bytes", bytes([3, keep % 2]) + struct.pack("<H", keep))
write("rules_from_bytes", bytes([4]))

# rules_match (fuzz_rules_match): the first byte gives the counts of never
# (low two bits) and retry (next two) patterns; the rest drives the
# generator of patterns and texts.
for counts in (0x01, 0x04, 0x05, 0x0F, 0x0A):
    for _ in range(4):
        write("rules_match", bytes([counts]) + bytes(rng.randrange(256) for _ in range(rng.randrange(16, 120))))

# ffi (fuzz_targets/ffi.rs): call sequences through the C ABI. Each step is
# an op byte (0 new, 1 new_ex, 2 free, 3 pending_timer, 4-7 message_end /
# agent_end and their _ex forms, 8-9 timer_fired, 10 usage_limit_marked,
# 11 abort_retry, 12 abort, 13 set_auto_retry, 14 settings, 15 settings_ex,
# 16-17 rules, 18 budget_new, 19 budget_tokens, 20 budget_free, 21-23
# handle_json, 24 model_switched), a handle selector (2.. picks a live or
# freed handle) and its arguments.
def ffi_u64(v):
    return bytes([0, v]) if v < 256 else bytes([1]) + struct.pack("<H", v // 100)


def ffi_new(profile=0, retries=3, base=20, seed=0):
    return (bytes([1, 2, profile, 1, retries]) + ffi_u64(base) + ffi_u64(0) + ffi_u64(0)
            + bytes([0, 0, profile]) + ffi_u64(0) + bytes([1]) + ffi_u64(seed))


def ffi_input(op, handle=2, out=(3, 1, 25600), stop=3, text=16, text_at=(8, 40, 100),
              timer=2, flag=1, retries=3):
    sel, a, b = out
    out_bytes = bytes([sel, a]) + struct.pack("<H", b) if sel == 3 else bytes([sel]) + struct.pack("<HH", a, b)
    tsel, tlen, tat = text_at
    text_bytes = bytes([tsel]) + struct.pack("<HH", tlen, tat)
    return (bytes([op, handle]) + out_bytes + bytes([stop, text]) + text_bytes
            + bytes([0, 0]) + ffi_u64(0) * 3 + bytes([0]) + ffi_u64(0) + bytes([0]) + ffi_u64(0)
            + bytes([timer, flag]) + bytes([0, 1, retries]) + ffi_u64(20) + ffi_u64(0) + ffi_u64(0) + bytes([0, 0, 0]))


# The input struct through handle_json (op 21): the arguments of ffi_input,
# then its kind (1 message_end, 2 agent_end, 3 timer_fired, 4
# usage_limit_marked, 8 settings, 9 model_switched; 0 and 10 refused), its
# partial code (3 refused), a budget selector (0 none, 3.. a live or freed
# budget) and the settings keys of section 11.1.
def ffi_json(kind, partial=0, budget=0, fallback=0, **args):
    return ffi_input(21, **args) + bytes([kind, partial, budget, fallback]) + ffi_u64(0) + ffi_u64(0)


# A budget (op 18): a budget selector, max tokens, the refill ratio in
# thousandths, whether it starts with `tokens` thousandths.
def ffi_budget_new(max_tokens=4, ratio=500, has=0, tokens=0):
    return bytes([18, 2, 0]) + struct.pack("<HIBI", max_tokens, ratio, has, tokens)


ffi_steps = {
    "retry": ffi_new() + ffi_input(5) + ffi_input(8) + ffi_input(5, stop=0, text=0),
    "usage_limit": ffi_new() + ffi_input(7, text=2) + ffi_input(10) + ffi_input(8),
    "reuse": ffi_new() + ffi_input(5) + bytes([2, 2]) + ffi_new() + ffi_input(5, handle=3) + ffi_input(8, timer=1),
    "exhaust": ffi_new() * 9 + bytes([2, 4]) + ffi_new() + ffi_input(12, handle=5),
    "small_out": ffi_new() + ffi_input(5, out=(8, 16, 0)) + ffi_input(5, out=(8, 600, 4000)),
    "bad_out": ffi_new() + ffi_input(5, out=(0, 64, 0)) + ffi_input(11, out=(1, 64, 0)) + ffi_input(12, out=(2, 1, 16)),
    "overlap": ffi_new() + ffi_input(5, out=(8, 400, 0), text_at=(8, 40, 100)),
    "settings": ffi_new(profile=1) + ffi_input(15) + ffi_input(14) + ffi_input(13, flag=0) + ffi_input(5),
    "budget": ffi_new() + ffi_budget_new() + ffi_json(2, stop=4, budget=3) + ffi_json(3, budget=3)
    + bytes([19, 2, 3]) + ffi_json(2, stop=1, budget=3) + ffi_budget_new(0) + bytes([20, 2, 3]) + ffi_json(2, stop=4, budget=3),
    "partial": ffi_new() + ffi_json(2, stop=4, partial=1) + ffi_json(3) + ffi_json(2, stop=4, partial=2) + ffi_json(1, stop=4, partial=3),
    "model_switched": ffi_new() + ffi_json(8, fallback=1, retries=0) + ffi_json(2, stop=4) + ffi_input(24)
    + ffi_json(2, stop=4) + ffi_json(9, flag=0),
    "bad_kinds": ffi_new() + ffi_json(0) + ffi_json(10) + ffi_json(8, budget=2) + ffi_json(4),
}
for steps in ffi_steps.values():
    write("ffi", steps)
