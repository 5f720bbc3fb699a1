//! The retry budget of spec §11.4 kept in Redis, so sidecars in several
//! processes (on several machines) share it: `autoretry rpc --budget
//! 10:0.1 --budget-store redis://127.0.0.1/ --budget-key provider-a`.
//!
//! The key is a hash of the tokens in thousandths (`tokens_milli`) and the
//! figures of the budget (`max_tokens`, `ratio_milli`): a sidecar whose
//! `--budget` figures differ from those the key holds is refused at start
//! (and reports every decision as a `budget_store_error` if the key is
//! written with other figures later). An absent key is created, at start,
//! as a full budget (or with the `--budget` flag's starting tokens).
//!
//! Each decision is an atomic compare-and-set in one script ([`SCRIPT`],
//! run by `EVALSHA`): the machine decides on a copy of itself with the
//! tokens last read, and the script keeps the tokens the decision leaves
//! only if the key still holds the tokens it was made on; otherwise it
//! answers the tokens the key holds now, and the decision is made again at
//! once on those. One round trip per try; a try fails only because another
//! sidecar's try succeeded in between, so every round somebody wins and
//! nobody waits for a lock. A decision that leaves the tokens as they were
//! (a good run on a full budget) only compares: it writes nothing, so it
//! makes no other sidecar decide again. The tries of one decision are
//! bounded by the store timeout, not by a count. The arithmetic stays the
//! machine's own ([`RetryBudget`]): the script compares and stores text.
//!
//! A store that stalls or restarts costs little: every decision has the
//! store timeout (`--budget-store-timeout-ms`) for all its tries; a command
//! that fails on a connection opened before the decision (a restarted
//! server) is tried once more on a new connection within that time; and
//! after it failed to answer, the store is not asked for a while
//! (`--budget-store-rest-ms`): those decisions are made without the budget
//! at once, each reported, instead of each waiting for the timeout.
//!
//! The store is named everywhere (errors, `Debug`) as `redis://HOST:PORT/DB`,
//! never with the user name or password of its URL.

use std::fmt;
use std::time::{Duration, Instant};

use autoretry::host::budget_store::{BudgetStore, StoreError, StoreErrorKind};
use autoretry::RetryBudget;
use redis::{Client, ConnectionAddr, Value};

/// The compare-and-set of one decision. `KEYS[1]`: the budget's hash.
/// `ARGV`: `max_tokens`, `ratio_milli`, the tokens of a new key, the
/// tokens the decision was made on (`""`: only read), the tokens it
/// leaves. Answers `{"kept"}`, `{"changed", tokens}`, `{"figures",
/// max_tokens, ratio_milli}` (the key's, when they are not the caller's)
/// or `{"invalid", tokens}` (a hash with no tokens).
pub const SCRIPT: &str = r#"
local key, max, ratio, start, read, left = KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local held = redis.call('HMGET', key, 'tokens_milli', 'max_tokens', 'ratio_milli')
if not held[1] and not held[2] and not held[3] then
  redis.call('HSET', key, 'tokens_milli', start, 'max_tokens', max, 'ratio_milli', ratio)
  held = {start, max, ratio}
end
if held[2] ~= max or held[3] ~= ratio then
  return {'figures', held[2] or '', held[3] or ''}
end
if not held[1] then
  return {'invalid', ''}
end
if held[1] ~= read then
  return {'changed', held[1]}
end
if left ~= read then
  redis.call('HSET', key, 'tokens_milli', left)
end
return {'kept'}
"#;

/// The store timeout when `--budget-store-timeout-ms` is not given.
pub const DEFAULT_TIMEOUT_MS: u64 = 500;

/// How long the store is not asked after a failure when
/// `--budget-store-rest-ms` is not given.
pub const DEFAULT_REST_MS: u64 = 2000;

/// A budget in Redis.
pub struct RedisBudget {
    client: Client,
    /// The store's name, with no credentials.
    name: String,
    key: String,
    /// `maxTokens`, `tokenRatio`, and the tokens of a new key.
    figures: RetryBudget,
    /// The time one decision may take, all its tries together.
    timeout: Duration,
    /// How long the store is not asked after a failure.
    rest: Duration,
    connection: Option<redis::Connection>,
    /// The script's SHA1, as the server answered `SCRIPT LOAD`.
    sha: Option<String>,
    /// The tokens the key held at the last answer: the first try's guess.
    seen: Option<u32>,
    /// Until when the store is not asked, and the failure that began it.
    resting: Option<(Instant, String)>,
}

