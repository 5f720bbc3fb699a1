//! Prints, as one JSON object, the `size_of` of the machine, of one input's
//! output buffer and of the values around them.

use std::mem::size_of;

use autoretry::classify::Classification;
use autoretry::{Event, Input, Machine, Output, Outputs, Refused, RetrySettings, MAX_OUTPUTS};

fn main() {
    println!(
        "{{\"Machine\":{},\"Outputs\":{},\"Result<Outputs, Refused>\":{},\"Output\":{},\"MAX_OUTPUTS\":{},\"Input\":{},\"Event\":{},\"RetrySettings\":{},\"Classification\":{}}}",
        size_of::<Machine>(),
        size_of::<Outputs<'static>>(),
        size_of::<Result<Outputs<'static>, Refused>>(),
        size_of::<Output<'static>>(),
        MAX_OUTPUTS,
        size_of::<Input<'static>>(),
        size_of::<Event<'static>>(),
        size_of::<RetrySettings>(),
        size_of::<Classification>(),
    );
}
