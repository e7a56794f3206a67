//! Satisfying C1 outputs (`cuzk_filecoin::satisfying_c1`): made without sealing, they satisfy
//! their circuits, prove on the CPU backend, and the proofs pass filecoin-proofs'
//! `verify_seal` with the 2 KiB fixture's parameters; tampered, they fail, each for its own
//! cause. At 32 and 64 GiB (the sub- and top-tree levels appear only there) they pass the shape
//! check and storage-proofs' vanilla verifier; their circuit is synthesized on a larger
//! machine (bench/device/satisfying32.sh; a partition needs about 20 GB).
//!
//! The parameters are the sealed 2 KiB fixture's (the same circuit): this process points
//! filecoin-proofs at that fixture's directory once. The setup from a satisfying partition's
//! recording is checked in `tests/satisfying_fixture.rs`, a process of its own.

use std::sync::OnceLock;
use std::time::Instant;

use cuzk_filecoin::fixture::{default_fixture_dir, ensure_fixture, Fixture};
use cuzk_filecoin::params::seal_params_path;
use cuzk_filecoin::satisfying_c1::{satisfying_c1, SatisfyingSpec};
use cuzk_filecoin::synthesis::SynthesisPath;
use cuzk_filecoin::{parse_c1, prove_porep_c2, verify_porep_c2, PoRepJob, ProofError, SectorIdentity};
use cuzk_groth16::progress::Silent;
use cuzk_groth16::{CpuBackend, Srs};
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use filecoin_proofs_api::RegisteredSealProof::{self, *};
use serde_json::Value;

fn sealed_2kib() -> &'static (Fixture, Srs) {
    static S: OnceLock<(Fixture, Srs)> = OnceLock::new();
    S.get_or_init(|| {
        let f = ensure_fixture(&default_fixture_dir(2048), 2048).expect("2 KiB fixture");
        let srs = Srs::load(&seal_params_path(&f.param_dir(), StackedDrg2KiBV1_1).unwrap()).unwrap();
        (f, srs)
    })
}

fn json_of(c1: &SealCommitPhase1Output) -> Vec<u8> {
    serde_json::to_vec(c1).unwrap()
}

/// The value with every leaf replaced by its JSON type: what stays is the structure (object
/// keys, array lengths, nesting).
fn skeleton(v: &Value) -> Value {
    match v {
        Value::Array(a) => Value::Array(a.iter().map(skeleton).collect()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), skeleton(v))).collect()),
        Value::Number(_) => "number".into(),
        Value::String(_) => "string".into(),
        Value::Bool(_) => "bool".into(),
        Value::Null => Value::Null,
    }
}

