//! cuzk's Groth16 prover over BLS12-381.
//!
//! Reads bellperson-format parameters ([`srs`]), synthesizes bellpepper circuits into a
//! witness layout ([`witness`]), and proves ([`prover`]) through a [`backend::Backend`]: the
//! CPU backend here, the GPU backend in `cuzk-gpu`. Proofs are byte-compatible with
//! bellperson's ([`proof`]).

pub mod backend;
pub mod compiled;
pub mod cpu;
pub mod hugepages;
pub mod points;
pub mod pools;
pub mod progress;
pub mod proof;
pub mod prover;
pub mod region;
pub mod release;
pub mod setup;
pub mod shape;
pub mod srs;
pub mod switch;
pub mod testing;
pub mod witness;

pub use backend::{Backend, BackendError, NttDirection, Selection};
pub use cpu::CpuBackend;
pub use proof::{Proof, PROOF_BYTES};
pub use prover::{prove, prove_all, ProveError, ProveTimings};
pub use region::DeviceLock;
pub use srs::{Srs, SrsError, SrsShape, VerifyingKey};
pub use witness::{Density, PartitionWitness, WitnessCs};
