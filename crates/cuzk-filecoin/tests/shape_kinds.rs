//! Shape-only PoSt and SnapDeals inputs (shape-only: cannot verify;
//! `cuzk_filecoin::shape_kinds`): at 2 KiB a WinningPoSt, a WindowPoSt partition and a
//! SnapDeals partition have the real fixtures' circuit counts and densities; at every size their structure is the one filecoin-proofs' public parameters
//! give (the bench-only constructor runs the job's own shape checks, derived from them); the
//! daemon's constructor refuses them with a message saying so, and the bench-only one refuses
//! real inputs. A SnapDeals input carrying the tag is refused the same way.

use cuzk_filecoin::fixture::{kind_fixtures_2kib, KindFixtures};
use cuzk_filecoin::kind_input::KindInput;
use cuzk_filecoin::post::post_proof_from_wire;
use cuzk_filecoin::shape_kinds::{
    shape_only_kind_json, shape_only_post, shape_only_post_job, shape_only_post_proof,
    shape_only_snap, shape_only_snap_job,
};
use cuzk_filecoin::shape_marker::{is_shape_only, SHAPE_ONLY_NOTE, SHAPE_ONLY_TAG};
use cuzk_filecoin::snap::update_proof_from_wire;
use cuzk_filecoin::synthesis::{compiled_for, SynthesisPath, SynthesisRun};
use cuzk_groth16::compiled::CompiledCircuit;
use filecoin_proofs::TreeRHasher;
use storage_proofs_core::merkle::MerkleTreeTrait;
use cuzk_filecoin::{
    PoStJob, PoStRequest, ProofError, ProofJob, SnapJob, SnapRequest,
};
use cuzk_groth16::PartitionWitness;
use filecoin_proofs::PoStType;

fn fixtures() -> &'static KindFixtures {
    kind_fixtures_2kib()
}

fn request(i: &KindInput) -> PoStRequest<'_> {
    i.post_request().unwrap()
}

fn counts(w: &PartitionWitness) -> (usize, usize, usize) {
    (
        w.input_assignment.len(),
        w.aux_assignment.len(),
        w.num_constraints(),
    )
}

fn refused_as_shape_only<T: std::fmt::Debug>(r: Result<T, ProofError>, what: &str) {
    match r {
        Err(e @ ProofError::ShapeOnly { .. }) => {
            let m = e.to_string();
            assert!(m.contains(SHAPE_ONLY_NOTE) && m.contains(what), "{m}");
            assert!(e.is_bad_input());
        }
        other => panic!("{what}: not refused as shape-only: {other:?}"),
    }
}

#[test]
fn shape_only_post_at_2kib_has_the_real_circuits_and_the_daemon_refuses_it() {
    let f = fixtures();
    for real in [&f.winning, &f.window] {
        let proof = post_proof_from_wire(real.registered_proof).unwrap();
        let real_job = PoStJob::new(&request(real)).unwrap();
        let (reference, _) = real_job
            .synthesize_with(0, SynthesisPath::Reference)
            .unwrap();

        let shape = shape_only_post(proof, None, 7).unwrap();
        assert_eq!(shape.kind, real.kind);
        assert_eq!(shape.registered_proof, real.registered_proof);
        let json = shape_only_kind_json(&shape, 7).unwrap();
        assert!(
            is_shape_only(&json),
            "{}: the JSON marker is missing",
            shape.kind
        );
        let back: KindInput = serde_json::from_slice(&json).unwrap();
        assert_eq!(back.vanilla_proofs, shape.vanilla_proofs);

        // The daemon's constructor refuses it, naming the field; the bench one refuses the
        // real input.
        refused_as_shape_only(PoStJob::new(&request(&shape)), "vanilla_proofs[0]");
        match PoStJob::new_shape_only(&request(real)) {
            Err(ProofError::BadInput(m)) => assert!(m.contains("not a shape-only input"), "{m}"),
            other => panic!("the bench constructor took a real input: {other:?}"),
        }

        let job = shape_only_post_job(&shape).unwrap();
        let (w, _, first) = job
            .synthesize_unchecked(0, SynthesisPath::Reference)
            .unwrap();
        assert_eq!(
            counts(&w),
            counts(&reference),
            "{}: (inputs, aux, constraints)",
            shape.kind
        );
        assert_eq!(w.a_aux_density, reference.a_aux_density, "{}", shape.kind);
        assert_eq!(
            w.b_input_density, reference.b_input_density,
            "{}",
            shape.kind
        );
        assert_eq!(w.b_aux_density, reference.b_aux_density, "{}", shape.kind);
        let first = first.unwrap_or_else(|| {
            panic!("{}: a shape-only witness satisfies its circuit", shape.kind)
        });
        // The compiled path finds the same row and the same witness; the proving path refuses.
        let (c, _, c_first) = job
            .synthesize_unchecked(0, SynthesisPath::CompiledUnchecked)
            .unwrap();
        assert_eq!(c_first, Some(first), "{}", shape.kind);
        assert!(
            c == w,
            "{}: the compiled witness differs from the reference",
            shape.kind
        );
        assert!(matches!(
            job.synthesize(0),
            Err(ProofError::Unsatisfied { partition: 0, .. })
        ));
        eprintln!(
            "2 KiB shape-only {} (shape-only: cannot verify): {} sector proofs, (inputs, aux, \
             constraints) = {:?} as the real fixture's; first unsatisfied constraint {first}",
            shape.kind,
            shape.vanilla_proofs.len(),
            counts(&w)
        );

        assert_eq!(
            shape_only_post(proof, None, 7).unwrap().vanilla_proofs,
            shape.vanilla_proofs
        );
        assert_ne!(
            shape_only_post(proof, None, 8).unwrap().vanilla_proofs,
            shape.vanilla_proofs
        );
    }
}

