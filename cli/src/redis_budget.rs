//! The retry budget of spec §11.4 kept in Redis, so sidecars in several
//! processes (on several machines) share it: `autoretry rpc --budget
//! 10:0.1 --budget-store redis://127.0.0.1/ --budget-key provider-a`.
//!
//! The key holds the tokens in thousandths (an integer); `maxTokens` and
//! `tokenRatio` are every sidecar's own flags, so sidecars that share a key
//! must be given the same figures. An absent key is a full budget (or the
//! `--budget` flag's starting tokens). Each update is an optimistic
//! transaction: `WATCH` the key, `GET` it, decide on a copy of the machine,
//! then `MULTI`, `SET`, `EXEC`; when another sidecar changed the key in
//! between, `EXEC` does nothing and the decision is made again on the new
//! tokens. So a charge or a refill is never lost, and the machine's own
//! exact arithmetic decides, with no second implementation in a script.

use std::fmt;
use std::time::Duration;

use autoretry::host::shared_budget::{SharedBudget, StoreError};
use autoretry::RetryBudget;
use redis::{Client, Connection, Value};

/// How long a connection, a read or a write may take before the store
/// counts as failed.
const TIMEOUT: Duration = Duration::from_secs(1);

/// How many times one update is tried when other sidecars keep changing
/// the key under it.
const MAX_TRIES: usize = 64;

/// A budget in Redis. A failed command drops the connection; the next
/// update connects again.
pub struct RedisBudget {
    client: Client,
    url: String,
    key: String,
    /// `maxTokens`, `tokenRatio`, and the tokens of an absent key.
    figures: RetryBudget,
    connection: Option<Connection>,
}

impl fmt::Debug for RedisBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisBudget")
            .field("url", &self.url)
            .field("key", &self.key)
            .field("figures", &self.figures)
            .field("connected", &self.connection.is_some())
            .finish()
    }
}

impl RedisBudget {
    /// Connects to `url` and checks that `key` holds a budget of these
    /// figures (or nothing yet): an unreachable store or a foreign value
    /// is an error now, not at the first failure of the agent.
    pub fn connect(url: &str, key: &str, figures: RetryBudget) -> Result<Self, StoreError> {
        let client = Client::open(url).map_err(|e| StoreError(format!("{url}: {e}")))?;
        let mut store = RedisBudget {
            client,
            url: url.to_owned(),
            key: key.to_owned(),
            figures,
            connection: None,
        };
        store.tokens_milli().map(|_| store)
    }

    /// The tokens the key holds now (a full budget when absent).
    pub fn tokens_milli(&mut self) -> Result<u32, StoreError> {
        let key = self.key.clone();
        let connection = self.connection()?;
        let stored = get(connection, &key).map_err(|e| self.failed(e))?;
        self.parse(stored).map(|budget| budget.tokens_milli())
    }

    fn connection(&mut self) -> Result<&mut Connection, StoreError> {
        if self.connection.is_none() {
            let connection = self
                .client
                .get_connection_with_timeout(TIMEOUT)
                .and_then(|c| {
                    c.set_read_timeout(Some(TIMEOUT))?;
                    c.set_write_timeout(Some(TIMEOUT))?;
                    Ok(c)
                })
                .map_err(|e| StoreError(format!("{}: {e}", self.url)))?;
            self.connection = Some(connection);
        }
        self.connection
            .as_mut()
            .ok_or_else(|| StoreError(format!("{}: no connection", self.url)))
    }

    /// Drops the connection after an error and names the store.
    fn failed(&mut self, error: redis::RedisError) -> StoreError {
        self.connection = None;
        StoreError(format!("{}: {error}", self.url))
    }

    /// The budget a stored value stands for.
    fn parse(&self, stored: Option<String>) -> Result<RetryBudget, StoreError> {
        let Some(text) = stored else {
            return Ok(self.figures);
        };
        text.parse::<u32>()
            .ok()
            .and_then(|tokens| self.figures.with_tokens_milli(tokens).ok())
            .ok_or_else(|| {
                StoreError(format!(
                    "{}: key {:?} holds {text:?}, not tokens in thousandths from 0 to {} \
                     (maxTokens {} × 1000)",
                    self.url,
                    self.key,
                    self.figures.max_tokens() * 1000,
                    self.figures.max_tokens()
                ))
            })
    }
}

impl SharedBudget for RedisBudget {
    fn update(&mut self, step: &mut dyn FnMut(&mut RetryBudget)) -> Result<(), StoreError> {
        let key = self.key.clone();
        for _ in 0..MAX_TRIES {
            let connection = self.connection()?;
            let stored = redis::cmd("WATCH")
                .arg(&key)
                .query::<()>(connection)
                .and_then(|()| get(connection, &key));
            let stored = stored.map_err(|e| self.failed(e))?;
            let mut budget = match self.parse(stored) {
                Ok(budget) => budget,
                Err(e) => {
                    let connection = self.connection()?;
                    let _ = redis::cmd("UNWATCH").query::<()>(connection);
                    return Err(e);
                }
            };
            step(&mut budget);
            let connection = self.connection()?;
            let executed = redis::cmd("MULTI")
                .query::<()>(connection)
                .and_then(|()| {
                    redis::cmd("SET")
                        .arg(&key)
                        .arg(budget.tokens_milli())
                        .query::<()>(connection)
                })
                .and_then(|()| redis::cmd("EXEC").query::<Value>(connection));
            match executed.map_err(|e| self.failed(e))? {
                // Another sidecar changed the key: decide again.
                Value::Nil => continue,
                _ => return Ok(()),
            }
        }
        Err(StoreError(format!(
            "{}: key {:?} changed under {MAX_TRIES} tries in a row",
            self.url, self.key
        )))
    }
}

fn get(connection: &mut Connection, key: &str) -> redis::RedisResult<Option<String>> {
    redis::cmd("GET").arg(key).query(connection)
}
