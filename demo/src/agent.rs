//! The client agent: one prompt at a time against a provider over HTTP,
//! on the tokio driver. It turns each actual response into the machine's
//! inputs and carries out every output:
//!
//! | what the agent has | what the machine gets |
//! |---|---|
//! | the request sent | `stream_start` |
//! | a parsed message event, text or tool-call delta | `stream_event` (a ping, an SSE comment: nothing) |
//! | an HTTP error: status, headers and body | an `agent_end` with the error text the SDK prints and the response's `headers` |
//! | an in-band `error` event, a transport error | an `agent_end` with that text, `partial` from what streamed |
//! | a stop with nothing in it | an `agent_end` with `empty: true` |
//!
//! | output | what the agent does |
//! |---|---|
//! | `sleep` | the driver waits (on the demo's time scale) |
//! | `watch` / `cancel_timer` | arms or disarms its stall timer; when it runs out, `timer_fired` |
//! | `abort_agent` | drops the stream (the connection closes), ends the run as aborted |
//! | `drop_trailing_error` | removes the failed turn from its conversation |
//! | `continue_agent` | sends the conversation again; with `resume`, the partial text and a request to continue it |
//! | `mark_usage_limit` | marks the key limited, switches to the next key, answers `usage_limit_marked` |
//! | `switch_model` | switches to the next configured model, answers `model_switched` |
//! | `check_compaction` | the prompt is over |
//!
//! The agent also keeps the headers of each response (`Request::headers`)
//! for the table.

use std::collections::VecDeque;

use autoretry::host::driver::Driver;
use autoretry::{
    EventBuf, HostOptions, InputBuf, Machine, MessageBuf, OutputBuf, Partial, RetrySettings,
    StopReason, TimerId,
};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::clock::{wall_ms, Monotonic, Scale, ScaledSleeper};
use crate::record::Recorder;
use crate::transport::{self, Endpoint};
use crate::wire::{Item, Wire};

/// What the agent asks to continue a turn cut off after visible text.
pub const CONTINUE: &str = "Continue exactly where you stopped.";

/// An agent's configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// The provider's wire format.
    pub wire: Wire,
    /// The provider's base URL (`http://127.0.0.1:PORT/CASE`).
    pub base_url: String,
    /// The models, in the order the agent falls back through them.
    pub models: Vec<String>,
    /// The API keys, in the order the agent switches through them.
    pub keys: Vec<String>,
    /// The retry settings.
    pub settings: RetrySettings,
    /// The host options (`credentialStore` when there are several keys).
    pub host: HostOptions,
    /// The time scale.
    pub scale: Scale,
}

/// One request the agent made and what came of it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Request {
    /// 1, 2, ... within the prompt.
    pub number: u32,
    /// The model asked.
    pub model: String,
    /// The key used.
    pub key: String,
    /// Whether it continued a partial turn.
    pub resumed: bool,
    /// The HTTP status, when a response came.
    pub status: Option<u16>,
    /// The response headers.
    pub headers: Vec<(String, String)>,
    /// The wall clock (Unix ms) of the request's `agent_end`.
    pub now_ms: Option<u64>,
    /// The text streamed.
    pub text: String,
    /// Whether a tool call streamed.
    pub tool: bool,
    /// Progress events received (keep-alives not counted).
    pub events: u32,
    /// Keep-alives received.
    pub pings: u32,
    /// How the request ended: `answered`, `empty`, the error text, or
    /// `aborted`.
    pub result: String,
    /// What the machine decided about it, in order (`retry 1/3`,
    /// `sleep 2000 ms`, `abort_agent`, ...).
    pub decisions: Vec<String>,
}

/// What one prompt came to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    /// The requests, in order.
    pub requests: Vec<Request>,
    /// The events the machine emitted, as a terminal shows them.
    pub events: Vec<String>,
    /// The `errorMessage` of each retry's start event.
    pub retried: Vec<String>,
    /// The `sleep` waits, in ms.
    pub sleeps: Vec<u64>,
    /// Whether the prompt ended with an answer.
    pub answered: bool,
    /// The answer's text (the partial turns it continued included).
    pub answer: String,
    /// The conversation at the end, `(role, text)`.
    pub conversation: Vec<(String, String)>,
    /// The steps as vector lines (a scenario line first).
    pub vector: Vec<String>,
    /// Inputs the machine refused (none in a correct host).
    pub refused: Vec<String>,
}

