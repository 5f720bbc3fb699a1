//! The local provider over real sockets on 127.0.0.1: its error bodies
//! and headers, its streams in both wire formats, a reset, a stall.

use std::time::Duration;

use autoretry_demo::clock::Scale;
use autoretry_demo::plan::{Beat, Case, End, Fault, Plan, Reply};
use autoretry_demo::provider::Provider;
use autoretry_demo::transport::{post, Endpoint, SseEvent, Stream};
use autoretry_demo::wire::Wire;
use serde_json::{json, Value};

fn plan(replies: Vec<Reply>) -> Plan {
    Plan {
        cases: vec![Case {
            name: "c",
            about: "",
            replies,
        }],
    }
}

async fn start(replies: Vec<Reply>) -> (Provider, Endpoint) {
    let provider = Provider::start(plan(replies), Scale::new(0.1).unwrap())
        .await
        .unwrap();
    let endpoint = Endpoint::parse(&provider.base_url("c")).unwrap();
    (provider, endpoint)
}

fn body(wire: Wire) -> Value {
    wire.request_body("m", &[("user", "Hi")])
}

async fn all_events(stream: &mut Stream) -> Vec<SseEvent> {
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event.unwrap());
    }
    events
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

#[tokio::test]
async fn anthropic_overloaded_is_a_529_with_its_error_body() {
    let (_provider, endpoint) = start(vec![Reply::Http(Fault::Overloaded)]).await;
    let wire = Wire::Anthropic;
    let response = post(&endpoint, wire.path(), &wire.auth_headers("k"), &body(wire))
        .await
        .unwrap();
    assert_eq!(response.status, 529);
    assert_eq!(header(&response.headers, "x-should-retry"), Some("true"));
    let text = response.text().await.unwrap();
    assert_eq!(
        text,
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
    );
    assert_eq!(
        wire.printed_error(529, &text),
        r#"529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
    );
}

#[tokio::test]
async fn rate_limits_carry_their_headers() {
    for wire in [Wire::Anthropic, Wire::OpenAi] {
        let (_provider, endpoint) = start(vec![Reply::Http(Fault::RateLimited)]).await;
        let response = post(&endpoint, wire.path(), &wire.auth_headers("k"), &body(wire))
            .await
            .unwrap();
        assert_eq!(response.status, 429);
        let h = &response.headers;
        assert_eq!(header(h, "x-should-retry"), Some("true"));
        match wire {
            Wire::Anthropic => {
                assert_eq!(header(h, "retry-after"), Some("2"));
                assert_eq!(
                    header(h, "anthropic-ratelimit-requests-remaining"),
                    Some("0")
                );
                let reset = header(h, "anthropic-ratelimit-requests-reset").unwrap();
                assert!(reset.ends_with('Z') && reset.contains('T'), "{reset}");
            }
            Wire::OpenAi => {
                assert_eq!(header(h, "retry-after-ms"), Some("1500"));
                assert_eq!(header(h, "x-ratelimit-remaining-requests"), Some("0"));
                assert_eq!(header(h, "x-ratelimit-reset-tokens"), Some("6m0s"));
            }
        }
        let text = response.text().await.unwrap();
        let error: Value = serde_json::from_str(&text).unwrap();
        match wire {
            Wire::Anthropic => assert_eq!(error["error"]["type"], "rate_limit_error"),
            Wire::OpenAi => assert_eq!(error["error"]["code"], "rate_limit_exceeded"),
        }
    }
}

#[tokio::test]
async fn server_errors_keep_their_status() {
    for status in [500, 502, 503] {
        for wire in [Wire::Anthropic, Wire::OpenAi] {
            let (_provider, endpoint) = start(vec![Reply::Http(Fault::Server(status))]).await;
            let response = post(&endpoint, wire.path(), &wire.auth_headers("k"), &body(wire))
                .await
                .unwrap();
            assert_eq!(response.status, status);
        }
    }
}

