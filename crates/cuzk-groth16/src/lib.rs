//! cuzk's Groth16 prover over BLS12-381, compatible with bellperson's parameter files and
//! proofs.
//!
//! The main types:
//! - [`Srs`]: a `.params` file, checked and decoded ([`srs`]); its [`VerifyingKey`].
//! - [`PartitionWitness`]: one circuit's assignments, a, b, c and densities, from
//!   [`WitnessCs`] (the reference path) or a [`compiled::CompiledCircuit`] (recorded once,
//!   then witness-only synthesis and sparse products).
//! - [`Backend`]: the NTT, coset quotient and MSM operations the prover runs through;
//!   [`CpuBackend`] here is the reference every backend matches bit for bit (cuzk-gpu's
//!   `GpuBackend` is the other).
//! - [`prove_with`] (or [`prove`], default [`ProverTuning`]): one [`Proof`], 192 bytes
//!   ([`proof`]), with the time of each stage ([`ProveTimings`]).
//! - [`setup`]: a parameter setup of our own (test parameters, byte-equal to bellperson's
//!   generator for the same toxic waste); [`progress::Progress`] reports its stages.
//!
//! Shape-only bench inputs and test support (`shape`, `testing`) are behind the `testing`
//! feature, which the daemon never turns on.
//!
//! A synthetic circuit from its own parameters to a proof that bellperson verifies:
//!
//! ```
//! use bellperson::groth16;
//! use cuzk_groth16::{progress::Silent, prove, setup, testing::SyntheticCircuit, CpuBackend, PartitionWitness, Srs};
//! use rand::SeedableRng;
//!
//! let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
//! let inputs = vec![blstrs::Scalar::from(7)];
//! let circuit = SyntheticCircuit { constraints: 64, inputs: inputs.clone(), seed: 2 };
//! let dir = std::env::temp_dir().join(format!("cuzk-groth16-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let (params, vk) = (dir.join("c.params"), dir.join("c.vk"));
//! setup::setup_circuit(circuit.clone(), &setup::ToxicWaste::random(&mut rng), &params, &vk, &Silent)?;
//!
//! let srs = Srs::load(&params)?;
//! let (r, s) = cuzk_groth16::prover::random_blinding(&mut rng);
//! let (proof, _timings) = prove(&CpuBackend, &srs, PartitionWitness::synthesize(circuit)?, r, s)?;
//!
//! let proof = groth16::Proof::<blstrs::Bls12>::read(&proof.to_bytes()[..])?;
//! let key = groth16::VerifyingKey::<blstrs::Bls12>::read(&std::fs::read(&vk)?[..])?;
//! assert!(groth16::verify_proof(&groth16::prepare_verifying_key(&key), &proof, &inputs)?);
//! std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod affine;
pub mod backend;
pub mod compiled;
pub mod constraints;
pub mod cpu;
pub mod domain;
pub mod hstep;
pub mod hugepages;
pub mod points;
pub mod pools;
pub mod progress;
pub mod proof;
pub mod prover;
pub mod region;
pub mod release;
pub mod setup;
/// Shape-only bench inputs (random parameters, drawn witnesses): never in the daemon.
#[cfg(any(test, feature = "testing"))]
pub mod shape;
pub mod srs;
/// Test support (a synthetic circuit, a backend that fails on command): never in the daemon.
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod witness;

pub use backend::{Backend, BackendError, HOutcome, NttDirection, Selection};
pub use cpu::CpuBackend;
pub use proof::{Proof, PROOF_BYTES};
pub use prover::{prove, prove_all, prove_with, ProveError, ProveTimings, ProverTuning};
pub use region::DeviceLock;
pub use srs::{Srs, SrsError, SrsShape, VerifyingKey};
pub use witness::{Deferred, Density, PartitionWitness, WitnessCs};
