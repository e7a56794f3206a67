//! Satisfying C1 outputs at any interactive PoRep size, 2 KiB to 64 GiB, without sealing a
//! sector: a `SealCommitPhase1Output` whose partitions satisfy their circuits, so that its
//! proof passes filecoin-proofs' `verify_seal` (with parameters made for that circuit).
//!
//! Why it can be done: the PoRep circuit checks only the challenged nodes. Per challenge it
//! opens the data leaf in tree D, the columns (one label per layer) of the node and of its 6
//! DRG and 8 expander parents in tree C, recomputes the node's label on every layer from its
//! parents' labels, and opens `label + data` in tree R_last; `comm_r = H(comm_c,
//! comm_r_last)`, and nothing spans all nodes. Interactive challenges are
//! `SHA256(replica_id || seed || j)`, independent of comm_r; the synthetic and NI variants
//! draw theirs from comm_r (a circle), so they are refused.
//!
//! How it is built, from storage-proofs' own types and hashers, never writing sector data:
//! - all-zero data: comm_d is the zero tree's root, every tree D path the zero-subtree chain;
//! - the replica id as filecoin-proofs derives it (prover id, sector id, ticket, comm_d, the
//!   proof type's porep id), the challenges of every partition from it and the seed;
//! - labels in (layer, node) order, each challenged node's from the exact parents that
//!   `StackedBucketGraph::parents` gives (DRG parents on the same layer, expander parents on
//!   the previous one, repeated to 37 as the label hash takes them); every other node's
//!   labels are zero, so a parent that is itself challenged keeps its own derived labels;
//! - trees C and R_last sparse (base, sub- and top-tree arities of the proof type): every
//!   leaf is the zero column's hash (C) or zero (R_last) but those of the nodes opened;
//! - each opening through `MerkleProof::from_parts`, the labeling and encoding proofs as
//!   storage-proofs makes them from the columns.
//!
//! Before it is returned the output passes storage-proofs' own vanilla verifier
//! (`StackedDrg::verify_all_partitions`); the circuit's satisfaction is checked where it is
//! synthesized (the tests, and every proving path). Memory is a few MB at any size.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{bail, ensure, Context, Result};
use blstrs::Scalar as Fr;
use filecoin_hashers::{Domain, HashFunction, Hasher, PoseidonArity};
use filecoin_proofs::{parameters::setup_params, with_shape, DefaultPieceDomain, DefaultPieceHasher};
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use filecoin_proofs_api::RegisteredSealProof;
use merkletree::hash::Algorithm;
use sha2::{Digest, Sha256};
use storage_proofs_core::drgraph::Graph;
use storage_proofs_core::merkle::{MerkleProof, MerkleTreeTrait};
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{
    self, generate_replica_id, Challenges, Column, ColumnProof, EncodingProof, LabelingProof, ReplicaColumnProof,
    StackedDrg, TOTAL_PARENTS,
};

use cuzk_groth16::progress::Progress;

use crate::porep::prover_id_from_miner;
use crate::shape_c1::{api_proofs, commitment, tree_arities, TreeDomain, TreeProof};

/// What a satisfying C1 output is made for: the proof type and the sector's identity, ticket
/// and seed, as a real sealing would take them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SatisfyingSpec {
    pub proof: RegisteredSealProof,
    pub miner_id: u64,
    pub sector_id: u64,
    pub ticket: [u8; 32],
    pub seed: [u8; 32],
}

/// The ticket a fixture is made with when none is given.
pub const FIXTURE_TICKET: [u8; 32] = *b"cuzk satisfying fixture ticket\x00\x00";
/// The PoRep seed a fixture is made with when none is given.
pub const FIXTURE_SEED: [u8; 32] = *b"cuzk satisfying fixture seed\x00\x00\x00\x00";

