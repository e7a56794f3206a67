//! Witness-only synthesis through a compiled circuit: whole, in parts joined, or in parts
//! written in place.

use super::*;

/// Synthesizes `circuit` once, recording its constraints: the witness (equal to
/// [`PartitionWitness::synthesize`]'s) and the compiled circuit for later proofs.
pub fn compile<C: Circuit<Scalar> + Send>(circuit: C) -> Result<(PartitionWitness, CompiledCircuit), SynthesisError> {
    let (w, compiled) = compile_pieces(vec![circuit], None)?;
    Ok((w.witness, compiled))
}

/// As [`compile`] for a circuit given as parts (see [`synthesize_compiled_pieces`]): the
/// parts recorded in parallel and joined. With `marker` None, `parts` is one whole circuit.
pub fn compile_pieces<C: Circuit<Scalar> + Send>(
    parts: Vec<C>,
    marker: Option<&'static str>,
) -> Result<(CompiledWitness, CompiledCircuit), SynthesisError> {
    let t0 = std::time::Instant::now();
    let count = parts.len();
    let runs = run_parts::<C, true>(parts, marker, 0)?;
    let assign = t0.elapsed();
    let mut joined = join(runs)?;
    let compiled = compiled_of(&mut joined);
    let join_time = t0.elapsed() - assign;
    let (witness, first_unsatisfied) = compiled.witness_checked(joined.inputs, joined.aux);
    let timings =
        CompiledTimings { assign, join: join_time, products: t0.elapsed() - assign - join_time, parts: count, in_place: false };
    Ok((CompiledWitness { witness, first_unsatisfied, timings }, compiled))
}

/// As [`synthesize_compiled`] for a circuit made of a common prefix and then pieces, each
/// piece in a top-level namespace whose name starts with `marker` (storage-proofs' stacked
/// circuit: its public values, then `challenge_0`, `challenge_1`, ...), given as circuits
/// that each hold the prefix and a consecutive run of the pieces (in order, together all of
/// them). They are synthesized in parallel, each in its own witness-only constraint system;
/// the whole circuit's assignments are the first one's prefix and every one's pieces, as
/// the pieces do not depend on one another. Equality with the whole circuit's synthesis is
/// what the tests check; counts that differ from `compiled` are refused as usual.
pub fn synthesize_compiled_pieces<C: Circuit<Scalar> + Send>(
    parts: Vec<C>,
    marker: &'static str,
    compiled: &CompiledCircuit,
) -> Result<Result<CompiledWitness, CompiledMismatch>, SynthesisError> {
    witness_of_parts(parts, Some(marker), compiled, None)
}

/// As [`synthesize_compiled_pieces`], but a, b and c are left to the backend
/// ([`CompiledCircuit::deferred_witness`]): the parts' assignments only, unchecked (the
/// backend checks them as it evaluates), `first_unsatisfied` None and `products` zero.
pub fn synthesize_compiled_pieces_deferred<C: Circuit<Scalar> + Send>(
    parts: Vec<C>,
    marker: &'static str,
    compiled: &std::sync::Arc<CompiledCircuit>,
) -> Result<Result<CompiledWitness, CompiledMismatch>, SynthesisError> {
    witness_of_parts(parts, Some(marker), compiled, Some(compiled))
}

/// As [`synthesize_compiled`], a, b and c left to the backend (see
/// [`synthesize_compiled_pieces_deferred`]).
pub fn synthesize_compiled_deferred<C: Circuit<Scalar> + Send>(
    circuit: C,
    compiled: &std::sync::Arc<CompiledCircuit>,
) -> Result<Result<CompiledWitness, CompiledMismatch>, SynthesisError> {
    witness_of_parts(vec![circuit], None, compiled, Some(compiled))
}

/// Synthesizes `circuit` for its assignments only and evaluates a, b, c from `compiled`:
/// equal to [`PartitionWitness::synthesize`] for a circuit of the compiled structure, with
/// its first unsatisfied constraint (checked in the same pass). Counts that differ from
/// the recording are refused.
pub fn synthesize_compiled<C: Circuit<Scalar> + Send>(
    circuit: C,
    compiled: &CompiledCircuit,
) -> Result<Result<CompiledWitness, CompiledMismatch>, SynthesisError> {
    witness_of_parts(vec![circuit], None, compiled, None)
}

