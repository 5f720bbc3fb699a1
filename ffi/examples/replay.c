/* A C host of the autoretry machine: replays conformance vector files
 * (tests/vectors/ *.jsonl, tests/vectors/options/ *.jsonl,
 * tests/vectors/beyond/ *.jsonl, tests/vectors/stream/ *.jsonl, the
 * stream inputs with their nowMs, and tests/vectors/response/ *.jsonl, a
 * message's headers) through the C ABI's struct form
 * (autoretry_new_c, autoretry_handle_c, autoretry_state_c) and checks every
 * step's outputs, state and refusal, and a scenario's retry budget
 * (autoretry_budget_new, autoretry_budget_tokens) after every step.
 *
 *     cargo build --release -p autoretry-ffi
 *     gcc -std=c11 -Wall -Wextra -Werror -Iffi/include ffi/examples/replay.c \
 *         target/release/libautoretry_ffi.a -lpthread -ldl -lm -o replay
 *     ./replay tests/vectors/ *.jsonl tests/vectors/options/ *.jsonl
 *
 * The module needs no JSON: this host parses the vector files (a small JSON
 * reader below), feeds each input as an autoretry_input, and compares each
 * autoretry_output with the vector's output. The settings group is decoded
 * here, strictly, as spec sections 4 and 10.1 say (the module takes typed
 * scalars; autoretry_settings_defaults gives a profile's defaults). Timer
 * ids are mapped to the vectors' ordinals. Exits 0 only when every step
 * passes. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autoretry.h"

/* ------------------------------------------------------------------ JSON */
enum kind { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

typedef struct json {
  enum kind kind;
  bool b;
  const char *s; /* J_NUM: the literal; J_STR: the decoded bytes */
  size_t len;    /* of s; J_ARR/J_OBJ: the count */
  struct json *items; /* J_ARR: values; J_OBJ: values, keys in `keys` */
  struct json *keys;
} json;

/* Every value of one line lives in this arena, freed by resetting it. */
static char arena[1 << 22];
static size_t used;

static void *alloc(size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (used + n > sizeof arena) {
    fprintf(stderr, "a vector line too large for the arena\n");
    exit(2);
  }
  void *p = arena + used;
  used += n;
  return p;
}

typedef struct {
  const char *p, *end;
  bool bad;
} reader;

static void ws(reader *r) {
  while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\r' || *r->p == '\n')) r->p++;
}

static void put_utf8(char *out, size_t *n, uint32_t c) {
  if (c < 0x80) {
    out[(*n)++] = (char)c;
  } else if (c < 0x800) {
    out[(*n)++] = (char)(0xC0 | c >> 6);
    out[(*n)++] = (char)(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out[(*n)++] = (char)(0xE0 | c >> 12);
    out[(*n)++] = (char)(0x80 | ((c >> 6) & 0x3F));
    out[(*n)++] = (char)(0x80 | (c & 0x3F));
  } else {
    out[(*n)++] = (char)(0xF0 | c >> 18);
    out[(*n)++] = (char)(0x80 | ((c >> 12) & 0x3F));
    out[(*n)++] = (char)(0x80 | ((c >> 6) & 0x3F));
    out[(*n)++] = (char)(0x80 | (c & 0x3F));
  }
}

static uint32_t hex4(reader *r) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) {
    char c = r->p < r->end ? *r->p++ : 0;
    v <<= 4;
    if (c >= '0' && c <= '9') v |= (uint32_t)(c - '0');
    else if (c >= 'a' && c <= 'f') v |= (uint32_t)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= (uint32_t)(c - 'A' + 10);
    else r->bad = true;
  }
  return v;
}

static json parse_value(reader *r);

