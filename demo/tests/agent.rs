//! The agent against the local provider over real sockets on 127.0.0.1,
//! for each failure of the plan and both wire formats: the machine's
//! decisions, what the agent sent, and its recorded trace replayed.

use autoretry_demo::agent::{Agent, Config, Request, Trace, CONTINUE};
use autoretry_demo::clock::Scale;
use autoretry_demo::plan::{Plan, ANSWER};
use autoretry_demo::provider::{Provider, Received};
use autoretry_demo::show;
use autoretry_demo::wire::{Wire, WIRES};
use autoretry_testkit::replay::Replayer;
use serde_json::Value;

/// Plan milliseconds at a tenth of real time: a 500 ms backoff takes 50.
fn scale() -> Scale {
    Scale::new(0.1).unwrap()
}

/// Runs the case on `wire`; its trace and the requests the provider got.
async fn run(wire: Wire, case: &str) -> (Trace, Vec<Received>) {
    let plan = Plan::default_plan().only(&[case]).unwrap();
    let provider = Provider::start(plan, scale()).await.unwrap();
    let mut agent = Agent::new(Config {
        wire,
        base_url: provider.base_url(case),
        models: show::models(wire),
        keys: show::keys(),
        settings: show::settings(),
        host: show::host(),
        scale: scale(),
    })
    .unwrap();
    let mut lines = Vec::new();
    let mut live = |line: &str| lines.push(line.to_owned());
    let run = agent.run(case, show::PROMPT, &mut live);
    let ended = tokio::time::timeout(std::time::Duration::from_secs(20), run).await;
    let Ok(trace) = ended else {
        panic!("{case} on {wire:?} did not end: {lines:#?}");
    };
    assert!(trace.refused.is_empty(), "refused: {:?}", trace.refused);
    replays_exactly(&trace);
    (trace, provider.requests_of(case))
}

/// The recorded vector lines replay on a fresh machine to exactly the
/// outputs and states the agent saw.
fn replays_exactly(trace: &Trace) {
    let mut replayer = Replayer::new();
    let mut steps = 0;
    for line in &trace.vector {
        let expected: Value = serde_json::from_str(line).unwrap();
        let Some(step) = replayer.replay_line(line).unwrap() else {
            continue;
        };
        steps += 1;
        assert_eq!(Value::Array(step.out_values()), expected["out"], "{line}");
        assert_eq!(step.state_value(), expected["state"], "{line}");
        assert_eq!(step.refused, expected.get("refused").is_some(), "{line}");
    }
    assert!(steps >= 1, "{:?}", trace.vector);
}

/// Whether the machine decided `what` about the request.
fn decided(request: &Request, what: &str) -> bool {
    request.decisions.iter().any(|d| d == what)
}

/// The first decision about the request that is not the watchdog's.
fn decision(request: &Request) -> &str {
    request
        .decisions
        .iter()
        .find(|d| !d.starts_with("watch") && *d != "cancel_timer")
        .map_or("", String::as_str)
}

/// The `sleep` waits of the trace.
fn sleeps(trace: &Trace) -> &[u64] {
    &trace.sleeps
}

#[tokio::test]
async fn overloaded_is_retried_after_the_backoff() {
    for wire in WIRES {
        let (trace, requests) = run(wire, "overloaded").await;
        assert_eq!(requests.len(), 2);
        assert_eq!(sleeps(&trace), [500]);
        assert!(trace.answered);
        assert_eq!(trace.answer, ANSWER);
        let first = &trace.requests[0];
        match wire {
            Wire::Anthropic => assert_eq!(
                first.result,
                r#"529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            Wire::OpenAi => assert_eq!(
                first.result,
                "503 The engine is currently overloaded, please try again later"
            ),
        }
        assert_eq!(decision(first), "retry 1/3");
        assert!(decided(first, "drop_trailing_error"));
        // The failed turn was dropped: the retry sent the prompt alone.
        assert_eq!(
            requests[1].messages(),
            [("user".into(), show::PROMPT.into())]
        );
    }
}