impl fmt::Debug for RedisBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisBudget")
            .field("store", &self.name)
            .field("key", &self.key)
            .field("figures", &self.figures)
            .field("timeout", &self.timeout)
            .field("rest", &self.rest)
            .field("connected", &self.connection.is_some())
            .field("resting", &self.resting.is_some())
            .finish()
    }
}

/// What the script answered a try.
enum Answer {
    /// The key held the tokens the decision was made on: what it left is
    /// kept.
    Kept,
    /// The key holds other tokens: decide again on these.
    Changed(u32),
}

/// The store's name for messages: scheme, address and database, never the
/// user name or password. For a URL that does not parse, its scheme and
/// what follows the last `@` of its authority.
pub fn store_name(url: &str) -> String {
    match redis::IntoConnectionInfo::into_connection_info(url) {
        Ok(info) => {
            let db = info.redis_settings().db();
            match info.addr() {
                ConnectionAddr::Tcp(..) => format!("redis://{}/{db}", info.addr()),
                ConnectionAddr::TcpTls { .. } => format!("rediss://{}/{db}", info.addr()),
                ConnectionAddr::Unix(path) => format!("unix://{}?db={db}", path.display()),
                _ => "the Redis store".to_owned(),
            }
        }
        Err(_) => {
            let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
            let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
            if scheme.is_empty() {
                rest.to_owned()
            } else {
                format!("{scheme}://{rest}")
            }
        }
    }
}

