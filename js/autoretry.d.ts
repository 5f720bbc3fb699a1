// Types of the autoretry WebAssembly wrapper (`autoretry.js`).

/** A u64 value: a number when it is a safe integer, else a BigInt. */
export type U64 = number | bigint;

/** `stopReason` of an assistant message. */
export type StopReason = "stop" | "length" | "toolUse" | "error" | "aborted";

/**
 * An assistant message (spec §2, §10.2); unknown fields are ignored, and
 * an optional field that is `null` is absent.
 */
export interface AssistantMessage {
  role?: "assistant" | null;
  stopReason: StopReason;
  /** At most `module.maxText` (4096) bytes of UTF-8. */
  errorMessage?: string | null;
  usage?: { input?: U64 | null; cacheRead?: U64 | null; cacheWrite?: U64 | null } | null;
  /** The host's own verdict (spec §10.2). */
  shouldRetry?: boolean | null;
  /** A wait the host read from the response headers (spec §10.2). */
  retryAfterMs?: U64 | null;
  /** What the failed turn left (spec §11.2); absent or null is "none". */
  partial?: "none" | "text" | "tools" | null;
  /**
   * The answer holds no visible text, no tool call and no image (spec
   * §12.3); under `retryEmpty` an empty `stop` is a failure to retry. With
   * `partial` "text" or "tools" it is refused (`EmptyWithPartial`).
   */
  empty?: boolean | null;
  /**
   * The response's header fields (spec §13.1), `[name, value]` pairs in
   * the order received: an `agent_end` reads `shouldRetry` and
   * `retryAfterMs` from them where the message sets neither (dates with
   * its `nowMs`). They share the module's text buffer with
   * `errorMessage` (`module.maxText` bytes for both).
   */
  headers?: [string, string][] | null;
}

/** A classifier's wire name. */
export type ClassifierName = "classic" | "extended" | "curated";

/** An error text's labels (spec §3, §10.5, §13.2), as `module.classify()` gives them. */
export interface Classification {
  retryable: boolean;
  overflow: boolean;
  usageLimit: boolean;
  /** The wait the text asks for, read without a clock; null when none. */
  hintMs: U64 | null;
}

/** What response header fields say (spec §13.1), as `module.readHeaders()` gives it. */
export interface HeaderHints {
  /** The headers' verdict; null when they do not say. */
  shouldRetry: boolean | null;
  /** The wait they ask for; null when they do not say. */
  retryAfterMs: U64 | null;
}

/** The `retry` settings group (spec §4, §10.1, §11.1, §12.1): missing keys default. */
export interface RetrySettings {
  profile?: "classic" | "modern";
  enabled?: boolean;
  maxRetries?: number | bigint;
  baseDelayMs?: U64;
  maxDelayMs?: U64;
  backoffCapMs?: U64;
  jitterPct?: number | bigint;
  honorHints?: boolean;
  /** "curated" needs `autoretry-curated.wasm`, "extended" any module but `autoretry.wasm`. */
  classifier?: ClassifierName;
  /** Ask the host to switch models before a chain ends for a policy reason (spec §11.3). */
  modelFallback?: boolean;
  /** How long an announced usage-limit reset may be waited for; 0 = never (spec §11.5). */
  maxUsageWaitMs?: U64;
  /** The longest a chain may sleep in total; 0 = no limit (spec §11.6). */
  maxTotalDelayMs?: U64;
  /** The longest a request may wait for its first progress event; 0 = not watched (spec §12.1). */
  firstEventTimeoutMs?: U64;
  /** The longest silence between two progress events; 0 = not watched (spec §12.1). */
  idleTimeoutMs?: U64;
  /** An empty answer is a failure to retry (spec §12.3). */
  retryEmpty?: boolean;
}

/** The host options (spec §2, §10.1). */
export interface HostOptions {
  /** The model's context window in tokens; 0 (the default) is unknown. */
  contextWindow?: U64;
  /** Whether the host can rotate credentials on a usage limit. */
  credentialStore?: boolean;
  /** The jitter generator's seed. */
  seed?: U64;
}

/** One input of the machine, as in the conformance vectors. */
export type Input =
  | { type: "message_end"; message: AssistantMessage }
  | { type: "agent_end"; message: AssistantMessage; nowMs?: U64 | null }
  | { type: "timer_fired"; timer: U64 }
  | { type: "usage_limit_marked"; switched: boolean }
  | { type: "model_switched"; switched: boolean }
  | { type: "abort_retry" }
  | { type: "abort" }
  | { type: "set_auto_retry"; enabled: boolean }
  | { type: "settings"; settings: RetrySettings }
  /** The host sent a request to the provider, at `nowMs` on its monotonic clock (spec §12.2). */
  | { type: "stream_start"; nowMs: U64 }
  /** A progress event of the answer (not a keep-alive ping), at `nowMs` (spec §12.2). */
  | { type: "stream_event"; nowMs: U64 };