/// Every sector size, 32 and 64 GiB included: WinningPoSt whole, WindowPoSt with 3 of its
/// sectors (the circuit pads a partition to its full count; `cuzk-lab gen-fixture
/// --shape-only` writes the full one). The bench-only constructor runs the job's shape checks
/// (the sector count, `challenge_count` inclusion proofs per sector, each path of the tree
/// type's arities and `base_path_length` levels, all derived from the proof type's public
/// parameters); the test reads the same counts from filecoin-proofs' `PoStConfig`.
#[test]
fn shape_only_post_at_every_size_has_the_structure_of_its_public_parameters() {
    for size in [2048u64, 8 << 20, 512 << 20, 32 << 30, 64 << 30] {
        for winning in [true, false] {
            let proof = shape_only_post_proof(winning, size).unwrap();
            let config = proof.as_v1_config();
            assert_eq!(config.typ == PoStType::Winning, winning);
            let sectors = if winning {
                None
            } else {
                Some(3.min(config.sector_count))
            };
            let input =
                shape_only_post(proof, sectors, 1).unwrap_or_else(|e| panic!("{proof:?}: {e:#}"));
            let want = if winning {
                config.sector_count
            } else {
                3.min(config.sector_count)
            };
            assert_eq!(input.vanilla_proofs.len(), want, "{proof:?}");
            shape_only_post_job(&input).unwrap_or_else(|e| panic!("{proof:?}: {e}"));
            refused_as_shape_only(PoStJob::new(&request(&input)), "vanilla_proofs[0]");
            let levels = |p: &[u8]| -> (usize, Vec<usize>) {
                macro_rules! decode {
                    ($tree:ty) => {{
                        let p: FallbackPoStSectorProof<$tree> = bincode::deserialize(p).unwrap();
                        let s = &p.vanilla_proof.sectors[0];
                        assert_eq!(
                            filecoin_hashers::Domain::into_bytes(&s.comm_c),
                            SHAPE_ONLY_TAG
                        );
                        let ip = &s.inclusion_proofs;
                        (
                            ip.len(),
                            storage_proofs_core::merkle::MerkleProofTrait::path(&ip[0])
                                .iter()
                                .map(|(h, _)| h.len() + 1)
                                .collect(),
                        )
                    }};
                }
                use filecoin_proofs::*;
                match size {
                    2048 => decode!(SectorShape2KiB),
                    x if x == 8 << 20 => decode!(SectorShape8MiB),
                    x if x == 512 << 20 => decode!(SectorShape512MiB),
                    x if x == 32 << 30 => decode!(SectorShape32GiB),
                    _ => decode!(SectorShape64GiB),
                }
            };
            let (challenges, arities) = levels(&input.vanilla_proofs[0]);
            assert_eq!(challenges, config.challenge_count, "{proof:?}");
            // The arities multiply to the sector's leaf count: the path spans the whole tree.
            let leaves = size as usize / 32;
            assert_eq!(
                arities.iter().product::<usize>(),
                leaves,
                "{proof:?}: {arities:?}"
            );
            eprintln!(
                "{proof:?}: {} sector proofs x {challenges} challenges, paths of arities {arities:?}",
                input.vanilla_proofs.len()
            );
        }
    }
}