#[tokio::test]
async fn anthropic_stream_has_every_event_of_the_messages_api() {
    let beats = vec![
        Beat::Start,
        Beat::Ping,
        Beat::Text("Hello ".into()),
        Beat::Text("there".into()),
        Beat::Tool {
            name: "search".into(),
            input: r#"{"q":"x"}"#.into(),
        },
    ];
    let (_provider, endpoint) = start(vec![Reply::Stream {
        beats,
        end: End::Finish,
    }])
    .await;
    let wire = Wire::Anthropic;
    let response = post(&endpoint, wire.path(), &wire.auth_headers("k"), &body(wire))
        .await
        .unwrap();
    assert_eq!(response.status, 200);
    assert_eq!(
        header(&response.headers, "content-type"),
        Some("text/event-stream")
    );
    let events = all_events(&mut response.events()).await;
    let names: Vec<&str> = events.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(
        names,
        [
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    let tool: Value = serde_json::from_str(&events[6].data).unwrap();
    assert_eq!(tool["content_block"]["type"], "tool_use");
    let delta: Value = serde_json::from_str(&events[7].data).unwrap();
    assert_eq!(delta["delta"]["type"], "input_json_delta");
    let stop: Value = serde_json::from_str(&events[10].data).unwrap();
    assert_eq!(stop["delta"]["stop_reason"], "tool_use");
}

#[tokio::test]
async fn openai_stream_is_chunks_then_done() {
    let (_provider, endpoint) = start(vec![Reply::Stream {
        beats: vec![Beat::Start, Beat::Ping, Beat::Text("Hi".into())],
        end: End::Finish,
    }])
    .await;
    let wire = Wire::OpenAi;
    let response = post(&endpoint, wire.path(), &wire.auth_headers("k"), &body(wire))
        .await
        .unwrap();
    let events = all_events(&mut response.events()).await;
    // The keep-alive is an SSE comment: no event.
    let data: Vec<&str> = events.iter().map(|e| e.data.as_str()).collect();
    assert_eq!(data.len(), 4, "{data:?}");
    let first: Value = serde_json::from_str(data[0]).unwrap();
    assert_eq!(first["object"], "chat.completion.chunk");
    assert_eq!(first["choices"][0]["delta"]["role"], "assistant");
    let text: Value = serde_json::from_str(data[1]).unwrap();
    assert_eq!(text["choices"][0]["delta"]["content"], "Hi");
    let last: Value = serde_json::from_str(data[2]).unwrap();
    assert_eq!(last["choices"][0]["finish_reason"], "stop");
    assert_eq!(data[3], "[DONE]");
}

#[tokio::test]
async fn a_200_whose_first_event_is_an_error() {
    for wire in [Wire::Anthropic, Wire::OpenAi] {
        let (_provider, endpoint) = start(vec![Reply::Stream {
            beats: vec![],
            end: End::Error(Fault::Overloaded),
        }])
        .await;
        let response = post(&endpoint, wire.path(), &wire.auth_headers("k"), &body(wire))
            .await
            .unwrap();
        assert_eq!(response.status, 200);
        let events = all_events(&mut response.events()).await;
        assert_eq!(events.len(), 1);
        let error: Value = serde_json::from_str(&events[0].data).unwrap();
        match wire {
            Wire::Anthropic => {
                assert_eq!(events[0].event, "error");
                assert_eq!(
                    error,
                    json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})
                );
            }
            Wire::OpenAi => assert_eq!(error["error"]["type"], "server_error"),
        }
    }
}

#[tokio::test]
async fn a_reset_is_a_tcp_reset_after_the_text() {
    for wire in [Wire::Anthropic, Wire::OpenAi] {
        let (_provider, endpoint) = start(vec![Reply::Stream {
            beats: vec![Beat::Start, Beat::Text("Hel".into())],
            end: End::Reset,
        }])
        .await;
        let response = post(&endpoint, wire.path(), &wire.auth_headers("k"), &body(wire))
            .await
            .unwrap();
        let mut stream = response.events();
        let mut texts = 0;
        let error = loop {
            match stream.next().await {
                Some(Ok(event)) => texts += usize::from(event.data.contains("Hel")),
                Some(Err(error)) => break error,
                None => panic!("the stream ended cleanly"),
            }
        };
        assert_eq!(texts, 1);
        assert!(error.contains("Connection reset by peer"), "{error}");
    }
}

#[tokio::test]
async fn a_stall_sends_nothing_and_a_mid_stall_only_pings() {
    let (_provider, endpoint) = start(vec![
        Reply::Stream {
            beats: vec![],
            end: End::Hang { ping_ms: None },
        },
        Reply::Stream {
            beats: vec![Beat::Start],
            end: End::Hang { ping_ms: Some(100) },
        },
    ])
    .await;
    let wire = Wire::Anthropic;
    let response = post(&endpoint, wire.path(), &wire.auth_headers("k"), &body(wire))
        .await
        .unwrap();
    assert_eq!(response.status, 200);
    let mut stream = response.events();
    let waited = tokio::time::timeout(Duration::from_millis(300), stream.next()).await;
    assert!(waited.is_err(), "an event came: {waited:?}");
    drop(stream);

    let response = post(&endpoint, wire.path(), &wire.auth_headers("k"), &body(wire))
        .await
        .unwrap();
    let mut stream = response.events();
    assert_eq!(stream.next().await.unwrap().unwrap().event, "message_start");
    for _ in 0..3 {
        let event = tokio::time::timeout(Duration::from_secs(5), stream.next())
            .await
            .unwrap();
        assert_eq!(event.unwrap().unwrap().event, "ping");
    }
}

#[tokio::test]
async fn requests_are_kept_and_replies_follow_the_plan() {
    let (provider, endpoint) = start(vec![
        Reply::Http(Fault::Overloaded),
        Reply::Http(Fault::Server(500)),
    ])
    .await;
    let wire = Wire::OpenAi;
    let mut statuses = Vec::new();
    for key in ["a", "b", "c"] {
        let response = post(&endpoint, wire.path(), &wire.auth_headers(key), &body(wire))
            .await
            .unwrap();
        statuses.push(response.status);
    }
    // Past the last reply, the last one again.
    assert_eq!(statuses, [503, 500, 500]);
    let keys: Vec<_> = provider
        .requests_of("c")
        .into_iter()
        .map(|r| r.key.unwrap())
        .collect();
    assert_eq!(keys, ["a", "b", "c"]);
    assert_eq!(
        provider.requests()[0].messages(),
        [("user".into(), "Hi".into())]
    );
    assert_eq!(provider.requests()[0].model, "m");

    let unknown = Endpoint::parse(&provider.base_url("nope")).unwrap();
    let response = post(&unknown, wire.path(), &[], &body(wire)).await.unwrap();
    assert_eq!(response.status, 404);
}
