//! The compiled-circuit path on the real 2 KiB PoRep partition against the reference
//! (`PartitionWitness::synthesize`): the witness (a, b, c, assignments, densities) exactly
//! equal when recorded and when witness-only, and a stale compiled circuit rebuilt, not used;
//! the labels hashed natively (porep_circuit) or by storage-proofs' gadget, the recordings and
//! witnesses equal.
//! Proofs through the default (compiled) path are verified with filecoin-proofs by
//! porep_2kib.rs.

use cuzk_filecoin::fixture::{default_fixture_dir, ensure_fixture};
use cuzk_filecoin::synthesis::{clear_compiled, compiled_bytes, compiled_for, install_compiled, set_compiled_dir, SynthesisPath, SynthesisRun};
use cuzk_filecoin::{parse_c1, LabelHashing, PoRepJob};

#[test]
fn compiled_porep_witness_equals_the_reference_and_a_stale_one_is_rebuilt() {
    let f = ensure_fixture(&default_fixture_dir(2048), 2048).expect("2 KiB fixture");
    let c1 = parse_c1(&std::fs::read(f.c1_path()).unwrap()).unwrap();
    let job = PoRepJob::new(&c1).unwrap();
    clear_compiled();

    let (reference, rt) = job.synthesize_with(0, SynthesisPath::Reference).unwrap();
    assert_eq!(rt.run, Some(SynthesisRun::Reference));
    let (recorded, t1) = job.synthesize_with(0, SynthesisPath::Compiled).unwrap();
    assert_eq!(t1.run, Some(SynthesisRun::Recorded));
    assert!(recorded == reference, "recording changed the witness");
    let compiled = compiled_for(&job.circuit_key()).expect("recorded");
    assert_eq!(compiled.num_constraints(), reference.num_constraints());
    // What the engine's budget counts beside partitions (FilecoinRunner's held_bytes).
    assert_eq!(compiled_bytes(), compiled.bytes() as u64, "the one circuit kept");
    assert_eq!(cuzk_engine::ProofRunner::held_bytes(&cuzk_filecoin::FilecoinRunner::new(&f.param_dir(), None).unwrap()), compiled.bytes() as u64);
    let (fast, t2) = job.synthesize_with(0, SynthesisPath::Compiled).unwrap();
    assert_eq!(t2.run, Some(SynthesisRun::Compiled));
    assert!(fast == reference, "the compiled witness differs from the reference");
    eprintln!(
        "2 KiB PoRep partition: reference {:.3} s, recording {:.3} s, compiled {:.3} s; compiled circuit {compiled}",
        rt.synthesis.as_secs_f64(),
        t1.synthesis.as_secs_f64(),
        t2.synthesis.as_secs_f64(),
    );

    // A compiled circuit of another circuit under this key: detected, rebuilt, never used.
    let (_, foreign) = cuzk_groth16::compiled::compile(cuzk_groth16::testing::SyntheticCircuit {
        constraints: 1000,
        inputs: vec![blstrs::Scalar::from(3u64)],
        seed: 1,
    })
    .unwrap();
    install_compiled(&job.circuit_key(), foreign);
    let (again, t3) = job.synthesize_with(0, SynthesisPath::Compiled).unwrap();
    assert_eq!(t3.run, Some(SynthesisRun::Rebuilt));
    assert!(again == reference);
    assert_eq!(compiled_for(&job.circuit_key()).unwrap().num_constraints(), reference.num_constraints());

    // A corrupt recording with the right counts: its witness fails the constraints, so the
    // partition is synthesized again on the reference path and recorded anew.
    install_compiled(&job.circuit_key(), compiled.perturbed());
    let (again, t4) = job.synthesize_with(0, SynthesisPath::Compiled).unwrap();
    assert_eq!(t4.run, Some(SynthesisRun::Rebuilt));
    assert!(again == reference);
    let (fast, t5) = job.synthesize_with(0, SynthesisPath::Compiled).unwrap();
    assert_eq!(t5.run, Some(SynthesisRun::Compiled));
    assert!(fast == reference);

    // Saved across a restart (the cache cleared stands for one): recorded and saved, then
    // loaded from the file; a truncated file is recorded over, then loads again.
    let dir = std::env::temp_dir().join(format!("cuzk-synthesis-{}", std::process::id()));
    set_compiled_dir(Some(dir.clone()));
    clear_compiled();
    assert_eq!(compiled_bytes(), 0, "nothing kept after clear_compiled");
    let (_, t6) = job.synthesize_with(0, SynthesisPath::Compiled).unwrap();
    assert_eq!(t6.run, Some(SynthesisRun::Recorded));
    let file = std::fs::read_dir(&dir).unwrap().next().expect("a saved file").unwrap().path();
    clear_compiled();
    let (loaded, t7) = job.synthesize_with(0, SynthesisPath::Compiled).unwrap();
    assert_eq!(t7.run, Some(SynthesisRun::Loaded));
    assert!(loaded == reference);
    let len = std::fs::metadata(&file).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&file).unwrap().set_len(len - 1000).unwrap();
    clear_compiled();
    let (again, t8) = job.synthesize_with(0, SynthesisPath::Compiled).unwrap();
    assert_eq!(t8.run, Some(SynthesisRun::Recorded), "a truncated file must not be used");
    assert!(again == reference);
    assert_eq!(std::fs::metadata(&file).unwrap().len(), len, "rewritten whole");
    clear_compiled();
    let (_, t9) = job.synthesize_with(0, SynthesisPath::Compiled).unwrap();
    assert_eq!(t9.run, Some(SynthesisRun::Loaded));
    eprintln!("saved compiled circuit: {} ({len} bytes)", file.display());
    set_compiled_dir(None);
    std::fs::remove_dir_all(&dir).unwrap();

    // The labels' SHA-256 (porep_circuit): storage-proofs' circuit with its gadget and ours
    // (native when witness-only) record the same compiled circuit, and witness-only
    // synthesis gives the reference witness either way, on either recording.
    let key = job.circuit_key();
    let with = |labels| job.synthesize_unchecked_with(0, SynthesisPath::Compiled, labels).unwrap();
    clear_compiled();
    let (gadget, tg, bad) = with(LabelHashing::Gadget);
    assert_eq!((tg.run, bad), (Some(SynthesisRun::Recorded), None));
    assert!(gadget == reference);
    let gadget_recording = compiled_for(&key).unwrap();
    for labels in [LabelHashing::Gadget, LabelHashing::Native] {
        let (w, t, bad) = with(labels);
        assert_eq!((t.run, bad), (Some(SynthesisRun::Compiled), None), "{labels:?}");
        assert!(w == reference, "{labels:?}: the witness-only witness differs from the reference");
    }
    clear_compiled();
    let (native, tn, bad) = with(LabelHashing::Native);
    assert_eq!((tn.run, bad), (Some(SynthesisRun::Recorded), None));
    assert!(native == reference);
    assert!(*compiled_for(&key).unwrap() == *gadget_recording, "porep_circuit's recording differs from storage-proofs'");
}