/// A turn of the agent's conversation.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Turn {
    role: &'static str,
    text: String,
    failed: bool,
}

/// What the request task tells the agent.
#[derive(Debug)]
enum Got {
    /// The response head.
    Head {
        status: u16,
        headers: Vec<(String, String)>,
    },
    /// A parsed event.
    Item(Item),
    /// The request failed: the text the client prints.
    Failed(String),
}

/// The request in flight.
struct Flight {
    number: u32,
    task: JoinHandle<()>,
}

/// A client agent.
pub struct Agent {
    config: Config,
    endpoint: Endpoint,
    model: usize,
    key: usize,
    limited: Vec<bool>,
}

impl Agent {
    /// An agent on `config`; an error when the base URL is not a plain
    /// `http://IP:PORT/...` or there is no model or key.
    pub fn new(config: Config) -> Result<Agent, String> {
        let endpoint = Endpoint::parse(&config.base_url)?;
        if config.models.is_empty() || config.keys.is_empty() {
            return Err("the agent needs a model and a key".into());
        }
        let limited = vec![false; config.keys.len()];
        Ok(Agent {
            config,
            endpoint,
            model: 0,
            key: 0,
            limited,
        })
    }

    /// The model in use.
    pub fn model(&self) -> &str {
        &self.config.models[self.model]
    }

