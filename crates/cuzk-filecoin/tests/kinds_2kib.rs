//! WinningPoSt, WindowPoSt and SnapDeals on the 2 KiB fixtures (a really sealed and updated
//! sector, its vanilla proofs as Curio sends them): each proved on the CPU backend through
//! cuzk's prover, verified by filecoin-proofs' own verifiers (beside the job's own check),
//! and each bad input refused with the message that names it. Fixtures and test parameters
//! are generated on first use (about 7 minutes on 2 cores) and cached.

use cuzk_filecoin::fixture::{kind_fixtures_2kib, KindFixtures};
use cuzk_filecoin::kind_input::KindInput;
use cuzk_filecoin::params::{post_params_path, update_params_path};
use cuzk_filecoin::post::post_proof_from_wire;
use cuzk_filecoin::snap::update_proof_from_wire;
use cuzk_filecoin::{prove_job, prover_id_from_miner, Blinding, PoStJob, ProofError, SnapJob};
use cuzk_groth16::{CpuBackend, Srs};
use filecoin_proofs::SectorShape2KiB;
use filecoin_proofs_api::{PublicReplicaInfo, SectorId};

fn fixtures() -> &'static KindFixtures {
    kind_fixtures_2kib()
}

fn post_job(i: &KindInput) -> Result<PoStJob, ProofError> {
    PoStJob::new(&i.post_request()?)
}

fn snap_job(i: &KindInput) -> Result<SnapJob, ProofError> {
    SnapJob::new(&i.snap_request()?)
}

fn srs_of(path: Result<std::path::PathBuf, cuzk_filecoin::params::ParamDirError>) -> Srs {
    Srs::load(&path.unwrap()).expect("parameters load")
}

fn refused(r: Result<impl std::fmt::Debug, ProofError>, fragments: &[&str]) {
    match r {
        Ok(v) => panic!("accepted ({v:?}); expected a refusal naming {fragments:?}"),
        Err(e) => {
            assert!(matches!(e, ProofError::BadInput(_)), "not a bad-input refusal: {e}");
            let msg = e.to_string();
            for f in fragments {
                assert!(msg.contains(f), "refusal {msg:?} does not name {f:?}");
            }
        }
    }
}

fn comm(v: &[u8]) -> [u8; 32] {
    v.try_into().unwrap()
}

#[test]
fn winning_post_proves_and_verifies_with_filecoin_proofs() {
    let f = fixtures();
    let i = &f.winning;
    let proof = post_proof_from_wire(i.registered_proof).unwrap();
    let job = post_job(i).unwrap();
    let srs = srs_of(post_params_path(&f.param_dir(), proof));
    let (bytes, t) = prove_job(&job, &srs, &CpuBackend, &Blinding::Random).unwrap();
    assert_eq!(bytes.len(), 192);
    assert_eq!(t.partitions, 1);
    let replicas = [(SectorId::from(i.sector_id), PublicReplicaInfo::new(proof, comm(&i.comm_r)))].into_iter().collect();
    let ok = filecoin_proofs_api::post::verify_winning_post(
        &comm(&i.randomness),
        &bytes,
        &replicas,
        prover_id_from_miner(i.miner_id),
    )
    .unwrap();
    assert!(ok, "filecoin-proofs refuses our WinningPoSt");
}

#[test]
fn window_post_partition_proves_and_verifies_with_filecoin_proofs() {
    let f = fixtures();
    let i = &f.window;
    let proof = post_proof_from_wire(i.registered_proof).unwrap();
    let job = post_job(i).unwrap();
    let srs = srs_of(post_params_path(&f.param_dir(), proof));
    let (bytes, _) = prove_job(&job, &srs, &CpuBackend, &Blinding::Random).unwrap();
    assert_eq!(bytes.len(), 192);
    // The deadline has this one partition: filecoin-proofs' whole-WindowPoSt verifier.
    let replicas = [(SectorId::from(i.sector_id), PublicReplicaInfo::new(proof, comm(&i.comm_r)))].into_iter().collect();
    let ok = filecoin_proofs_api::post::verify_window_post(
        &comm(&i.randomness),
        &[(proof, &bytes[..])],
        &replicas,
        prover_id_from_miner(i.miner_id),
    )
    .unwrap();
    assert!(ok, "filecoin-proofs refuses our WindowPoSt");
}