/// Thousandths as a decimal number (`500` → `0.5`).
fn milli_text(milli: u32) -> String {
    let text = format!("{}.{:03}", milli / 1000, milli % 1000);
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

impl RedisBudget {
    /// Connects to `url` within `timeout`, loads the script, and creates
    /// `key` as a budget of these figures or checks that it holds one: an
    /// unreachable store, a foreign value or other figures are an error
    /// now, not at the first failure of the agent.
    pub fn connect(
        url: &str,
        key: &str,
        figures: RetryBudget,
        timeout: Duration,
        rest: Duration,
    ) -> Result<Self, StoreError> {
        let name = store_name(url);
        let client = Client::open(url).map_err(|e| {
            StoreError::with_detail(
                StoreErrorKind::Invalid,
                format!("{name}: not a Redis URL ({e})"),
            )
        })?;
        let mut store = RedisBudget {
            client,
            name,
            key: key.to_owned(),
            figures,
            timeout,
            rest,
            connection: None,
            sha: None,
            seen: None,
            resting: None,
        };
        let deadline = Instant::now() + timeout;
        store.ask(None, deadline)?;
        Ok(store)
    }

    fn error(&self, kind: StoreErrorKind, what: impl fmt::Display) -> StoreError {
        StoreError::with_detail(kind, format!("{}: {what}", self.name))
    }

    /// One try: the tokens `read` and `left` by a decision (`None`: only
    /// read). The answer's tokens are checked to be a budget's.
    fn ask(
        &mut self,
        decided: Option<(u32, u32)>,
        deadline: Instant,
    ) -> Result<Answer, StoreError> {
        let (read, left) = match decided {
            Some((read, left)) => (read.to_string(), left.to_string()),
            None => (String::new(), String::new()),
        };
        let figures = self.figures;
        let args = [
            figures.max_tokens().to_string(),
            figures.ratio_milli().to_string(),
            figures.tokens_milli().to_string(),
            read,
            left,
        ];
        let answer = self.eval(&args, deadline)?;
        let parts: Vec<String> = match &answer {
            Value::Array(items) => items
                .iter()
                .map(|item| redis::from_redis_value_ref::<String>(item).unwrap_or_default())
                .collect(),
            _ => Vec::new(),
        };
        match parts.iter().map(String::as_str).collect::<Vec<_>>()[..] {
            ["kept"] => {
                self.seen = decided.map(|(_, left)| left);
                Ok(Answer::Kept)
            }
            ["changed", tokens] => {
                let parsed = tokens
                    .parse::<u32>()
                    .ok()
                    .filter(|t| t.to_string() == tokens)
                    .and_then(|t| figures.with_tokens_milli(t).ok());
                match parsed {
                    Some(budget) => {
                        self.seen = Some(budget.tokens_milli());
                        Ok(Answer::Changed(budget.tokens_milli()))
                    }
                    None => Err(self.error(
                        StoreErrorKind::Invalid,
                        format_args!(
                            "key {:?} holds tokens_milli {tokens:?}, not tokens in thousandths \
                             from 0 to {} (maxTokens {} × 1000)",
                            self.key,
                            figures.max_tokens() * 1000,
                            figures.max_tokens()
                        ),
                    )),
                }
            }
            ["figures", max, ratio] => {
                let ratio = ratio
                    .parse::<u32>()
                    .map_or(format!("{ratio:?}"), milli_text);
                Err(self.error(
                    StoreErrorKind::Invalid,
                    format_args!(
                        "key {:?} holds a budget of maxTokens {max} and tokenRatio {ratio}, \
                         not the --budget {}:{} of this sidecar (every sidecar of one key \
                         must use the same --budget)",
                        self.key,
                        figures.max_tokens(),
                        milli_text(figures.ratio_milli())
                    ),
                ))
            }
            _ => Err(self.error(
                StoreErrorKind::Invalid,
                format_args!(
                    "key {:?} holds no budget (the script answered {answer:?})",
                    self.key
                ),
            )),
        }
    }

    /// Runs the script within `deadline`: loads it again when the server
    /// lost it (`NOSCRIPT`), and tries once more on a new connection when
    /// one opened before this decision failed (a restarted server).
    fn eval(&mut self, args: &[String], deadline: Instant) -> Result<Value, StoreError> {
        let mut reconnected = false;
        let mut reloaded = false;
        loop {
            let fresh = self.connection.is_none();
            match self.eval_once(args, deadline) {
                Ok(value) => return Ok(value),
                Err(e) if e.code() == Some("NOSCRIPT") && !reloaded => {
                    reloaded = true;
                    self.sha = None;
                }
                Err(e) if is_connection_error(&e) => {
                    self.connection = None;
                    if fresh || reconnected || Instant::now() >= deadline {
                        return Err(self.unavailable(&e));
                    }
                    reconnected = true;
                }
                Err(e) => {
                    return Err(self.error(
                        StoreErrorKind::Invalid,
                        format_args!("key {:?}: {e}", self.key),
                    ))
                }
            }
        }
    }

    /// The error of a store that did not answer ("timed out" for a
    /// timeout, whatever the platform calls it), which begins its rest:
    /// it is not asked again before the rest is over.
    fn unavailable(&mut self, e: &redis::RedisError) -> StoreError {
        let why = if e.is_timeout() {
            format!("timed out after {} ms", self.timeout.as_millis())
        } else {
            e.to_string()
        };
        self.resting = Some((Instant::now() + self.rest, why.clone()));
        self.seen = None;
        self.error(StoreErrorKind::Unavailable, why)
    }

    fn eval_once(&mut self, args: &[String], deadline: Instant) -> redis::RedisResult<Value> {
        let left = remaining(deadline)?;
        if self.connection.is_none() {
            self.connection = Some(self.client.get_connection_with_timeout(left)?);
        }
        let Some(connection) = self.connection.as_mut() else {
            return Err(timed_out());
        };
        let left = remaining(deadline)?;
        connection.set_read_timeout(Some(left))?;
        connection.set_write_timeout(Some(left))?;
        let sha = match &self.sha {
            Some(sha) => sha.clone(),
            None => {
                let sha: String = redis::cmd("SCRIPT")
                    .arg("LOAD")
                    .arg(SCRIPT)
                    .query(connection)?;
                self.sha = Some(sha.clone());
                sha
            }
        };
        redis::cmd("EVALSHA")
            .arg(sha)
            .arg(1)
            .arg(&self.key)
            .arg(args)
            .query(connection)
    }

    /// One decision's tries, until one is kept or the deadline passes.
    fn decide(
        &mut self,
        step: &mut dyn FnMut(&mut RetryBudget),
        deadline: Instant,
    ) -> Result<(), StoreError> {
        let mut tokens = match self.seen {
            Some(tokens) => tokens,
            None => match self.ask(None, deadline)? {
                Answer::Changed(tokens) => tokens,
                Answer::Kept => self.figures.tokens_milli(),
            },
        };
        let mut tries: u64 = 0;
        loop {
            tries += 1;
            let mut budget = self
                .figures
                .with_tokens_milli(tokens)
                .map_err(|e| self.error(StoreErrorKind::Invalid, e))?;
            step(&mut budget);
            match self.ask(Some((tokens, budget.tokens_milli())), deadline)? {
                Answer::Kept => return Ok(()),
                Answer::Changed(now) => tokens = now,
            }
            if Instant::now() >= deadline {
                return Err(self.error(
                    StoreErrorKind::Unavailable,
                    format_args!(
                        "timed out after {} ms: key {:?} changed under each of {tries} tries",
                        self.timeout.as_millis(),
                        self.key
                    ),
                ));
            }
        }
    }
}

impl BudgetStore for RedisBudget {
    fn update(&mut self, step: &mut dyn FnMut(&mut RetryBudget)) -> Result<(), StoreError> {
        let now = Instant::now();
        if let Some((until, why)) = &self.resting {
            if now < *until {
                let left = until.duration_since(now).as_millis();
                return Err(self.error(
                    StoreErrorKind::Unavailable,
                    format_args!(
                        "not asked for {} ms after a failure ({why}), {left} ms to go",
                        self.rest.as_millis()
                    ),
                ));
            }
            self.resting = None;
        }
        // A store that answers is never left to rest, however busy the key.
        self.decide(step, now + self.timeout)
    }
}

/// A failure of the connection itself (as opposed to an answer).
fn is_connection_error(e: &redis::RedisError) -> bool {
    e.is_io_error() || e.is_timeout() || e.is_connection_dropped() || e.is_unrecoverable_error()
}

/// The time left before `deadline`, or a timeout.
fn remaining(deadline: Instant) -> redis::RedisResult<Duration> {
    match deadline.checked_duration_since(Instant::now()) {
        Some(left) if !left.is_zero() => Ok(left),
        _ => Err(timed_out()),
    }
}

fn timed_out() -> redis::RedisError {
    std::io::Error::new(std::io::ErrorKind::TimedOut, "timed out").into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_is_named_without_its_credentials() {
        for (url, name) in [
            ("redis://127.0.0.1/", "redis://127.0.0.1:6379/0"),
            (
                "redis://:hunter2@127.0.0.1:6390/",
                "redis://127.0.0.1:6390/0",
            ),
            (
                "redis://alice:hunter2@cache.internal:7000/3",
                "redis://cache.internal:7000/3",
            ),
            // TLS is not built in: refused, and still named without them.
            (
                "rediss://alice:hunter2@cache.internal/",
                "rediss://cache.internal/",
            ),
            ("unix:///run/redis.sock", "unix:///run/redis.sock?db=0"),
            // Not URLs the client takes: still no userinfo.
            ("redis://alice:hun@ter2@/x", "redis:///x"),
            ("nosuch://alice:hunter2@host/", "nosuch://host/"),
        ] {
            let shown = store_name(url);
            assert_eq!(shown, name, "{url}");
            assert!(
                !shown.contains("hunter2") && !shown.contains("alice"),
                "{url}"
            );
        }
    }

    #[test]
    fn the_debug_output_shows_no_credentials() {
        let url = "redis://alice:hunter2@127.0.0.1:1/";
        let store = RedisBudget {
            client: Client::open(url).unwrap(),
            name: store_name(url),
            key: "k".to_owned(),
            figures: RetryBudget::new(4, 500).unwrap(),
            timeout: Duration::from_millis(DEFAULT_TIMEOUT_MS),
            rest: Duration::from_millis(DEFAULT_REST_MS),
            connection: None,
            sha: None,
            seen: None,
            resting: None,
        };
        let shown = format!("{store:?}");
        assert!(shown.contains("redis://127.0.0.1:1/0"), "{shown}");
        assert!(
            !shown.contains("hunter2") && !shown.contains("alice"),
            "{shown}"
        );
    }

    #[test]
    fn thousandths_as_decimals() {
        for (milli, text) in [
            (500, "0.5"),
            (1000, "1"),
            (1, "0.001"),
            (2500, "2.5"),
            (0, "0"),
        ] {
            assert_eq!(milli_text(milli), text);
        }
    }
}