    /// Runs one prompt to its end (`check_compaction`), on a fresh
    /// machine; `live` gets a line per request and per decision.
    pub async fn run(&mut self, scenario: &str, prompt: &str, live: &mut dyn FnMut(&str)) -> Trace {
        let config = self.config.clone();
        let mut driver = Driver::new(
            Machine::new(config.settings, config.host),
            ScaledSleeper {
                scale: config.scale,
            },
        );
        let mut recorder = Recorder::new(scenario, config.settings, config.host);
        let clock = Monotonic::start(config.scale);
        let (tx, mut rx) = mpsc::unbounded_channel::<(u32, Got)>();
        let mut run = Run {
            trace: Trace::default(),
            conversation: vec![Turn {
                role: "user",
                text: prompt.to_owned(),
                failed: false,
            }],
            flight: None,
            watch: None,
            last_error: String::new(),
        };
        let mut pending: VecDeque<InputBuf> = VecDeque::new();
        pending.extend(self.send(&mut run, &tx, &clock, false, live));
        loop {
            let step = match pending.pop_front() {
                Some(input) => driver.handle(input),
                None => {
                    let next = next_input(&mut rx, &mut run, &clock, live);
                    match driver.next(next).await {
                        Some(step) => step,
                        None => break,
                    }
                }
            };
            let outputs: Vec<OutputBuf> = match &step.outputs {
                Ok(outputs) => outputs.iter().map(OutputBuf::from).collect(),
                Err(refused) => {
                    run.trace
                        .refused
                        .push(format!("{:?}: {refused}", step.input));
                    Vec::new()
                }
            };
            recorder.step(
                &step.input,
                step.outputs.as_deref().map_err(|r| *r),
                step.state,
            );
            drop(step);
            let mut over = false;
            for output in outputs {
                let note = describe(&output);
                if let Some(request) = run.trace.requests.last_mut() {
                    request.decisions.push(note.clone());
                }
                match output {
                    OutputBuf::Emit(event) => {
                        if let EventBuf::Start { error_message, .. } = &event {
                            run.trace.retried.push(error_message.clone());
                        }
                        // A success shows nothing on a terminal.
                        let text = event.as_event().to_string();
                        if !text.is_empty() {
                            live(&format!("    {text}"));
                        }
                        run.trace.events.push(text);
                    }
                    OutputBuf::Sleep { ms, .. } => {
                        live(&format!("    sleep {ms} ms"));
                        run.trace.sleeps.push(ms);
                    }
                    OutputBuf::Watch { ms, timer } => {
                        run.watch = Some((timer, Instant::now() + config.scale.real(ms)));
                    }
                    OutputBuf::CancelTimer { timer } => {
                        if run.watch.is_some_and(|(id, _)| id == timer) {
                            run.watch = None;
                        }
                    }
                    OutputBuf::DropTrailingError => {
                        if run.conversation.last().is_some_and(|turn| turn.failed) {
                            run.conversation.pop();
                        }
                    }
                    OutputBuf::ContinueAgent => {
                        pending.extend(self.send(&mut run, &tx, &clock, false, live));
                    }
                    OutputBuf::ResumeAgent => {
                        pending.extend(self.send(&mut run, &tx, &clock, true, live));
                    }
                    OutputBuf::AbortAgent => {
                        live("    abort_agent: the stream is dropped");
                        if let Some(input) = run.abort() {
                            pending.push_back(input);
                        }
                    }
                    OutputBuf::MarkUsageLimit { .. } => {
                        self.limited[self.key] = true;
                        let next = self.limited.iter().position(|limited| !limited);
                        if let Some(next) = next {
                            self.key = next;
                        }
                        live(&format!(
                            "    mark_usage_limit: {}",
                            match next {
                                Some(_) =>
                                    format!("switched to key {}", self.config.keys[self.key]),
                                None => "no other key".to_owned(),
                            }
                        ));
                        pending.push_back(InputBuf::UsageLimitMarked {
                            switched: next.is_some(),
                        });
                    }
                    OutputBuf::SwitchModel { .. } => {
                        let switched = self.model + 1 < config.models.len();
                        if switched {
                            self.model += 1;
                        }
                        live(&format!(
                            "    switch_model: {}",
                            if switched {
                                format!("switched to {}", self.model())
                            } else {
                                "no other model".to_owned()
                            }
                        ));
                        pending.push_back(InputBuf::ModelSwitched { switched });
                    }
                    OutputBuf::CheckCompaction => over = true,
                    OutputBuf::Settled => {}
                }
            }
            if over {
                break;
            }
        }
        if let Some(flight) = run.flight.take() {
            flight.task.abort();
        }
        run.trace.answered = run
            .conversation
            .last()
            .is_some_and(|turn| turn.role == "assistant" && !turn.failed);
        run.trace.answer = run
            .conversation
            .iter()
            .filter(|turn| turn.role == "assistant")
            .map(|turn| turn.text.as_str())
            .collect();
        run.trace.conversation = run
            .conversation
            .iter()
            .map(|turn| (turn.role.to_owned(), turn.text.clone()))
            .collect();
        run.trace.vector = recorder.lines().to_vec();
        run.trace
    }