#[test]
fn snap_deals_proves_and_verifies_with_filecoin_proofs() {
    let f = fixtures();
    let i = &f.snap;
    let proof = update_proof_from_wire(i.registered_proof).unwrap();
    let job = snap_job(i).unwrap();
    let srs = srs_of(update_params_path(&f.param_dir(), proof));
    let (bytes, t) = prove_job(&job, &srs, &CpuBackend, &Blinding::Random).unwrap();
    assert_eq!(bytes.len(), 192 * t.partitions);
    let ok = filecoin_proofs_api::update::verify_empty_sector_update_proof(
        proof,
        &bytes,
        comm(&i.comm_r_old),
        comm(&i.comm_r_new),
        comm(&i.comm_d_new),
    )
    .unwrap();
    assert!(ok, "filecoin-proofs refuses our SnapDeals proof");
}

/// The vanilla proof of `i`, changed by `f` and written back.
fn with_vanilla(i: &KindInput, f: impl FnOnce(&mut filecoin_proofs::FallbackPoStSectorProof<SectorShape2KiB>)) -> KindInput {
    let mut p: filecoin_proofs::FallbackPoStSectorProof<SectorShape2KiB> = bincode::deserialize(&i.vanilla_proofs[0]).unwrap();
    f(&mut p);
    KindInput { vanilla_proofs: vec![bincode::serialize(&p).unwrap()], ..i.clone() }
}

#[test]
fn post_refusals_name_their_cause() {
    let f = fixtures();
    for i in [&f.winning, &f.window] {
        // Another randomness (still a scalar).
        let mut r = i.clone();
        r.randomness[0] ^= 1;
        refused(post_job(&r), &["randomness", "challenges leaf", "other randomness"]);
        // Not a scalar.
        let mut r = i.clone();
        r.randomness[31] = 0xff;
        refused(post_job(&r), &["randomness", "not a BLS12-381 scalar", "byte 31"]);
        let mut r = i.clone();
        r.randomness.truncate(31);
        refused(post_job(&r), &["randomness: 31 bytes; expected 32"]);
        // Another sector's comm_r.
        let other = with_vanilla(i, |p| {
            let mut c = filecoin_hashers::Domain::into_bytes(&p.comm_r);
            c[0] ^= 1;
            p.comm_r = filecoin_hashers::Domain::try_from_bytes(&c).unwrap();
        });
        refused(post_job(&other), &["vanilla_proofs[0] (sector 1)", "comm_r", "another sector"]);
        // Another sector id: its challenges are not the proof's.
        let moved = with_vanilla(i, |p| p.sector_id = SectorId::from(2));
        refused(post_job(&moved), &["vanilla_proofs[0] (sector 2)", "challenge 0 opens leaf"]);
        // Truncated, and trailing bytes.
        let mut t = i.clone();
        let n = t.vanilla_proofs[0].len();
        t.vanilla_proofs[0].truncate(n / 2);
        refused(post_job(&t), &["vanilla_proofs[0]", "not a bincode FallbackPoStSectorProof", "truncated"]);
        let mut t = i.clone();
        t.vanilla_proofs[0].extend_from_slice(&[0, 0, 0]);
        refused(post_job(&t), &["vanilla_proofs[0]", "3 bytes follow"]);
        // Inclusion proofs missing.
        let short = with_vanilla(i, |p| {
            p.vanilla_proof.sectors[0].inclusion_proofs.pop();
        });
        refused(post_job(&short), &["vanilla_proofs[0] (sector 1)", "inclusion proofs", "challenges"]);
        // No vanilla proofs at all; a PoRep proof type number out of range.
        let mut none = i.clone();
        none.vanilla_proofs.clear();
        refused(post_job(&none), &["vanilla_proofs: 0 sector proofs"]);
        let mut wrong = i.clone();
        wrong.registered_proof = 15;
        refused(post_job(&wrong), &["registered_proof 15 is not a PoSt proof type"]);
    }
    // WinningPoSt proves exactly one sector; a window partition takes each sector once.
    let mut two = f.winning.clone();
    two.vanilla_proofs.push(two.vanilla_proofs[0].clone());
    refused(post_job(&two), &["vanilla_proofs: 2 sector proofs", "proves 1 sector"]);
    let mut twice = f.window.clone();
    twice.vanilla_proofs.push(twice.vanilla_proofs[0].clone());
    refused(post_job(&twice), &["vanilla_proofs[1] and [0] are both of sector 1"]);
}

