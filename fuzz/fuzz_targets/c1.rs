//! C1 input parsing, bare and in lotus-bench's envelope, then the structural check of the
//! vanilla proofs (`PoRepJob::new`, which runs `vanilla_shape`'s checks before any circuit
//! is built). The first byte picks the form:
//! - even: the rest is the whole file (bare JSON, or an envelope written out by hand);
//! - odd: the rest is the bare C1 JSON, wrapped in an envelope whose `SectorSize` and
//!   `SectorNum` the first byte picks (so mutations reach the decoded inner JSON).
//!
//! Checked: no panic anywhere; an envelope that parses agrees with its proof type's sector
//! size; `check_sector_size` accepts exactly the proof type's size.

#![no_main]

use cuzk_filecoin::{c1::to_envelope, parse_c1, PoRepJob};
use libfuzzer_sys::fuzz_target;

/// Sector sizes an envelope may claim: the five real ones and nonsense.
const SIZES: [u64; 8] = [2048, 8 << 20, 512 << 20, 32 << 30, 64 << 30, 0, 1, u64::MAX];

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let wrapped;
    let input = if mode & 1 == 0 {
        rest
    } else {
        let size = SIZES[usize::from(mode >> 1) % SIZES.len()];
        wrapped = to_envelope(rest, u64::from(mode >> 4), size);
        &wrapped
    };
    let Ok(c1) = parse_c1(input) else { return };
    let actual = u64::from(c1.registered_proof().sector_size());
    if let Some(claimed) = c1.sector_size {
        assert_eq!(
            claimed, actual,
            "an envelope with a contradicting sector size was accepted"
        );
    }
    assert!(c1.check_sector_size(actual).is_ok());
    assert!(c1.check_sector_size(actual ^ 1).is_err());
    // Errors are fine (that is what the check is for); a panic is the bug.
    let _ = PoRepJob::new(&c1);
});