    /// Sends the conversation (after asking to continue the partial turn,
    /// when `resume`); the input that says so, when there is one.
    fn send(
        &self,
        run: &mut Run,
        tx: &mpsc::UnboundedSender<(u32, Got)>,
        clock: &Monotonic,
        resume: bool,
        live: &mut dyn FnMut(&str),
    ) -> Option<InputBuf> {
        if resume {
            // The partial turn stays (incomplete); the model is asked to
            // continue it.
            run.conversation.push(Turn {
                role: "user",
                text: CONTINUE.to_owned(),
                failed: false,
            });
        }
        let number = run.trace.requests.len() as u32 + 1;
        let model = self.model().to_owned();
        let key = self.config.keys[self.key].clone();
        live(&format!(
            "  #{number} {} {model} key {key}{}",
            self.config.wire.name(),
            if resume {
                " (continuing the partial text)"
            } else {
                ""
            }
        ));
        run.trace.requests.push(Request {
            number,
            model: model.clone(),
            key: key.clone(),
            resumed: resume,
            ..Request::default()
        });
        let messages: Vec<(&str, &str)> = run
            .conversation
            .iter()
            .filter(|turn| !turn.text.is_empty())
            .map(|turn| (turn.role, turn.text.as_str()))
            .collect();
        let wire = self.config.wire;
        let body = wire.request_body(&model, &messages);
        let endpoint = self.endpoint.clone();
        let tx = tx.clone();
        let task =
            tokio::spawn(async move {
                let say = |got| {
                    let _ = tx.send((number, got));
                };
                let response =
                    match transport::post(&endpoint, wire.path(), &wire.auth_headers(&key), &body)
                        .await
                    {
                        Ok(response) => response,
                        Err(text) => return say(Got::Failed(text)),
                    };
                let status = response.status;
                say(Got::Head {
                    status,
                    headers: response.headers.clone(),
                });
                if status != 200 {
                    let text = match response.text().await {
                        Ok(body) => wire.printed_error(status, &body),
                        Err(text) => text,
                    };
                    return say(Got::Failed(text));
                }
                let mut decoder = wire.decoder();
                let mut events = response.events();
                loop {
                    match events.next().await {
                        Some(Ok(event)) => {
                            let item = decoder.item(&event.event, &event.data);
                            let last = matches!(item, Item::Stop(_) | Item::Error(_));
                            say(Got::Item(item));
                            if last {
                                return;
                            }
                        }
                        Some(Err(text)) => return say(Got::Failed(text)),
                        None => {
                            return say(Got::Failed(
                                "the stream ended before the answer stopped".into(),
                            ))
                        }
                    }
                }
            });
        run.flight = Some(Flight { number, task });
        Some(InputBuf::StreamStart {
            now_ms: clock.now_ms(),
        })
    }
}

/// The state of one prompt.
struct Run {
    trace: Trace,
    conversation: Vec<Turn>,
    flight: Option<Flight>,
    watch: Option<(TimerId, Instant)>,
    last_error: String,
}

impl Run {
    fn request(&mut self) -> &mut Request {
        if self.trace.requests.is_empty() {
            self.trace.requests.push(Request::default());
        }
        let last = self.trace.requests.len() - 1;
        &mut self.trace.requests[last]
    }

    /// What streamed before the turn failed.
    fn partial(&mut self) -> Partial {
        let request = self.request();
        if request.tool {
            Partial::Tools
        } else if request.text.trim().is_empty() {
            Partial::None
        } else {
            Partial::Text
        }
    }

    /// Ends the request in flight: a failed turn (its partial text kept
    /// in the conversation), and the `agent_end` of `message`.
    fn end(&mut self, message: MessageBuf, result: String) -> InputBuf {
        self.flight = None;
        self.watch = None;
        let failed = matches!(message.stop_reason, StopReason::Error | StopReason::Aborted);
        if let Some(text) = &message.error_message {
            self.last_error = text.clone();
        }
        let now_ms = wall_ms();
        let request = self.request();
        request.result = result;
        request.now_ms = Some(now_ms);
        let text = request.text.clone();
        // Each run's answer is a turn of its own: a failed one is what
        // `drop_trailing_error` removes, and a partial turn that a
        // continuation goes on from stays before the request to continue.
        self.conversation.push(Turn {
            role: "assistant",
            text,
            failed,
        });
        InputBuf::AgentEnd {
            message,
            now_ms: Some(now_ms),
        }
    }

    /// `abort_agent`: drops the stream and ends the run as aborted.
    fn abort(&mut self) -> Option<InputBuf> {
        let flight = self.flight.take()?;
        flight.task.abort();
        let partial = self.partial();
        let headers = self.request().headers.clone();
        let message = MessageBuf::new(StopReason::Aborted)
            .with_partial(partial)
            .with_headers(headers);
        Some(self.end(message, "aborted".into()))
    }

