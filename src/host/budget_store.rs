//! Where a host keeps the retry budget of spec §11.4, one trait for every
//! host ([`BudgetStore`]): the budget in the host's own memory, behind a
//! lock that sessions of one process share, or in a store that processes
//! share (the CLI's Redis store for `autoretry rpc --budget-store`); and
//! [`handle`], which feeds one input with it.
//!
//! Every host decides the same way: the machine decides on a copy of
//! itself with the budget as the store holds it, and takes the copy's
//! state only when the store kept the budget the decision left. When the
//! store fails, the input is decided without the budget (the policy fails
//! *open*: a budget protects a provider from a storm of retries, and an
//! outage of its store must not turn every transient failure into a failed
//! prompt; each chain stays bounded by `maxRetries` and its backoff), and
//! the host is told ([`StoreError`]).

use core::cell::RefCell;
use core::fmt;

use crate::{Input, Machine, Outputs, Refused, RetryBudget};

/// A retry budget that one or more hosts share.
///
/// [`BudgetStore::update`] runs a step on the budget as it is now and
/// keeps what the step leaves, atomically with respect to every other user
/// of the store. A store that finds the budget changed under it may run
/// the step again on the new value, so the step must be repeatable ([`handle`]
/// decides on a copy of the machine each time).
///
/// Implemented for
///
/// - a [`RetryBudget`] itself (one session, or sessions fed in turn by
///   `&mut`), and `&mut` of any store;
/// - a `&RefCell<RetryBudget>` (the sessions of one thread or one
///   executor, `no_std`);
/// - a `&std::sync::Mutex<RetryBudget>` and `Arc`s of either (threads, a
///   multi-threaded tokio; feature `std`). A `tokio::sync::Mutex` is not a
///   store: its lock is `async`, and a decision never waits, so a
///   `std::sync::Mutex` held for one decision is the lock to share (tokio's
///   own advice for data locked briefly);
/// - a `&embassy_sync::blocking_mutex::Mutex<_, RefCell<RetryBudget>>`
///   (feature `embassy`).
///
/// A lock's poison is no error: a store in memory runs the step on a copy
/// of the budget and writes it back once the step returns, so a session
/// that panicked in a step left the budget as it was.
///
/// ```
/// use core::cell::RefCell;
/// use autoretry::host::budget_store::BudgetStore;
/// use autoretry::RetryBudget;
/// let shared = RefCell::new(RetryBudget::new(4, 500).unwrap());
/// (&shared).update(&mut |budget| budget.charge()).unwrap();
/// assert_eq!(shared.borrow().tokens_milli(), 3000);
/// ```
pub trait BudgetStore {
    /// Runs `step` on the budget and keeps the result; an error when the
    /// store cannot be read or written (then nothing was kept).
    fn update(&mut self, step: &mut dyn FnMut(&mut RetryBudget)) -> Result<(), StoreError>;
}

/// Why a budget store kept nothing: the kind, and on std what failed in
/// one sentence.
///
/// ```
/// use autoretry::host::budget_store::{StoreError, StoreErrorKind};
/// let error = StoreError::new(StoreErrorKind::Unavailable);
/// assert_eq!(error.to_string(), "retry budget store: unavailable");
/// let error = StoreError::with_detail(StoreErrorKind::Unavailable, "redis://127.0.0.1:6379/0: timed out after 250 ms");
/// assert_eq!(error.kind(), StoreErrorKind::Unavailable);
/// assert_eq!(error.to_string(), "retry budget store: redis://127.0.0.1:6379/0: timed out after 250 ms");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StoreError {
    kind: StoreErrorKind,
    #[cfg(feature = "std")]
    detail: Option<std::string::String>,
}

/// What kind of failure a [`StoreError`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum StoreErrorKind {
    /// The budget was already in use by this thread (a step that touched
    /// its own `RefCell`).
    InUse,
    /// The store did not answer: unreachable, timed out, or resting after
    /// a failure.
    Unavailable,
    /// The store answered but holds no budget of these figures (a foreign
    /// value, or a budget of other `maxTokens` or `tokenRatio`), or refused
    /// the command.
    Invalid,
}

impl StoreErrorKind {
    /// The kind in a few words.
    ///
    /// ```
    /// use autoretry::host::budget_store::StoreErrorKind;
    /// assert_eq!(StoreErrorKind::InUse.as_str(), "the budget is already in use");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            StoreErrorKind::InUse => "the budget is already in use",
            StoreErrorKind::Unavailable => "unavailable",
            StoreErrorKind::Invalid => "holds no budget of these figures",
        }
    }
}