impl SatisfyingSpec {
    /// The fixture's identity (miner [`crate::fixture::FIXTURE_MINER_ID`], sector
    /// [`crate::fixture::FIXTURE_SECTOR_ID`]) with the default ticket and seed.
    pub fn fixture(proof: RegisteredSealProof) -> SatisfyingSpec {
        SatisfyingSpec {
            proof,
            miner_id: crate::fixture::FIXTURE_MINER_ID,
            sector_id: crate::fixture::FIXTURE_SECTOR_ID,
            ticket: FIXTURE_TICKET,
            seed: FIXTURE_SEED,
        }
    }

    pub fn identity(&self) -> crate::SectorIdentity {
        crate::SectorIdentity { prover_id: prover_id_from_miner(self.miner_id), sector_id: self.sector_id }
    }
}

/// Why a proof type has no satisfying C1 output without sealing.
pub fn refusal(proof: RegisteredSealProof) -> Option<String> {
    use storage_proofs_core::api_version::ApiFeature;
    if proof.major_version() != 1 {
        return Some(format!("{proof:?}: only version 1 seal proofs have a stacked DRG C1 output"));
    }
    let config = proof.as_v1_config();
    for (feature, name) in [(ApiFeature::SyntheticPoRep, "synthetic"), (ApiFeature::NonInteractivePoRep, "non-interactive")] {
        if config.feature_enabled(feature) {
            return Some(format!(
                "{proof:?} is {name} PoRep: its challenges are drawn from comm_r, which depends on the labels \
                 of the challenged nodes, so a satisfying output needs a sealed sector (use an interactive \
                 proof type such as StackedDrg32GiBV1_1)"
            ));
        }
    }
    None
}

/// A C1 output for `spec` whose every partition satisfies its circuit; `progress` sees its
/// stages. Refuses the synthetic and non-interactive proof types ([`refusal`]).
pub fn satisfying_c1(spec: &SatisfyingSpec, progress: &dyn Progress) -> Result<SealCommitPhase1Output> {
    if let Some(why) = refusal(spec.proof) {
        bail!(why);
    }
    let size = u64::from(spec.proof.sector_size());
    with_shape!(size, satisfying, spec, progress)
}

/// A Merkle tree of `H` whose leaves all equal one default leaf but a few: the nodes that
/// differ, level by level, and each level's default node (the root of a subtree of default
/// leaves). Its paths are what storage-proofs' `InclusionPath::root` hashes back to the root.
struct SparseTree<H: Hasher> {
    arities: Vec<usize>,
    /// `levels[0]`: the leaves that differ from the default; `levels[l]`: their ancestors.
    levels: Vec<BTreeMap<usize, H::Domain>>,
    defaults: Vec<H::Domain>,
}

impl<H: Hasher> SparseTree<H> {
    fn hash(children: &[H::Domain]) -> H::Domain {
        // Every filecoin hasher ignores the height; storage-proofs passes the level's.
        H::Function::default().multi_node(children, 0)
    }

    /// `arities`: leaf level first; their product must be the number of leaves.
    fn new(arities: Vec<usize>, leaves: usize, default_leaf: H::Domain, set: BTreeMap<usize, H::Domain>) -> Result<Self> {
        ensure!(
            arities.iter().product::<usize>() == leaves,
            "tree levels of arities {arities:?} do not hold {leaves} leaves"
        );
        ensure!(set.keys().all(|&i| i < leaves), "a leaf beyond the tree's {leaves}");
        let (mut levels, mut defaults) = (Vec::new(), Vec::new());
        let (mut below, mut default) = (set, default_leaf);
        for &arity in &arities {
            let node = |i: usize| below.get(&i).copied().unwrap_or(default);
            let parents: BTreeSet<usize> = below.keys().map(|i| i / arity).collect();
            let next: BTreeMap<usize, H::Domain> = parents
                .into_iter()
                .map(|p| (p, Self::hash(&(0..arity).map(|j| node(p * arity + j)).collect::<Vec<_>>())))
                .collect();
            let next_default = Self::hash(&vec![default; arity]);
            levels.push(std::mem::replace(&mut below, next));
            defaults.push(std::mem::replace(&mut default, next_default));
        }
        levels.push(below);
        defaults.push(default);
        Ok(SparseTree { arities, levels, defaults })
    }