/** An event to publish (spec §8), keys in the spec's order. */
export type Event =
  | { type: "auto_retry_start"; attempt: number; maxAttempts: number; delayMs: U64; errorMessage: string }
  | { type: "auto_retry_end"; success: boolean; attempt: number; finalError?: string };

/** One output of an input: carry out every one, in order. */
export type Output =
  | { type: "emit"; event: Event }
  | { type: "drop_trailing_error" }
  | { type: "sleep"; ms: U64; timer: U64 }
  /** The stall watchdog's timer (spec §12.2): run it as a `sleep`'s, answer `timer_fired`. */
  | { type: "watch"; ms: U64; timer: U64 }
  | { type: "cancel_timer"; timer: U64 }
  | { type: "continue_agent"; resume?: true }
  | { type: "switch_model"; reason: "exhausted" | "throttled" | "wait_too_long" | "total_wait" }
  | { type: "mark_usage_limit"; retryAfterMs: U64 | null }
  | { type: "check_compaction" }
  | { type: "abort_agent" }
  | { type: "settled" };

/** The query surface. */
export interface RetryState {
  autoRetryEnabled: boolean;
  isRetrying: boolean;
  retryAttempt: number;
}

/** A loaded module: its pool holds a fixed number of machines at once. */
export class AutoretryModule {
  private constructor();
  /** The longest `errorMessage` the module takes, in UTF-8 bytes. */
  readonly maxText: number;
  /** Whether its machines can load rules (`autoretry-rules.wasm`). */
  readonly hasRules: boolean;
  /**
   * Whether it has the extended classifier and so the modern profile
   * (`autoretry-extended.wasm`, `autoretry-rules.wasm`); the default
   * `autoretry.wasm` has the classic classifier only, and settings that
   * ask for either throw ERR_SETTINGS there.
   */
  readonly hasExtended: boolean;
  /**
   * Whether it has the curated classifier of spec §13.2
   * (`autoretry-curated.wasm`, which has the extended one too); the other
   * modules throw ERR_SETTINGS, naming it, for settings that ask for it.
   */
  readonly hasCurated: boolean;
  /**
   * An error text's labels under a classifier (default "classic"), as the
   * machines classify it. Throws ERR_SETTINGS for a classifier the module
   * lacks, ERR_TEXT_LEN for a text over `maxText` bytes of UTF-8.
   */
  classify(text: string, classifier?: ClassifierName): Classification;
  /**
   * What response header fields say (spec §13.1); `nowMs` (Unix ms) reads
   * dates. Throws ERR_ARG for a field that is not a pair of strings,
   * ERR_TEXT_LEN for more than `maxText` bytes of them.
   */
  readHeaders(headers: [string, string][], nowMs?: U64 | null): HeaderHints;
}

/** The module with the curated classifier of spec §13.2 (and the extended one), `autoretry-curated.wasm` next to the wrapper. */
export const CURATED_WASM_URL: URL;

/** The module that loads your own rules, `autoretry-rules.wasm` next to the wrapper (the extended classifier too). */
export const RULES_WASM_URL: URL;

/** The module with the extended classifier and the modern profile, `autoretry-extended.wasm` next to the wrapper. */
export const EXTENDED_WASM_URL: URL;

/**
 * Instantiates the module from bytes, a `WebAssembly.Module`, a `Response`
 * (or its promise) or a URL; by default `autoretry.wasm` next to the wrapper.
 * A module that is not there rejects with an Error that says how to build
 * it (`sh js/build.sh`).
 */
export function load(source?: BufferSource | WebAssembly.Module | Response | PromiseLike<Response> | URL | string): Promise<AutoretryModule>;

/** One retry machine. */
export class Machine {
  /**
   * `clock`: the monotonic clock in milliseconds that `streamStart()` and
   * `streamEvent()` read (default: `performance.now()`; a number is rounded
   * down). Throws ERR_SETTINGS (bad settings), ERR_ARG (bad host options,
   * a clock that is not a function, an options key other than `settings`,
   * `host` and `clock`) or ERR_POOL_FULL.
   */
  constructor(module: AutoretryModule, options?: { settings?: RetrySettings; host?: HostOptions; clock?: () => number | bigint });
  /**
   * Feeds one input and returns its outputs; throws an `AutoretryError`
   * (and changes nothing) otherwise. With a `budget` of the same module, a
   * retry decision charges it and a good `agent_end` refills it (spec
   * §11.4); a freed one throws ERR_BUDGET.
   */
  handle(input: Input, budget?: Budget | null): Output[];
  /**
   * `stream_start` (spec §12.2) at the machine's clock: a request was sent.
   * Returns a `watch` when `firstEventTimeoutMs` is set (after a
   * `cancel_timer` for a pending one); throws ERR_REFUSED during a backoff
   * or while an answer is awaited, ERR_ARG for a clock reading that is not
   * a non-negative number.
   */
  streamStart(): Output[];
  /** `stream_event` (spec §12.2) at the machine's clock: a progress event (not a ping). */
  streamEvent(): Output[];
  /** `{autoRetryEnabled, isRetrying, retryAttempt}`. */
  state(): RetryState;
  /** The pending backoff timer's id, or null. */
  pendingTimer(): U64 | null;
  /**
   * Lends the machine a compiled rules blob (`autoretry rules compile`),
   * copied into the module's memory. Throws ERR_RULES_FOREIGN,
   * ERR_RULES_LENGTH or ERR_RULES_CORRUPT, or ERR_BUFFER when the memory
   * cannot grow for it (the machine keeps the rules it had), or ERR_ARG on
   * a module without rules.
   */
  loadRules(bytes: Uint8Array | ArrayBuffer): void;
  /** Takes the machine's rules away, if it had any. */
  clearRules(): void;
  /** Releases the machine's slot; using it after throws ERR_HANDLE. */
  free(): void;
}

