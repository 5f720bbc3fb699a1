//! The overflow patterns of spec 3.3 that both pattern sets share: the
//! `words_*` tables and the tails of the patterns `head.*rest`, stepped
//! one symbol at a time (see [`super::classic::scan`] for why a tail runs
//! from the earliest head of its line).

use super::dfa;

// The head bits of the tails start at `dfa::HEAD` and must fit in a `u8`.
const _: () = assert!(dfa::TAILS_LEN <= 8 - dfa::HEAD.trailing_zeros() as usize);

/// Steps the overflow tables (`words` and the running tails) on one
/// symbol; whether an overflow pattern matched. `counts` are the output
/// bits of `words` that count as an overflow: with or without the pattern
/// anchored at the start.
#[inline(always)]
pub(super) fn step(
    words: &mut [u8; dfa::WORDS_LEN],
    tails: &mut Tails,
    sym: u8,
    counts: u8,
) -> bool {
    // Tails first: a tail reads the characters after its head.
    let mut overflow = tails.active != 0 && tails.step(sym);
    let mut heads = 0;
    for (state, table) in words.iter_mut().zip(dfa::WORDS) {
        *state = table.next(*state, sym);
        if *state >= table.special {
            heads |= table.output(*state);
        }
    }
    if heads != 0 {
        overflow |= heads & counts != 0;
        tails.start(heads / dfa::HEAD);
    }
    overflow
}

/// The running tails.
#[derive(Default)]
pub(super) struct Tails {
    /// State of each tail (meaningful where `active` has its bit).
    pub(super) states: [u8; dfa::TAILS_LEN],
    /// Bit `k`: tail `k` is running.
    pub(super) active: u8,
}

impl Tails {
    /// Steps every running tail; whether one matched. A tail that dies (at
    /// the end of a line) stops.
    pub(super) fn step(&mut self, sym: u8) -> bool {
        let mut matched = false;
        let mut running = self.active;
        while running != 0 {
            let k = running.trailing_zeros() as usize;
            running &= running - 1;
            let (Some(state), Some(table)) = (self.states.get_mut(k), dfa::TAILS.get(k)) else {
                continue;
            };
            *state = table.next(*state, sym);
            if *state >= table.special {
                if Some(*state) == table.dead {
                    self.active &= !(1 << k);
                } else {
                    matched |= table.output(*state) != 0;
                }
            }
        }
        matched
    }

    /// Starts the tails of `heads` (bit `k`: tail `k`) that are not running
    /// yet: an earlier head on the same line is always the better start.
    #[inline(always)]
    pub(super) fn start(&mut self, heads: u8) {
        let new = heads & !self.active;
        if new != 0 {
            for (k, state) in self.states.iter_mut().enumerate() {
                if new & (1 << k) != 0 {
                    *state = 0;
                }
            }
            self.active |= new;
        }
    }
}