    fn node(&self, level: usize, i: usize) -> H::Domain {
        self.levels[level].get(&i).copied().unwrap_or(self.defaults[level])
    }

    fn root(&self) -> H::Domain {
        self.node(self.arities.len(), 0)
    }

    fn leaf(&self, i: usize) -> H::Domain {
        self.node(0, i)
    }

    /// Leaf `i`'s path, leaf to root, as `MerkleProof::from_parts` takes it: per level, the
    /// siblings in order and the position among them.
    fn path(&self, i: usize) -> Vec<(Vec<H::Domain>, usize)> {
        let mut at = i;
        self.arities
            .iter()
            .enumerate()
            .map(|(level, &arity)| {
                let (group, position) = (at - at % arity, at % arity);
                let siblings = (0..arity).filter(|&j| j != position).map(|j| self.node(level, group + j)).collect();
                at /= arity;
                (siblings, position)
            })
            .collect()
    }

    fn proof<A: PoseidonArity, B: PoseidonArity, C: PoseidonArity>(&self, i: usize) -> MerkleProof<H, A, B, C> {
        MerkleProof::from_parts(self.leaf(i), self.root(), self.path(i))
    }
}

/// A node's label on `layer` from its parents' labels (already repeated to 37), as
/// storage-proofs' `LabelingProof` hashes it: SHA-256 of the replica id, the layer (u32) and
/// node (u64) big-endian in a 64-byte block, then the parents; the top two bits cleared.
fn label<D: Domain>(replica_id: &D, layer: usize, node: usize, parents: &[D]) -> Result<D> {
    let mut block = [0u8; 64];
    block[..32].copy_from_slice(replica_id.as_ref());
    block[32..36].copy_from_slice(&(layer as u32).to_be_bytes());
    block[36..44].copy_from_slice(&(node as u64).to_be_bytes());
    let mut h = Sha256::new();
    h.update(block);
    for p in parents {
        h.update(p.as_ref());
    }
    let mut out: [u8; 32] = h.finalize().into();
    out[31] &= 0b0011_1111;
    Ok(D::try_from_bytes(&out)?)
}

