//! The local provider: an HTTP/1.1 server on 127.0.0.1 (hyper) that
//! answers the Anthropic and OpenAI streaming endpoints with the replies
//! of a [`Plan`], one case per path prefix:
//! `POST /{case}/v1/messages` and `POST /{case}/v1/chat/completions`.
//!
//! Each request of a case gets the case's next reply (the last one again
//! past the end). Every request is kept ([`Provider::requests`]): its
//! case, model, key and body, so a test sees what the agent sent back.
//! A [`End::Reset`] closes the socket with linger 0: the client gets a TCP
//! reset, not a clean close.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use autoretry_demo::{clock::Scale, plan::Plan, provider::Provider};
//! let provider = Provider::start(Plan::default_plan(), Scale::REAL).await.unwrap();
//! assert!(provider.addr().ip().is_loopback());
//! assert!(provider.requests().is_empty());
//! # }
//! ```

use std::collections::HashMap;
use std::convert::Infallible;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::Frame as BodyFrame;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};

use crate::clock::{wall_ms, Scale};
use crate::plan::{End, Plan, Reply};
use crate::wire::{Wire, WIRES};

/// One request the provider received.
#[derive(Clone, Debug, PartialEq)]
pub struct Received {
    /// The case (the path's first segment).
    pub case: String,
    /// The wire format of the endpoint.
    pub wire: Wire,
    /// The body's `model`.
    pub model: String,
    /// The key it carried.
    pub key: Option<String>,
    /// The body.
    pub body: Value,
}

