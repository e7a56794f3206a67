//! Circuits for tests and benchmarks of any backend: synthetic, of a chosen size, with the
//! scalar mix of real Filecoin witnesses.

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar as Fr;
use ff::Field;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// A circuit of exactly `constraints` constraints (after bellperson's input constraints),
/// whose witness mixes zeros, ones and random values, uses inputs in A, B and C, and has aux
/// variables that occur only in C (so the A and B parameter sections are compacted).
#[derive(Clone, Debug)]
pub struct SyntheticCircuit {
    pub constraints: usize,
    pub inputs: Vec<Fr>,
    pub seed: u64,
}

impl Circuit<Fr> for SyntheticCircuit {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut rng = ChaCha20Rng::seed_from_u64(self.seed);
        let inputs: Vec<_> = self
            .inputs
            .iter()
            .enumerate()
            .map(|(i, v)| Ok((cs.alloc_input(|| format!("in{i}"), || Ok(*v))?, *v)))
            .collect::<Result<_, SynthesisError>>()?;
        // ONE + the inputs each get one constraint appended by the prover.
        let own = self.constraints - (self.inputs.len() + 1);
        for i in 0..own {
            let x_val = match rng.gen_range(0..10) {
                0..=3 => Fr::ZERO,
                4..=6 => Fr::ONE,
                _ => Fr::random(&mut rng),
            };
            let y_val = if rng.gen_bool(0.5) { Fr::ONE } else { Fr::random(&mut rng) };
            let x = cs.alloc(|| format!("x{i}"), || Ok(x_val))?;
            // bellperson's generator refuses a variable in no constraint: y only where used.
            let y = if i % 3 != 1 { cs.alloc(|| format!("y{i}"), || Ok(y_val))? } else { x };
            let (input, input_val) = inputs[i % inputs.len()];
            let k = Fr::from((i % 5) as u64);
            match i % 3 {
                // (x + k*input) * y = z
                0 => {
                    let z_val = (x_val + k * input_val) * y_val;
                    let z = cs.alloc(|| format!("z{i}"), || Ok(z_val))?;
                    cs.enforce(|| format!("c{i}"), |lc| lc + x + (k, input), |lc| lc + y, |lc| lc + z);
                }
                // x * (ONE + input) = w
                1 => {
                    let w_val = x_val * (Fr::ONE + input_val);
                    let w = cs.alloc(|| format!("w{i}"), || Ok(w_val))?;
                    cs.enforce(|| format!("c{i}"), |lc| lc + x, |lc| lc + CS::one() + input, |lc| lc + w);
                }
                // y * x = input * 0 + x*y (C mentions an input with coefficient zero)
                _ => {
                    let v = cs.alloc(|| format!("v{i}"), || Ok(x_val * y_val))?;
                    cs.enforce(|| format!("c{i}"), |lc| lc + y, |lc| lc + x, |lc| lc + v + (Fr::ZERO, input));
                }
            }
        }
        Ok(())
    }
}

