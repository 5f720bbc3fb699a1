/* A C host that lends a machine your own error rules: reads a compiled
 * rules blob (`autoretry rules compile RULES.json -o RULES.bin`), lends it
 * to a machine with autoretry_rules_load, and checks that the rules steer
 * the machine: a `retry` rule retries what the patterns would not, a
 * `never` rule forbids what they would, the host's own shouldRetry stays,
 * an overflow is never retried, a bad blob is refused by code and changes
 * nothing, and autoretry_rules_clear gives the patterns back.
 *
 *     cargo build --release -p autoretry-ffi
 *     gcc -std=c11 -Wall -Wextra -Werror -Iffi/include ffi/examples/rules.c \
 *         target/release/libautoretry_ffi.a -lpthread -ldl -lm -o rules
 *     ./rules tests/rules/example.bin
 *
 * The checks are those of the example rules (tests/rules/example.json).
 * The blob stays this program's memory, read in place: malloc's memory is
 * aligned as a dense DFA needs, and it is freed only after the machine. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autoretry.h"

static int failures;

static void check(bool ok, const char *what, const char *text) {
  if (!ok) {
    failures++;
    fprintf(stderr, "FAIL %s: \"%s\"\n", what, text);
  }
}

/* Whether an agent_end with `text` (and the host's verdict `should_retry`,
 * an AUTORETRY_SHOULD_RETRY_* code) opens a retry chain; the chain is
 * cancelled again so the next check starts idle. */
static bool retried(int32_t h, const char *text, int32_t should_retry) {
  autoretry_input in;
  memset(&in, 0, sizeof in);
  in.kind = AUTORETRY_INPUT_AGENT_END;
  in.stop_reason = AUTORETRY_STOP_ERROR;
  in.text = (const uint8_t *)text;
  in.text_len = (int32_t)strlen(text);
  in.should_retry = should_retry;
  autoretry_output out[8];
  int32_t n = autoretry_handle_c(h, &in, out, 8);
  if (n < 0) {
    fprintf(stderr, "agent_end: error %d\n", n);
    exit(2);
  }
  bool chain = false;
  for (int32_t i = 0; i < n; i++) chain |= out[i].kind == AUTORETRY_OUTPUT_START;
  if (chain) {
    memset(&in, 0, sizeof in);
    in.kind = AUTORETRY_INPUT_ABORT_RETRY;
    if (autoretry_handle_c(h, &in, out, 8) < 0) exit(2);
  }
  return chain;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s RULES.bin\n", argv[0]);
    return 2;
  }
  FILE *f = fopen(argv[1], "rb");
  if (!f) {
    perror(argv[1]);
    return 2;
  }
  uint8_t *blob = malloc(1 << 20);
  size_t len = blob ? fread(blob, 1, 1 << 20, f) : 0;
  fclose(f);
  if (!blob || len == 0 || len == 1 << 20) {
    fprintf(stderr, "%s: empty, unreadable or over 1 MiB\n", argv[1]);
    return 2;
  }

  int32_t h = autoretry_new(1, 3, 2000, 0, 0);
  const char *billing = "503 billing: insufficient funds";
  const char *stalled = "stream stalled";
  check(retried(h, billing, AUTORETRY_SHOULD_RETRY_ABSENT), "a 503, no rules", billing);
  check(!retried(h, stalled, AUTORETRY_SHOULD_RETRY_ABSENT), "no pattern, no rules", stalled);

  int32_t code = autoretry_rules_load(h, blob, (uint32_t)len);
  if (code != 0) {
    fprintf(stderr, "%s: refused, error %d\n", argv[1], code);
    return 1;
  }
  static const struct {
    const char *text;
    int32_t should_retry;
    bool retried;
  } chains[] = {
      /* A rule retries what the patterns would not. */
      {"stream stalled", AUTORETRY_SHOULD_RETRY_ABSENT, true},
      {"upstream_error: try later", AUTORETRY_SHOULD_RETRY_ABSENT, true},
      /* A rule forbids what the patterns would retry (a 503). */
      {"503 billing: insufficient funds", AUTORETRY_SHOULD_RETRY_ABSENT, false},
      {"tool error: 503 from the tool", AUTORETRY_SHOULD_RETRY_ABSENT, false},
      /* No verdict: the patterns decide. */
      {"503 Service Unavailable", AUTORETRY_SHOULD_RETRY_ABSENT, true},
      {"401 unauthorized", AUTORETRY_SHOULD_RETRY_ABSENT, false},
      /* The host's own verdict stays. */
      {"stream stalled", AUTORETRY_SHOULD_RETRY_NO, false},
      {"503 billing: insufficient funds", AUTORETRY_SHOULD_RETRY_YES, true},
      /* An overflow is never retried, whatever a rule says. */
      {"upstream_error: prompt is too long", AUTORETRY_SHOULD_RETRY_ABSENT, false},
  };
  for (size_t i = 0; i < sizeof chains / sizeof chains[0]; i++)
    check(retried(h, chains[i].text, chains[i].should_retry) == chains[i].retried, "with the rules",
          chains[i].text);

  /* A truncated blob is refused by code; the rules in force stay. */
  check(autoretry_rules_load(h, blob, (uint32_t)len - 1) == AUTORETRY_ERR_RULES_LENGTH,
        "a truncated blob", "");
  check(autoretry_rules_load(h, (const uint8_t *)"{}", 2) == AUTORETRY_ERR_RULES_FOREIGN,
        "a rules file, not a blob", "");
  check(!retried(h, billing, AUTORETRY_SHOULD_RETRY_ABSENT), "the rules after a refusal", billing);

  /* Cleared: the patterns alone again, and the blob is ours to free. */
  check(autoretry_rules_clear(h) == 0, "clear", "");
  check(retried(h, billing, AUTORETRY_SHOULD_RETRY_ABSENT), "a 503, rules cleared", billing);
  autoretry_free(h);
  free(blob);

  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("rules: %zu chains and every refusal as expected\n", sizeof chains / sizeof chains[0]);
  return 0;
}