static json parse_string(reader *r) {
  json v = {.kind = J_STR};
  char *out = alloc((size_t)(r->end - r->p) + 1);
  size_t n = 0;
  r->p++; /* the opening quote */
  for (;;) {
    if (r->p >= r->end) {
      r->bad = true;
      break;
    }
    char c = *r->p++;
    if (c == '"') break;
    if (c != '\\') {
      out[n++] = c;
      continue;
    }
    char e = r->p < r->end ? *r->p++ : 0;
    switch (e) {
      case '"': out[n++] = '"'; break;
      case '\\': out[n++] = '\\'; break;
      case '/': out[n++] = '/'; break;
      case 'b': out[n++] = '\b'; break;
      case 'f': out[n++] = '\f'; break;
      case 'n': out[n++] = '\n'; break;
      case 'r': out[n++] = '\r'; break;
      case 't': out[n++] = '\t'; break;
      case 'u': {
        uint32_t c1 = hex4(r);
        if (c1 >= 0xD800 && c1 < 0xDC00 && r->end - r->p >= 6 && r->p[0] == '\\' && r->p[1] == 'u') {
          r->p += 2;
          uint32_t c2 = hex4(r);
          c1 = 0x10000 + ((c1 - 0xD800) << 10) + (c2 - 0xDC00);
        }
        put_utf8(out, &n, c1);
        break;
      }
      default: r->bad = true;
    }
  }
  v.s = out;
  v.len = n;
  return v;
}

/* Arrays and objects: items collected on the C stack, then copied. */
#define MAX_ITEMS 64
static json parse_list(reader *r, bool object) {
  json v = {.kind = object ? J_OBJ : J_ARR};
  json items[MAX_ITEMS], keys[MAX_ITEMS];
  r->p++;
  ws(r);
  if (r->p < r->end && *r->p == (object ? '}' : ']')) {
    r->p++;
    return v;
  }
  for (;;) {
    if (v.len == MAX_ITEMS) {
      r->bad = true;
      return v;
    }
    ws(r);
    if (object) {
      if (r->p >= r->end || *r->p != '"') {
        r->bad = true;
        return v;
      }
      keys[v.len] = parse_string(r);
      ws(r);
      if (r->p >= r->end || *r->p++ != ':') {
        r->bad = true;
        return v;
      }
    }
    items[v.len++] = parse_value(r);
    ws(r);
    if (r->p < r->end && *r->p == ',') {
      r->p++;
      continue;
    }
    if (r->p < r->end && *r->p == (object ? '}' : ']')) {
      r->p++;
      break;
    }
    r->bad = true;
    return v;
  }
  v.items = alloc(v.len * sizeof(json));
  memcpy(v.items, items, v.len * sizeof(json));
  if (object) {
    v.keys = alloc(v.len * sizeof(json));
    memcpy(v.keys, keys, v.len * sizeof(json));
  }
  return v;
}

static json parse_value(reader *r) {
  ws(r);
  json v = {.kind = J_NULL};
  if (r->p >= r->end) {
    r->bad = true;
    return v;
  }
  char c = *r->p;
  if (c == '{' || c == '[') return parse_list(r, c == '{');
  if (c == '"') return parse_string(r);
  if (r->end - r->p >= 4 && memcmp(r->p, "true", 4) == 0) {
    r->p += 4;
    v.kind = J_BOOL;
    v.b = true;
    return v;
  }
  if (r->end - r->p >= 5 && memcmp(r->p, "false", 5) == 0) {
    r->p += 5;
    v.kind = J_BOOL;
    return v;
  }
  if (r->end - r->p >= 4 && memcmp(r->p, "null", 4) == 0) {
    r->p += 4;
    return v;
  }
  const char *start = r->p;
  while (r->p < r->end && strchr("+-0123456789.eE", *r->p)) r->p++;
  if (r->p == start) r->bad = true;
  v.kind = J_NUM;
  v.s = start;
  v.len = (size_t)(r->p - start);
  return v;
}

static bool parse(const char *text, size_t len, json *out) {
  reader r = {text, text + len, false};
  *out = parse_value(&r);
  ws(&r);
  return !r.bad && r.p == r.end;
}