#[test]
fn window_post_v1_names_a_wrong_partition() {
    // PoSt API 1.0 derives challenges from the sector's index in the deadline, so a partition
    // index that is not the vanilla proofs' shows: the V1 window type with the fixture's
    // sector (proved in partition 0) at partition 1.
    let f = fixtures();
    let ok = f.window_v1.clone();
    post_job(&ok).expect("the V1 vanilla proof at its partition");
    let moved = KindInput { partition_index: 1, ..ok.clone() };
    refused(post_job(&moved), &["challenges are those of partition 0", "partition_index is 1"]);
    // A huge index is refused before anything is sized by it.
    let huge = KindInput { partition_index: u32::MAX, ..ok };
    refused(post_job(&huge), &["partition_index 4294967295: more than 1023"]);
    // API 1.2: any partition index proves and verifies (its challenges do not depend on it).
    let f2 = fixtures();
    let far = KindInput { partition_index: u32::MAX, ..f2.window.clone() };
    let job = post_job(&far).unwrap();
    let srs = srs_of(post_params_path(&f2.param_dir(), post_proof_from_wire(far.registered_proof).unwrap()));
    prove_job(&job, &srs, &CpuBackend, &Blinding::Random).expect("verified at partition u32::MAX");
}

#[test]
fn snap_refusals_name_their_cause() {
    let f = fixtures();
    let i = &f.snap;
    for (field, fragment) in [("comm_r_old", "sector key"), ("comm_r_new", "updated replica"), ("comm_d_new", "data commitment")] {
        let mut r = i.clone();
        let c = match field {
            "comm_r_old" => &mut r.comm_r_old,
            "comm_r_new" => &mut r.comm_r_new,
            _ => &mut r.comm_d_new,
        };
        c[0] ^= 1;
        refused(snap_job(&r), &[field, fragment]);
        let mut r = i.clone();
        match field {
            "comm_r_old" => r.comm_r_old.pop(),
            "comm_r_new" => r.comm_r_new.pop(),
            _ => r.comm_d_new.pop(),
        };
        refused(snap_job(&r), &[&format!("{field}: 31 bytes; expected 32")]);
    }
    let mut t = i.clone();
    let n = t.vanilla_proofs[0].len();
    t.vanilla_proofs[0].truncate(n - 10);
    refused(snap_job(&t), &["vanilla_proofs[0]", "not a bincode PartitionProof", "truncated"]);
    let mut two = i.clone();
    two.vanilla_proofs.push(two.vanilla_proofs[0].clone());
    refused(snap_job(&two), &["vanilla_proofs: 2 partition proofs", "has 1 partitions"]);
    let mut wrong = i.clone();
    wrong.registered_proof = 5;
    refused(snap_job(&wrong), &["registered_proof 5 is not a sector update proof type"]);
}

