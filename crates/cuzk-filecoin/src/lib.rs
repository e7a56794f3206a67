//! Filecoin proof kinds on cuzk's prover.
//!
//! - [`c1`]: commit-phase-1 input, bare or in lotus-bench's envelope, with clear errors;
//! - [`params`]: parameter files by Filecoin's naming, and filecoin-proofs' directories;
//! - [`porep`]: PoRep C2 (every registered seal proof, 2 KiB to 64 GiB; interactive,
//!   synthetic and non-interactive), verified with filecoin-proofs before it is returned;
//! - [`synthesis`]: partition circuits to witnesses through their compiled circuit (recorded
//!   once per proof type), or the reference path;
//! - [`porep_circuit`] and [`native_sha`]: the PoRep circuit's witness-only synthesis with
//!   its labels' and tree D paths' SHA-256 computed natively, allocations equal to the gadgets';
//! - `snap_circuit`: storage-proofs-update's SnapDeals circuit with each challenge in a
//!   namespace of its own, synthesized as parts in parallel, tree D's SHA-256 computed
//!   natively in witness-only synthesis;
//! - [`vanilla_shape`]: the shape a C1 output's vanilla proofs must have for their proof type,
//!   checked by [`PoRepJob::new`] before any circuit is built;
//! - [`shape_marker`]: the mark of a shape-only input, which the daemon refuses;
//! - `shape_c1` (feature `testing`): shape-only C1 outputs (any sector size, 32 and 64 GiB included): a real
//!   one's exact structure, random contents; shape-only: cannot verify (benches only);
//! - `shape_kinds` (feature `testing`): shape-only WinningPoSt and WindowPoSt inputs of the
//!   same kind, marked by a tag in every comm_c, which the daemon refuses;
//! - [`runner`]: every kind as cuzk-engine's `ProofRunner` ([`FilecoinRunner`]): the
//!   engine schedules partitions, the runner knows the circuits;
//! - `satisfying_c1` (feature `testing`): C1 outputs that satisfy their circuits at any
//!   interactive PoRep size, 32 GiB included, without sealing (zero data, sparse trees, the
//!   challenged nodes' labels from their real parents): their proofs verify;
//! - `fixture` (feature `testing`): test parameters and a sealed small sector, cached.
//!
//! Architecture invariant: circuits, public inputs, verification and the proof byte format
//! come from filecoin-proofs and storage-proofs; the Groth16 proving is cuzk-groth16's.
//! [`porep_circuit`] and `snap_circuit` are witness paths for storage-proofs' PoRep and
//! storage-proofs-update's SnapDeals circuits, not circuits of their own: their recordings
//! equal storage-proofs' (checked by the tests).

pub mod c1;
pub mod error;
/// Test fixtures (parameters from our own setup, a sealed sector's C1 output): tests and
/// cuzk-lab, never the daemon.
#[cfg(any(test, feature = "testing"))]
pub mod fixture;
pub mod job;
pub mod kind_input;
pub mod native_sha;
pub mod params;
pub mod porep;
pub mod porep_circuit;
pub mod post;
pub mod runner;
/// Satisfying C1 outputs at any interactive PoRep size without sealing (test inputs that
/// verify): tests and cuzk-lab, never the daemon.
#[cfg(any(test, feature = "testing"))]
pub mod satisfying_c1;
/// Shape-only C1 outputs for benches (they cannot verify): never the daemon.
#[cfg(any(test, feature = "testing"))]
pub mod shape_c1;
/// Shape-only PoSt inputs for benches (they cannot verify): never the daemon.
#[cfg(any(test, feature = "testing"))]
pub mod shape_kinds;
pub mod shape_marker;
pub mod snap;
mod snap_circuit;
pub mod synthesis;
pub mod vanilla_shape;

pub use c1::{parse_c1, C1Error, C1Input};
pub use error::ProofError;
pub use job::{prove_job, prove_job_on, Blinding, FinishTimings, JobTimings, ProofJob, SynthesisTimings};
pub use porep::{
    prove_porep_c2, prove_porep_c2_with, prover_id_from_miner, verify_porep_c2, LabelHashing, PoRepJob, SealCommit, SectorIdentity,
};
pub use post::{PoStJob, PoStRequest};
pub use runner::{partition_footprint, FilecoinRunner};
pub use snap::{SnapJob, SnapRequest};