fn satisfying<Tree: 'static + MerkleTreeTrait>(spec: &SatisfyingSpec, progress: &dyn Progress) -> Result<SealCommitPhase1Output> {
    type D<Tree> = TreeDomain<Tree>;
    let config = spec.proof.as_v1_config();
    progress.stage("graph, replica id and challenges", 0);
    let params = <StackedDrg<'_, Tree, DefaultPieceHasher> as ProofScheme<'_>>::setup(&setup_params(&config)?)?;
    ensure!(matches!(params.challenges, Challenges::Interactive(_)), "{:?}: not interactive PoRep", spec.proof);
    let graph = &params.graph;
    let (nodes, layers) = (graph.size(), params.num_layers);
    let (drg_degree, degree) = (graph.base_graph().degree(), graph.degree());
    let partitions = usize::from(config.partitions);

    // Tree D over all-zero data: every node of a level is that level's zero-subtree root.
    let tree_d = SparseTree::<DefaultPieceHasher>::new(vec![2; nodes.trailing_zeros() as usize], nodes, DefaultPieceDomain::default(), BTreeMap::new())?;
    let comm_d = tree_d.root();
    let prover_id = prover_id_from_miner(spec.miner_id);
    let replica_id: D<Tree> = generate_replica_id::<Tree::Hasher, _>(&prover_id, spec.sector_id, &spec.ticket, comm_d, &config.porep_id);
    let mut inputs = stacked::PublicInputs::<D<Tree>, DefaultPieceDomain> { replica_id, tau: None, k: None, seed: Some(spec.seed) };
    let challenges: Vec<Vec<usize>> = (0..partitions).map(|k| inputs.challenges(&params.challenges, nodes, Some(k))).collect();
    let parents_of = |node: usize| -> Result<Vec<u32>> {
        let mut p = vec![0u32; degree];
        graph.parents(node, &mut p).with_context(|| format!("parents of node {node}"))?;
        Ok(p)
    };
    let challenged: BTreeSet<usize> = challenges.iter().flatten().copied().collect();
    let parents: BTreeMap<usize, Vec<u32>> = challenged.iter().map(|&c| Ok((c, parents_of(c)?))).collect::<Result<_>>()?;
    progress.finish();

    // Labels, layer by layer and node by node: a DRG parent (a lower node, same layer) that
    // is itself challenged has its label on this layer already; an expander parent's is on
    // the layer before.
    progress.stage("labels of the challenged nodes", (layers * challenged.len()) as u64);
    let mut labels: BTreeMap<usize, Vec<D<Tree>>> = challenged.iter().map(|&c| (c, Vec::with_capacity(layers))).collect();
    let label_of = |labels: &BTreeMap<usize, Vec<D<Tree>>>, node: u32, layer: usize| -> D<Tree> {
        labels.get(&(node as usize)).and_then(|l| l.get(layer - 1)).copied().unwrap_or_default()
    };
    let repeated_parents = |labels: &BTreeMap<usize, Vec<D<Tree>>>, node: usize, layer: usize| -> Vec<D<Tree>> {
        let p = &parents[&node];
        let count = if layer == 1 { drg_degree } else { degree };
        let distinct: Vec<D<Tree>> =
            (0..count).map(|i| if i < drg_degree { label_of(labels, p[i], layer) } else { label_of(labels, p[i], layer - 1) }).collect();
        distinct.iter().cycle().take(TOTAL_PARENTS).copied().collect()
    };
    for layer in 1..=layers {
        for &c in &challenged {
            ensure!(parents[&c][..drg_degree].iter().all(|&p| (p as usize) < c || c == 0), "node {c}: a DRG parent not below it");
            let l = label(&replica_id, layer, c, &repeated_parents(&labels, c, layer))?;
            labels.entry(c).or_default().push(l);
        }
        progress.advance(challenged.len() as u64);
    }
    progress.finish();

    // Trees C and R_last: the opened columns and the challenged replica nodes (label of the
    // last layer plus zero data) differ from the defaults.
    progress.stage("trees C, R_last and D", 0);
    let column = |node: usize| -> Vec<D<Tree>> { labels.get(&node).cloned().unwrap_or_else(|| vec![D::<Tree>::default(); layers]) };
    let column_hash = |rows: Vec<D<Tree>>| -> Result<D<Tree>> { Ok(Column::<Tree::Hasher>::new(0, rows)?.hash().into()) };
    let c_leaves = challenged.iter().map(|&n| Ok((n, column_hash(column(n))?))).collect::<Result<BTreeMap<_, _>>>()?;
    let arities = tree_arities::<Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity>(nodes);
    let zero_column = column_hash(vec![D::<Tree>::default(); layers])?;
    let tree_c = SparseTree::<Tree::Hasher>::new(arities.clone(), nodes, zero_column, c_leaves)?;
    let r_leaves = challenged
        .iter()
        .map(|&c| {
            let key: Fr = (*labels[&c].last().expect("layers > 0")).into();
            let data: Fr = tree_d.leaf(c).into();
            (c, D::<Tree>::from(key + data))
        })
        .collect();
    let tree_r = SparseTree::<Tree::Hasher>::new(arities, nodes, D::<Tree>::default(), r_leaves)?;
    let (comm_c, comm_r_last) = (tree_c.root(), tree_r.root());
    let comm_r = <Tree::Hasher as Hasher>::Function::hash2(&comm_c, &comm_r_last);
    progress.finish();

    progress.stage("vanilla proofs", challenges.iter().map(|c| c.len() as u64).sum());
    let column_proof = |node: u32| -> ColumnProof<TreeProof<Tree>> {
        ColumnProof::new(node, column(node as usize), tree_c.proof(node as usize))
    };
    let mut vanilla = Vec::with_capacity(partitions);
    for partition in &challenges {
        let mut proofs = Vec::with_capacity(partition.len());
        for &c in partition {
            let p = &parents[&c];
            let labeling_proofs: Vec<LabelingProof<Tree::Hasher>> =
                (1..=layers).map(|layer| LabelingProof::new(layer as u32, c as u64, repeated_parents(&labels, c, layer))).collect();
            for (layer, proof) in labeling_proofs.iter().enumerate() {
                ensure!(proof.verify(&replica_id, &labels[&c][layer]), "node {c}, layer {}: the label does not verify", layer + 1);
            }
            let encoding_proof = EncodingProof::new(layers as u32, c as u64, repeated_parents(&labels, c, layers));
            proofs.push(stacked::Proof::<Tree, DefaultPieceHasher> {
                comm_d_proofs: tree_d.proof(c),
                comm_r_last_proof: tree_r.proof(c),
                replica_column_proofs: ReplicaColumnProof {
                    c_x: column_proof(c as u32),
                    drg_parents: p[..drg_degree].iter().map(|&n| column_proof(n)).collect(),
                    exp_parents: p[drg_degree..].iter().map(|&n| column_proof(n)).collect(),
                },
                labeling_proofs,
                encoding_proof,
            });
        }
        progress.advance(proofs.len() as u64);
        vanilla.push(proofs);
    }
    progress.finish();

    progress.stage("storage-proofs' vanilla verifier", 0);
    inputs.tau = Some(stacked::Tau { comm_d, comm_r });
    for (k, want) in challenges.iter().enumerate() {
        ensure!(&inputs.challenges(&params.challenges, nodes, Some(k)) == want, "partition {k}'s challenges depend on comm_r");
    }
    let ok = <StackedDrg<'_, Tree, DefaultPieceHasher> as ProofScheme<'_>>::verify_all_partitions(&params, &inputs, &vanilla)?;
    ensure!(ok, "storage-proofs' vanilla verifier refuses the generated proofs (a cuzk bug)");
    progress.finish();

    let replica_fr: Fr = replica_id.into();
    Ok(SealCommitPhase1Output {
        registered_proof: spec.proof,
        vanilla_proofs: api_proofs::<Tree>(u64::from(spec.proof.sector_size()), vanilla)?,
        comm_r: commitment(&comm_r),
        comm_d: commitment(&comm_d),
        replica_id: replica_fr.into(),
        seed: spec.seed,
        ticket: spec.ticket,
    })
}

