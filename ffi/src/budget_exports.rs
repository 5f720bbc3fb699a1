//! The exports of the retry budgets (spec §11.4): make one, read its
//! tokens, free it. The table is `budget.rs`'s, in the pool's static.
// `#[no_mangle]` is `unsafe_code` by the lint's definition: these are the
// exports' declarations; there is no `unsafe` block here.
#![allow(unsafe_code)]

use super::budget::ERR_BUDGET;
use super::codes::{ERR_ARG, ERR_POOL_FULL};
use super::pool::with_slots;
use autoretry::RetryBudget;

/// Creates a retry budget (spec §11.4) that inputs may name
/// (`autoretry_input.budget`), shared by any number of machines: `max_tokens`
/// 1 to 1000, `ratio_milli` the refill per good run in thousandths of a
/// token (1 to 1000000), and, when `has_tokens` is not 0, the tokens it
/// starts with in thousandths (0 to `max_tokens * 1000`; else it starts
/// full). Returns its handle (`> 0`, never 0), `AUTORETRY_ERR_ARG` for a
/// figure out of range, or `AUTORETRY_ERR_POOL_FULL` when
/// `AUTORETRY_BUDGET_POOL_SIZE` budgets are alive (or every place is
/// retired, after 2^23 budgets each).
///
/// ```c
/// /* 4 tokens, a good run refills 0.5, starting at 3 */
/// int32_t b = autoretry_budget_new(4, 500, 1, 3000);
/// if (b < 0) return b;
/// ```
#[no_mangle]
pub extern "C" fn autoretry_budget_new(
    max_tokens: u32,
    ratio_milli: u32,
    has_tokens: u32,
    tokens_milli: u32,
) -> i32 {
    let budget = match RetryBudget::new(max_tokens, ratio_milli) {
        Ok(budget) if has_tokens == 0 => budget,
        Ok(budget) => match budget.with_tokens_milli(tokens_milli) {
            Ok(budget) => budget,
            Err(_) => return ERR_ARG,
        },
        Err(_) => return ERR_ARG,
    };
    with_slots(|slots, _| slots.budgets.insert(budget).unwrap_or(ERR_POOL_FULL))
}

/// The tokens a budget holds, in thousandths of a token (0 to
/// `max_tokens * 1000`), or `AUTORETRY_ERR_BUDGET`.
///
/// ```c
/// int32_t milli = autoretry_budget_tokens(b); /* 3000: 3 tokens */
/// ```
#[no_mangle]
pub extern "C" fn autoretry_budget_tokens(budget: i32) -> i32 {
    with_slots(|slots, _| match slots.budgets.get(budget) {
        // At most 1000 * 1000: it fits.
        Ok(budget) => budget.tokens_milli() as i32,
        Err(code) => code,
    })
}

/// Frees a budget. Returns 0, or `AUTORETRY_ERR_BUDGET`. An input that
/// names a freed budget is refused with `AUTORETRY_ERR_BUDGET`; the
/// place's next budget gets another handle.
///
/// ```c
/// autoretry_budget_free(b); /* 0 */
/// autoretry_budget_free(b); /* AUTORETRY_ERR_BUDGET */
/// ```
#[no_mangle]
pub extern "C" fn autoretry_budget_free(budget: i32) -> i32 {
    with_slots(|slots, _| {
        if slots.budgets.remove(budget) {
            0
        } else {
            ERR_BUDGET
        }
    })
}
