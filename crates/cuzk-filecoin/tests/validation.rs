//! The shape check of `PoRepJob::new` on the 2 KiB fixture's real C1 output (generated on
//! first use, ~13 minutes on 2 cores; cached in `$CUZK_FIXTURE_DIR` or ~/.cache/cuzk/fixtures):
//! each test changes one thing of the vanilla proofs, and the job must refuse it as a bad input
//! that names what is wrong, in well under a second, without a panic. Without the check, most
//! of these panic inside storage-proofs' circuit synthesis.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use cuzk_filecoin::fixture::{default_fixture_dir, ensure_fixture};
use cuzk_filecoin::{parse_c1, ProofError, PoRepJob};
use serde_json::Value;

/// The fixture's bare C1 output, as JSON.
fn fixture_c1() -> &'static Value {
    static C1: OnceLock<Value> = OnceLock::new();
    C1.get_or_init(|| {
        let fixture = ensure_fixture(&default_fixture_dir(2048), 2048).expect("2 KiB fixture");
        serde_json::from_slice(&std::fs::read(fixture.c1_path()).unwrap()).unwrap()
    })
}

/// The partitions of a C1 output: `vanilla_proofs` is `{"<shape variant>": [partition, ...]}`.
fn partitions(c1: &mut Value) -> &mut Vec<Value> {
    let by_shape = c1["vanilla_proofs"]
        .as_object_mut()
        .expect("vanilla_proofs is an object");
    assert_eq!(by_shape.len(), 1, "one sector-shape variant");
    by_shape
        .values_mut()
        .next()
        .unwrap()
        .as_array_mut()
        .unwrap()
}

/// Challenge proof `i` of partition `k`.
fn challenge(c1: &mut Value, k: usize, i: usize) -> &mut Value {
    &mut partitions(c1)[k][i]
}

/// The path elements of a Merkle proof (a 2 KiB sector's trees are single trees).
fn path(merkle_proof: &mut Value) -> &mut Vec<Value> {
    merkle_proof["data"]["Single"]["path"]["path"]
        .as_array_mut()
        .expect("a Single proof's path")
}

fn array(v: &mut Value) -> &mut Vec<Value> {
    v.as_array_mut().expect("an array")
}

/// The fixture with `change` applied must be refused by `PoRepJob::new` (what cuzk-bench and
/// the engine call before any synthesis) with a `BadInput` naming `fragments`.
fn refused(change: impl FnOnce(&mut Value), fragments: &[&str]) {
    let mut c1 = fixture_c1().clone();
    change(&mut c1);
    let bytes = serde_json::to_vec(&c1).unwrap();
    let start = Instant::now();
    let input = parse_c1(&bytes).expect("the changed C1 output still parses");
    let parsed = start.elapsed();
    let outcome = catch_unwind(AssertUnwindSafe(|| PoRepJob::new(&input).map(|_| ())));
    let elapsed = start.elapsed();
    let result = outcome.unwrap_or_else(|_| {
        panic!("PoRepJob::new panicked (expected a refusal naming {fragments:?})")
    });
    let e = result.expect_err("the changed C1 output was accepted");
    let msg = e.to_string();
    assert!(
        matches!(e, ProofError::BadInput(_)),
        "not a bad input: {msg}"
    );
    for f in fragments {
        assert!(msg.contains(f), "{msg:?} does not name {f:?}");
    }
    assert!(
        elapsed < Duration::from_secs(1),
        "refused in {elapsed:?}: {msg}"
    );
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    eprintln!(
        "parsed in {:.1} ms, refused {:.1} ms later: {msg}",
        ms(parsed),
        ms(elapsed - parsed)
    );
}

#[test]
fn untouched_fixture_passes_the_shape_check() {
    let bytes = serde_json::to_vec(fixture_c1()).unwrap();
    let start = Instant::now();
    let job = PoRepJob::new(&parse_c1(&bytes).unwrap()).unwrap();
    eprintln!("accepted in {:.1} ms", start.elapsed().as_secs_f64() * 1e3);
    assert_eq!(job.partitions(), 1);
}

#[test]
fn wrong_partition_counts_are_refused() {
    refused(
        |c1| partitions(c1).clear(),
        &["0 partitions of vanilla proofs", "has 1"],
    );
    refused(
        |c1| {
            let p = partitions(c1);
            p.push(p[0].clone());
        },
        &["2 partitions of vanilla proofs", "has 1"],
    );
}