fn snap_request(i: &KindInput) -> SnapRequest<'_> {
    i.snap_request().unwrap()
}

#[test]
fn shape_only_snap_at_2kib_has_the_real_circuit_and_the_daemon_refuses_it() {
    let real = &fixtures().snap;
    let proof = update_proof_from_wire(real.registered_proof).unwrap();
    let real_job = SnapJob::new(&snap_request(real)).unwrap();
    let (reference, _) = real_job.synthesize_with(0, SynthesisPath::Reference).unwrap();
    let shape = shape_only_snap(proof, 7).unwrap();
    assert!(is_shape_only(&shape_only_kind_json(&shape, 7).unwrap()));
    refused_as_shape_only(SnapJob::new(&snap_request(&shape)), "vanilla_proofs[0]");
    match SnapJob::new_shape_only(&snap_request(real)) {
        Err(ProofError::BadInput(m)) => assert!(m.contains("not a shape-only input"), "{m}"),
        other => panic!("the bench constructor took a real input: {other:?}"),
    }
    let job = shape_only_snap_job(&shape).unwrap();
    let (w, _, first) = job.synthesize_unchecked(0, SynthesisPath::Reference).unwrap();
    assert_eq!(counts(&w), counts(&reference), "(inputs, aux, constraints)");
    assert_eq!(w.a_aux_density, reference.a_aux_density);
    assert_eq!(w.b_input_density, reference.b_input_density);
    assert_eq!(w.b_aux_density, reference.b_aux_density);
    let first = first.expect("a shape-only witness satisfies its circuit");
    // Recorded (snap_circuit's parts), then witness-only in parts: the reference's witness,
    // and storage-proofs-update's own recording.
    for run in [SynthesisRun::Recorded, SynthesisRun::Compiled] {
        let (c, t, c_first) = job.synthesize_unchecked(0, SynthesisPath::CompiledUnchecked).unwrap();
        assert_eq!(t.run, Some(run));
        let parts = t.compiled.map_or(0, |c| c.parts);
        assert!(parts > 1, "{run:?}: the challenges were not synthesized apart ({parts} part)");
        assert_eq!(c_first, Some(first), "{run:?}");
        assert!(c == w, "{run:?}: the compiled witness differs from the reference");
    }
    let recorded = compiled_for(&job.circuit_key()).unwrap();
    let theirs = upstream_recording::<filecoin_proofs::SectorShape2KiB>(&shape, 0);
    assert!(recorded.same_constraints(&theirs), "snap_circuit's recording differs from storage-proofs-update's");
    eprintln!(
        "2 KiB shape-only snap: (inputs, aux, constraints) = {:?} as the real fixture's; first unsatisfied {first}",
        counts(&w)
    );
    assert_eq!(shape_only_snap(proof, 7).unwrap().vanilla_proofs, shape.vanilla_proofs);
    assert_ne!(shape_only_snap(proof, 8).unwrap().vanilla_proofs, shape.vanilla_proofs);
}

/// Every update proof type, 32 and 64 GiB included: the bench-only constructor's shape checks
/// (partition count, apex leaves, challenges, the three paths of each, derived from
/// storage-proofs-update's public parameters) accept it, and the partition count equals those
/// parameters'. At 8 MiB (4 partitions, so tree D's top levels are shared) the last
/// partition's circuit is built and synthesized: storage-proofs asserts the shared path and
/// the replica encoding while it builds it.
#[test]
fn shape_only_snap_at_every_size_has_the_structure_of_its_public_parameters() {
    use filecoin_proofs_api::RegisteredUpdateProof::*;
    for proof in [StackedDrg2KiBV1, StackedDrg8MiBV1, StackedDrg512MiBV1, StackedDrg32GiBV1, StackedDrg64GiBV1] {
        let input = shape_only_snap(proof, 1).unwrap_or_else(|e| panic!("{proof:?}: {e:#}"));
        let params = storage_proofs_update::PublicParams::from_sector_size(u64::from(proof.sector_size()));
        assert_eq!(input.vanilla_proofs.len(), params.partition_count, "{proof:?}");
        let job = shape_only_snap_job(&input).unwrap_or_else(|e| panic!("{proof:?}: {e}"));
        assert_eq!(job.partitions(), params.partition_count);
        refused_as_shape_only(SnapJob::new(&snap_request(&input)), "vanilla_proofs[0]");
        eprintln!(
            "{proof:?}: {} partitions x {} challenges, {} apex leaves, tree D of {} levels",
            params.partition_count, params.challenge_count, params.apex_leaf_count, params.challenge_bit_len
        );
        if proof == StackedDrg8MiBV1 {
            let last = params.partition_count - 1;
            let (_, _, first) = job.synthesize_unchecked(last, SynthesisPath::CompiledUnchecked).unwrap();
            assert!(first.is_some(), "a shape-only witness satisfies its circuit");
        }
    }
}

