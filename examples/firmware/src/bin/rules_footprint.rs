//! The flash cost of your own rules: the example blob, `Rules::from_bytes`
//! and `Rules::verdict`, fed inputs the optimizer cannot see through, and
//! nothing else. `examples/firmware/size-report.sh` subtracts `baseline`'s flash.
#![no_std]
#![no_main]

use core::hint::black_box;
use core::panic::PanicInfo;

use autoretry::rules::Rules;
use cortex_m_rt::entry;

static BLOB: &[u8] = autoretry::include_rules!("../../../../tests/rules/example.bin");

#[entry]
fn main() -> ! {
    loop {
        if let Ok(rules) = Rules::from_bytes(black_box(BLOB)) {
            black_box(rules.verdict(black_box("stream stalled")));
        }
    }
}

#[panic_handler]
fn panic(_: &PanicInfo) -> ! {
    #[allow(clippy::empty_loop)]
    loop {}
}
