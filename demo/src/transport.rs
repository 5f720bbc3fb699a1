//! The agent's HTTP client: one streamed request over its own connection
//! (hyper's HTTP/1 client on a tokio `TcpStream`), its response head, and
//! its body as parsed server-sent events (`eventsource-stream`). Dropping
//! a [`Stream`] closes the connection: that is how the agent aborts.

use std::error::Error;
use std::net::SocketAddr;
use std::pin::Pin;

use bytes::Bytes;
use eventsource_stream::{EventStream, EventStreamError, Eventsource};
use futures_core::Stream as _;
use http_body_util::{BodyDataStream, BodyExt, Full};
use hyper::body::Incoming;
use hyper::Request;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

/// Where requests go: `http://HOST:PORT/PREFIX` split into the socket
/// address and the path prefix.
///
/// ```
/// use autoretry_demo::transport::Endpoint;
/// let e = Endpoint::parse("http://127.0.0.1:8080/overloaded").unwrap();
/// assert_eq!((e.addr.port(), e.prefix.as_str()), (8080, "/overloaded"));
/// assert!(Endpoint::parse("https://example.com/").is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// The provider's socket address.
    pub addr: SocketAddr,
    /// The path before the API's own path (`/v1/messages`).
    pub prefix: String,
}

impl Endpoint {
    /// Parses a plain `http://IP:PORT[/prefix]` URL (the local provider's;
    /// no name lookup, no TLS).
    pub fn parse(url: &str) -> Result<Endpoint, String> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| format!("{url}: not an http:// URL"))?;
        let (authority, prefix) = match rest.find('/') {
            Some(at) => rest.split_at(at),
            None => (rest, ""),
        };
        let addr = authority
            .parse()
            .map_err(|e| format!("{url}: {authority} is not IP:PORT ({e})"))?;
        Ok(Endpoint {
            addr,
            prefix: prefix.trim_end_matches('/').to_owned(),
        })
    }
}

/// An error and its sources, joined with `: `, as a client prints a
/// transport failure (`error reading a body from connection: Connection
/// reset by peer (os error 104)`).
pub fn error_chain(error: &dyn Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.ends_with(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// A response: its status and headers, and its body still unread.
pub struct Response {
    /// The HTTP status.
    pub status: u16,
    /// The header fields in the order received (names in lower case).
    pub headers: Vec<(String, String)>,
    body: Incoming,
    connection: JoinHandle<()>,
}

impl Response {
    /// The whole body as text (an error response's JSON); the transport's
    /// error text when it fails.
    pub async fn text(self) -> Result<String, String> {
        let Response {
            body, connection, ..
        } = self;
        let collected = body.collect().await;
        connection.abort();
        match collected {
            Ok(body) => Ok(String::from_utf8_lossy(&body.to_bytes()).into_owned()),
            Err(e) => Err(error_chain(&e)),
        }
    }

    /// The body as server-sent events.
    pub fn events(self) -> Stream {
        Stream {
            events: Box::pin(self.body.into_data_stream().eventsource()),
            connection: self.connection,
        }
    }
}

/// One parsed SSE event: its `event:` name (`message` when unnamed) and
/// its `data:`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SseEvent {
    /// The event's name.
    pub event: String,
    /// Its data.
    pub data: String,
}

/// A response body as events. Dropping it closes the connection.
pub struct Stream {
    events: Pin<Box<EventStream<BodyDataStream<Incoming>>>>,
    connection: JoinHandle<()>,
}

impl Stream {
    /// The next event; `None` at the body's end; the transport's error
    /// text when the connection fails mid-stream. SSE comments are not
    /// events (the parser skips them).
    pub async fn next(&mut self) -> Option<Result<SseEvent, String>> {
        let next = std::future::poll_fn(|cx| self.events.as_mut().poll_next(cx)).await?;
        Some(match next {
            Ok(event) => Ok(SseEvent {
                event: event.event,
                data: event.data,
            }),
            // The transport's own error, with its sources (the SSE
            // parser's wrapper would hide them).
            Err(EventStreamError::Transport(e)) => Err(error_chain(&e)),
            Err(e) => Err(error_chain(&e)),
        })
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.connection.abort();
    }
}

/// Sends `POST {prefix}{path}` with a JSON body and these headers on a
/// fresh connection; the response head, or the transport's error text.
pub async fn post(
    endpoint: &Endpoint,
    path: &str,
    headers: &[(&str, String)],
    body: &serde_json::Value,
) -> Result<Response, String> {
    let stream = TcpStream::connect(endpoint.addr)
        .await
        .map_err(|e| format!("error sending request for url: {}", error_chain(&e)))?;
    let _ = stream.set_nodelay(true);
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| error_chain(&e))?;
    let connection = tokio::spawn(async move {
        let _ = connection.await;
    });
    let mut request = Request::post(format!("{}{path}", endpoint.prefix))
        .header("host", endpoint.addr.to_string())
        .header("content-type", "application/json")
        .header("accept", "text/event-stream");
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    let request = request
        .body(Full::new(Bytes::from(body.to_string())))
        .map_err(|e| error_chain(&e))?;
    let response = match sender.send_request(request).await {
        Ok(response) => response,
        Err(e) => {
            connection.abort();
            return Err(error_chain(&e));
        }
    };
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect();
    Ok(Response {
        status,
        headers,
        body: response.into_body(),
        connection,
    })
}
