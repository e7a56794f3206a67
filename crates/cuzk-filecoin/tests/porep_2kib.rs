//! PoRep C2 on the 2 KiB fixture (generated on first use, ~13 minutes on 2 cores; cached in
//! `$CUZK_FIXTURE_DIR` or ~/.cache/cuzk/fixtures): proofs that filecoin-proofs verifies, and
//! tampered or malformed inputs refused with their own errors.

use std::sync::OnceLock;

use cuzk_filecoin::c1::to_envelope;
use cuzk_filecoin::fixture::{default_fixture_dir, ensure_fixture, Fixture};
use cuzk_filecoin::params::seal_params_path;
use cuzk_filecoin::{parse_c1, prove_porep_c2, verify_porep_c2, C1Error, ProofError, SectorIdentity};
use cuzk_groth16::{CpuBackend, Srs};

struct Shared {
    fixture: Fixture,
    srs: Srs,
    c1_json: Vec<u8>,
}

/// One fixture and one loaded parameter set for all tests of this process.
fn shared() -> &'static Shared {
    static S: OnceLock<Shared> = OnceLock::new();
    S.get_or_init(|| {
        let fixture = ensure_fixture(&default_fixture_dir(2048), 2048).expect("2 KiB fixture");
        let c1_json = std::fs::read(fixture.c1_path()).unwrap();
        let proof = parse_c1(&c1_json).unwrap().registered_proof();
        let srs = Srs::load(&seal_params_path(&fixture.param_dir(), proof).unwrap()).unwrap();
        Shared { fixture, srs, c1_json }
    })
}

#[test]
fn proves_2kib_porep_that_filecoin_proofs_verifies() {
    let s = shared();
    let c1 = parse_c1(&s.c1_json).unwrap();
    let id = s.fixture.identity();
    let (proof, t) = prove_porep_c2(&c1, id, &s.srs, &CpuBackend).unwrap();
    assert_eq!(t.partitions, 1);
    assert_eq!(proof.len(), 192);
    assert!(verify_porep_c2(&c1.output, id, &proof).unwrap());

    // The same bytes are not a proof for another sector, nor with one bit flipped.
    let other = SectorIdentity { sector_id: id.sector_id + 1, ..id };
    assert!(!verify_porep_c2(&c1.output, other, &proof).unwrap_or(false));
    let mut flipped = proof.clone();
    flipped[100] ^= 1;
    assert!(!verify_porep_c2(&c1.output, id, &flipped).unwrap_or(false));

    // The envelope form holds the same C1 output, with the sector number; the proof made
    // from the bare form verifies against it (proving it again would prove the same input).
    let env = to_envelope(&s.c1_json, id.sector_id, 2048);
    let c1e = parse_c1(&env).unwrap();
    assert_eq!(c1e.sector_num, Some(id.sector_id));
    assert_eq!(serde_json::to_vec(&c1e.output).unwrap(), serde_json::to_vec(&c1.output).unwrap());
    assert!(verify_porep_c2(&c1e.output, id, &proof).unwrap());
}

#[test]
fn wrong_prover_id_gives_an_error_never_a_proof() {
    let s = shared();
    let c1 = parse_c1(&s.c1_json).unwrap();
    let id = SectorIdentity { prover_id: cuzk_filecoin::prover_id_from_miner(4242), ..s.fixture.identity() };
    let e = prove_porep_c2(&c1, id, &s.srs, &CpuBackend).unwrap_err();
    assert!(matches!(e, ProofError::DoesNotVerify), "{e}");
}

/// Flips one byte of the first 32-byte array found under `vanilla_proofs`.
fn tamper(value: &mut serde_json::Value) -> bool {
    match value {
        serde_json::Value::Array(items) => {
            if items.len() == 32 && items.iter().all(|v| v.is_u64()) {
                let b = items[5].as_u64().unwrap();
                items[5] = serde_json::Value::from(b ^ 0x01);
                return true;
            }
            items.iter_mut().any(tamper)
        }
        serde_json::Value::Object(map) => map.values_mut().any(tamper),
        _ => false,
    }
}

#[test]
fn tampered_vanilla_proof_is_refused() {
    let s = shared();
    let mut v: serde_json::Value = serde_json::from_slice(&s.c1_json).unwrap();
    assert!(tamper(&mut v["vanilla_proofs"]), "no 32-byte array in the vanilla proofs");
    let c1 = parse_c1(&serde_json::to_vec(&v).unwrap()).unwrap();
    let e = prove_porep_c2(&c1, s.fixture.identity(), &s.srs, &CpuBackend).unwrap_err();
    assert!(
        matches!(e, ProofError::Unsatisfied { .. } | ProofError::DoesNotVerify | ProofError::BadInput(_)),
        "{e}"
    );
    let msg = e.to_string();
    assert!(msg.contains("tampered") || msg.contains("does not verify") || msg.contains("inconsistent"), "{msg}");
}

