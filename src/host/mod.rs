//! The hosts: loops that feed the machine its inputs and carry out its
//! outputs, with no policy of their own (every decision stays in
//! [`Machine`]).
//!
//! | host | feature | what it is |
//! |---|---|---|
//! | [`driver`] | (none; `no_std`) | the async driver for any runtime: the backoff on a [`driver::Sleeper`], owned inputs from any future |
//! | `tokio` | `tokio` | [`driver`] on tokio's timer, fed owned inputs (`InputBuf`) |
//! | `embassy` | `embassy` | [`driver`] on `embassy-time`: the backoff on a `Timer`, inputs from an `embassy-sync` channel |
//! | `thread` | `std` | the machine on one thread, a real backoff deadline, inputs from an `mpsc` channel |
//! | `sidecar` | `json` | the JSON-lines sidecar of `autoretry rpc`: the machine and its timer, lines in and out |
//!
//! The thread driver, the async driver and the sidecar keep their backoff
//! timer in one [`timer::BackoffTimer`], and follow one fairness rule: a
//! due timer fires before any input that arrived at or after its deadline
//! (see [`timer`]). The thread driver and the sidecar's pipe read their
//! time from a `clock::Clock` (real time by default; a virtual clock in
//! tests; the CLI's `--time-scale` is a clock of its own), so no host
//! scales a backoff.
//!
//! The drivers deliver what they did in one shape, a [`Step`]: the input
//! they fed and the machine's answer, with the timer outputs already
//! carried out by the driver.
//!
//! Every host that shares a retry budget (spec §11.4) keeps it in a
//! [`budget_store::BudgetStore`] and decides with it the same way
//! ([`budget_store::handle`]).
//!
//! A host that drives the machine by hand (firmware, a test) needs none of
//! them: [`Machine::handle`](crate::Machine::handle) is the whole protocol.

use crate::{Input, Machine, Outputs, Refused, RetryState};
use budget_store::{BudgetStore, StoreError};

#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub mod clock;

#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub mod thread;

pub mod driver;

pub mod budget_store;
pub mod timer;

#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub mod tokio;

#[cfg(feature = "embassy")]
#[cfg_attr(docsrs, doc(cfg(feature = "embassy")))]
pub mod embassy;

#[cfg(feature = "json")]
#[cfg_attr(docsrs, doc(cfg(feature = "json")))]
pub mod sidecar;

/// What one input fed by a driver did: the input (the host's, or
/// `timer_fired` from the driver's own timer), the machine's answer, and
/// the machine's state after it (so a host's output loop never needs to
/// query the driver, which the step keeps borrowed).
///
/// The driver has already carried out the timer outputs ([`Output::Sleep`]
/// armed its timer, [`Output::CancelTimer`] disarmed it); they stay in
/// `outputs`, for the record. Every other output is the host's to carry
/// out, in order, before it feeds the next input. A refused input changed
/// nothing.
///
/// [`Output::Sleep`]: crate::Output::Sleep
/// [`Output::CancelTimer`]: crate::Output::CancelTimer
///
/// ```
/// use autoretry::{host::Step, Input, Machine, Output, Refused};
/// let mut machine = Machine::default();
/// let step = Step::of(&mut machine, Input::Abort);
/// assert_eq!(step.outputs.iter().flatten().collect::<Vec<_>>(), [&Output::AbortAgent]);
/// assert!(!step.state.is_retrying);
/// let refused: Step<'_> = Step { input: Input::Abort, outputs: Err(Refused::AgentRunDuringBackoff), state: machine.state(), budget_error: None };
/// assert_eq!(refused.outputs.iter().flatten().count(), 0);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step<'a> {
    /// The input fed to the machine.
    pub input: Input<'a>,
    /// Its outputs, or why it was refused (spec §6a).
    pub outputs: Result<Outputs<'a>, Refused>,
    /// The machine's queries after the input (`autoRetryEnabled`,
    /// `isRetrying`, `retryAttempt`).
    pub state: RetryState,
    /// The budget store's failure, when the input was fed with a budget
    /// whose store failed: the input was then decided without the budget
    /// (see [`budget_store::handle`]).
    pub budget_error: Option<StoreError>,
}