/// `defer`: the compiled circuit again, shared, when a, b and c are left to the backend.
pub(super) fn witness_of_parts<C: Circuit<Scalar> + Send>(
    parts: Vec<C>,
    marker: Option<&'static str>,
    compiled: &CompiledCircuit,
    defer: Option<&std::sync::Arc<CompiledCircuit>>,
) -> Result<Result<CompiledWitness, CompiledMismatch>, SynthesisError> {
    let t0 = std::time::Instant::now();
    let count = parts.len();
    if let Some(layout) = compiled.layout.as_ref().filter(|l| count > 1 && l.parts.len() == count && IN_PLACE.load(std::sync::atomic::Ordering::Relaxed)) {
        match witness_in_place(parts, marker, compiled, layout, t0, defer)? {
            InPlace::Done(w) => return Ok(Ok(w)),
            InPlace::Apart(runs) => return witness_of_runs(runs, compiled, t0, t0.elapsed(), count, defer),
        }
    }
    // Each part: the common prefix and its share of the pieces. Room for half as much again
    // as an even share costs address space only (untouched pages are never backed).
    let aux_room = if count <= 1 { compiled.num_aux } else { compiled.num_aux.div_ceil(count) * 3 / 2 };
    let runs = run_parts::<C, false>(parts, marker, aux_room)?;
    let assign = t0.elapsed();
    witness_of_runs(runs, compiled, t0, assign, count, defer)
}

/// The phased path's join, count check and products, for parts already synthesized.
pub(super) fn witness_of_runs(
    runs: Vec<AssignmentCs<false>>,
    compiled: &CompiledCircuit,
    t0: std::time::Instant,
    assign: std::time::Duration,
    count: usize,
    defer: Option<&std::sync::Arc<CompiledCircuit>>,
) -> Result<Result<CompiledWitness, CompiledMismatch>, SynthesisError> {
    let joined = join(runs)?;
    let join_time = t0.elapsed() - assign;
    // One `x * 0 = 0` constraint per input, as the reference appends.
    let constraints = joined.constraints + joined.inputs.len();
    if (joined.inputs.len(), joined.aux.len(), constraints)
        != (compiled.num_inputs, compiled.num_aux, compiled.num_constraints())
    {
        return Ok(Err(CompiledMismatch {
            want_inputs: compiled.num_inputs,
            want_aux: compiled.num_aux,
            want_constraints: compiled.num_constraints(),
            inputs: joined.inputs.len(),
            aux: joined.aux.len(),
            constraints,
        }));
    }
    let (witness, first_unsatisfied) = match defer {
        Some(shared) => (shared.deferred_witness(joined.inputs, joined.aux), None),
        None => compiled.witness_checked(joined.inputs, joined.aux),
    };
    let timings =
        CompiledTimings { assign, join: join_time, products: t0.elapsed() - assign - join_time, parts: count, in_place: false };
    log::debug!("compiled synthesis: {timings:?}");
    Ok(Ok(CompiledWitness { witness, first_unsatisfied, timings }))
}

/// What [`witness_in_place`] gives: the witness, or (when some part's counts differ from the
/// recording's layout, as another split of the same circuit's pieces has) every part's
/// assignments for the phased path: those written in place read back out of the whole.
pub(super) enum InPlace {
    Done(CompiledWitness),
    Apart(Vec<AssignmentCs<false>>),
}

/// What one part's task left: nothing (written in place; `inside`: every row it wrote read
/// only its own columns), or its constraint system (its counts differ from the layout).
pub(super) enum PartDone {
    Written { inside: bool },
    Kept(AssignmentCs<false>),
}

