//! Where a host keeps the retry budget of spec §11.4 ([`SharedBudget`]): in
//! its own memory ([`RetryBudget`] itself), or in a store that several
//! processes share (the CLI's Redis store for `autoretry rpc
//! --budget-store`).

use std::fmt;
use std::sync::{Arc, Mutex};

use crate::{Input, Machine, Outputs, Refused, RetryBudget};

/// A retry budget that one or more hosts share. [`SharedBudget::update`]
/// runs a step on the budget as it is now and keeps what the step leaves,
/// atomically with respect to every other user of the store: a store that
/// finds the budget changed under it runs the step again on the new
/// value, so the step must be repeatable (it works on a copy of the
/// machine, see [`handle_shared`]).
///
/// ```
/// use autoretry::host::shared_budget::SharedBudget;
/// use autoretry::RetryBudget;
/// let mut budget = RetryBudget::new(4, 500).unwrap();
/// budget.update(&mut |b| b.charge()).unwrap();
/// assert_eq!(budget.tokens_milli(), 3000);
/// ```
pub trait SharedBudget: fmt::Debug {
    /// Runs `step` on the budget and keeps the result; an error when the
    /// store cannot be read or written (then nothing was kept).
    fn update(&mut self, step: &mut dyn FnMut(&mut RetryBudget)) -> Result<(), StoreError>;
}

/// A budget in the host's own memory: the update cannot fail or race.
impl SharedBudget for RetryBudget {
    fn update(&mut self, step: &mut dyn FnMut(&mut RetryBudget)) -> Result<(), StoreError> {
        step(self);
        Ok(())
    }
}

/// One budget shared by the sessions of one process (threads, tasks): the
/// update holds the lock for one decision.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use autoretry::host::shared_budget::handle_shared;
/// use autoretry::{AssistantMessage, Input, Machine, RetryBudget};
/// let shared = Arc::new(Mutex::new(RetryBudget::new(4, 500).unwrap()));
/// let fail = Input::AgentEnd { message: AssistantMessage::error("503"), now_ms: None };
/// for _ in 0..2 {
///     let mut session = Machine::default();
///     let _ = handle_shared(&mut session, fail, &mut shared.clone()).unwrap();
/// }
/// assert_eq!(shared.lock().unwrap().tokens_milli(), 2000);
/// ```
impl SharedBudget for Arc<Mutex<RetryBudget>> {
    fn update(&mut self, step: &mut dyn FnMut(&mut RetryBudget)) -> Result<(), StoreError> {
        let mut budget = self
            .lock()
            .map_err(|_| StoreError("a session panicked while it held the budget".into()))?;
        step(&mut budget);
        Ok(())
    }
}

/// A shared budget's store failed (unreachable, refused the command, held
/// a value that is not a budget): what failed, in one sentence.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StoreError(pub String);

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "retry budget store: {}", self.0)
    }
}

impl std::error::Error for StoreError {}

/// Feeds `input` to `machine` with the budget of `store`
/// ([`Machine::handle_with_budget`]), atomically for the store's users.
///
/// The decision is made on a copy of the machine, once per try of the
/// store; the machine takes the copy's state only when the store kept the
/// budget. When the store fails, the input is handled without the budget
/// (`Ok` holds the outputs and the store's error): the policy fails
/// *open*. A budget only protects a provider from a storm of retries; an
/// outage of its store must not turn every transient failure of every
/// session into a failed prompt, and each chain stays bounded by
/// `maxRetries` and its backoff.
///
/// ```
/// use autoretry::host::shared_budget::handle_shared;
/// use autoretry::{AssistantMessage, Input, Machine, RetryBudget};
/// let mut budget = RetryBudget::new(4, 500).unwrap();
/// let mut machine = Machine::default();
/// let fail = Input::AgentEnd { message: AssistantMessage::error("503"), now_ms: None };
/// let (outputs, store_error) = handle_shared(&mut machine, fail, &mut budget).unwrap();
/// assert_eq!((outputs.len(), store_error), (3, None));
/// assert_eq!(budget.tokens_milli(), 3000);
/// ```
pub fn handle_shared<'a>(
    machine: &mut Machine,
    input: Input<'a>,
    store: &mut (impl SharedBudget + ?Sized),
) -> Result<(Outputs<'a>, Option<StoreError>), Refused> {
    let mut decided = None;
    let kept = store.update(&mut |budget| {
        let mut copy = machine.clone();
        let result = copy.handle_with_budget(input, budget);
        decided = Some((copy, result));
    });
    match (kept, decided) {
        (Ok(()), Some((copy, result))) => {
            if result.is_ok() {
                *machine = copy;
            }
            result.map(|outputs| (outputs, None))
        }
        // The store failed (or never ran the step): no budget.
        (kept, _) => {
            let error = kept
                .err()
                .unwrap_or_else(|| StoreError("the store did not run the step".into()));
            machine.handle(input).map(|outputs| (outputs, Some(error)))
        }
    }
}