#[test]
fn a_2kib_satisfying_c1_has_a_sealed_ones_structure_proves_and_verifies_and_each_tamper_fails() {
    let (fixture, srs) = sealed_2kib();
    let spec = SatisfyingSpec::fixture(StackedDrg2KiBV1_1);
    let t = Instant::now();
    let c1 = satisfying_c1(&spec, &Silent).unwrap();
    let generated = t.elapsed();
    let json = json_of(&c1);

    // Exactly a sealed C1's structure: every key, array length and nesting level (paths,
    // columns, 37 label parents per layer), though its challenges and values differ.
    let sealed: Value = serde_json::from_slice(&std::fs::read(fixture.c1_path()).unwrap()).unwrap();
    let ours: Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(skeleton(&ours), skeleton(&sealed), "the satisfying C1's structure differs from a sealed one's");
    assert_ne!(ours["comm_r"], sealed["comm_r"]);

    // Its partition satisfies the circuit on the reference path (bellperson's layout, every
    // constraint checked) and on the compiled path.
    let input = parse_c1(&json).unwrap();
    let job = PoRepJob::new(&input).unwrap();
    for path in [SynthesisPath::Reference, SynthesisPath::Compiled] {
        job.synthesize_with(0, path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    }

    let id = spec.identity();
    let t = Instant::now();
    let (proof, _) = prove_porep_c2(&input, id, srs, &CpuBackend).unwrap();
    let proved = t.elapsed();
    assert!(verify_porep_c2(&input.output, id, &proof).unwrap(), "verify_seal refuses the satisfying C1's proof");
    eprintln!(
        "2 KiB satisfying C1: generated in {:.3} s, proved on the CPU in {:.1} s, verify_seal OK",
        generated.as_secs_f64(),
        proved.as_secs_f64()
    );

    // The same proof under other public values: verify_seal says false.
    let mut other = input.output.clone();
    other.ticket[0] ^= 1;
    assert!(!verify_porep_c2(&other, id, &proof).unwrap_or(false), "a wrong ticket verifies");
    let mut other = input.output.clone();
    other.seed[0] ^= 1;
    assert!(!verify_porep_c2(&other, id, &proof).unwrap_or(false), "a wrong seed verifies");
    let mut other = input.output.clone();
    other.comm_d = fixture_comm_d(fixture);
    assert!(!verify_porep_c2(&other, id, &proof).unwrap_or(false), "a comm_d that does not match verifies");
    let wrong_sector = SectorIdentity { sector_id: id.sector_id + 1, ..id };
    assert!(!verify_porep_c2(&input.output, wrong_sector, &proof).unwrap_or(false), "a wrong sector id verifies");

    // A flipped label: layer 1 of the first challenge's first DRG parent, which the circuit
    // hashes into that node's label and into the parent's column, opened in tree C. (The
    // challenged node's own column rows are not read: the circuit recomputes them from the
    // parents.) The circuit is not satisfied, and synthesis says which partition and
    // constraint.
    let mut v = ours.clone();
    let rows = &mut v["vanilla_proofs"]["StackedDrg2KiBV1"][0][0]["replica_column_proofs"]["drg_parents"][0]["column"]["rows"];
    let byte = rows[0][3].as_u64().expect("a label is 32 bytes");
    rows[0][3] = Value::from(byte ^ 0x10);
    let flipped = parse_c1(&serde_json::to_vec(&v).unwrap()).unwrap();
    match PoRepJob::new(&flipped).unwrap().synthesize(0) {
        Err(ProofError::Unsatisfied { partition: 0, constraint }) => eprintln!("flipped label: unsatisfied at constraint {constraint}"),
        Err(e) => panic!("a flipped label fails with another error: {e}"),
        Ok(_) => panic!("a flipped label satisfies the circuit"),
    }

    // A C1 made for another ticket or seed is another, equally valid output, but not this
    // sector's proof: its comm_r differs.
    let other_ticket = satisfying_c1(&SatisfyingSpec { ticket: [9; 32], ..spec.clone() }, &Silent).unwrap();
    assert_ne!(other_ticket.comm_r, c1.comm_r);
    assert_eq!(other_ticket.comm_d, c1.comm_d, "comm_d depends on the data alone");
}

/// The sealed fixture's comm_d: a real commitment that is not this output's.
fn fixture_comm_d(f: &Fixture) -> [u8; 32] {
    parse_c1(&std::fs::read(f.c1_path()).unwrap()).unwrap().output.comm_d
}

#[test]
fn the_same_spec_gives_the_same_output_and_another_seed_other_challenges() {
    let spec = SatisfyingSpec::fixture(StackedDrg2KiBV1_1);
    let a = json_of(&satisfying_c1(&spec, &Silent).unwrap());
    assert_eq!(a, json_of(&satisfying_c1(&spec, &Silent).unwrap()));
    let b = satisfying_c1(&SatisfyingSpec { seed: [3; 32], ..spec }, &Silent).unwrap();
    assert_ne!(a, json_of(&b));
}

/// The larger interactive sizes: the shape check derived from filecoin-proofs' public
/// parameters accepts them and storage-proofs' vanilla verifier (run by the generator) passes;
/// at 8 MiB and 512 MiB partition 0 satisfies the real circuit;
/// 32 GiB has the sub-tree level (8-8-0), 64 GiB the top-tree level too (8-8-2). Times and
/// sizes are printed (benchmarks check speed; bench/history/2026-12-07.md has the figures).
#[test]
fn satisfying_c1s_at_8mib_512mib_32gib_and_64gib_pass_the_vanilla_verifier_and_small_ones_the_circuit() {
    for proof in [StackedDrg8MiBV1_1, StackedDrg512MiBV1_1, StackedDrg32GiBV1_1, StackedDrg64GiBV1_1] {
        let t = Instant::now();
        let c1 = satisfying_c1(&SatisfyingSpec::fixture(proof), &Silent).unwrap_or_else(|e| panic!("{proof:?}: {e:#}"));
        let generated = t.elapsed();
        let json = json_of(&c1);
        let input = parse_c1(&json).unwrap();
        let job = PoRepJob::new(&input).unwrap_or_else(|e| panic!("{proof:?}: shape check: {e}"));
        let expected = cuzk_filecoin::vanilla_shape::ExpectedShape::of(proof).unwrap();
        assert_eq!(job.partitions(), expected.partitions, "{proof:?}");
        // The real circuit, every constraint checked, where a partition fits this machine
        // (2.8 M constraints; 130 M at 32 GiB and 64 GiB).
        if matches!(proof, StackedDrg8MiBV1_1 | StackedDrg512MiBV1_1) {
            let t = Instant::now();
            job.synthesize(0).unwrap_or_else(|e| panic!("{proof:?}: {e}"));
            eprintln!("{proof:?}: partition 0 satisfies its circuit (compiled path, checked) in {:.1} s", t.elapsed().as_secs_f64());
        }
        eprintln!(
            "{proof:?}: {} partitions, generated and vanilla-verified in {:.2} s, {:.1} MiB of JSON",
            job.partitions(),
            generated.as_secs_f64(),
            json.len() as f64 / (1u64 << 20) as f64
        );
    }
}

#[test]
fn synthetic_and_non_interactive_porep_are_refused_with_the_reason() {
    let refused: [RegisteredSealProof; 3] =
        [StackedDrg2KiBV1_1_Feat_SyntheticPoRep, StackedDrg2KiBV1_2_Feat_NonInteractivePoRep, StackedDrg32GiBV1_2_Feat_NonInteractivePoRep];
    for proof in refused {
        let e = satisfying_c1(&SatisfyingSpec::fixture(proof), &Silent).unwrap_err().to_string();
        assert!(e.contains("drawn from comm_r") && e.contains(&format!("{proof:?}")), "{proof:?}: {e}");
    }
}
