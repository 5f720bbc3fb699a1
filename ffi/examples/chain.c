/* One retry chain through the C form: an overloaded error, the wait, the
 * timer, the agent continued, a success. Every input starts as {0}: the
 * fields left at 0 are absent. An agent_end during the wait is refused,
 * and autoretry_last_refusal says why. Prints each input's outputs; CI
 * compares them with ffi/examples/chain.expected.
 *
 *     cargo build --release -p autoretry-ffi
 *     gcc -std=c11 -Wall -Wextra -Werror -Iffi/include ffi/examples/chain.c \
 *         target/release/libautoretry_ffi.a -lpthread -ldl -lm -o chain
 *     ./chain */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "autoretry.h"

static const char *NAMES[] = {
    [AUTORETRY_OUTPUT_START] = "start",          [AUTORETRY_OUTPUT_END] = "end",
    [AUTORETRY_OUTPUT_DROP_TRAILING_ERROR] = "drop_trailing_error",
    [AUTORETRY_OUTPUT_SLEEP] = "sleep",          [AUTORETRY_OUTPUT_CANCEL_TIMER] = "cancel_timer",
    [AUTORETRY_OUTPUT_CONTINUE_AGENT] = "continue_agent",
    [AUTORETRY_OUTPUT_MARK_USAGE_LIMIT] = "mark_usage_limit",
    [AUTORETRY_OUTPUT_CHECK_COMPACTION] = "check_compaction",
    [AUTORETRY_OUTPUT_ABORT_AGENT] = "abort_agent", [AUTORETRY_OUTPUT_SETTLED] = "settled",
    [AUTORETRY_OUTPUT_RESUME_AGENT] = "resume_agent", [AUTORETRY_OUTPUT_SWITCH_MODEL] = "switch_model",
};
static int32_t h;
static autoretry_output out[8];

/* Feeds one input and prints its outputs: their count, or the error code. */
static int32_t feed(const char *what, autoretry_input in) {
  int32_t n = autoretry_handle_c(h, &in, out, 8);
  printf("%s:", what);
  if (n < 0) printf(" error %d, last refusal %d", n, autoretry_last_refusal(h));
  for (int32_t i = 0; i < n; i++) {
    printf(" %s", NAMES[out[i].kind]);
    if (out[i].kind == AUTORETRY_OUTPUT_START) printf("(attempt %u)", out[i].attempt);
    if (out[i].kind == AUTORETRY_OUTPUT_END)
      printf("(attempt %u, success %u)", out[i].attempt, out[i].success);
    if (out[i].kind == AUTORETRY_OUTPUT_SLEEP) printf("(%llu ms)", (unsigned long long)out[i].ms);
  }
  printf("\n");
  return n;
}

int main(void) {
  h = autoretry_new(1, 3, 2000, 0, 0);
  const char *text = "529 overloaded_error";
  autoretry_input error = {.kind = AUTORETRY_INPUT_AGENT_END, .stop_reason = AUTORETRY_STOP_ERROR,
                           .text = (const uint8_t *)text, .text_len = (int32_t)strlen(text)};
  if (h < 0 || feed("agent_end error", error) != 3) return 1;
  uint64_t timer = out[2].timer;
  feed("agent_end during the wait", error);
  feed("timer_fired", (autoretry_input){.kind = AUTORETRY_INPUT_TIMER_FIRED, .timer = timer});
  feed("agent_end stop",
       (autoretry_input){.kind = AUTORETRY_INPUT_AGENT_END, .stop_reason = AUTORETRY_STOP_STOP});
  return autoretry_free(h) == 0 ? 0 : 1;
}
