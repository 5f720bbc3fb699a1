//! The scripted plan of failures: what the local provider answers to each
//! request of each case, in order, independent of the wire format (each
//! wire module writes a [`Fault`] and a stream the way its provider does).
//!
//! ```
//! use autoretry_demo::plan::Plan;
//! let plan = Plan::default_plan();
//! assert!(plan.case("overloaded").is_some());
//! assert!(plan.case("reset-after-text").is_some());
//! assert_eq!(Plan::every_case().case("reset-after-text").unwrap().replies.len(), 2);
//! ```

/// An error the provider answers with, as an HTTP status and body (or as
/// an in-band `error` event); each wire module writes it with its own
/// status, error type, text and headers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Overloaded: Anthropic's 529 `overloaded_error`, OpenAI's 503.
    Overloaded,
    /// A per-minute rate limit (429) with every header that says when:
    /// `retry-after`, `retry-after-ms`, `x-should-retry` and the buckets.
    RateLimited,
    /// A server error with this status (500, 502, 503).
    Server(u16),
    /// A plan or daily quota (429) whose reset is hours away.
    Quota,
}

/// One step of a streamed answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Beat {
    /// The message begins (Anthropic's `message_start`, OpenAI's first
    /// chunk with the role).
    Start,
    /// A text delta.
    Text(String),
    /// A tool call, its input JSON sent in two deltas.
    Tool {
        /// The tool's name.
        name: String,
        /// The input, as JSON text.
        input: String,
    },
    /// A keep-alive (Anthropic's `ping` event, an SSE comment on OpenAI).
    Ping,
    /// Silence for this many milliseconds (of the plan's time, scaled).
    Pause(u64),
}

/// How a streamed answer ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum End {
    /// The answer stops normally (`message_delta` and `message_stop`, or
    /// the last chunk and `[DONE]`), with the stop reason its content
    /// implies (a tool call: `tool_use`).
    Finish,
    /// The connection is reset (TCP RST) where the stream stands.
    Reset,
    /// The stream goes quiet and stays open until the client leaves,
    /// sending a keep-alive every `ping_ms` when given.
    Hang {
        /// The keep-alive period, in the plan's milliseconds.
        ping_ms: Option<u64>,
    },
    /// An in-band `error` event, then the stream closes.
    Error(Fault),
}

/// What the provider does for one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// An HTTP error status with the provider's error body and headers.
    Http(Fault),
    /// HTTP 200 and a server-sent event stream.
    Stream {
        /// The beats, in order.
        beats: Vec<Beat>,
        /// How it ends.
        end: End,
    },
}

impl Reply {
    /// A plain answer: the message starts, three text deltas, a stop.
    pub fn answer(text: &str) -> Reply {
        let mut beats = vec![Beat::Start, Beat::Ping];
        for word in text.split_inclusive(' ') {
            beats.push(Beat::Text(word.to_owned()));
            beats.push(Beat::Pause(20));
        }
        Reply::Stream {
            beats,
            end: End::Finish,
        }
    }
}

/// One failure of the plan: its name, what it shows, and the provider's
/// replies to the case's requests, in order (a request past the last
/// reply is answered by the last one again).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    /// The name (the path segment the agent's base URL carries).
    pub name: &'static str,
    /// What the case shows.
    pub about: &'static str,
    /// The replies, in order.
    pub replies: Vec<Reply>,
}

/// The cases, run in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The cases.
    pub cases: Vec<Case>,
}

/// The text of every good answer.
pub const ANSWER: &str = "The capital of France is Paris.";

impl Plan {
    /// Every failure the demo knows the agent can act on, each followed
    /// by a good answer: [`Plan::every_case`]. (The agent classifies with
    /// the curated set of spec 13.2, which reads a client's transport
    /// error, `Connection reset by peer`, as transient: the reset after
    /// some text is continued.)
    pub fn default_plan() -> Plan {
        Plan::every_case()
    }

