//! The vectors of spec section 13 (`tests/vectors/response/`), every
//! step, through the library API: the response `headers` on messages
//! (13.1), the `agent_end` clock that must be a u64, and the curated
//! classifier (13.2).
#![cfg(feature = "json")]

use crate::common;

use common::vectors::replay_files_pass;

#[test]
fn every_response_vector_step_passes() {
    let files = common::response_vector_files();
    replay_files_pass("tests/vectors/response", &files, (14, 14, 70));
}
