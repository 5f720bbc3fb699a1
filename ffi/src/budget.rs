//! The retry budgets of spec §11.4 over the C ABI: a fixed table of
//! [`BUDGET_POOL_SIZE`] budgets beside the pool of machines (under the same
//! lock) and the lookup of a budget an input names
//! (`autoretry_input.budget`). Safe code: the table lives in the pool's
//! static (`Slots::budgets`, `pool.rs`); its exports are in
//! `budget_exports.rs`.

use autoretry::RetryBudget;

/// How many budgets can be alive at once.
pub const BUDGET_POOL_SIZE: usize = 8;

/// No budget with this handle (never created, freed, or out of range): an
/// input that names one changes nothing.
pub const ERR_BUDGET: i32 = -14;

/// How many low bits of a budget handle hold its index.
const INDEX_BITS: u32 = 8;
/// The last generation of a budget's place, so that a handle stays a
/// positive `i32`; after it the place is retired.
const LAST_GENERATION: u32 = (1 << (31 - INDEX_BITS)) - 1;
const _: () = assert!(BUDGET_POOL_SIZE <= 1 << INDEX_BITS);

/// The budgets and each place's generation. A handle is
/// `generation << INDEX_BITS | index`; generations start at 1, so no
/// handle is 0 (an input's `budget` of 0 is "none"), and a freed budget's
/// place takes the next one, so a freed handle never names a later budget.
pub(super) struct Budgets {
    budgets: [Option<RetryBudget>; BUDGET_POOL_SIZE],
    generation: [u32; BUDGET_POOL_SIZE],
}

impl Budgets {
    /// No budget; every place at generation 1.
    pub(super) const fn new() -> Self {
        Budgets {
            budgets: [None; BUDGET_POOL_SIZE],
            generation: [1; BUDGET_POOL_SIZE],
        }
    }

    /// The index of a live handle.
    fn index(&self, handle: i32) -> Option<usize> {
        let handle = u32::try_from(handle).ok()?;
        let index = (handle & ((1 << INDEX_BITS) - 1)) as usize;
        (self.generation.get(index) == Some(&(handle >> INDEX_BITS))
            && self.budgets.get(index).is_some_and(Option::is_some))
        .then_some(index)
    }

    /// The budget of a live handle (a copy), or [`ERR_BUDGET`].
    pub(super) fn get(&self, handle: i32) -> Result<RetryBudget, i32> {
        self.index(handle)
            .and_then(|i| self.budgets[i])
            .ok_or(ERR_BUDGET)
    }

    /// Replaces the budget of a live handle (the end of a successful call).
    pub(super) fn set(&mut self, handle: i32, budget: RetryBudget) {
        if let Some(i) = self.index(handle) {
            self.budgets[i] = Some(budget);
        }
    }

    /// Puts `budget` in a free place that is not retired: its handle.
    pub(super) fn insert(&mut self, budget: RetryBudget) -> Option<i32> {
        let index = (0..BUDGET_POOL_SIZE)
            .position(|i| self.budgets[i].is_none() && self.generation[i] <= LAST_GENERATION)?;
        self.budgets[index] = Some(budget);
        i32::try_from((self.generation[index] << INDEX_BITS) | index as u32).ok()
    }

    /// Frees a live handle's budget: whether it was live.
    pub(super) fn remove(&mut self, handle: i32) -> bool {
        let Some(index) = self.index(handle) else {
            return false;
        };
        self.budgets[index] = None;
        self.generation[index] += 1; // at most LAST_GENERATION + 1: retired
        true
    }
}

#[cfg(test)]
mod tests {
    use super::{Budgets, BUDGET_POOL_SIZE, LAST_GENERATION};
    use autoretry::RetryBudget;

    #[test]
    fn a_place_is_retired_before_its_generation_wraps() {
        let mut budgets = Budgets::new();
        budgets.generation = [LAST_GENERATION; BUDGET_POOL_SIZE];
        let budget = RetryBudget::new(1, 1).unwrap();
        let mut seen = Vec::new();
        for _ in 0..BUDGET_POOL_SIZE {
            let handle = budgets.insert(budget).expect("a place");
            assert!(handle > 0 && !seen.contains(&handle), "handle {handle}");
            seen.push(handle);
            assert!(budgets.remove(handle));
        }
        assert_eq!(budgets.insert(budget), None, "every place retired");
        assert!(seen.iter().all(|&h| budgets.get(h).is_err()));
    }
}