#[test]
fn malformed_c1_inputs_each_get_their_own_error() {
    let s = shared();
    let json = &s.c1_json;

    assert!(matches!(parse_c1(b""), Err(C1Error::Empty)));
    assert!(matches!(parse_c1(b"  \n"), Err(C1Error::Empty)));

    let e = parse_c1(&json[..json.len() / 2]).unwrap_err();
    assert!(matches!(e, C1Error::NotJson(_)), "truncated: {e}");
    assert!(e.to_string().contains("not JSON"), "{e}");

    let mut garbled = json.clone();
    for b in &mut garbled[10..40] {
        *b = b'#';
    }
    assert!(matches!(parse_c1(&garbled), Err(C1Error::NotJson(_))), "garbled");

    assert!(matches!(parse_c1(b"[1,2,3]"), Err(C1Error::NotObject("an array"))));

    let text = String::from_utf8(json.clone()).unwrap();
    let proof_name = format!("{:?}", parse_c1(json).unwrap().registered_proof());
    let unknown = text.replacen(&proof_name, "StackedDrg3KiBV9", 1);
    let e = parse_c1(unknown.as_bytes()).unwrap_err();
    assert!(matches!(e, C1Error::UnknownRegisteredProof { ref found, .. } if found == "StackedDrg3KiBV9"), "{e}");

    let mut v: serde_json::Value = serde_json::from_slice(json).unwrap();
    v.as_object_mut().unwrap().remove("comm_r");
    let e = parse_c1(&serde_json::to_vec(&v).unwrap()).unwrap_err();
    assert!(matches!(e, C1Error::BadC1 { .. }) && e.to_string().contains("comm_r"), "{e}");

    let wrong_size = to_envelope(json, 1, 8 << 20);
    let e = parse_c1(&wrong_size).unwrap_err();
    assert!(matches!(e, C1Error::SectorSizeMismatch { given: 8388608, actual: 2048, .. }), "{e}");

    let e = parse_c1(br#"{"SectorNum":1,"Phase1Out":"@@@not base64","SectorSize":2048}"#).unwrap_err();
    assert!(matches!(e, C1Error::BadEnvelope(ref m) if m.contains("base64")), "{e}");
}

#[test]
fn staged_job_refuses_partitions_and_proof_counts_it_does_not_have() {
    let s = shared();
    let job = cuzk_filecoin::PoRepJob::new(&parse_c1(&s.c1_json).unwrap()).unwrap();
    assert_eq!(job.partitions(), 1);
    let e = job.synthesize(1).unwrap_err();
    assert!(matches!(e, ProofError::BadInput(ref m) if m.contains("partition 1")), "{e}");
    let e = job.finish(&[], s.fixture.identity()).unwrap_err();
    assert!(matches!(e, ProofError::BadInput(ref m) if m.contains("0 partition proofs")), "{e}");
}

/// The 2 KiB PoRep with deferred evaluation (synthesis keeps the assignment only, written in
/// place from its parallel parts; the backend evaluates a, b and c): today's proof byte for
/// byte, verified by filecoin-proofs; and the recording a device evaluates is the one the
/// witness came from (the deferred witness's circuit gives today's a, b and c).
#[test]
fn deferred_evaluation_gives_todays_porep_proof() {
    use cuzk_filecoin::synthesis::SynthesisPath;
    use cuzk_filecoin::{prove_job_on, Blinding, PoRepJob, ProofJob, SealCommit};
    let s = shared();
    let c1 = parse_c1(&s.c1_json).unwrap();
    let id = s.fixture.identity();
    let job = SealCommit { job: PoRepJob::new(&c1).unwrap(), id };
    let blinding = Blinding::Fixed(vec![(blstrs::Scalar::from(3u64), blstrs::Scalar::from(5u64)); job.partitions()]);
    let (today, _) = prove_job_on(&job, &s.srs, &CpuBackend, &blinding, SynthesisPath::Compiled).unwrap();
    let (deferred, _) = prove_job_on(&job, &s.srs, &CpuBackend, &blinding, SynthesisPath::CompiledDeferred).unwrap();
    assert_eq!(deferred, today, "deferred evaluation changed the proof");
    assert!(verify_porep_c2(&c1.output, id, &deferred).unwrap());

    // Deferred every time: evaluated and checked here while the compiled circuit has not
    // proved itself in this process (another test's tampered input records it again), then
    // handed on as deferred all the same.
    let (w, _) = job.synthesize_with(0, SynthesisPath::CompiledDeferred).unwrap();
    let (full, _) = job.synthesize_with(0, SynthesisPath::Compiled).unwrap();
    let d = w.deferred.as_ref().expect("a satisfied witness on the deferred path leaves deferred");
    assert!(w.a.is_empty() && w.input_assignment == full.input_assignment && w.aux_assignment == full.aux_assignment);
    let ([a, b, c], bad) = d.circuit.evaluate_checked(&w.input_assignment, &w.aux_assignment);
    assert_eq!(bad, None);
    assert!(a == full.a && b == full.b && c == full.c, "the deferred circuit's a, b, c differ from synthesis's");
    assert!(w.host_bytes() * 3 < full.host_bytes(), "{} deferred bytes against {}", w.host_bytes(), full.host_bytes());
}
