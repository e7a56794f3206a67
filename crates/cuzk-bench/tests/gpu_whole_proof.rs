//! Whole proofs on the GPU: synthetic circuits, the 2 KiB PoRep, WinningPoSt, WindowPoSt and
//! SnapDeals proved with the GPU backend and with the CPU backend, same blinding values, must
//! be byte-identical and verify (bellperson's verifier, filecoin-proofs' verifiers). Without a usable GPU each
//! test says so on stderr and returns; with `CUZK_REQUIRE_GPU=1` it fails instead.

use blstrs::Scalar as Fr;
use cuzk_filecoin::fixture::{default_fixture_dir, ensure_fixture};
use cuzk_filecoin::{parse_c1, prove_porep_c2_with, verify_porep_c2, Blinding};
use cuzk_groth16::{CpuBackend, Srs};
use ff::Field;
use rand::SeedableRng;
use std::io::Write;

fn gpu(test: &str) -> Option<cuzk_gpu::GpuBackend> {
    cuzk_gpu::backend_or_skip(test, cuzk_gpu::GpuBackend::new())
}

/// A synthetic circuit of `constraints` constraints with random inputs, and bellperson's
/// random parameters for it (written into `dir` and loaded as cuzk reads them).
struct Synthetic {
    circuit: cuzk_groth16::testing::SyntheticCircuit,
    inputs: Vec<Fr>,
    srs: Srs,
    pvk: bellperson::groth16::PreparedVerifyingKey<blstrs::Bls12>,
}

impl Synthetic {
    fn new(constraints: usize, rng: &mut rand_chacha::ChaCha20Rng, dir: &std::path::Path) -> Synthetic {
        use bellperson::groth16;
        let inputs: Vec<Fr> = (0..2).map(|_| Fr::random(&mut *rng)).collect();
        let circuit = cuzk_groth16::testing::SyntheticCircuit { constraints, inputs: inputs.clone(), seed: constraints as u64 };
        let params = groth16::generate_random_parameters::<blstrs::Bls12, _, _>(circuit.clone(), &mut *rng).unwrap();
        let path = dir.join(format!("{constraints}.params"));
        params.write(std::fs::File::create(&path).unwrap()).unwrap();
        Synthetic { circuit, inputs, srs: Srs::load(&path).unwrap(), pvk: groth16::prepare_verifying_key(&params.vk) }
    }

    /// Whether bellperson's verifier accepts `proof` for these inputs.
    fn verifies(&self, proof: &cuzk_groth16::Proof) -> bool {
        let decoded = bellperson::groth16::Proof::<blstrs::Bls12>::read(&proof.to_bytes()[..]).unwrap();
        bellperson::groth16::verify_proof(&self.pvk, &decoded, &self.inputs).unwrap()
    }
}

