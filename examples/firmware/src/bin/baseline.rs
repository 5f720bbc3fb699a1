//! The runtime of `footprint` without the machine: the reference its flash
//! is measured against.
#![no_std]
#![no_main]

use core::hint::black_box;
use core::panic::PanicInfo;

use cortex_m_rt::entry;

#[entry]
fn main() -> ! {
    loop {
        black_box(0u32);
    }
}

#[panic_handler]
fn panic(_: &PanicInfo) -> ! {
    #[allow(clippy::empty_loop)]
    loop {}
}