impl<'a> Step<'a> {
    /// Feeds `input` to `machine` and keeps what it did.
    ///
    /// ```
    /// use autoretry::{host::Step, AssistantMessage, Input, Machine};
    /// let mut machine = Machine::default();
    /// let step = Step::of(&mut machine, Input::agent_end(AssistantMessage::error("503")));
    /// assert_eq!(step.state.retry_attempt, 1);
    /// ```
    pub fn of(machine: &mut Machine, input: Input<'a>) -> Self {
        let outputs = machine.handle(input);
        Step {
            input,
            outputs,
            state: machine.state(),
            budget_error: None,
        }
    }

    /// Feeds `input` to `machine` with the retry budget of `store`
    /// ([`budget_store::handle`]: a [`RetryBudget`](crate::RetryBudget) by
    /// `&mut`, a shared lock, a remote store) and keeps what it did.
    ///
    /// ```
    /// use autoretry::{host::Step, AssistantMessage, Input, Machine, RetryBudget};
    /// let mut budget = RetryBudget::new(4, 500).unwrap();
    /// let step = Step::with_budget(&mut Machine::default(), Input::agent_end(AssistantMessage::error("503")), &mut budget);
    /// assert_eq!((step.state.retry_attempt, budget.tokens_milli()), (1, 3000));
    /// assert_eq!(step.budget_error, None);
    /// ```
    pub fn with_budget(machine: &mut Machine, input: Input<'a>, store: impl BudgetStore) -> Self {
        let (outputs, budget_error) = match budget_store::handle(machine, input, store) {
            Ok((outputs, error)) => (Ok(outputs), error),
            Err(refused) => (Err(refused), None),
        };
        Step {
            input,
            outputs,
            state: machine.state(),
            budget_error,
        }
    }
}

impl Step<'static> {
    /// `stream_event` at `now_ms` fed through [`Machine::stream_event`]
    /// (what [`Step::of`] gives for [`Input::StreamEvent`], without the
    /// dispatch of [`Machine::handle`]): the stream's hot path in every
    /// host.
    pub(crate) fn stream_event(machine: &mut Machine, now_ms: u64) -> Self {
        Step {
            input: Input::StreamEvent { now_ms },
            outputs: Ok(stream_event(machine, now_ms)),
            state: machine.state(),
            budget_error: None,
        }
    }
}

/// The outputs of `stream_event` at `now_ms` ([`Machine::stream_event`]:
/// never refused, at most one), as [`Machine::handle`] gives them.
pub(crate) fn stream_event(machine: &mut Machine, now_ms: u64) -> Outputs<'static> {
    let mut outputs = Outputs::new();
    if let Some(output) = machine.stream_event(now_ms) {
        crate::machine::push(&mut outputs, output);
    }
    outputs
}

/// `Step { input: .., outputs: [..] }`, or `refused: ..` for a refused
/// input; then the budget store's failure, if any.
#[cfg(feature = "defmt")]
impl defmt::Format for Step<'_> {
    fn format(&self, f: defmt::Formatter<'_>) {
        match &self.outputs {
            Ok(outputs) => defmt::write!(
                f,
                "Step {{ input: {}, outputs: {} }}",
                self.input,
                outputs.as_slice()
            ),
            Err(refused) => {
                defmt::write!(f, "Step {{ input: {}, refused: {} }}", self.input, refused)
            }
        }
        if let Some(error) = &self.budget_error {
            defmt::write!(f, " ({})", error);
        }
    }
}

/// Whether `machine` awaits an answer to a hand-off (`mark_usage_limit`,
/// `switch_model`): the drivers keep the decision's text until then.
pub(crate) fn awaits_answer(machine: &Machine) -> bool {
    machine.awaits_usage_limit_answer() || machine.awaits_model_switch_answer()
}
