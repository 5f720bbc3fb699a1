//! The vectors of spec section 13 (`tests/vectors/response/`) that this
//! crate implements, every step, through the library API: the response
//! `headers` on messages (13.1) and the `agent_end` clock that must be a
//! u64.
#![cfg(feature = "json")]

use crate::common;

use common::vectors::replay_files_pass;

#[test]
fn every_response_vector_step_passes() {
    // The shared set at the time of writing: 7 files, 7 scenarios, 36 steps.
    let files = common::response_vector_files();
    replay_files_pass("tests/vectors/response (headers)", &files, (7, 7, 36));
}