#[tokio::test]
async fn a_rate_limit_waits_what_its_headers_say() {
    for wire in WIRES {
        let (trace, requests) = run(wire, "rate-limited").await;
        assert_eq!(requests.len(), 2);
        let first = &trace.requests[0];
        assert_eq!(first.status, Some(429));
        // Anthropic: retry-after: 2; OpenAI: retry-after-ms: 1500 ahead of
        // its retry-after: 2. Both over the 500 ms backoff.
        let (wait, source) = match wire {
            Wire::Anthropic => (2000, "header retry-after: 2"),
            Wire::OpenAi => (1500, "header retry-after-ms: 1500"),
        };
        assert_eq!(sleeps(&trace), [wait]);
        assert_eq!(show::wait_source(first, wait), source);
        assert_eq!(decision(first), "retry 1/3");
        // The headers went to the machine with the failed run's message.
        let end = trace
            .vector
            .iter()
            .find(|line| line.contains(r#""type":"agent_end""#))
            .expect("an agent_end line");
        assert!(end.contains(r#"["x-should-retry","true"]"#), "{end}");
        assert!(trace.answered);
    }
}

#[tokio::test]
async fn server_errors_back_off_exponentially() {
    for wire in WIRES {
        let (trace, requests) = run(wire, "server-errors").await;
        assert_eq!(requests.len(), 4);
        assert_eq!(trace.requests[0].status, Some(500));
        assert_eq!(trace.requests[1].status, Some(502));
        assert_eq!(trace.requests[2].status, Some(503));
        // The 503's retry-after: 1 is below the 2000 ms backoff.
        assert_eq!(sleeps(&trace), [500, 1000, 2000]);
        assert!(trace.answered);
    }
}

#[tokio::test]
async fn a_200_whose_first_event_is_an_error_is_retried() {
    for wire in WIRES {
        let (trace, requests) = run(wire, "error-event").await;
        assert_eq!(requests.len(), 2);
        assert_eq!(trace.requests[0].status, Some(200));
        match wire {
            Wire::Anthropic => assert_eq!(
                trace.requests[0].result,
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            Wire::OpenAi => assert_eq!(
                trace.requests[0].result,
                "The engine is currently overloaded, please try again later"
            ),
        }
        assert_eq!(decision(&trace.requests[0]), "retry 1/3");
        assert!(trace.answered);
    }
}

#[tokio::test]
async fn spent_retries_switch_to_the_second_model() {
    for wire in WIRES {
        let (trace, requests) = run(wire, "fallback").await;
        let models: Vec<&str> = requests.iter().map(|r| r.model.as_str()).collect();
        let [first, second] = &show::models(wire)[..] else {
            panic!()
        };
        assert_eq!(models, [first, first, first, first, second]);
        assert!(decided(&trace.requests[3], "switch_model (exhausted)"));
        // The switch starts one immediate retry.
        assert_eq!(sleeps(&trace), [500, 1000, 2000, 0]);
        assert!(trace.answered);
    }
}

#[tokio::test]
async fn a_tool_call_is_never_replayed() {
    for wire in WIRES {
        let (trace, requests) = run(wire, "reset-after-tool").await;
        assert_eq!(requests.len(), 1, "a tool call was replayed");
        assert!(trace.requests[0].tool);
        assert!(!trace.answered);
        assert!(sleeps(&trace).is_empty());
        assert!(trace.requests[0]
            .decisions
            .iter()
            .all(|d| !d.starts_with("retry")));
    }
}

/// A plan or daily quota is a usage limit under the curated classifier
/// (Anthropic's "daily usage limit", OpenAI's "requests per day (RPD)",
/// each with a reset hours away): the credential hand-off, then the
/// second key at once.
#[tokio::test]
async fn a_daily_quota_goes_to_the_credential_hand_off() {
    for wire in WIRES {
        let (trace, requests) = run(wire, "quota").await;
        let keys: Vec<_> = requests.iter().map(|r| r.key.clone().unwrap()).collect();
        assert_eq!(keys, show::keys(), "{wire:?}");
        assert!(
            decision(&trace.requests[0]).starts_with("mark_usage_limit"),
            "{wire:?}: {:?}",
            trace.requests[0].decisions
        );
        // The switch to the second key retries at once.
        assert_eq!(sleeps(&trace), [0], "{wire:?}");
        assert!(trace.answered);
    }
}

/// A connection reset after some text: the curated classifier reads the
/// client's `Connection reset by peer` as transient, and the retry sends
/// the partial text back and asks to go on.
#[tokio::test]
async fn a_reset_after_text_is_continued() {
    for wire in WIRES {
        let (trace, requests) = run(wire, "reset-after-text").await;
        assert_eq!(requests.len(), 2, "{wire:?}");
        let first = &trace.requests[0];
        assert_eq!(first.text, "The capital of France ");
        assert!(!first.tool);
        assert_eq!(decision(first), "retry 1/3", "{:?}", first.decisions);
        let [retried] = &trace.retried[..] else {
            panic!("{:?}", trace.retried)
        };
        assert!(retried.contains("Connection reset by peer"), "{retried}");
        assert!(trace.requests[1].resumed);
        assert_eq!(
            requests[1].messages(),
            [
                ("user".into(), show::PROMPT.into()),
                ("assistant".into(), "The capital of France ".into()),
                ("user".into(), CONTINUE.into()),
            ]
        );
        assert!(trace.answered);
        assert_eq!(trace.answer, "The capital of France Paris.");
    }
}

#[tokio::test]
async fn the_default_plan_holds_every_case() {
    let plan = Plan::default_plan();
    let names: Vec<&str> = plan.cases.iter().map(|c| c.name).collect();
    let every: Vec<&str> = Plan::every_case().cases.iter().map(|c| c.name).collect();
    assert_eq!(names, every);
    assert!(names.contains(&"reset-after-text"), "{names:?}");
    assert!(names.len() >= 11, "{names:?}");
}

#[tokio::test]
async fn a_stall_before_the_first_event_is_aborted_and_retried() {
    for wire in WIRES {
        let (trace, requests) = run(wire, "stall-first").await;
        assert_eq!(requests.len(), 2);
        let first = &trace.requests[0];
        assert_eq!(first.status, Some(200));
        assert_eq!(first.events, 0);
        assert_eq!(first.result, "aborted");
        assert!(decided(first, "watch 3000 ms"), "{:?}", first.decisions);
        assert!(decided(first, "abort_agent"), "{:?}", first.decisions);
        assert_eq!(trace.retried, ["Stream stalled: no event for 3000ms"]);
        // Nothing streamed: a replay, after the backoff.
        assert_eq!(sleeps(&trace), [500]);
        assert!(!trace.requests[1].resumed);
        assert!(trace.answered);
        assert_eq!(trace.answer, ANSWER);
    }
}

#[tokio::test]
async fn a_stall_mid_answer_with_pings_flowing_is_continued() {
    for wire in WIRES {
        let (trace, requests) = run(wire, "stall-mid").await;
        assert_eq!(requests.len(), 2);
        let first = &trace.requests[0];
        assert_eq!(first.text, "The capital of France ");
        assert_eq!(first.result, "aborted");
        // Anthropic's pings arrive as events and are no progress; OpenAI's
        // keep-alives are SSE comments the parser drops.
        if wire == Wire::Anthropic {
            assert!(first.pings >= 2, "{first:?}");
        }
        // The first event's watch was still pending when the text came
        // (the timer is lazy, spec 12.2): it fires at its own due time,
        // finds the silence since the last event over 2000 ms, and the
        // stall reports that silence.
        let [stalled] = &trace.retried[..] else {
            panic!("{:?}", trace.retried)
        };
        let silence: u64 = stalled
            .strip_prefix("Stream stalled: no event for ")
            .and_then(|rest| rest.strip_suffix("ms"))
            .and_then(|ms| ms.parse().ok())
            .unwrap_or_else(|| panic!("{stalled}"));
        assert!((2000..=3000).contains(&silence), "{stalled}");
        assert!(trace.requests[1].resumed);
        // The continuation sends the partial text back, and asks to go on.
        assert_eq!(
            requests[1].messages(),
            [
                ("user".into(), show::PROMPT.into()),
                ("assistant".into(), "The capital of France ".into()),
                ("user".into(), CONTINUE.into()),
            ]
        );
        assert!(trace.answered);
        assert_eq!(trace.answer, "The capital of France Paris.");
    }
}

#[tokio::test]
async fn an_empty_answer_is_retried() {
    for wire in WIRES {
        let (trace, requests) = run(wire, "empty").await;
        assert_eq!(requests.len(), 2);
        assert_eq!(trace.requests[0].status, Some(200));
        assert_eq!(trace.requests[0].result, "empty");
        assert_eq!(decision(&trace.requests[0]), "retry 1/3");
        assert_eq!(trace.retried, ["Empty response from the model"]);
        // The empty answer was dropped: the retry is a replay.
        assert_eq!(
            requests[1].messages(),
            [("user".into(), show::PROMPT.into())]
        );
        assert!(trace.answered);
    }
}

#[tokio::test]
async fn a_failed_continuation_is_dropped_alone_and_the_partial_turn_stays() {
    use autoretry_demo::plan::{Beat, Case, End, Fault, Reply};
    for wire in WIRES {
        let plan = Plan {
            cases: vec![Case {
                name: "c",
                about: "a stall after text, the continuation overloaded, then an answer",
                replies: vec![
                    Reply::Stream {
                        beats: vec![Beat::Start, Beat::Text("The capital ".into())],
                        end: End::Hang { ping_ms: None },
                    },
                    Reply::Http(Fault::Overloaded),
                    Reply::answer("of France is Paris."),
                ],
            }],
        };
        let provider = Provider::start(plan, scale()).await.unwrap();
        let mut agent = Agent::new(Config {
            wire,
            base_url: provider.base_url("c"),
            models: show::models(wire),
            keys: show::keys(),
            settings: show::settings(),
            host: show::host(),
            scale: scale(),
        })
        .unwrap();
        let trace = agent.run("c", show::PROMPT, &mut |_| {}).await;
        replays_exactly(&trace);
        let requests = provider.requests_of("c");
        assert_eq!(requests.len(), 3);
        let continued = [
            ("user".to_owned(), show::PROMPT.to_owned()),
            ("assistant".to_owned(), "The capital ".to_owned()),
            ("user".to_owned(), CONTINUE.to_owned()),
        ];
        // The continuation, then (its failure dropped) the same context
        // again, by a plain replay of it.
        assert_eq!(requests[1].messages(), continued);
        assert_eq!(requests[2].messages(), continued);
        assert!(trace.requests[1].resumed);
        assert!(!trace.requests[2].resumed);
        assert!(trace.answered);
        assert_eq!(trace.answer, "The capital of France is Paris.");
    }
}
