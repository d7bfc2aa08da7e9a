//! Shared inputs for Strata's criterion benches (`benches/benches/`). The side-by-side
//! comparison harness against other engines will live here once the engine exists.

/// `count` records of `len` bytes each, filled with a deterministic pseudo-random pattern so
/// that nothing downstream can shortcut on constant data.
pub fn records(count: usize, len: usize) -> Vec<Vec<u8>> {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    (0..count)
        .map(|_| {
            (0..len)
                .map(|_| {
                    // xorshift64: cheap, and good enough to defeat constant folding.
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state.to_le_bytes()[0]
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_have_the_asked_shape_and_vary() {
        let made = records(3, 100);
        assert_eq!(made.len(), 3);
        assert!(made.iter().all(|r| r.len() == 100));
        assert_ne!(made[0], made[1]);
    }
}