/// The parts synthesized in parallel as [`witness_of_parts`] does, but each part, as soon as
/// it is done, copies its share of inputs and aux into the whole's vectors and evaluates its
/// own rows of a, b and c there, reading its own assignments (the pieces do not depend on
/// one another: a row of part j reads the prefix and part j's columns). So there is no join
/// and no products stage waiting for the slowest part, and each part's memory is freed
/// when it is done. The layout's places come from the recording; a part whose counts differ
/// is kept whole, and then every part goes the phased way. A row that reads a column that is
/// not its part's (a circuit of another structure with the same counts) is evaluated again
/// from the whole, so the result is always the phased path's.
pub(super) fn witness_in_place<C: Circuit<Scalar> + Send>(
    parts: Vec<C>,
    marker: Option<&'static str>,
    compiled: &CompiledCircuit,
    layout: &PartLayout,
    t0: std::time::Instant,
    defer: Option<&std::sync::Arc<CompiledCircuit>>,
) -> Result<InPlace, SynthesisError> {
    use crate::hugepages::vec_with_capacity;
    use std::mem::MaybeUninit;
    use std::sync::atomic::AtomicUsize;
    let (ni, na, n) = (compiled.num_inputs, compiled.num_aux, compiled.num_constraints());
    let prefix = layout.prefix;
    let to = layout.offsets();
    let mut inputs: Vec<Scalar> = Vec::with_capacity(ni);
    let mut aux: Vec<Scalar> = vec_with_capacity(na);
    // Room for the H step's pad to the domain (hugepages::domain_capacity). Deferred: only
    // the rows' slices are cut from it (address space; nothing is written, so no page is
    // backed), and no row is evaluated.
    let evaluate = defer.is_none();
    let mut abc: [Vec<Scalar>; 3] = std::array::from_fn(|_| vec_with_capacity(crate::hugepages::domain_capacity(n)));
    let first_bad = AtomicUsize::new(usize::MAX);
    // Each part's slices of the whole, in order; the input constraints' rows are left.
    type Slices<'a> = (&'a mut [MaybeUninit<Scalar>], &'a mut [MaybeUninit<Scalar>], [&'a mut [MaybeUninit<Scalar>]; 3]);
    let outcomes: Vec<PartDone>;
    {
        let (mut ins, mut auxs) = (&mut inputs.spare_capacity_mut()[..ni], &mut aux.spare_capacity_mut()[..na]);
        let mut rows: [&mut [MaybeUninit<Scalar>]; 3] = {
            let mut it = abc.iter_mut().map(|v| &mut v.spare_capacity_mut()[..n]);
            std::array::from_fn(|_| it.next().expect("three"))
        };
        let mut slices: Vec<Slices<'_>> = Vec::with_capacity(layout.parts.len());
        for p in &layout.parts {
            let (i, ri) = std::mem::take(&mut ins).split_at_mut(p.inputs);
            let (x, rx) = std::mem::take(&mut auxs).split_at_mut(p.aux);
            ins = ri;
            auxs = rx;
            let mut own: [&mut [MaybeUninit<Scalar>]; 3] = std::array::from_fn(|_| Default::default());
            for (o, r) in own.iter_mut().zip(rows.iter_mut()) {
                let (h, t) = std::mem::take(r).split_at_mut(p.constraints);
                *o = h;
                *r = t;
            }
            slices.push((i, x, own));
        }
        outcomes = parts
            .into_par_iter()
            .zip(slices)
            .enumerate()
            .map(|(j, (circuit, (dst_in, dst_aux, dst_rows)))| -> Result<PartDone, SynthesisError> {
                let share = layout.parts[j];
                let from = if j == 0 { Counts::default() } else { prefix };
                let mut cs = AssignmentCs::<false>::with_marker(marker);
                cs.aux = vec_with_capacity(from.aux + share.aux);
                cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
                circuit.synthesize(&mut cs)?;
                let own = Counts {
                    inputs: cs.inputs.len().wrapping_sub(from.inputs),
                    aux: cs.aux.len().wrapping_sub(from.aux),
                    constraints: cs.constraints.wrapping_sub(from.constraints),
                };
                let its_prefix = cs.marks.first().map(|m| Counts { inputs: m.inputs, aux: m.aux, constraints: m.constraints });
                if own != share || its_prefix != Some(prefix) {
                    return Ok(PartDone::Kept(cs));
                }
                write_all(dst_in, cs.inputs[from.inputs..].iter().copied());
                const COPY: usize = 1 << 15;
                dst_aux
                    .par_chunks_mut(COPY)
                    .zip(cs.aux[from.aux..].par_chunks(COPY))
                    .for_each(|(d, s)| write_all(d, s.iter().copied()));
                let view = PartView { inputs: &cs.inputs, aux: &cs.aux, num_inputs: ni, prefix, from, to: to[j], own };
                let inside = !evaluate || compiled.eval_rows(to[j].constraints, &view, dst_rows, &first_bad);
                drop(cs);
                Ok(PartDone::Written { inside })
            })
            .collect::<Result<_, _>>()?;
        if !outcomes.iter().any(|o| matches!(o, PartDone::Kept(_))) {
            // SAFETY: every part wrote its whole share (write_all checks each length) and the
            // shares add up to the counts (PartLayout::fits, checked when the layout was made
            // or loaded).
            unsafe {
                inputs.set_len(ni);
                aux.set_len(na);
            }
            let whole = Whole { inputs: &inputs, aux: &aux };
            assert!(!evaluate || compiled.eval_rows(n - ni, &whole, rows, &first_bad), "the whole holds every column");
        }
    }
    if outcomes.iter().any(|o| matches!(o, PartDone::Kept(_))) {
        // Back to the phased path: each part's assignments as its own constraint system
        // would hold them (prefix, then share); those written in place are read back.
        fn read(whole: &[MaybeUninit<Scalar>], at: usize, len: usize) -> Vec<Scalar> {
            // SAFETY: only called for a part written in place, which wrote its share
            // [at, at + len) of the whole.
            unsafe { std::slice::from_raw_parts(whole[at..at + len].as_ptr().cast::<Scalar>(), len) }.to_vec()
        }
        let mut runs = Vec::with_capacity(outcomes.len());
        for (j, o) in outcomes.into_iter().enumerate() {
            runs.push(match o {
                PartDone::Kept(cs) => cs,
                PartDone::Written { .. } => {
                    // A part after the first also holds the prefix, which the join never
                    // reads from it (it takes the first part's): zeros of its length.
                    let share = layout.parts[j];
                    let from = if j == 0 { Counts::default() } else { prefix };
                    let mut cs = AssignmentCs::<false>::with_marker(marker);
                    cs.inputs = vec![Scalar::ZERO; from.inputs];
                    cs.inputs.extend(read(inputs.spare_capacity_mut(), to[j].inputs, share.inputs));
                    cs.aux = vec![Scalar::ZERO; from.aux];
                    cs.aux.extend(read(aux.spare_capacity_mut(), to[j].aux, share.aux));
                    cs.constraints = from.constraints + share.constraints;
                    cs.marks = vec![Mark { inputs: prefix.inputs, aux: prefix.aux, constraints: prefix.constraints, terms: [0; 3] }];
                    cs
                }
            });
        }
        return Ok(InPlace::Apart(runs));
    }
    let assign = t0.elapsed();
    if let Some(shared) = defer {
        let witness = shared.deferred_witness(inputs, aux);
        let timings = CompiledTimings { assign, parts: layout.parts.len(), in_place: true, ..Default::default() };
        log::debug!("compiled synthesis in place, evaluation deferred: {timings:?}");
        return Ok(InPlace::Done(CompiledWitness { witness, first_unsatisfied: None, timings }));
    }
    // SAFETY: every part wrote its rows (eval_rows writes each row it is given) and the tail
    // holds the input constraints' rows; the parts' rows and the tail add up to n.
    for v in abc.iter_mut() {
        unsafe { v.set_len(n) };
    }
    // Rows that read outside their part: evaluated again from the whole.
    let redo: Vec<std::ops::Range<usize>> = outcomes
        .iter()
        .enumerate()
        .filter(|(_, o)| matches!(o, PartDone::Written { inside: false }))
        .map(|(j, _)| to[j].constraints..to[j].constraints + layout.parts[j].constraints)
        .collect();
    if !redo.is_empty() {
        log::warn!("compiled synthesis: {} part(s) read columns outside their own; evaluated again from the whole", redo.len());
        let whole = Whole { inputs: &inputs, aux: &aux };
        let [a, b, c] = &mut abc;
        fn as_uninit(v: &mut [Scalar]) -> &mut [MaybeUninit<Scalar>] {
            // SAFETY: Scalar and MaybeUninit<Scalar> have one layout, and eval_rows writes
            // every element it is given (a valid Scalar) before anything reads it.
            unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<MaybeUninit<Scalar>>(), v.len()) }
        }
        for r in redo {
            let rows = [as_uninit(&mut a[r.clone()]), as_uninit(&mut b[r.clone()]), as_uninit(&mut c[r.clone()])];
            assert!(compiled.eval_rows(r.start, &whole, rows, &first_bad), "the whole holds every column");
        }
    }
    let (witness, bad) = compiled.witness_of(inputs, aux, abc, first_bad.into_inner());
    let timings = CompiledTimings {
        assign,
        join: std::time::Duration::ZERO,
        products: t0.elapsed() - assign,
        parts: layout.parts.len(),
        in_place: true,
    };
    log::debug!("compiled synthesis in place: {timings:?}");
    Ok(InPlace::Done(CompiledWitness { witness, first_unsatisfied: bad, timings }))
}