#[test]
fn wrong_challenge_counts_are_refused() {
    refused(
        |c1| {
            let p = array(&mut partitions(c1)[0]);
            let once = p.clone();
            for _ in 1..40 {
                p.extend(once.iter().cloned());
            }
        },
        &[
            "partition 0 holds 80 challenge proofs",
            "2 challenges per partition",
        ],
    );
    refused(
        |c1| drop(array(&mut partitions(c1)[0]).pop()),
        &["partition 0 holds 1 challenge proofs"],
    );
    refused(
        |c1| array(&mut partitions(c1)[0]).clear(),
        &["partition 0 holds 0 challenge proofs"],
    );
}

#[test]
fn short_or_malformed_merkle_paths_are_refused() {
    refused(
        |c1| drop(path(&mut challenge(c1, 0, 1)["comm_d_proofs"]).pop()),
        &[
            "partition 0, challenge 1, comm_d proof, path",
            "expected 6 levels (6 levels of arity 2)",
            "found 5 levels",
        ],
    );
    refused(
        |c1| drop(path(&mut challenge(c1, 0, 0)["comm_r_last_proof"]).pop()),
        &[
            "challenge 0, comm_r_last proof, path",
            "expected 2 levels (2 levels of arity 8)",
            "found 1 levels",
        ],
    );
    refused(
        |c1| {
            let c_x = &mut challenge(c1, 0, 0)["replica_column_proofs"]["c_x"];
            let levels = path(&mut c_x["inclusion_proof"]);
            levels.push(levels[0].clone());
        },
        &[
            "column of the challenged node, inclusion proof, path",
            "found 3 levels",
        ],
    );
    refused(
        |c1| {
            let parent = &mut challenge(c1, 0, 1)["replica_column_proofs"]["drg_parents"][4];
            drop(path(&mut parent["inclusion_proof"]).remove(0));
        },
        &[
            "challenge 1, column of DRG parent 4, inclusion proof, path",
            "found 1 levels",
        ],
    );
    refused(
        |c1| {
            drop(array(&mut path(&mut challenge(c1, 0, 0)["comm_r_last_proof"])[1]["hashes"]).pop())
        },
        &[
            "comm_r_last proof, level 1",
            "expected 7 sibling hashes (arity 8)",
            "found 6",
        ],
    );
    refused(
        |c1| path(&mut challenge(c1, 0, 0)["comm_d_proofs"])[2]["index"] = 2.into(),
        &[
            "comm_d proof, level 2",
            "a position below the arity 2",
            "position 2",
        ],
    );
}

#[test]
fn missing_parents_layers_and_labels_are_refused() {
    refused(
        |c1| drop(array(&mut challenge(c1, 0, 0)["replica_column_proofs"]["drg_parents"]).pop()),
        &["challenge 0, DRG parent columns", "expected 6, found 5"],
    );
    refused(
        |c1| drop(array(&mut challenge(c1, 0, 1)["replica_column_proofs"]["exp_parents"]).pop()),
        &[
            "challenge 1, expansion parent columns",
            "expected 8, found 7",
        ],
    );
    refused(
        |c1| {
            drop(
                array(&mut challenge(c1, 0, 0)["replica_column_proofs"]["c_x"]["column"]["rows"])
                    .pop(),
            )
        },
        &[
            "column of the challenged node, rows",
            "expected 2 (one per layer), found 1",
        ],
    );
    refused(
        |c1| {
            let parent = &mut challenge(c1, 0, 0)["replica_column_proofs"]["drg_parents"][2];
            drop(array(&mut parent["column"]["rows"]).pop());
        },
        &["column of DRG parent 2, rows", "found 1"],
    );
    refused(
        |c1| {
            let parent = &mut challenge(c1, 0, 0)["replica_column_proofs"]["exp_parents"][7];
            let rows = array(&mut parent["column"]["rows"]);
            rows.push(rows[0].clone());
        },
        &["column of expansion parent 7, rows", "found 3"],
    );
    refused(
        |c1| drop(array(&mut challenge(c1, 0, 1)["labeling_proofs"]).pop()),
        &[
            "challenge 1, labeling proofs",
            "expected 2 (one per layer), found 1",
        ],
    );
    refused(
        |c1| array(&mut challenge(c1, 0, 0)["labeling_proofs"]).clear(),
        &["labeling proofs", "found 0"],
    );
    refused(
        |c1| drop(array(&mut challenge(c1, 0, 0)["labeling_proofs"][1]["parents"]).pop()),
        &[
            "labeling proof of layer 2, parents",
            "expected 37",
            "found 36",
        ],
    );
    refused(
        |c1| {
            challenge(c1, 0, 0)["labeling_proofs"]
                .as_array_mut()
                .unwrap()
                .swap(0, 1)
        },
        &[
            "labeling proof of layer 1, layer index",
            "expected 1, found 2",
        ],
    );
    refused(
        |c1| challenge(c1, 0, 0)["encoding_proof"]["layer_index"] = 1.into(),
        &["encoding proof, layer index", "expected 2, found 1"],
    );
}