/* The member `key` of an object (the last one: duplicates are found by
 * `has_duplicate`), or NULL; a `null` member counts as absent. */
static const json *get(const json *obj, const char *key) {
  if (!obj || obj->kind != J_OBJ) return NULL;
  const json *found = NULL;
  for (size_t i = 0; i < obj->len; i++)
    if (obj->keys[i].len == strlen(key) && memcmp(obj->keys[i].s, key, obj->keys[i].len) == 0) found = &obj->items[i];
  return found && found->kind != J_NULL ? found : NULL;
}

static bool has_duplicate(const json *obj) {
  for (size_t i = 0; i < obj->len; i++)
    for (size_t j = i + 1; j < obj->len; j++)
      if (obj->keys[i].len == obj->keys[j].len && memcmp(obj->keys[i].s, obj->keys[j].s, obj->keys[i].len) == 0)
        return true;
  return false;
}

static bool is(const json *v, const char *s) {
  return v && v->kind == J_STR && v->len == strlen(s) && memcmp(v->s, s, v->len) == 0;
}

/* A non-negative integer literal up to `max`. */
static bool uint_of(const json *v, uint64_t max, uint64_t *out) {
  if (!v || v->kind != J_NUM || v->len == 0 || (v->len > 1 && v->s[0] == '0')) return false;
  uint64_t n = 0;
  for (size_t i = 0; i < v->len; i++) {
    char c = v->s[i];
    if (c < '0' || c > '9') return false;
    uint64_t d = (uint64_t)(c - '0');
    if (n > (UINT64_MAX - d) / 10) return false;
    n = n * 10 + d;
  }
  if (n > max) return false;
  *out = n;
  return true;
}

/* Deep equality, object key order aside. */
static bool equal(const json *a, const json *b) {
  if (a->kind != b->kind) return false;
  switch (a->kind) {
    case J_NULL: return true;
    case J_BOOL: return a->b == b->b;
    case J_NUM: {
      uint64_t x, y;
      if (uint_of(a, UINT64_MAX, &x) && uint_of(b, UINT64_MAX, &y)) return x == y;
      return a->len == b->len && memcmp(a->s, b->s, a->len) == 0;
    }
    case J_STR: return a->len == b->len && memcmp(a->s, b->s, a->len) == 0;
    case J_ARR:
      if (a->len != b->len) return false;
      for (size_t i = 0; i < a->len; i++)
        if (!equal(&a->items[i], &b->items[i])) return false;
      return true;
    case J_OBJ:
      if (a->len != b->len) return false;
      for (size_t i = 0; i < a->len; i++) {
        const json *other = NULL;
        for (size_t j = 0; j < b->len; j++)
          if (a->keys[i].len == b->keys[j].len && memcmp(a->keys[i].s, b->keys[j].s, a->keys[i].len) == 0)
            other = &b->items[j];
        if (!other || !equal(&a->items[i], other)) return false;
      }
      return true;
  }
  return false;
}