/**
 * A retry budget machines share (spec §11.4); the module's table holds 8.
 * `tokenRatio` and `tokens` are read exactly from the number's shortest
 * decimal form (`String(n)`): at most three digits after the point, so
 * `2.0000000001` is refused, not rounded.
 * Throws ERR_ARG for figures out of range, ERR_POOL_FULL when the table is full.
 */
export class Budget {
  constructor(module: AutoretryModule, figures: { maxTokens: number | bigint; tokenRatio: number; tokens?: number | null });
  /** The tokens it holds, e.g. 2.5. */
  readonly tokens: number;
  /** The tokens it holds in thousandths, e.g. 2500. */
  readonly tokensMilli: number;
  /** Releases its place in the table; using it after throws ERR_BUDGET. */
  free(): void;
}

/** An error of the module or of the wrapper's checks; nothing changed. */
export class AutoretryError extends Error {
  readonly name: "AutoretryError";
  /** One of the `ERR_*` codes. */
  readonly code: number;
  /** The code's name, e.g. `"ERR_REFUSED"`. */
  readonly codeName: string;
  /**
   * Why the machine refused an input (ERR_REFUSED, spec §6a), as the
   * crate's `Refused` variants (`"Other"`: a refusal this ABI has no code
   * of its own for); undefined for other errors.
   */
  readonly reason?:
    | "AgentRunDuringBackoff"
    | "AwaitingUsageLimitAnswer"
    | "UsageLimitTextMismatch"
    | "AwaitingModelSwitchAnswer"
    | "ModelSwitchTextMismatch"
    | "Other"
    | "EmptyWithPartial";
}

/** Parses JSON; integers beyond 2^53 - 1 become BigInts; a repeated key is an error. */
export function parseJson(text: string): unknown;
/** `JSON.stringify` that writes BigInts as integer literals. */
export function stringifyJson(value: unknown): string;

export const ERR_HANDLE: -1;
export const ERR_REFUSED: -2;
export const ERR_UTF8: -3;
export const ERR_TEXT_LEN: -4;
export const ERR_POOL_FULL: -5;
export const ERR_ARG: -6;
export const ERR_OUT_TOO_SMALL: -7;
export const ERR_SETTINGS: -8;
export const ERR_BUFFER: -9;
export const ERR_RULES_FOREIGN: -10;
export const ERR_RULES_LENGTH: -11;
export const ERR_RULES_MISALIGNED: -12;
export const ERR_RULES_CORRUPT: -13;
export const ERR_BUDGET: -14;
export const ERROR_NAMES: Readonly<Record<number, string>>;

export const STOP_STOP: 1;
export const STOP_LENGTH: 2;
export const STOP_TOOL_USE: 3;
export const STOP_ERROR: 4;
export const STOP_ABORTED: 5;
export const STOP_REASONS: Readonly<Record<StopReason, number>>;

export const PROFILE_CLASSIC: 0;
export const PROFILE_MODERN: 1;
export const PROFILES: Readonly<Record<"classic" | "modern", number>>;
export const CLASSIFIER_CLASSIC: 0;
export const CLASSIFIER_EXTENDED: 1;
/** Spec §13.2's curated set: the C libraries and `autoretry-curated.wasm` have it. */
export const CLASSIFIER_CURATED: 2;
export const CLASSIFIERS: Readonly<Record<ClassifierName, number>>;
export const SHOULD_RETRY_ABSENT: 0;
export const SHOULD_RETRY_NO: 1;
export const SHOULD_RETRY_YES: 2;
export const PARTIAL_NONE: 0;
export const PARTIAL_TEXT: 1;
export const PARTIAL_TOOLS: 2;
export const PARTIALS: Readonly<Record<"none" | "text" | "tools", number>>;
