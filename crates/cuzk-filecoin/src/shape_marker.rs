//! The mark of a shape-only input (random contents with a real input's exact structure, made
//! by `cuzk-lab gen-fixture --shape-only` for benches): the daemon refuses every one with a
//! message saying "shape-only: cannot verify" before any circuit is built (a C1 at plan, a
//! PoSt or SnapDeals input when its job is built, before filecoin-proofs' verifier).
//!
//! - A shape-only C1 output (PoRep) is JSON with the [`SHAPE_ONLY_FIELD`] field first.
//! - A shape-only PoSt or SnapDeals input travels as the request's binary vanilla proofs,
//!   which carry no JSON: every `comm_c` in them is [`SHAPE_ONLY_TAG`]. A real vanilla proof
//!   holds that value with probability about 2^-254, and its `comm_r` check would fail anyway.

use crate::error::ProofError;

/// The top-level JSON field that marks a shape-only C1 output or kind input.
pub const SHAPE_ONLY_FIELD: &str = "cuzk_shape_only";
/// What every message about a shape-only input says (defined beside the error that says it).
pub use crate::error::SHAPE_ONLY_NOTE;

/// The `comm_c` of every vanilla proof in a shape-only PoSt or SnapDeals input: the ASCII
/// bytes of "cuzk shape-only: cannot verify" followed by zeros (a canonical BLS12-381 scalar
/// in little-endian bytes, its top byte zero).
pub const SHAPE_ONLY_TAG: [u8; 32] = {
    let text = b"cuzk shape-only: cannot verify";
    let mut tag = [0u8; 32];
    let mut i = 0;
    while i < text.len() {
        tag[i] = text[i];
        i += 1;
    }
    tag
};

/// Which inputs a job is built from: real ones (the daemon's), or shape-only ones (benches).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Input {
    Real,
    #[cfg_attr(not(any(test, feature = "testing")), allow(dead_code))]
    ShapeOnly,
}

/// The refusal of a vanilla proof whose `comm_c` says the input is not of `input`'s kind.
pub(crate) fn check_tag(input: Input, who: &str, comm_c: &[u8]) -> Result<(), ProofError> {
    let tagged = comm_c == SHAPE_ONLY_TAG;
    match (input, tagged) {
        (Input::Real, true) => Err(ProofError::ShapeOnly { what: who.to_string() }),
        (Input::ShapeOnly, false) => Err(ProofError::BadInput(format!(
            "{who}: not a shape-only input (its comm_c is not the shape-only tag); the bench-only \
             constructor takes only those"
        ))),
        _ => Ok(()),
    }
}

/// `value`'s JSON (an object) with the [`SHAPE_ONLY_FIELD`] field first: `{note, seed}`, the
/// note starting with [`SHAPE_ONLY_NOTE`] (the caller's text follows it).
pub fn marked_json<T: serde::Serialize>(
    value: &T,
    note: &str,
    seed: u64,
) -> serde_json::Result<Vec<u8>> {
    #[derive(serde::Serialize)]
    struct Marker {
        note: String,
        seed: u64,
    }
    #[derive(serde::Serialize)]
    struct Marked<'a, T> {
        #[serde(rename = "cuzk_shape_only")]
        marker: Marker,
        #[serde(flatten)]
        value: &'a T,
    }
    let marker = Marker {
        note: format!("{SHAPE_ONLY_NOTE}: {note}"),
        seed,
    };
    serde_json::to_vec(&Marked { marker, value })
}

/// Whether a parsed JSON object carries the shape-only field.
pub fn json_is_marked(value: &serde_json::Value) -> bool {
    value
        .as_object()
        .is_some_and(|o| o.contains_key(SHAPE_ONLY_FIELD))
}

/// Whether JSON bytes (a bare C1 output or a kind input) carry the shape-only field.
pub fn is_shape_only(json: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(rename = "cuzk_shape_only")]
        marker: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_slice::<Probe>(json).is_ok_and(|p| p.marker.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tag_is_a_canonical_scalar_and_reads_as_its_note() {
        use ff::PrimeField;
        let repr = blstrs::Scalar::from_repr_vartime(SHAPE_ONLY_TAG);
        assert!(repr.is_some(), "the tag is not a canonical scalar");
        let text = std::str::from_utf8(&SHAPE_ONLY_TAG[..30]).unwrap();
        assert_eq!(text, format!("cuzk {SHAPE_ONLY_NOTE}"));
        assert!(SHAPE_ONLY_TAG[30..].iter().all(|&b| b == 0));
        assert!(is_shape_only(
            br#"{"cuzk_shape_only": {"note": "x"}, "a": 1}"#
        ));
        assert!(!is_shape_only(br#"{"a": 1}"#));
        assert!(!is_shape_only(b"not json"));
    }
}