    /// Every failure the provider can play, each followed by a good answer.
    pub fn every_case() -> Plan {
        let answer = || Reply::answer(ANSWER);
        let partial = || {
            vec![
                Beat::Start,
                Beat::Text("The capital ".into()),
                Beat::Pause(20),
                Beat::Text("of France ".into()),
            ]
        };
        let case = |name, about, replies| Case {
            name,
            about,
            replies,
        };
        Plan {
            cases: vec![
                case(
                    "overloaded",
                    "the provider is overloaded (529 overloaded_error, OpenAI's 503)",
                    vec![Reply::Http(Fault::Overloaded), answer()],
                ),
                case(
                    "rate-limited",
                    "429 with retry-after, retry-after-ms, x-should-retry and the rate-limit buckets",
                    vec![Reply::Http(Fault::RateLimited), answer()],
                ),
                case(
                    "server-errors",
                    "500, then 502, then 503 with retry-after",
                    vec![
                        Reply::Http(Fault::Server(500)),
                        Reply::Http(Fault::Server(502)),
                        Reply::Http(Fault::Server(503)),
                        answer(),
                    ],
                ),
                case(
                    "error-event",
                    "HTTP 200 whose first event is an error",
                    vec![
                        Reply::Stream {
                            beats: vec![],
                            end: End::Error(Fault::Overloaded),
                        },
                        answer(),
                    ],
                ),
                case(
                    "reset-after-text",
                    "the connection is reset after some text: the retry continues it",
                    vec![
                        Reply::Stream {
                            beats: partial(),
                            end: End::Reset,
                        },
                        Reply::answer("Paris."),
                    ],
                ),
                case(
                    "reset-after-tool",
                    "the connection is reset after a tool call: never replayed",
                    vec![
                        Reply::Stream {
                            beats: vec![
                                Beat::Start,
                                Beat::Text("Let me look that up. ".into()),
                                Beat::Tool {
                                    name: "web_search".into(),
                                    input: r#"{"query":"capital of France"}"#.into(),
                                },
                            ],
                            end: End::Reset,
                        },
                        answer(),
                    ],
                ),
                case(
                    "stall-first",
                    "the stream stalls before its first event",
                    vec![
                        Reply::Stream {
                            beats: vec![],
                            end: End::Hang { ping_ms: None },
                        },
                        answer(),
                    ],
                ),
                case(
                    "stall-mid",
                    "the stream stalls mid-answer, pings still flowing",
                    vec![
                        Reply::Stream {
                            beats: partial(),
                            end: End::Hang { ping_ms: Some(300) },
                        },
                        Reply::answer("Paris."),
                    ],
                ),
                case(
                    "empty",
                    "an answer that stops with nothing in it",
                    vec![
                        Reply::Stream {
                            beats: vec![Beat::Start, Beat::Ping],
                            end: End::Finish,
                        },
                        answer(),
                    ],
                ),
                case(
                    "quota",
                    "a daily quota with its reset hours away: the credential hand-off",
                    vec![Reply::Http(Fault::Quota), answer()],
                ),
                case(
                    "fallback",
                    "overloaded until the retries are spent: the second model",
                    vec![
                        Reply::Http(Fault::Overloaded),
                        Reply::Http(Fault::Overloaded),
                        Reply::Http(Fault::Overloaded),
                        Reply::Http(Fault::Overloaded),
                        answer(),
                    ],
                ),
            ],
        }
    }

    /// The case of this name.
    pub fn case(&self, name: &str) -> Option<&Case> {
        self.cases.iter().find(|case| case.name == name)
    }

    /// The plan of the named cases only, in the order given; the unknown
    /// name when one is not a case.
    ///
    /// ```
    /// use autoretry_demo::plan::Plan;
    /// let plan = Plan::default_plan();
    /// assert_eq!(plan.only(&["quota", "empty"]).unwrap().cases[1].name, "empty");
    /// assert_eq!(plan.only(&["nope"]).unwrap_err(), "nope");
    /// ```
    pub fn only(&self, names: &[&str]) -> Result<Plan, String> {
        let cases = names
            .iter()
            .map(|name| self.case(name).cloned().ok_or_else(|| (*name).to_owned()))
            .collect::<Result<_, _>>()?;
        Ok(Plan { cases })
    }
}