/// The file that says what a satisfying fixture directory holds (written last: its presence
/// marks a complete C1 pair).
pub const SATISFYING_INFO: &str = "satisfying.json";

/// What a satisfying fixture directory holds (`satisfying.json`), beside `c1.json`,
/// `c1.envelope.json` and, when made, `params/`.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct SatisfyingInfo {
    pub registered_proof: RegisteredSealProof,
    pub sector_size: u64,
    pub miner_id: u64,
    pub sector_id: u64,
    /// Hex, as `gen-fixture --ticket` takes it.
    pub ticket: String,
    pub seed: String,
    pub comm_d: String,
    pub comm_r: String,
}

/// A satisfying fixture on disk, and where its time went.
#[derive(Debug)]
pub struct SatisfyingFixture {
    pub dir: std::path::PathBuf,
    pub info: SatisfyingInfo,
    /// Generating the C1 output (and checking it with storage-proofs' vanilla verifier).
    pub generate: std::time::Duration,
    /// The parameters: `None` when not asked for; the time 0 when kept from an earlier run.
    pub params: Option<ParamsMade>,
}

/// The parameters of a satisfying fixture.
#[derive(Debug)]
pub struct ParamsMade {
    pub path: std::path::PathBuf,
    /// True when a set from an earlier run was kept (its `.vk` matches it).
    pub kept: bool,
    /// Partition 0 synthesized and its constraints checked (its circuit recorded).
    pub record: std::time::Duration,
    /// The recorded circuit's constraints (input constraints included); 0 when kept.
    pub constraints: usize,
    /// The setup proper: QAP, points, writing.
    pub setup: std::time::Duration,
}