/* ------------------------------------------------------------------ host */
/* The `retry` group, strictly: missing keys at the profile's defaults. */
static bool decode_settings(const json *group, autoretry_retry_settings *s) {
  if (!group || group->kind != J_OBJ || has_duplicate(group)) return false;
  /* Here a `null` is a wrong type, not an absent key. */
  const json *profile = NULL;
  for (size_t i = 0; i < group->len; i++)
    if (is(&group->keys[i], "profile")) profile = &group->items[i];
  uint32_t code = AUTORETRY_PROFILE_CLASSIC;
  if (profile) {
    if (is(profile, "classic")) code = AUTORETRY_PROFILE_CLASSIC;
    else if (is(profile, "modern")) code = AUTORETRY_PROFILE_MODERN;
    else return false;
  }
  if (autoretry_settings_defaults(code, s) != 0) return false;
  for (size_t i = 0; i < group->len; i++) {
    const json *k = &group->keys[i], *v = &group->items[i];
    uint64_t n;
    if (is(k, "profile")) continue;
    if (is(k, "enabled") || is(k, "honorHints") || is(k, "modelFallback") || is(k, "retryEmpty")) {
      if (v->kind != J_BOOL) return false;
      *(is(k, "enabled")        ? &s->enabled
        : is(k, "honorHints")   ? &s->honor_hints
        : is(k, "retryEmpty")   ? &s->retry_empty
                                : &s->model_fallback) = v->b;
    } else if (is(k, "maxRetries")) {
      if (!uint_of(v, UINT32_MAX, &n)) return false;
      s->max_retries = (uint32_t)n;
    } else if (is(k, "jitterPct")) {
      if (!uint_of(v, 100, &n)) return false;
      s->jitter_pct = (uint32_t)n;
    } else if (is(k, "baseDelayMs") || is(k, "maxDelayMs") || is(k, "backoffCapMs")) {
      if (!uint_of(v, UINT64_MAX, &n)) return false;
      *(is(k, "baseDelayMs") ? &s->base_delay_ms : is(k, "maxDelayMs") ? &s->max_delay_ms : &s->backoff_cap_ms) = n;
    } else if (is(k, "maxUsageWaitMs") || is(k, "maxTotalDelayMs")) {
      if (!uint_of(v, UINT64_MAX, &n)) return false;
      *(is(k, "maxUsageWaitMs") ? &s->max_usage_wait_ms : &s->max_total_delay_ms) = n;
    } else if (is(k, "firstEventTimeoutMs") || is(k, "idleTimeoutMs")) {
      if (!uint_of(v, UINT64_MAX, &n)) return false;
      *(is(k, "firstEventTimeoutMs") ? &s->first_event_timeout_ms : &s->idle_timeout_ms) = n;
    } else if (is(k, "classifier")) {
      if (is(v, "classic")) s->classifier = AUTORETRY_CLASSIFIER_CLASSIC;
      else if (is(v, "extended")) s->classifier = AUTORETRY_CLASSIFIER_EXTENDED;
      else if (is(v, "curated")) s->classifier = AUTORETRY_CLASSIFIER_CURATED;
      else return false;
    } else {
      return false;
    }
  }
  return true;
}

static uint64_t uint_or(const json *v, uint64_t otherwise) {
  uint64_t n;
  if (!v) return otherwise;
  if (!uint_of(v, UINT64_MAX, &n)) {
    fprintf(stderr, "expected an unsigned integer\n");
    exit(2);
  }
  return n;
}

/* A non-negative decimal number in thousandths ("0.5" is 500, "3" is
 * 3000): at most three digits after the point, no exponent. */
static uint64_t milli_of(const json *v) {
  uint64_t n = 0, scale = 1000;
  bool point = false;
  for (size_t i = 0; v && v->kind == J_NUM && i < v->len; i++) {
    char c = v->s[i];
    if (c == '.' && !point) {
      point = true;
    } else if (c >= '0' && c <= '9' && (!point || scale > 1) && n < UINT64_MAX / 100) {
      if (point) scale /= 10;
      n = n * 10 + (uint64_t)(c - '0');
    } else {
      fprintf(stderr, "expected a number with at most three decimals\n");
      exit(2);
    }
  }
  if (!v || v->kind != J_NUM) {
    fprintf(stderr, "expected a number\n");
    exit(2);
  }
  return n * scale;
}

/* The vector-form JSON of one output struct, appended to `out`. Texts are
 * escaped as JSON strings; timer ids become ordinals. */
static char *out_json;
static size_t out_len;
static uint64_t timers[256];
static size_t n_timers;

static void emit(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#include <stdarg.h>
static void emit(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  out_len += (size_t)vsprintf(out_json + out_len, fmt, ap);
  va_end(ap);
}

static void emit_text(const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++) {
    uint8_t c = p[i];
    if (c == '"' || c == '\\') emit("\\%c", c);
    else if (c < 0x20) emit("\\u%04x", c);
    else out_json[out_len++] = (char)c;
  }
}