/// Bounded fuzzing of the vanilla-proof bytes: random byte flips, truncations, insertions and
/// length-prefix edits of the fixtures' real vanilla proofs never panic (a panic in storage-
/// proofs would take a thread with it), and every change is refused before any synthesis.
#[test]
fn mutated_vanilla_proofs_never_panic() {
    use rand::{Rng, SeedableRng};
    let f = fixtures();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(12);
    let mut refused_count = 0;
    let rounds = 150;
    for i in [&f.winning, &f.window, &f.snap] {
        for round in 0..rounds {
            let mut m = i.clone();
            let v = &mut m.vanilla_proofs[0];
            match round % 4 {
                0 => {
                    for _ in 0..rng.gen_range(1..4) {
                        let at = rng.gen_range(0..v.len());
                        v[at] ^= 1 << rng.gen_range(0..8);
                    }
                }
                1 => v.truncate(rng.gen_range(0..v.len())),
                2 => {
                    let at = rng.gen_range(0..v.len());
                    let extra: Vec<u8> = (0..rng.gen_range(1..40)).map(|_| rng.gen()).collect();
                    v.splice(at..at, extra);
                }
                _ => {
                    // A bincode length prefix (u64 LE) somewhere made huge or small.
                    let at = rng.gen_range(0..v.len().saturating_sub(8));
                    let n: u64 = if rng.gen() { rng.gen_range(0..70) } else { u64::MAX >> rng.gen_range(0..40) };
                    v[at..at + 8].copy_from_slice(&n.to_le_bytes());
                }
            }
            if m.vanilla_proofs == i.vanilla_proofs {
                refused_count += 1; // two flips of one bit: nothing changed
                continue;
            }
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                if m.kind == "snap" {
                    snap_job(&m).map(|_| ())
                } else {
                    post_job(&m).map(|_| ())
                }
            }));
            match outcome {
                Err(_) => panic!("{} mutation {round} panicked", i.kind),
                Ok(Err(e)) => {
                    assert!(matches!(e, ProofError::BadInput(_)), "{e}");
                    refused_count += 1;
                }
                Ok(Ok(())) => eprintln!("{} mutation {round} was accepted", i.kind),
            }
        }
    }
    assert_eq!(refused_count, 3 * rounds, "changed vanilla proofs accepted (see stderr)");
}

/// Every PoSt and update proof type is dispatched to its own sector shape: the 2 KiB vanilla
/// proofs sent as each larger type are refused by that type's shape checks (tree levels,
/// challenge counts, partitions), with no panic, before any circuit is built.
#[test]
fn larger_proof_types_take_their_own_shapes() {
    let f = fixtures();
    for wire in [1u64, 2, 3, 4] {
        let r = KindInput { registered_proof: wire, ..f.winning.clone() };
        refused(post_job(&r), &["vanilla_proofs"]);
    }
    for wire in [6u64, 7, 8, 9, 11, 12, 13, 14] {
        let r = KindInput { registered_proof: wire, ..f.window.clone() };
        refused(post_job(&r), &["vanilla_proofs"]);
    }
    for wire in [1u64, 2, 3, 4] {
        let r = KindInput { registered_proof: wire, ..f.snap.clone() };
        refused(snap_job(&r), &["vanilla_proofs"]);
    }
}

/// WinningPoSt, a WindowPoSt partition and a SnapDeals partition take the compiled path
/// with the PoRep's equality: the witness recorded, then synthesized again through the
/// compiled circuit, equals the reference `WitnessCs` path's (a, b, c, assignments,
/// densities), and both satisfy their circuit. SnapDeals' challenges go in parts.
#[test]
fn compiled_witnesses_of_every_kind_equal_the_reference() {
    use cuzk_filecoin::synthesis::{clear_compiled, SynthesisPath, SynthesisRun};
    use cuzk_filecoin::ProofJob;
    let f = fixtures();
    let jobs: Vec<(&str, Box<dyn ProofJob>)> = vec![
        ("WinningPoSt", Box::new(post_job(&f.winning).unwrap())),
        ("WindowPoSt", Box::new(post_job(&f.window).unwrap())),
        ("SnapDeals", Box::new(snap_job(&f.snap).unwrap())),
    ];
    for (kind, job) in jobs {
        clear_compiled();
        let (recorded, rt) = job.synthesize_with(0, SynthesisPath::Compiled).unwrap();
        assert_eq!(rt.run, Some(SynthesisRun::Recorded), "{kind}");
        let (fast, ft) = job.synthesize_with(0, SynthesisPath::Compiled).unwrap();
        assert_eq!(ft.run, Some(SynthesisRun::Compiled), "{kind}");
        let (reference, _) = job.synthesize_with(0, SynthesisPath::Reference).unwrap();
        assert!(recorded == reference, "{kind}: the recording's witness differs from the reference");
        assert!(fast == reference, "{kind}: the compiled witness differs from the reference");
        assert_eq!(reference.first_unsatisfied(), None, "{kind}");
        if kind == "SnapDeals" {
            // Its challenges in parts (snap_circuit), recorded and witness-only.
            for t in [&rt, &ft] {
                let parts = t.compiled.map_or(0, |c| c.parts);
                assert!(parts > 1, "{kind} {:?}: the challenges were not synthesized apart ({parts} part)", t.run);
            }
        }
    }
}