#[test]
fn gpu_synthetic_proofs_are_byte_identical_to_cpu_and_verify() {
    let Some(gpu) = gpu("GPU synthetic whole proofs") else { return };
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(5);
    let dir = std::env::temp_dir().join(format!("cuzk-gpu-synth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for constraints in [16usize, 1000, (1 << 12) + 7, 1 << 16] {
        let t = Synthetic::new(constraints, &mut rng, &dir);
        let (r, s) = (Fr::random(&mut rng), Fr::random(&mut rng));
        let w = cuzk_groth16::PartitionWitness::synthesize(t.circuit.clone()).unwrap();
        let (on_gpu, _) = cuzk_groth16::prove(&gpu, &t.srs, w.clone(), r, s).expect("GPU proof");
        let (on_cpu, _) = cuzk_groth16::prove(&CpuBackend, &t.srs, w, r, s).expect("CPU proof");
        assert_eq!(on_gpu.to_bytes(), on_cpu.to_bytes(), "{constraints} constraints: GPU and CPU proofs differ");
        assert!(t.verifies(&on_gpu), "{constraints}: GPU proof does not verify");
    }
    let _ = writeln!(std::io::stderr(), "GPU synthetic whole proofs: 4 sizes byte-identical to CPU, verified");
}

/// Deferred witnesses (the assignment only) proved on the GPU, which evaluates a, b and c on
/// the device from the resident compiled circuit: byte-identical to the CPU's proofs of the
/// full witnesses, verified; the circuit uploaded once and then found resident; an
/// unsatisfied assignment refused with the CPU's first bad row and no proof; and after
/// `release_caches` the arena back at zero.
#[test]
fn gpu_deferred_evaluation_proofs_equal_cpu_and_verify() {
    use cuzk_gpu::backend::EvalPath;
    let Some(gpu) = gpu("GPU deferred evaluation") else { return };
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(9);
    let dir = std::env::temp_dir().join(format!("cuzk-gpu-deferred-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for constraints in [16usize, 1000, (1 << 12) + 7, (1 << 16) + 3] {
        let t = Synthetic::new(constraints, &mut rng, &dir);
        let srs = &t.srs;
        let (full, compiled) = cuzk_groth16::compiled::compile(t.circuit.clone()).unwrap();
        let compiled = std::sync::Arc::new(compiled);
        let (r, s) = (Fr::random(&mut rng), Fr::random(&mut rng));
        let (on_cpu, _) = cuzk_groth16::prove(&CpuBackend, srs, full.clone(), r, s).expect("CPU proof");
        for round in 0..2 {
            let deferred = compiled.deferred_witness(full.input_assignment.clone(), full.aux_assignment.clone());
            let (on_gpu, _) = cuzk_groth16::prove(&gpu, srs, deferred, r, s).expect("GPU proof of a deferred witness");
            assert_eq!(on_gpu.to_bytes(), on_cpu.to_bytes(), "{constraints} constraints: deferred on the GPU differs from the CPU");
            match gpu.last_report().eval {
                EvalPath::Device { uploaded, .. } => assert_eq!(uploaded, round == 0, "{constraints}: round {round}"),
                other => panic!("{constraints}: evaluated {other:?}, not on the device"),
            }
        }
        assert!(t.verifies(&on_cpu), "{constraints}: proof does not verify");

        // B replaced by A: the device finds the CPU's first bad row, and no proof comes back.
        let bad = std::sync::Arc::new(compiled.perturbed());
        let want = bad.evaluate_checked(&full.input_assignment, &full.aux_assignment).1.expect("perturbed is unsatisfied");
        let e = cuzk_groth16::prove(&gpu, srs, bad.deferred_witness(full.input_assignment.clone(), full.aux_assignment.clone()), r, s)
            .expect_err("an unsatisfied assignment gives no proof");
        assert!(matches!(e, cuzk_groth16::ProveError::Unsatisfied { constraint } if constraint == want), "{constraints}: {e}");
    }
    gpu.release_caches().unwrap();
    let c = gpu.arena_counters();
    assert_eq!((c.in_use, c.buffers), (0, 0), "the arena holds memory after release_caches: {c:?}");
    let _ = writeln!(std::io::stderr(), "GPU deferred evaluation: 4 sizes byte-identical to CPU, verified, unsatisfied rows equal");
}

/// A second compiled circuit is evaluated on the device even when the first circuit and the
/// base arrays fill the resident half of the budget: idle base arrays give way to it. Before
/// 2026-12-06 it went through host memory (a, b and c on the host, outside what the engine
/// reserves for a deferred partition), as SnapDeals beside PoRep did on an 80 GB card
/// (bench/runs/2026-12-06-h100-mixed-load). The budget is sized from a first pass so that the
/// half is full; the proof must equal the CPU's and verify.
#[test]
fn gpu_a_second_circuit_takes_room_from_base_arrays() {
    use cuzk_gpu::backend::EvalPath;
    let Some(probe) = gpu("GPU circuit residency") else { return };
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(17);
    let dir = std::env::temp_dir().join(format!("cuzk-gpu-room-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let t = Synthetic::new((1 << 18) + 5, &mut rng, &dir);
    let (full, first) = cuzk_groth16::compiled::compile(t.circuit.clone()).unwrap();
    // The same circuit compiled again: the same bases, another circuit in the resident cache
    // (its key is its host arrays).
    let (_, second) = cuzk_groth16::compiled::compile(t.circuit.clone()).unwrap();
    let (first, second) = (std::sync::Arc::new(first), std::sync::Arc::new(second));
    let (r, s) = (Fr::random(&mut rng), Fr::random(&mut rng));
    let deferred = |c: &std::sync::Arc<cuzk_groth16::compiled::CompiledCircuit>| {
        c.deferred_witness(full.input_assignment.clone(), full.aux_assignment.clone())
    };
    let (on_cpu, _) = cuzk_groth16::prove(&CpuBackend, &t.srs, full.clone(), r, s).expect("CPU proof");

    // Pass 1, the whole budget: the resident bytes of the base arrays alone, then of a
    // circuit and the base arrays.
    cuzk_groth16::prove(&probe, &t.srs, full.clone(), r, s).expect("GPU proof");
    let bases = probe.resident().0;
    probe.release_caches().unwrap();
    cuzk_groth16::prove(&probe, &t.srs, deferred(&first), r, s).expect("GPU proof of a deferred witness");
    let with_circuit = probe.resident().0;
    drop(probe);
    assert!(with_circuit > bases && bases > 0, "resident bytes: {bases} of bases, {with_circuit} with the circuit");
    let circuit = with_circuit - bases;

    // Pass 2: a budget whose resident half is the first circuit and the bases exactly. An
    // MSM keeps its bases only when a chunk of the call fits beside them, so a small budget
    // may keep fewer: the half is then set to what was kept, and tried again.
    let mut half = with_circuit;
    let (gpu, full_half) = loop {
        let gpu = cuzk_gpu::GpuBackend::open(0, cuzk_gpu::VramBudget::Bytes(2 * half)).expect("GPU 0 with a small budget");
        let (p1, _) = cuzk_groth16::prove(&gpu, &t.srs, deferred(&first), r, s).expect("GPU proof, first circuit");
        assert_eq!(p1.to_bytes(), on_cpu.to_bytes(), "first circuit: the GPU's proof differs from the CPU's");
        match gpu.last_report().eval {
            EvalPath::Device { uploaded: true, .. } => {}
            other => panic!("a budget of {} bytes: the first circuit was evaluated {other:?}, not on the device", 2 * half),
        }
        let kept = gpu.resident().0;
        if kept + circuit > half {
            break (gpu, kept);
        }
        assert!(kept > circuit, "a budget of {} bytes keeps {kept} bytes: the half cannot be filled", 2 * half);
        half = kept;
    };
    let (p2, _) = cuzk_groth16::prove(&gpu, &t.srs, deferred(&second), r, s).expect("GPU proof, second circuit");
    match gpu.last_report().eval {
        EvalPath::Device { uploaded: true, .. } => {}
        other => panic!("the second circuit was evaluated {other:?}, not uploaded and evaluated on the device"),
    }
    assert_eq!(p2.to_bytes(), on_cpu.to_bytes(), "second circuit: the GPU's proof differs from the CPU's");
    assert!(t.verifies(&p2), "the proof does not verify");
    assert!(gpu.resident().0 <= half, "the resident cache holds {} bytes, over its half {half}", gpu.resident().0);
    let _ = writeln!(
        std::io::stderr(),
        "GPU circuit residency: a second circuit ({circuit} bytes) took room from base arrays in a full resident half \
         ({full_half} of {half} bytes); proofs equal the CPU's, verified"
    );
}

#[test]
fn gpu_porep_proof_is_byte_identical_to_cpu_and_verifies() {
    let Some(gpu) = gpu("GPU 2 KiB PoRep whole proof") else { return };
    let f = ensure_fixture(&default_fixture_dir(2048), 2048).expect("2 KiB fixture");
    let c1 = parse_c1(&std::fs::read(f.c1_path()).unwrap()).unwrap();
    let srs = Srs::load(&f.param_dir().join(&f.info.params_file)).unwrap();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(11);
    let blinding = Blinding::Fixed(vec![(Fr::random(&mut rng), Fr::random(&mut rng))]);

    let t = std::time::Instant::now();
    let (on_gpu, tg) = prove_porep_c2_with(&c1, f.identity(), &srs, &gpu, &blinding).expect("GPU proof");
    let gpu_time = t.elapsed();
    let t = std::time::Instant::now();
    let (on_cpu, _) = prove_porep_c2_with(&c1, f.identity(), &srs, &CpuBackend, &blinding).expect("CPU proof");
    let cpu_time = t.elapsed();
    assert_eq!(on_gpu, on_cpu, "GPU and CPU proofs differ for the same r, s");
    assert!(verify_porep_c2(&c1.output, f.identity(), &on_gpu).unwrap());
    let _ = writeln!(
        std::io::stderr(),
        "2 KiB PoRep C2 on {}: gpu {:.3} s (ntt/h {:.3} s, msm h {:.3} s), cpu {:.3} s; byte-identical, verified",
        gpu.device().name,
        gpu_time.as_secs_f64(),
        tg.prove.ntt_h.as_secs_f64(),
        tg.prove.msm_h.as_secs_f64(),
        cpu_time.as_secs_f64()
    );

    // Deferred: the 2 KiB PoRep recording evaluated on the device (the assignment only goes
    // up), the same proof.
    use cuzk_filecoin::synthesis::SynthesisPath;
    let job = cuzk_filecoin::SealCommit { job: cuzk_filecoin::PoRepJob::new(&c1).unwrap(), id: f.identity() };
    let (deferred, _) = cuzk_filecoin::prove_job_on(&job, &srs, &gpu, &blinding, SynthesisPath::CompiledDeferred).expect("GPU deferred proof");
    assert!(
        matches!(gpu.last_report().eval, cuzk_gpu::backend::EvalPath::Device { .. }),
        "the 2 KiB PoRep was not evaluated on the device: {:?}",
        gpu.last_report().eval
    );
    assert_eq!(deferred, on_cpu, "the deferred GPU proof differs from the CPU's");
}

#[test]
fn gpu_post_and_snap_proofs_are_byte_identical_to_cpu_and_verify() {
    use cuzk_filecoin::fixture::ensure_kind_fixtures;
    use cuzk_filecoin::params::{post_params_path, update_params_path};
    use cuzk_filecoin::post::post_proof_from_wire;
    use cuzk_filecoin::snap::update_proof_from_wire;
    use cuzk_filecoin::{prove_job, prover_id_from_miner, PoStJob, PoStRequest, ProofJob, SnapJob, SnapRequest};
    let Some(gpu) = gpu("GPU 2 KiB PoSt and SnapDeals whole proofs") else { return };
    let f = ensure_fixture(&default_fixture_dir(2048), 2048).expect("2 KiB fixture");
    let k = ensure_kind_fixtures(&f.dir, 2048).expect("2 KiB PoSt and SnapDeals fixtures");
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(13);
    for input in [&k.winning, &k.window, &k.snap] {
        let (job, params): (Box<dyn ProofJob>, _) = if input.kind == "snap" {
            let proof = update_proof_from_wire(input.registered_proof).unwrap();
            let job = SnapJob::new(&SnapRequest {
                registered_proof: proof,
                vanilla_proofs: &input.vanilla_proofs,
                comm_r_old: &input.comm_r_old,
                comm_r_new: &input.comm_r_new,
                comm_d_new: &input.comm_d_new,
            })
            .unwrap();
            (Box::new(job), update_params_path(&f.param_dir(), proof).unwrap())
        } else {
            let proof = post_proof_from_wire(input.registered_proof).unwrap();
            let job = PoStJob::new(&PoStRequest {
                registered_proof: proof,
                randomness: &input.randomness,
                prover_id: prover_id_from_miner(input.miner_id),
                partition_index: input.partition_index as usize,
                vanilla_proofs: &input.vanilla_proofs,
            })
            .unwrap();
            (Box::new(job), post_params_path(&f.param_dir(), proof).unwrap())
        };
        let srs = Srs::load(&params).unwrap();
        let pairs = (0..job.partitions()).map(|_| (Fr::random(&mut rng), Fr::random(&mut rng))).collect();
        let blinding = Blinding::Fixed(pairs);
        // Each job's finish verifies with filecoin-proofs' verifier before returning.
        let t = std::time::Instant::now();
        let (on_gpu, _) = prove_job(job.as_ref(), &srs, &gpu, &blinding).expect("GPU proof");
        let gpu_time = t.elapsed();
        let t = std::time::Instant::now();
        let (on_cpu, _) = prove_job(job.as_ref(), &srs, &CpuBackend, &blinding).expect("CPU proof");
        let cpu_time = t.elapsed();
        assert_eq!(on_gpu, on_cpu, "{}: GPU and CPU proofs differ for the same r, s", input.kind);
        let _ = writeln!(
            std::io::stderr(),
            "2 KiB {} on {}: gpu {:.3} s, cpu {:.3} s; byte-identical, verified",
            input.kind,
            gpu.device().name,
            gpu_time.as_secs_f64(),
            cpu_time.as_secs_f64()
        );
    }
}