static void emit_output(const autoretry_output *o) {
  switch (o->kind) {
    case AUTORETRY_OUTPUT_START:
      emit("{\"type\":\"emit\",\"event\":{\"type\":\"auto_retry_start\",\"attempt\":%" PRIu32 ",\"maxAttempts\":%" PRIu32
           ",\"delayMs\":%" PRIu64 ",\"errorMessage\":\"",
           o->attempt, o->max_attempts, o->ms);
      emit_text(o->text, o->text_len);
      emit("\"}}");
      break;
    case AUTORETRY_OUTPUT_END:
      emit("{\"type\":\"emit\",\"event\":{\"type\":\"auto_retry_end\",\"success\":%s,\"attempt\":%" PRIu32,
           o->success ? "true" : "false", o->attempt);
      if (o->final_error != AUTORETRY_FINAL_ERROR_NONE) {
        emit(",\"finalError\":\"");
        if (o->final_error == AUTORETRY_FINAL_ERROR_WAIT_TOO_LONG)
          emit("Provider requested %" PRIu64 "ms wait, exceeds retry.maxDelayMs (%" PRIu64 "ms). Original error: ",
               o->requested_ms, o->max_delay_ms);
        if (o->final_error == AUTORETRY_FINAL_ERROR_THROTTLED)
          emit("Retry throttled by the shared retry budget. Original error: ");
        if (o->final_error == AUTORETRY_FINAL_ERROR_TOTAL_WAIT)
          emit("Retry waits would total %" PRIu64 "ms, exceeds retry.maxTotalDelayMs (%" PRIu64
               "ms). Original error: ",
               o->requested_ms, o->max_delay_ms);
        emit_text(o->text, o->text_len);
        emit("\"");
      }
      emit("}}");
      break;
    case AUTORETRY_OUTPUT_SLEEP:
      timers[n_timers++ % 256] = o->timer;
      emit("{\"type\":\"sleep\",\"ms\":%" PRIu64 ",\"timer\":%zu}", o->ms, n_timers);
      break;
    case AUTORETRY_OUTPUT_WATCH:
      /* One sequence of ordinals for sleep and watch timers. */
      timers[n_timers++ % 256] = o->timer;
      emit("{\"type\":\"watch\",\"ms\":%" PRIu64 ",\"timer\":%zu}", o->ms, n_timers);
      break;
    case AUTORETRY_OUTPUT_CANCEL_TIMER: {
      size_t ordinal = 0;
      for (size_t k = 0; k < n_timers && k < 256; k++)
        if (timers[k] == o->timer) ordinal = k + 1;
      emit("{\"type\":\"cancel_timer\",\"timer\":%zu}", ordinal);
      break;
    }
    case AUTORETRY_OUTPUT_MARK_USAGE_LIMIT:
      if (o->has_retry_after) emit("{\"type\":\"mark_usage_limit\",\"retryAfterMs\":%" PRIu64 "}", o->retry_after_ms);
      else emit("{\"type\":\"mark_usage_limit\",\"retryAfterMs\":null}");
      break;
    case AUTORETRY_OUTPUT_DROP_TRAILING_ERROR: emit("{\"type\":\"drop_trailing_error\"}"); break;
    case AUTORETRY_OUTPUT_CONTINUE_AGENT: emit("{\"type\":\"continue_agent\"}"); break;
    case AUTORETRY_OUTPUT_RESUME_AGENT: emit("{\"type\":\"continue_agent\",\"resume\":true}"); break;
    case AUTORETRY_OUTPUT_SWITCH_MODEL: {
      static const char *const REASONS[] = {"", "exhausted", "throttled", "wait_too_long", "total_wait"};
      emit("{\"type\":\"switch_model\",\"reason\":\"%s\"}", o->reason < 5 ? REASONS[o->reason] : "?");
      break;
    }
    case AUTORETRY_OUTPUT_CHECK_COMPACTION: emit("{\"type\":\"check_compaction\"}"); break;
    case AUTORETRY_OUTPUT_ABORT_AGENT: emit("{\"type\":\"abort_agent\"}"); break;
    case AUTORETRY_OUTPUT_SETTLED: emit("{\"type\":\"settled\"}"); break;
    default: emit("{\"type\":\"unknown kind %" PRIu32 "\"}", o->kind);
  }
}