/// Deferred evaluation (`SynthesisPath::CompiledDeferred`: synthesis keeps the assignment
/// only, the backend evaluates a, b and c from the compiled circuit) gives today's proofs
/// byte for byte for WinningPoSt, WindowPoSt and SnapDeals, verified by each job's
/// filecoin-proofs check; and a witness with one aux value changed fails on that path with
/// the first unsatisfied constraint today's check finds, with no proof.
#[test]
fn deferred_evaluation_gives_todays_proofs_and_refuses_a_changed_assignment() {
    use cuzk_filecoin::synthesis::SynthesisPath;
    use cuzk_filecoin::{prove_job_on, ProofJob};
    use ff::Field;
    let f = fixtures();
    let post_srs = |i: &KindInput| srs_of(post_params_path(&f.param_dir(), post_proof_from_wire(i.registered_proof).unwrap()));
    let snap_srs = |i: &KindInput| srs_of(update_params_path(&f.param_dir(), update_proof_from_wire(i.registered_proof).unwrap()));
    let jobs: Vec<(&str, Box<dyn ProofJob>, Srs)> = vec![
        ("WinningPoSt", Box::new(post_job(&f.winning).unwrap()), post_srs(&f.winning)),
        ("WindowPoSt", Box::new(post_job(&f.window).unwrap()), post_srs(&f.window)),
        ("SnapDeals", Box::new(snap_job(&f.snap).unwrap()), snap_srs(&f.snap)),
    ];
    for (name, job, srs) in &jobs {
        let blinding = Blinding::Fixed(
            (0..job.partitions()).map(|k| (blstrs::Scalar::from(7 + k as u64), blstrs::Scalar::from(11 + k as u64))).collect(),
        );
        let (today, _) = prove_job_on(job.as_ref(), srs, &CpuBackend, &blinding, SynthesisPath::Compiled).unwrap();
        let (deferred, _) = prove_job_on(job.as_ref(), srs, &CpuBackend, &blinding, SynthesisPath::CompiledDeferred).unwrap();
        assert_eq!(deferred, today, "{name}: deferred evaluation changed the proof");

        // The path really defers once the compiled circuit has proved itself. Another test
        // of this process clears the compiled circuits meanwhile, and a new recording is not
        // trusted before a satisfied witness: so the evaluated path first, a few tries.
        let w = (0..10)
            .find_map(|_| {
                job.synthesize_with(0, SynthesisPath::Compiled).unwrap();
                let (w, _) = job.synthesize_with(0, SynthesisPath::CompiledDeferred).unwrap();
                w.deferred.is_some().then_some(w)
            })
            .unwrap_or_else(|| panic!("{name}: a, b and c were evaluated in synthesis every time"));
        assert!(w.a.is_empty(), "{name}: a deferred witness holds a, b and c");
        let (mut full, _) = job.synthesize_with(0, SynthesisPath::Compiled).unwrap();
        let mut changed = w;
        let at = changed.aux_assignment.len() / 2;
        changed.aux_assignment[at] += blstrs::Scalar::from(1u64);
        full.aux_assignment[at] = changed.aux_assignment[at];
        let d = changed.deferred.clone().unwrap();
        let want = d.circuit.evaluate_checked(&full.input_assignment, &full.aux_assignment).1;
        let want = want.unwrap_or_else(|| panic!("{name}: aux {at} changed and still satisfied"));
        let e = cuzk_groth16::prove(&CpuBackend, srs, changed, blstrs::Scalar::ONE, blstrs::Scalar::ONE).unwrap_err();
        assert!(matches!(e, cuzk_groth16::ProveError::Unsatisfied { constraint } if constraint == want), "{name}: {e}");
        let e = ProofError::proving(0, e);
        assert!(e.is_bad_input() && e.to_string().contains(&format!("constraint {want}")), "{name}: {e}");
    }
}