impl StoreError {
    /// An error of this kind.
    pub const fn new(kind: StoreErrorKind) -> StoreError {
        StoreError {
            kind,
            #[cfg(feature = "std")]
            detail: None,
        }
    }

    /// An error of this kind that says what failed (name the store, never
    /// its credentials).
    #[cfg(feature = "std")]
    #[cfg_attr(docsrs, doc(cfg(feature = "std")))]
    pub fn with_detail(kind: StoreErrorKind, detail: impl Into<std::string::String>) -> StoreError {
        StoreError {
            kind,
            detail: Some(detail.into()),
        }
    }

    /// The kind of failure.
    pub const fn kind(&self) -> StoreErrorKind {
        self.kind
    }
}

/// `retry budget store: ` and what failed.
impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        #[cfg(feature = "std")]
        if let Some(detail) = &self.detail {
            return write!(f, "retry budget store: {detail}");
        }
        write!(f, "retry budget store: {}", self.kind.as_str())
    }
}

impl core::error::Error for StoreError {}

#[cfg(feature = "defmt")]
impl defmt::Format for StoreError {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "retry budget store: {}", self.kind.as_str())
    }
}

/// A budget in the host's own memory: the update cannot fail or race.
///
/// ```
/// use autoretry::host::budget_store::BudgetStore;
/// use autoretry::RetryBudget;
/// let mut budget = RetryBudget::new(4, 500).unwrap();
/// budget.update(&mut |b| b.charge()).unwrap();
/// assert_eq!(budget.tokens_milli(), 3000);
/// ```
impl BudgetStore for RetryBudget {
    fn update(&mut self, step: &mut dyn FnMut(&mut RetryBudget)) -> Result<(), StoreError> {
        step(self);
        Ok(())
    }
}

impl<T: BudgetStore + ?Sized> BudgetStore for &mut T {
    fn update(&mut self, step: &mut dyn FnMut(&mut RetryBudget)) -> Result<(), StoreError> {
        (**self).update(step)
    }
}

/// The sessions of one thread or one executor. A step that touches the
/// same cell is refused ([`StoreErrorKind::InUse`]) instead of panicking.
impl BudgetStore for &RefCell<RetryBudget> {
    fn update(&mut self, step: &mut dyn FnMut(&mut RetryBudget)) -> Result<(), StoreError> {
        let mut guard = self
            .try_borrow_mut()
            .map_err(|_| StoreError::new(StoreErrorKind::InUse))?;
        let mut budget = *guard;
        step(&mut budget);
        *guard = budget;
        Ok(())
    }
}

/// The sessions of several threads: the lock is held for one decision.
/// Its poison is ignored (see [`BudgetStore`]).
#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
impl BudgetStore for &std::sync::Mutex<RetryBudget> {
    fn update(&mut self, step: &mut dyn FnMut(&mut RetryBudget)) -> Result<(), StoreError> {
        let mut guard = self
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut budget = *guard;
        step(&mut budget);
        *guard = budget;
        Ok(())
    }
}

/// One store shared by `Arc`: `Arc<Mutex<RetryBudget>>`, cloned into each
/// session.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use autoretry::host::budget_store::handle;
/// use autoretry::{AssistantMessage, Input, Machine, RetryBudget};
/// let shared = Arc::new(Mutex::new(RetryBudget::new(4, 500).unwrap()));
/// let fail = Input::agent_end(AssistantMessage::error("503"));
/// for _ in 0..2 {
///     let mut session = Machine::default();
///     let _ = handle(&mut session, fail, shared.clone()).unwrap();
/// }
/// assert_eq!(shared.lock().unwrap().tokens_milli(), 2000);
/// ```
#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
impl<T: ?Sized> BudgetStore for std::sync::Arc<T>
where
    for<'a> &'a T: BudgetStore,
{
    fn update(&mut self, step: &mut dyn FnMut(&mut RetryBudget)) -> Result<(), StoreError> {
        (&**self).update(step)
    }
}

/// One store shared by `Arc`, lent: `&Arc<Mutex<RetryBudget>>`.
#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
impl<T: ?Sized> BudgetStore for &std::sync::Arc<T>
where
    for<'a> &'a T: BudgetStore,
{
    fn update(&mut self, step: &mut dyn FnMut(&mut RetryBudget)) -> Result<(), StoreError> {
        (&***self).update(step)
    }
}