/// storage-proofs-update's own circuit of partition `k` of a SnapDeals input, recorded.
fn upstream_recording<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(input: &KindInput, k: usize) -> CompiledCircuit {
    use filecoin_hashers::Domain;
    use storage_proofs_core::compound_proof::CompoundProof;
    use storage_proofs_update::constants::{TreeDDomain, TreeRDomain};
    let proof = update_proof_from_wire(input.registered_proof).unwrap();
    let config = filecoin_proofs::SectorUpdateConfig::from_porep_config(&proof.as_v1_config());
    let params = storage_proofs_update::PublicParams::from_sector_size(u64::from(config.sector_size));
    let vanilla: storage_proofs_update::PartitionProof<Tree> = bincode::deserialize(&input.vanilla_proofs[k]).unwrap();
    let inputs = storage_proofs_update::PublicInputs {
        k,
        comm_r_old: TreeRDomain::try_from_bytes(&input.comm_r_old).unwrap(),
        comm_d_new: TreeDDomain::try_from_bytes(&input.comm_d_new).unwrap(),
        comm_r_new: TreeRDomain::try_from_bytes(&input.comm_r_new).unwrap(),
        h: config.h,
    };
    let circuit =
        storage_proofs_update::EmptySectorUpdateCompound::<Tree>::circuit(&inputs, (), &vanilla, &params, Some(k)).unwrap();
    cuzk_groth16::compiled::compile(circuit).unwrap().1
}

/// 8 MiB partition 0 (4 partitions, 128 apex leaves: the prefix is most of the circuit), as
/// the 2 KiB one: recorded and then witness-only, its challenges in parts (snap_circuit, tree
/// D's SHA-256 natively), the reference's witness and first unsatisfied constraint.
#[test]
fn shape_only_snap_8mib_partition_0_in_parts_equals_the_reference() {
    let input = shape_only_snap(filecoin_proofs_api::RegisteredUpdateProof::StackedDrg8MiBV1, 2).unwrap();
    let job = shape_only_snap_job(&input).unwrap();
    let (reference, _, first) = job.synthesize_unchecked(0, SynthesisPath::Reference).unwrap();
    assert!(first.is_some(), "a shape-only witness satisfies its circuit");
    let mut runs = Vec::new();
    for _ in 0..2 {
        let (c, t, c_first) = job.synthesize_unchecked(0, SynthesisPath::CompiledUnchecked).unwrap();
        let parts = t.compiled.map_or(0, |c| c.parts);
        assert!(parts > 1, "{:?}: the challenges were not synthesized apart ({parts} part)", t.run);
        assert_eq!(c_first, first, "{:?}", t.run);
        assert!(c == reference, "{:?}: the compiled witness differs from the reference", t.run);
        runs.push(t.run);
    }
    // The second is witness-only (the first recorded, unless the other 8 MiB test did).
    assert_eq!(runs[1], Some(SynthesisRun::Compiled));
    eprintln!("8 MiB shape-only snap partition 0: {runs:?} equal the reference; first unsatisfied {first:?}");
}

/// A SnapDeals request whose vanilla proofs carry the shape-only tag as comm_c is refused as
/// shape-only, before filecoin-proofs' verifier.
#[test]
fn a_snapdeals_input_with_the_shape_only_tag_is_refused_as_such() {
    use storage_proofs_update::PartitionProof;
    let s = &fixtures().snap;
    let mut p: PartitionProof<filecoin_proofs::SectorShape2KiB> =
        bincode::deserialize(&s.vanilla_proofs[0]).unwrap();
    p.comm_c = filecoin_hashers::Domain::try_from_bytes(&SHAPE_ONLY_TAG).unwrap();
    let tagged = vec![bincode::serialize(&p).unwrap()];
    let r = SnapJob::new(&SnapRequest {
        registered_proof: update_proof_from_wire(s.registered_proof).unwrap(),
        vanilla_proofs: &tagged,
        comm_r_old: &s.comm_r_old,
        comm_r_new: &s.comm_r_new,
        comm_d_new: &s.comm_d_new,
    });
    refused_as_shape_only(r, "vanilla_proofs[0]");
}