impl SatisfyingFixture {
    pub fn c1_path(&self) -> std::path::PathBuf {
        self.dir.join("c1.json")
    }
    pub fn envelope_path(&self) -> std::path::PathBuf {
        self.dir.join("c1.envelope.json")
    }
    pub fn param_dir(&self) -> std::path::PathBuf {
        self.dir.join("params")
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// 32 bytes from 64 hex digits (a ticket or seed on the command line).
pub fn parse_hex32(s: &str) -> Result<[u8; 32]> {
    let s = s.trim().trim_start_matches("0x");
    ensure!(s.len() == 64 && s.bytes().all(|c| c.is_ascii_hexdigit()), "expected 64 hex digits (32 bytes), got {s:?}");
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("checked hex");
    }
    Ok(out)
}

/// Writes a satisfying fixture for `spec` into `dir`: `c1.json` (bare), `c1.envelope.json`
/// (lotus-bench's envelope, `SectorNum` the sector id) and `satisfying.json`, each whole under
/// its final name; with `params`, also `params/` with the proof type's test parameters from
/// cuzk's own setup (random toxic waste: test use only) under filecoin-proofs' file names. A
/// parameter set already there whose `.vk` matches it is kept. The parameters' circuit is
/// recorded from partition 0 of the output, in parallel, which also checks that partition's
/// constraints (a, b, c evaluated, `a * b = c` on every row). Points this process's
/// filecoin-proofs at `dir/params` and `dir/parents`.
pub fn write_satisfying_fixture(
    dir: &std::path::Path,
    spec: &SatisfyingSpec,
    params: bool,
    progress: &dyn Progress,
) -> Result<SatisfyingFixture> {
    use crate::fixture::{params_kept, refuse_production_dir, write_atomic};
    use std::time::Instant;
    refuse_production_dir(dir)?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let dir = std::fs::canonicalize(dir)?;
    let (param_dir, parents) = (dir.join("params"), dir.join("parents"));
    for d in [&param_dir, &parents] {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    crate::params::use_proof_dirs(&param_dir, Some(&parents))?;

    let t = Instant::now();
    let c1 = satisfying_c1(spec, progress)?;
    let generate = t.elapsed();
    let json = serde_json::to_vec(&c1)?;
    let size = u64::from(spec.proof.sector_size());
    let info = SatisfyingInfo {
        registered_proof: spec.proof,
        sector_size: size,
        miner_id: spec.miner_id,
        sector_id: spec.sector_id,
        ticket: hex(&spec.ticket),
        seed: hex(&spec.seed),
        comm_d: hex(&c1.comm_d),
        comm_r: hex(&c1.comm_r),
    };
    let mut fixture = SatisfyingFixture { dir: dir.clone(), info, generate, params: None };
    write_atomic(&fixture.c1_path(), &json)?;
    write_atomic(&fixture.envelope_path(), &crate::c1::to_envelope(&json, spec.sector_id, size))?;
    write_atomic(&dir.join(SATISFYING_INFO), &serde_json::to_vec_pretty(&fixture.info)?)?;
    if !params {
        return Ok(fixture);
    }

    let path = crate::params::seal_params_path(&param_dir, spec.proof)?;
    let vk = crate::params::seal_vk_path(&param_dir, spec.proof)?;
    if params_kept(&path, &vk) {
        fixture.params = Some(ParamsMade { path, kept: true, record: Default::default(), constraints: 0, setup: Default::default() });
        return Ok(fixture);
    }
    let t = Instant::now();
    let input = crate::parse_c1(&json)?;
    let job = crate::PoRepJob::new(&input)?;
    let compiled = cuzk_groth16::progress::step(progress, "partition 0 synthesized and checked (the circuit recorded)", || {
        job.synthesize(0).map(drop)?;
        crate::synthesis::compiled_for(&job.circuit_key())
            .ok_or_else(|| anyhow::anyhow!("synthesis kept no compiled circuit for {:?}", spec.proof))
    })?;
    let record = t.elapsed();
    let t = Instant::now();
    let mut sink = crate::fixture::WriteParams { dir: &param_dir, progress, recorded: Some(&compiled) };
    crate::fixture::fixture_circuits(spec.proof, false, &mut sink)?;
    fixture.params = Some(ParamsMade { path, kept: false, record, constraints: compiled.num_constraints(), setup: t.elapsed() });
    Ok(fixture)
}
