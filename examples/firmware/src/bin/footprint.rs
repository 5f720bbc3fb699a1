//! The retry core alone: a machine fed inputs the optimizer cannot see
//! through (`black_box`), every input kind and every classifier path, with
//! the outputs consumed the same way; each input is handled either alone
//! (`handle`) or with a shared retry budget (`handle_with_budget`, spec
//! §11.4), whichever the opaque flag says, so both entry points link. `examples/firmware/size-report.sh` subtracts the
//! flash of `baseline` (the same runtime without the machine) from this
//! binary's to get the footprint of the machine and its classifier.
#![no_std]
#![no_main]

use core::hint::black_box;
use core::panic::PanicInfo;

use autoretry::{
    AssistantMessage, HostOptions, Input, Machine, Output, Partial, RetryBudget, RetrySettings,
    StopReason, TimerId, Usage,
};
use cortex_m_rt::entry;

#[entry]
fn main() -> ! {
    let mut machine = Machine::new(
        black_box(RetrySettings::DEFAULT),
        black_box(HostOptions::default()),
    );
    let mut budget = black_box(RetryBudget::new(10, 100));
    loop {
        let text: &str = black_box("529 overloaded_error");
        let message = AssistantMessage {
            stop_reason: black_box(StopReason::Error),
            error_message: Some(text),
            usage: black_box(Some(Usage::default())),
            should_retry: black_box(None),
            retry_after_ms: black_box(None),
            partial: black_box(Partial::None),
            empty: black_box(false),
            headers: autoretry::Headers::NONE,
        };
        let inputs = [
            Input::MessageEnd { message },
            Input::AgentEnd {
                message,
                now_ms: black_box(None),
            },
            Input::TimerFired {
                timer: black_box(TimerId(1)),
            },
            Input::UsageLimitMarked {
                switched: black_box(true),
                error_message: text,
            },
            Input::ModelSwitched {
                switched: black_box(true),
                error_message: text,
            },
            Input::AbortRetry,
            Input::Abort,
            Input::SetAutoRetry {
                enabled: black_box(true),
            },
            Input::Settings(black_box(RetrySettings::DEFAULT)),
        ];
        for input in inputs {
            let input = black_box(input);
            let handled = match &mut budget {
                Ok(budget) if black_box(true) => machine.handle_with_budget(input, budget),
                _ => machine.handle(input),
            };
            if let Ok(outputs) = handled {
                for output in &outputs {
                    black_box::<&Output<'_>>(output);
                }
            }
            black_box(machine.state());
        }
    }
}

#[panic_handler]
fn panic(_: &PanicInfo) -> ! {
    #[allow(clippy::empty_loop)]
    loop {}
}