static const struct {
  const char *name;
  uint32_t code;
} STOPS[] = {
    {"stop", AUTORETRY_STOP_STOP},   {"length", AUTORETRY_STOP_LENGTH},
    {"toolUse", AUTORETRY_STOP_TOOL_USE}, {"error", AUTORETRY_STOP_ERROR},
    {"aborted", AUTORETRY_STOP_ABORTED},
};

/* Feeds one vector input. Returns false when the input is refused (by the
 * module, or by this host's decoding as the vectors expect); `n` outputs. */
static bool feed(int32_t h, int32_t budget, const json *in, autoretry_output *outs, int32_t *n) {
  /* Zeroed, every optional field is absent: no text, no usage, no
   * shouldRetry, no retryAfterMs, no nowMs. */
  autoretry_input x;
  memset(&x, 0, sizeof x);
  x.budget = budget; /* 0: none */
  const json *type = get(in, "type");
  *n = 0;
  if (is(type, "message_end") || is(type, "agent_end")) {
    const json *m = get(in, "message");
    x.kind = is(type, "agent_end") ? AUTORETRY_INPUT_AGENT_END : AUTORETRY_INPUT_MESSAGE_END;
    /* An unknown stop reason stays 0, which the module refuses. */
    for (size_t k = 0; k < sizeof STOPS / sizeof STOPS[0]; k++)
      if (is(get(m, "stopReason"), STOPS[k].name)) x.stop_reason = STOPS[k].code;
    const json *text = get(m, "errorMessage");
    if (text) {
      x.text = (const uint8_t *)text->s;
      x.text_len = (int32_t)text->len;
    }
    /* `headers` (spec 13.1): a list of [name, value] string pairs; `null`
     * is absent, anything else bad input. */
    static autoretry_header headers[64];
    const json *hs = get(m, "headers");
    if (hs && hs->kind != J_NULL) {
      if (hs->kind != J_ARR || hs->len > sizeof headers / sizeof headers[0]) return false;
      for (size_t k = 0; k < hs->len; k++) {
        const json *pair = &hs->items[k];
        if (pair->kind != J_ARR || pair->len != 2 || pair->items[0].kind != J_STR ||
            pair->items[1].kind != J_STR)
          return false;
        headers[k].name = (const uint8_t *)pair->items[0].s;
        headers[k].name_len = (uint32_t)pair->items[0].len;
        headers[k].value = (const uint8_t *)pair->items[1].s;
        headers[k].value_len = (uint32_t)pair->items[1].len;
      }
      x.headers = headers;
      x.headers_len = (uint32_t)hs->len;
    }
    const json *u = get(m, "usage");
    if (u) {
      x.has_usage = 1;
      x.usage_input = uint_or(get(u, "input"), 0);
      x.usage_cache_read = uint_or(get(u, "cacheRead"), 0);
      x.usage_cache_write = uint_or(get(u, "cacheWrite"), 0);
    }
    const json *verdict = get(m, "shouldRetry");
    if (verdict) x.should_retry = verdict->b ? AUTORETRY_SHOULD_RETRY_YES : AUTORETRY_SHOULD_RETRY_NO;
    const json *after = get(m, "retryAfterMs");
    if (after) {
      x.has_retry_after = 1;
      x.retry_after_ms = uint_or(after, 0);
    }
    const json *partial = get(m, "partial");
    if (partial && partial->kind != J_NULL) {
      if (is(partial, "text")) x.partial = AUTORETRY_PARTIAL_TEXT;
      else if (is(partial, "tools")) x.partial = AUTORETRY_PARTIAL_TOOLS;
      else if (!is(partial, "none")) return false;
    }
    /* `empty`: a boolean, `null` absent; any other value is bad input. */
    const json *empty = get(m, "empty");
    if (empty) {
      if (empty->kind != J_BOOL) return false;
      x.empty = empty->b;
    }
    /* `nowMs` (spec 13.1, the wall clock): a u64 when present. */
    const json *now = get(in, "nowMs");
    if (now) {
      if (!uint_of(now, UINT64_MAX, &x.now_ms)) return false;
      x.has_now = 1;
    }
  } else if (is(type, "timer_fired")) {
    uint64_t ordinal = uint_or(get(in, "timer"), 0);
    /* An ordinal never produced: no call, no outputs. */
    if (ordinal < 1 || ordinal > n_timers || ordinal > 256) return true;
    x.kind = AUTORETRY_INPUT_TIMER_FIRED;
    x.timer = timers[ordinal - 1];
  } else if (is(type, "usage_limit_marked")) {
    const json *s = get(in, "switched");
    x.kind = AUTORETRY_INPUT_USAGE_LIMIT_MARKED;
    x.flag = s && s->kind == J_BOOL && s->b;
  } else if (is(type, "model_switched")) {
    const json *s = get(in, "switched");
    if (!s || s->kind != J_BOOL) return false;
    x.kind = AUTORETRY_INPUT_MODEL_SWITCHED;
    x.flag = s->b;
  } else if (is(type, "stream_start") || is(type, "stream_event")) {
    /* `nowMs`, the host's monotonic clock, is required and a u64. */
    const json *now = get(in, "nowMs");
    if (!now || !uint_of(now, UINT64_MAX, &x.now_ms)) return false;
    x.kind = is(type, "stream_start") ? AUTORETRY_INPUT_STREAM_START : AUTORETRY_INPUT_STREAM_EVENT;
    x.has_now = 1;
  } else if (is(type, "abort_retry")) {
    x.kind = AUTORETRY_INPUT_ABORT_RETRY;
  } else if (is(type, "abort")) {
    x.kind = AUTORETRY_INPUT_ABORT;
  } else if (is(type, "set_auto_retry")) {
    const json *e = get(in, "enabled");
    if (!e || e->kind != J_BOOL) return false;
    x.kind = AUTORETRY_INPUT_SET_AUTO_RETRY;
    x.flag = e->b;
  } else if (is(type, "settings")) {
    x.kind = AUTORETRY_INPUT_SETTINGS;
    if (!decode_settings(get(in, "settings"), &x.settings)) return false;
  } else {
    fprintf(stderr, "unknown input type\n");
    exit(2);
  }
  int32_t got = autoretry_handle_c(h, &x, outs, 8);
  /* A refusal has its reason; a handled input has none. */
  int32_t reason = autoretry_last_refusal(h);
  if ((got == AUTORETRY_ERR_REFUSED) != (reason != AUTORETRY_REFUSAL_NONE)) {
    fprintf(stderr, "autoretry_handle_c: %" PRId32 ", last refusal %" PRId32 "\n", got, reason);
    exit(2);
  }
  if (got == AUTORETRY_ERR_REFUSED) return false;
  if (got < 0) {
    fprintf(stderr, "autoretry_handle_c: error %" PRId32 "\n", got);
    exit(2);
  }
  *n = got;
  return true;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: replay VECTOR_FILE...\n");
    return 2;
  }
  static char line[1 << 20];
  static char rendered[1 << 20];
  out_json = rendered;
  size_t steps = 0, passed = 0, scenarios = 0;
  for (int f = 1; f < argc; f++) {
    FILE *file = fopen(argv[f], "rb");
    if (!file) {
      perror(argv[f]);
      return 2;
    }
    int32_t h = -1, budget = 0;
    size_t number = 0;
    while (fgets(line, sizeof line, file)) {
      number++;
      size_t len = strlen(line);
      while (len && (line[len - 1] == '\n')) line[--len] = 0;
      if (len == 0) continue;
      used = 0;
      json v;
      if (!parse(line, len, &v) || v.kind != J_OBJ) {
        fprintf(stderr, "%s:%zu: not a JSON object\n", argv[f], number);
        return 2;
      }
      if (get(&v, "scenario")) {
        if (h >= 0) autoretry_free(h);
        if (budget > 0) autoretry_budget_free(budget);
        budget = 0;
        const json *b = get(&v, "budget");
        if (b) {
          const json *tokens = get(b, "tokens");
          budget = autoretry_budget_new((uint32_t)uint_or(get(b, "maxTokens"), 0),
                                        (uint32_t)milli_of(get(b, "tokenRatio")), tokens != NULL,
                                        tokens ? (uint32_t)milli_of(tokens) : 0);
          if (budget <= 0) {
            fprintf(stderr, "%s:%zu: autoretry_budget_new: %" PRId32 "\n", argv[f], number, budget);
            return 2;
          }
        }
        static const json empty = {.kind = J_OBJ};
        const json *group = get(&v, "settings");
        autoretry_retry_settings s;
        if (!decode_settings(group ? group : &empty, &s)) {
          fprintf(stderr, "%s:%zu: bad scenario settings\n", argv[f], number);
          return 2;
        }
        const json *host = get(&v, "host");
        const json *store = get(host, "credentialStore");
        h = autoretry_new_c(&s, uint_or(get(host, "contextWindow"), 0), store && store->b,
                            uint_or(get(host, "seed"), 0));
        if (h < 0) {
          fprintf(stderr, "%s:%zu: autoretry_new_c: %" PRId32 "\n", argv[f], number, h);
          return 2;
        }
        n_timers = 0;
        scenarios++;
        continue;
      }
      steps++;
      autoretry_output outs[8];
      int32_t n;
      bool accepted = feed(h, budget, get(&v, "in"), outs, &n);
      out_len = 0;
      emit("[");
      for (int32_t k = 0; k < n; k++) {
        if (k) emit(",");
        emit_output(&outs[k]);
      }
      emit("]");
      json got;
      const json *refused = get(&v, "refused");
      bool want_refused = refused && refused->b;
      autoretry_retry_state st;
      bool ok = parse(rendered, out_len, &got) && get(&v, "out") && equal(&got, get(&v, "out")) &&
                accepted != want_refused && autoretry_state_c(h, &st) == 0;
      const json *ws_ = get(&v, "state");
      ok = ok && get(ws_, "autoRetryEnabled") && get(ws_, "isRetrying") &&
           get(ws_, "autoRetryEnabled")->b == (st.auto_retry_enabled != 0) &&
           get(ws_, "isRetrying")->b == (st.is_retrying != 0) &&
           uint_or(get(ws_, "retryAttempt"), UINT64_MAX) == st.retry_attempt;
      /* A scenario with a budget: its tokens after the step. */
      const json *want_budget = get(&v, "budget");
      ok = ok && (budget > 0) == (want_budget != NULL);
      ok = ok && (!want_budget || milli_of(want_budget) == (uint64_t)autoretry_budget_tokens(budget));
      if (ok) {
        passed++;
      } else {
        printf("FAIL %s:%zu: got %.*s%s\n", argv[f], number, (int)out_len, rendered, accepted ? "" : " (refused)");
      }
    }
    if (h >= 0) autoretry_free(h);
    if (budget > 0) autoretry_budget_free(budget);
    fclose(file);
  }
  printf("autoretry from C: %zu scenarios, %zu/%zu steps passed (%d files)\n", scenarios, passed, steps, argc - 1);
  return passed == steps && steps > 0 ? 0 : 1;
}