#[test]
fn proofs_of_other_nodes_are_refused() {
    // Challenges in another order: each proof opens the other's node.
    refused(
        |c1| array(&mut partitions(c1)[0]).swap(0, 1),
        &[
            "partition 0, challenge 0, labeling proof of layer 1",
            "the challenge the verifier derives",
        ],
    );
    refused(
        |c1| {
            let node = challenge(c1, 0, 1)["labeling_proofs"][0]["node"]
                .as_u64()
                .unwrap();
            challenge(c1, 0, 1)["labeling_proofs"][0]["node"] = (node ^ 1).into();
        },
        &[
            "challenge 1, labeling proof of layer 1",
            "the challenge the verifier derives",
        ],
    );
    refused(
        |c1| {
            let node = challenge(c1, 0, 0)["encoding_proof"]["node"]
                .as_u64()
                .unwrap();
            challenge(c1, 0, 0)["encoding_proof"]["node"] = (node + 1).into();
        },
        &["encoding proof", "the challenge the verifier derives"],
    );
    refused(
        |c1| {
            let index = &mut path(&mut challenge(c1, 0, 0)["comm_r_last_proof"])[0]["index"];
            *index = ((index.as_u64().unwrap() + 1) % 8).into();
        },
        &["comm_r_last proof", "the challenge the verifier derives"],
    );
    refused(
        |c1| {
            // Swap DRG parent 0 with the first parent at another node.
            let parents = array(&mut challenge(c1, 0, 0)["replica_column_proofs"]["drg_parents"]);
            let node = |p: &Value| p["column"]["index"].as_u64().unwrap();
            let other = parents
                .iter()
                .position(|p| node(p) != node(&parents[0]))
                .unwrap();
            parents.swap(0, other);
        },
        &["column of DRG parent 0", "the graph's parent of node"],
    );
    refused(
        |c1| {
            let column =
                &mut challenge(c1, 0, 1)["replica_column_proofs"]["exp_parents"][3]["column"];
            let index = column["index"].as_u64().unwrap();
            column["index"] = (index + 1).into();
        },
        &[
            "column of expansion parent 3, column index",
            "the one its inclusion proof opens",
        ],
    );
}

/// 32 bytes of 0xff: above the BLS12-381 scalar modulus.
fn not_a_scalar() -> Value {
    Value::from(vec![255u8; 32])
}

#[test]
fn values_that_are_not_field_elements_are_refused() {
    refused(
        |c1| {
            array(&mut path(&mut challenge(c1, 0, 1)["comm_r_last_proof"])[0]["hashes"])[3] =
                not_a_scalar()
        },
        &[
            "challenge 1, comm_r_last proof, level 0 sibling hash",
            "a BLS12-381 scalar",
            "found 0xffff",
        ],
    );
    refused(
        |c1| challenge(c1, 0, 0)["comm_d_proofs"]["data"]["Single"]["leaf"] = not_a_scalar(),
        &["comm_d proof, leaf", "a BLS12-381 scalar"],
    );
    refused(
        |c1| {
            let column =
                &mut challenge(c1, 0, 0)["replica_column_proofs"]["exp_parents"][0]["column"];
            column["rows"][1] = not_a_scalar();
        },
        &[
            "column of expansion parent 0, row of layer 2",
            "a BLS12-381 scalar",
        ],
    );
    refused(
        |c1| c1["replica_id"] = not_a_scalar(),
        &["replica_id is not a BLS12-381 scalar"],
    );
    refused(
        |c1| c1["comm_d"] = not_a_scalar(),
        &["comm_d is not a BLS12-381 scalar"],
    );
    refused(
        |c1| c1["comm_r"] = not_a_scalar(),
        &["Invalid commitment (comm_r)"],
    );
}