impl Received {
    /// The texts of the request's messages, `(role, content)`.
    pub fn messages(&self) -> Vec<(String, String)> {
        self.body["messages"]
            .as_array()
            .map(|messages| {
                messages
                    .iter()
                    .map(|m| {
                        let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
                        (text(&m["role"]), text(&m["content"]))
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

struct State {
    plan: Plan,
    scale: Scale,
    received: Mutex<Vec<Received>>,
    counts: Mutex<HashMap<String, usize>>,
    shutdown: watch::Receiver<bool>,
}

/// The running provider; dropping it stops it (its open streams too).
pub struct Provider {
    addr: SocketAddr,
    state: Arc<State>,
    stop: watch::Sender<bool>,
}

impl Provider {
    /// Binds a free port on 127.0.0.1 and serves `plan` on the current
    /// tokio runtime, its pauses and keep-alives on `scale`.
    pub async fn start(plan: Plan, scale: Scale) -> io::Result<Provider> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let (stop, shutdown) = watch::channel(false);
        let state = Arc::new(State {
            plan,
            scale,
            received: Mutex::new(Vec::new()),
            counts: Mutex::new(HashMap::new()),
            shutdown,
        });
        let serving = Arc::clone(&state);
        tokio::spawn(async move {
            let mut shutdown = serving.shutdown.clone();
            loop {
                let accepted = tokio::select! {
                    accepted = listener.accept() => accepted,
                    _ = shutdown.changed() => return,
                };
                let Ok((stream, _)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                tokio::spawn(serve(Arc::clone(&serving), stream));
            }
        });
        Ok(Provider { addr, state, stop })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL of a case: `http://127.0.0.1:PORT/CASE`.
    pub fn base_url(&self, case: &str) -> String {
        format!("http://{}/{case}", self.addr)
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Received> {
        lock(&self.state.received).clone()
    }

    /// The requests of one case.
    pub fn requests_of(&self, case: &str) -> Vec<Received> {
        self.requests()
            .into_iter()
            .filter(|r| r.case == case)
            .collect()
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A connection's socket that closes with a TCP reset once `reset` is set
/// (linger 0 before the close).
struct Socket {
    stream: TcpStream,
    reset: Arc<AtomicBool>,
}

impl Drop for Socket {
    fn drop(&mut self) {
        if self.reset.load(Ordering::SeqCst) {
            let _ = socket2::SockRef::from(&self.stream).set_linger(Some(Duration::ZERO));
        }
    }
}

impl AsyncRead for Socket {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Socket {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

type Body = BoxBody<Bytes, io::Error>;

async fn serve(state: Arc<State>, stream: TcpStream) {
    let reset = Arc::new(AtomicBool::new(false));
    let socket = Socket {
        stream,
        reset: Arc::clone(&reset),
    };
    let service = hyper::service::service_fn(move |request| {
        let (state, reset) = (Arc::clone(&state), Arc::clone(&reset));
        async move { Ok::<_, Infallible>(respond(state, reset, request).await) }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(socket), service)
        .await;
}

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut response = Response::new(
        Full::new(Bytes::from(text.to_owned()))
            .map_err(|never| match never {})
            .boxed(),
    );
    *response.status_mut() = status;
    response
}

async fn respond(
    state: Arc<State>,
    reset: Arc<AtomicBool>,
    request: Request<Incoming>,
) -> Response<Body> {
    let path = request.uri().path().to_owned();
    let Some((case, wire)) = path.strip_prefix('/').and_then(|rest| {
        let (case, endpoint) = rest.split_once('/')?;
        let wire = WIRES
            .into_iter()
            .find(|wire| wire.path().strip_prefix('/') == Some(endpoint))?;
        Some((case.to_owned(), wire))
    }) else {
        return plain(StatusCode::NOT_FOUND, "no such endpoint");
    };
    let Some(replies) = state.plan.case(&case).map(|c| c.replies.clone()) else {
        return plain(StatusCode::NOT_FOUND, "no such case");
    };
    let key = wire.key_of(request.headers());
    let body = match request.into_body().collect().await {
        Ok(body) => body.to_bytes(),
        Err(_) => return plain(StatusCode::BAD_REQUEST, "unreadable body"),
    };
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return plain(StatusCode::BAD_REQUEST, "the body is not JSON");
    };
    let model = body["model"].as_str().unwrap_or_default().to_owned();
    lock(&state.received).push(Received {
        case: case.clone(),
        wire,
        model: model.clone(),
        key,
        body,
    });
    let index = {
        let mut counts = lock(&state.counts);
        let count = counts.entry(case).or_insert(0);
        *count += 1;
        *count - 1
    };
    let Some(reply) = replies.get(index).or(replies.last()).cloned() else {
        return plain(StatusCode::NOT_FOUND, "the case has no reply");
    };
    match reply {
        Reply::Http(fault) => {
            let (status, headers, body) = wire.error_response(fault, wall_ms());
            let mut response = plain(
                StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                &body,
            );
            for (name, value) in headers {
                if let (Ok(name), Ok(value)) = (
                    hyper::header::HeaderName::try_from(name),
                    hyper::header::HeaderValue::try_from(value),
                ) {
                    response.headers_mut().insert(name, value);
                }
            }
            response
        }
        Reply::Stream { beats, end } => {
            let (tx, rx) = mpsc::channel(16);
            let writer = write_stream(wire, model, beats, end, state.scale, reset, tx.clone());
            let mut shutdown = state.shutdown.clone();
            tokio::spawn(async move {
                tokio::select! {
                    () = writer => {}
                    () = tx.closed() => {}
                    _ = shutdown.changed() => {}
                }
            });
            let mut response = Response::new(BoxBody::new(ChannelBody(rx)));
            let headers = response.headers_mut();
            headers.insert("content-type", "text/event-stream".parse().expect("valid"));
            headers.insert("cache-control", "no-cache".parse().expect("valid"));
            response
        }
    }
}

type Chunk = Result<Bytes, io::Error>;

/// A body fed by the stream's writer task: each message is a chunk, an
/// error aborts the connection.
struct ChannelBody(mpsc::Receiver<Chunk>);

impl http_body::Body for ChannelBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<BodyFrame<Bytes>, io::Error>>> {
        self.0
            .poll_recv(cx)
            .map(|chunk| chunk.map(|chunk| chunk.map(BodyFrame::data)))
    }
}

/// Writes a streamed answer: each beat's frames (pauses on the scale),
/// then the end; a reset marks the socket and fails the body; a hang
/// keeps the stream open, pinging when asked, until the client leaves.
async fn write_stream(
    wire: Wire,
    model: String,
    beats: Vec<crate::plan::Beat>,
    end: End,
    scale: Scale,
    reset: Arc<AtomicBool>,
    tx: mpsc::Sender<Chunk>,
) {
    let mut encoder = wire.encoder(&model);
    let send = |frames: Vec<crate::wire::Frame>| {
        let tx = tx.clone();
        async move {
            for frame in frames {
                if tx.send(Ok(Bytes::from(frame.to_text()))).await.is_err() {
                    return false;
                }
            }
            true
        }
    };
    for beat in &beats {
        if let crate::plan::Beat::Pause(ms) = beat {
            tokio::time::sleep(scale.real(*ms)).await;
        }
        if !send(encoder.beat(beat)).await {
            return;
        }
    }
    match end {
        End::Finish | End::Error(_) => {
            send(encoder.end(&end)).await;
        }
        End::Reset => {
            // Let the frames already sent reach the client, then reset.
            tokio::time::sleep(Duration::from_millis(5)).await;
            reset.store(true, Ordering::SeqCst);
            let _ = tx
                .send(Err(io::Error::new(
                    io::ErrorKind::ConnectionReset,
                    "the plan resets the connection",
                )))
                .await;
        }
        End::Hang { ping_ms } => loop {
            match ping_ms {
                Some(ms) => {
                    tokio::time::sleep(scale.real(ms)).await;
                    if !send(encoder.beat(&crate::plan::Beat::Ping)).await {
                        return;
                    }
                }
                None => {
                    tx.closed().await;
                    return;
                }
            }
        },
    }
}
