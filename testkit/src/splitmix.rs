//! SplitMix64: the jitter generator of spec §10.6, and the one source of
//! deterministic pseudo-random numbers on the test side (the monitor, the
//! reference model, the tests that make bytes from a seed).

/// SplitMix64 as spec §10.6 writes it: the state advances by the golden
/// gamma `0x9E3779B97F4A7C15`, and each output is the advanced state,
/// mixed. A jitter draw `r` is the high half of an output ([`draw`](Self::draw)).
///
/// ```
/// use autoretry_testkit::SplitMix64;
/// let mut rng = SplitMix64::new(0);
/// // The published sequence from seed 0.
/// assert_eq!(rng.next_u64(), 0xE220_A839_7B1D_CDAF);
/// assert_eq!(rng.draw(), 0x6E78_9E6A);
/// assert_eq!(rng.state(), 2u64.wrapping_mul(0x9E37_79B9_7F4A_7C15));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// The generator whose state is `seed` (a host's `seed`, spec §10.6).
    pub const fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// The state: what the machine keeps as its generator (its snapshot's
    /// seed).
    pub const fn state(&self) -> u64 {
        self.state
    }

    /// The next output, advancing the state.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// One jitter draw `r` of spec §10.6: the high half of the next output.
    pub fn draw(&mut self) -> u32 {
        let [a, b, c, d, ..] = self.next_u64().to_be_bytes();
        u32::from_be_bytes([a, b, c, d])
    }
}
