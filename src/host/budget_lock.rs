//! One retry budget (spec §11.4) shared by the drivers of several sessions
//! ([`BudgetLock`]): each driver lends it to its machine for one input, so
//! sessions that talk to the same provider throttle together.

use core::cell::RefCell;

use crate::RetryBudget;

/// A retry budget that several drivers share, lent for one input at a time
/// ([`Driver::next_with_budget`](crate::host::driver::Driver::next_with_budget)).
///
/// Implemented for a `RefCell<RetryBudget>` (the sessions of one thread or
/// one executor, `no_std`), a `std::sync::Mutex<RetryBudget>` (threads and
/// a multi-threaded tokio; feature `std`), an embassy
/// `blocking_mutex::Mutex<_, RefCell<RetryBudget>>` (feature `embassy`),
/// and references and `Arc`s of those.
///
/// ```
/// use core::cell::RefCell;
/// use autoretry::host::budget_lock::BudgetLock;
/// use autoretry::RetryBudget;
/// let shared = RefCell::new(RetryBudget::new(4, 500).unwrap());
/// shared.with_budget(|budget| budget.charge());
/// assert_eq!(shared.borrow().tokens_milli(), 3000);
/// ```
pub trait BudgetLock {
    /// Runs `f` on the budget, for one input.
    fn with_budget<R>(&self, f: impl FnOnce(&mut RetryBudget) -> R) -> R;
}

impl BudgetLock for RefCell<RetryBudget> {
    fn with_budget<R>(&self, f: impl FnOnce(&mut RetryBudget) -> R) -> R {
        f(&mut self.borrow_mut())
    }
}

impl<T: BudgetLock + ?Sized> BudgetLock for &T {
    fn with_budget<R>(&self, f: impl FnOnce(&mut RetryBudget) -> R) -> R {
        (**self).with_budget(f)
    }
}

/// A session that panicked while it held the budget left it consistent
/// (the budget changes in one step), so the lock's poison is ignored.
#[cfg(feature = "std")]
impl BudgetLock for std::sync::Mutex<RetryBudget> {
    fn with_budget<R>(&self, f: impl FnOnce(&mut RetryBudget) -> R) -> R {
        f(&mut self
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner))
    }
}

#[cfg(feature = "std")]
impl<T: BudgetLock + ?Sized> BudgetLock for std::sync::Arc<T> {
    fn with_budget<R>(&self, f: impl FnOnce(&mut RetryBudget) -> R) -> R {
        (**self).with_budget(f)
    }
}

#[cfg(feature = "embassy")]
impl<M: embassy_sync::blocking_mutex::raw::RawMutex> BudgetLock
    for embassy_sync::blocking_mutex::Mutex<M, RefCell<RetryBudget>>
{
    fn with_budget<R>(&self, f: impl FnOnce(&mut RetryBudget) -> R) -> R {
        self.lock(|cell| f(&mut cell.borrow_mut()))
    }
}