    /// What one message of the request task is to the machine.
    fn got(&mut self, got: Got, clock: &Monotonic, live: &mut dyn FnMut(&str)) -> Option<InputBuf> {
        let progress = Some(InputBuf::StreamEvent {
            now_ms: clock.now_ms(),
        });
        match got {
            Got::Head { status, headers } => {
                let request = self.request();
                request.status = Some(status);
                request.headers = headers;
                None
            }
            Got::Item(Item::KeepAlive) => {
                self.request().pings += 1;
                None
            }
            Got::Item(Item::Progress) => {
                self.request().events += 1;
                progress
            }
            Got::Item(Item::Text(text)) => {
                let request = self.request();
                request.events += 1;
                request.text.push_str(&text);
                progress
            }
            Got::Item(Item::Tool) => {
                let request = self.request();
                request.events += 1;
                request.tool = true;
                progress
            }
            Got::Item(Item::Stop(reason)) => {
                let request = self.request();
                let empty = request.text.trim().is_empty() && !request.tool;
                let result = if empty { "empty" } else { "answered" };
                live(&format!(
                    "    <- 200, {result} ({} events, {} pings)",
                    request.events, request.pings
                ));
                // A stop with nothing in it is empty (spec 12.3).
                let message = MessageBuf {
                    empty,
                    ..MessageBuf::new(reason)
                };
                Some(self.end(message, result.to_owned()))
            }
            Got::Item(Item::Error(text)) | Got::Failed(text) => {
                let partial = self.partial();
                let request = self.request();
                // An HTTP error's text starts with its status already.
                let status = match request.status {
                    Some(200) => "200, then ",
                    Some(_) => "",
                    None => "no response: ",
                };
                live(&format!(
                    "    <- {status}{text}{}",
                    match partial {
                        Partial::None => String::new(),
                        Partial::Text => format!(" (after text: {:?})", request.text),
                        Partial::Tools => " (after a tool call)".to_owned(),
                    }
                ));
                // The response's headers travel with the error (spec
                // 13.1): the machine reads its wait and verdict there.
                let message = MessageBuf::error(text.clone())
                    .with_partial(partial)
                    .with_headers(request.headers.clone());
                Some(self.end(message, text))
            }
        }
    }
}

/// Waits for the next input: a message of the request in flight that is
/// one, or the stall timer running out.
async fn next_input(
    rx: &mut mpsc::UnboundedReceiver<(u32, Got)>,
    run: &mut Run,
    clock: &Monotonic,
    live: &mut dyn FnMut(&str),
) -> Option<InputBuf> {
    loop {
        let watch = run.watch;
        let received = match watch {
            Some((timer, at)) => tokio::select! {
                received = rx.recv() => received,
                () = tokio::time::sleep_until(at) => {
                    run.watch = None;
                    return Some(InputBuf::TimerFired { timer });
                }
            },
            None => rx.recv().await,
        };
        let (number, got) = received?;
        // A message of a request already aborted is stale.
        if run
            .flight
            .as_ref()
            .is_none_or(|flight| flight.number != number)
        {
            continue;
        }
        if let Some(input) = run.got(got, clock, live) {
            return Some(input);
        }
    }
}

/// A decision as the table shows it.
fn describe(output: &OutputBuf) -> String {
    match output {
        OutputBuf::Emit(EventBuf::Start {
            attempt,
            max_attempts,
            ..
        }) => format!("retry {attempt}/{max_attempts}"),
        OutputBuf::Emit(EventBuf::End {
            success: true,
            attempt,
            ..
        }) => format!("succeeded after {attempt} retries"),
        OutputBuf::Emit(EventBuf::End {
            final_error,
            attempt,
            ..
        }) => format!(
            "gave up after {attempt} retries: {}",
            final_error.as_deref().unwrap_or_default()
        ),
        OutputBuf::Sleep { ms, .. } => format!("sleep {ms} ms"),
        OutputBuf::Watch { ms, .. } => format!("watch {ms} ms"),
        OutputBuf::CancelTimer { .. } => "cancel_timer".into(),
        OutputBuf::ContinueAgent => "continue_agent".into(),
        OutputBuf::ResumeAgent => "continue_agent (resume)".into(),
        OutputBuf::SwitchModel { reason } => format!("switch_model ({})", reason.as_str()),
        OutputBuf::MarkUsageLimit { retry_after_ms } => match retry_after_ms {
            Some(ms) => format!("mark_usage_limit (reset in {ms} ms)"),
            None => "mark_usage_limit".into(),
        },
        other => other.type_name().into(),
    }
}
