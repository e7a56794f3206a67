//! A whole satisfying fixture at 2 KiB, made as `gen-fixture --satisfying` makes the 32 GiB
//! one: the C1 output, then test parameters from cuzk's own setup over the circuit recorded
//! from its partition 0 (in parallel, as the daemon records it) rather than the blank circuit.
//! The proof made with them verifies; the recording equals the blank circuit's; a second run
//! keeps the parameters, and a `.vk` that is not theirs is not kept.
//!
//! Its own process: filecoin-proofs reads its parameter directory once per process, and this
//! fixture's is not the sealed fixtures'. About a minute on 2 cores (the setup, then one proof).

use blstrs::Scalar;
use cuzk_filecoin::fixture::{fixture_circuits, params_kept, CircuitSink, FixtureCircuit};
use cuzk_filecoin::satisfying_c1::{write_satisfying_fixture, SatisfyingSpec};
use cuzk_filecoin::{parse_c1, prove_porep_c2, verify_porep_c2, PoRepJob};
use cuzk_groth16::compiled::{record_structure, CompiledCircuit};
use cuzk_groth16::progress::Silent;
use cuzk_groth16::{CpuBackend, Srs};
use ff::Field;
use filecoin_proofs_api::RegisteredSealProof::StackedDrg2KiBV1_1;

/// Records the blank circuit handed to it, as the sealed fixtures' setup does.
struct RecordBlank(Option<CompiledCircuit>);

impl CircuitSink for RecordBlank {
    fn circuit<C: bellperson::Circuit<Scalar>>(&mut self, c: FixtureCircuit<'_, C>) -> anyhow::Result<()> {
        self.0 = Some(record_structure((c.blank)())?);
        Ok(())
    }
}

#[test]
fn a_2kib_satisfying_fixture_with_parameters_from_its_recording_proves_and_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let spec = SatisfyingSpec::fixture(StackedDrg2KiBV1_1);
    let f = write_satisfying_fixture(dir.path(), &spec, true, &Silent).unwrap();
    let made = f.params.as_ref().expect("parameters asked for");
    assert!(!made.kept, "a fresh directory kept parameters");
    eprintln!(
        "2 KiB satisfying fixture: C1 {:.2} s, partition 0 recorded and checked {:.1} s, setup {:.1} s ({} constraints)",
        f.generate.as_secs_f64(),
        made.record.as_secs_f64(),
        made.setup.as_secs_f64(),
        made.constraints
    );

    // The recording the parameters come from makes the same QAP as the blank circuit's (the
    // setup reads nothing else of a circuit): the same counts, and the matrices transposed
    // times one random vector equal.
    let input = parse_c1(&std::fs::read(f.envelope_path()).unwrap()).unwrap();
    let key = PoRepJob::new(&input).unwrap().circuit_key();
    let recorded = cuzk_filecoin::synthesis::compiled_for(&key).expect("the recording is kept");
    let mut blank = RecordBlank(None);
    fixture_circuits(StackedDrg2KiBV1_1, false, &mut blank).unwrap();
    let blank = blank.0.expect("the PoRep circuit was handed over");
    let counts = |c: &CompiledCircuit| (c.num_inputs, c.num_aux, c.num_constraints());
    assert_eq!(counts(&recorded), counts(&blank));
    assert_eq!(made.constraints, blank.num_constraints());
    let mut rng = rand::thread_rng();
    let r: Vec<Scalar> = (0..blank.num_constraints()).map(|_| Scalar::random(&mut rng)).collect();
    assert!(recorded.transposed_times(&r) == blank.transposed_times(&r), "the recording's QAP differs from the blank circuit's");

    // The proof verifies with these parameters (the envelope's sector number is the spec's).
    let srs = Srs::load(&made.path).unwrap();
    let (proof, _) = prove_porep_c2(&input, spec.identity(), &srs, &CpuBackend).unwrap();
    assert!(verify_porep_c2(&input.output, spec.identity(), &proof).unwrap(), "verify_seal refuses the proof");

    // Kept on a second run; a verifying key that is not theirs is not kept.
    let again = write_satisfying_fixture(dir.path(), &spec, true, &Silent).unwrap();
    assert!(again.params.expect("parameters asked for").kept, "a matching parameter set was made again");
    let vk = made.path.with_extension("vk");
    let mut other = std::fs::read(&vk).unwrap();
    other[10] ^= 1;
    std::fs::write(&vk, other).unwrap();
    assert!(!params_kept(&made.path, &vk), "parameters kept beside another setup's verifying key");
}