/// The tasks of an embassy executor, with no allocation.
#[cfg(feature = "embassy")]
#[cfg_attr(docsrs, doc(cfg(feature = "embassy")))]
impl<M: embassy_sync::blocking_mutex::raw::RawMutex> BudgetStore
    for &embassy_sync::blocking_mutex::Mutex<M, RefCell<RetryBudget>>
{
    fn update(&mut self, step: &mut dyn FnMut(&mut RetryBudget)) -> Result<(), StoreError> {
        self.lock(|cell| (&*cell).update(step))
    }
}

/// Feeds `input` to `machine` with the budget of `store`
/// ([`Machine::handle_with_budget`]), atomically for the store's users.
///
/// Only an `agent_end` asks the store (no other input charges or refills
/// a budget). The decision is made on a copy of the machine, once per try
/// of the store; the machine takes the copy's state only when the store kept the
/// budget. When the store fails, the input is handled without the budget
/// (`Ok` holds the outputs and the store's error): the policy fails open
/// (see the [module](self)). A refused input changes neither the machine
/// nor the budget.
///
/// ```
/// use autoretry::host::budget_store::handle;
/// use autoretry::{AssistantMessage, Input, Machine, RetryBudget};
/// let mut budget = RetryBudget::new(4, 500).unwrap();
/// let mut machine = Machine::default();
/// let fail = Input::agent_end(AssistantMessage::error("503"));
/// let (outputs, store_error) = handle(&mut machine, fail, &mut budget).unwrap();
/// assert_eq!((outputs.len(), store_error), (3, None));
/// assert_eq!(budget.tokens_milli(), 3000);
/// ```
pub fn handle<'a>(
    machine: &mut Machine,
    input: Input<'a>,
    mut store: impl BudgetStore,
) -> Result<(Outputs<'a>, Option<StoreError>), Refused> {
    // Only an `agent_end` charges or refills a budget (spec §11.4): any
    // other input leaves the store alone.
    if !matches!(input, Input::AgentEnd { .. }) {
        return machine.handle(input).map(|outputs| (outputs, None));
    }
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
                .unwrap_or(StoreError::new(StoreErrorKind::Unavailable));
            machine.handle(input).map(|outputs| (outputs, Some(error)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AssistantMessage;

    #[test]
    fn a_step_that_touches_its_own_cell_is_refused_not_a_panic() {
        let shared = RefCell::new(RetryBudget::new(4, 500).unwrap());
        let mut inner = None;
        let outer = (&shared).update(&mut |budget| {
            budget.charge();
            inner = Some((&shared).update(&mut |b| b.charge()));
        });
        assert_eq!(outer, Ok(()));
        // The inner update found the cell borrowed: refused, kept nothing.
        assert_eq!(inner.unwrap().unwrap_err().kind(), StoreErrorKind::InUse);
        assert_eq!(shared.borrow().tokens_milli(), 3000);
    }

    #[cfg(feature = "std")]
    #[test]
    fn a_poisoned_mutex_holds_the_budget_as_it_was() {
        use std::sync::{Arc, Mutex};
        let shared = Arc::new(Mutex::new(RetryBudget::new(4, 500).unwrap()));
        let poisoner = shared.clone();
        let _ = std::thread::spawn(move || {
            let mut store = poisoner;
            let _ = store.update(&mut |budget| {
                budget.charge();
                panic!("a session panicked in its step");
            });
        })
        .join();
        assert!(shared.is_poisoned());
        // The panicking step kept nothing; the next decision goes on.
        assert_eq!(
            shared
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .tokens_milli(),
            4000
        );
        let mut machine = Machine::default();
        let fail = Input::agent_end(AssistantMessage::error("503"));
        let (_, error) = handle(&mut machine, fail, &shared).unwrap();
        assert_eq!(error, None);
        assert_eq!(
            shared
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .tokens_milli(),
            3000
        );
    }

    /// A store that fails: the input is decided without the budget.
    struct Down;

    impl BudgetStore for Down {
        fn update(&mut self, _: &mut dyn FnMut(&mut RetryBudget)) -> Result<(), StoreError> {
            Err(StoreError::new(StoreErrorKind::Unavailable))
        }
    }

    #[test]
    fn only_an_agent_end_asks_the_store() {
        let mut machine = Machine::default();
        let (outputs, error) = handle(&mut machine, Input::Abort, Down).unwrap();
        assert_eq!((outputs.len(), error), (1, None));
    }

    #[test]
    fn a_failed_store_decides_without_the_budget() {
        let mut machine = Machine::default();
        let fail = Input::agent_end(AssistantMessage::error("503"));
        let (outputs, error) = handle(&mut machine, fail, Down).unwrap();
        assert_eq!(outputs.len(), 3);
        assert_eq!(error.unwrap().kind(), StoreErrorKind::Unavailable);
        assert!(machine.is_retrying());
    }
}
