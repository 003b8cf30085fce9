//! The dense layers' products: each weight matrix quantised and packed once, at load,
//! into column panels the product reads front to back, and the product over them.
//!
//! The `gemm` crate (memoryd's `embed::matmul`) packs its right-hand side, here the
//! weights, again on every call, and its blocking is tuned for large products: a query's
//! dozen rows ran at a fraction of its speed on a pass's 512 (docs/memoryd.md, "The
//! embedder's speed"). Packed once, the weights are read by one small kernel that keeps a
//! block of `MR` × `NR` sums in registers while it walks a panel; the same kernel serves a
//! query's few rows and a backfill pass's hundreds.
//!
//! The sums are integer. Each weight column is scaled to 16-bit integers of at most
//! `WEIGHT_MAX`, and each input row, as a product starts, to 16-bit integers as large as
//! the row's length allows without a sum leaving 32 bits (`input_max`). AVX2 multiplies
//! sixteen such pairs and adds them in pairs in one instruction (`vpmaddwd`), twice the
//! multiply-adds of a float32 FMA: the float32 kernel ran at this machine's float32 matrix
//! speed and the products were three quarters of a pass, so this is where a pass gets
//! faster. The result is scaled back by the row's and the column's scale, the bias added
//! and GELU, when asked, applied as the block is stored. The vectors stay within 0.9999
//! cosine of float32's, and the recall benchmarks rank as before (docs/memoryd.md, "The
//! embedder's speed").
//!
//! On x86-64 with AVX2 (checked at run time) the kernel is written with its instructions;
//! elsewhere a plain loop does the same integer sums (the results differ only in the
//! float rounding of the scaling back).

/// Columns in a panel: two vectors of eight 32-bit sums.
pub const NR: usize = 16;

/// Rows in a block: six rows of two vectors are 12 accumulators, which with the two
/// weight vectors, a broadcast input pair and a product fill the 16 vector registers of
/// AVX2.
pub const MR: usize = 6;

/// The largest magnitude of a quantised weight: 10 bits and a sign. Each column keeps
/// its own scale, so this is its relative precision (1/1023 of its largest weight); what
/// the sums' 32 bits leave is the inputs' (`input_max`). Chosen by measuring the
/// vectors against float32 on the encoder test's texts: the least cosine was 0.99960 at
/// 255, 0.99989 at 511, 0.99995 at 1023, 0.99990 at 2047 (there the inputs' steps grow
/// too coarse).
pub const WEIGHT_MAX: i32 = 1023;

/// Bytes of the left-hand rows one sweep over the panels reuses: the rows are read
/// again for every panel, so a sweep takes as many rows as keep inside half a core's
/// 512 kB L2, the panel being read (up to 48 kB) beside them.
const ROWS_BYTES: usize = 256 * 1024;

/// The widest rows a product takes: far past any sentence model's (all-MiniLM-L6-v2's
/// widest are 1 536), and narrow enough that `input_max` still leaves the inputs 32
/// steps each side. The encoder's loader refuses wider layers; `Packed::new` panics on
/// them.
pub const MAX_INPUTS: usize = 65_536;

/// The largest magnitude of a quantised input for rows of `k` inputs: `k` products of a
/// weight and an input, each at most `WEIGHT_MAX` times this, must sum inside an `i32`
/// (and this must fit an `i16`). 1 366 for the model's 1 536-wide rows, 5 466 for its
/// 384-wide ones: finer than the weights' steps, as the rows' outliers need.
pub fn input_max(k: usize) -> i32 {
    let pairs = k.div_ceil(2).max(1) as i64;
    let bound = i64::from(i32::MAX) / (2 * pairs * i64::from(WEIGHT_MAX));
    bound.clamp(1, i64::from(i16::MAX)) as i32
}

/// A `[k × n]` weight matrix (input-major, as the products read it), each column scaled
/// to integers, in panels of `NR` columns: panel `p` holds, for every pair of inputs
/// `i`, the `NR` columns' two weights side by side at `data[(p·pairs + i)·2·NR..]`
/// (`vpmaddwd`'s operand order); past `n` columns and past `k` inputs the weights are
/// zero. Each column's scale and bias are kept beside it, padded the same way.
pub struct Packed {
    k: usize,
    n: usize,
    pairs: usize,
    data: Vec<i16>,
    /// What one step of a column's integers is worth.
    scale: Vec<f32>,
    bias: Vec<f32>,
    /// `input_max(k)`, as a float for the rows' scaling.
    input_max: f32,
}

/// What is done to each result before it is stored.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Then {
    /// Stored as summed (bias included).
    Store,
    /// GELU (the erf form) of the sum.
    Gelu,
}

impl Packed {
    /// Quantises and packs row-major `w` (`[k × n]`) with its bias (`n` long).
    pub fn new(w: &[f32], bias: &[f32], k: usize, n: usize) -> Packed {
        // The AVX2 path's blocks are a pair of inputs wide at least (the loader refuses
        // empty layers).
        assert!(k > 0, "a weight matrix with no inputs");
        // Wider, and the sums could leave 32 bits (`input_max`).
        assert!(k <= MAX_INPUTS, "a weight matrix wider than MAX_INPUTS");
        assert_eq!(w.len(), k * n, "a weight matrix's size");
        assert_eq!(bias.len(), n, "a bias's size");
        let panels = n.div_ceil(NR);
        let pairs = k.div_ceil(2);
        let mut scale = vec![0f32; panels * NR];
        for (c, s) in scale.iter_mut().enumerate().take(n) {
            let most = (0..k).map(|i| w[i * n + c].abs()).fold(0f32, f32::max);
            // A column of zeros (or of non-numbers) is all zeros; so is one so small
            // that its step would be a subnormal float, which cannot hold `most`'s
            // precision (a weight could then round past `WEIGHT_MAX`).
            *s = if most.is_finite() && most >= WEIGHT_MAX as f32 * f32::MIN_POSITIVE {
                most / WEIGHT_MAX as f32
            } else {
                0.0
            };
        }
        let mut data = vec![0i16; panels * pairs * 2 * NR];
        for p in 0..panels {
            for c in 0..NR.min(n - p * NR) {
                let col = p * NR + c;
                let s = scale[col];
                for i in 0..k {
                    let q = if s > 0.0 {
                        (w[i * n + col] / s).round() as i16
                    } else {
                        0
                    };
                    data[(p * pairs + i / 2) * 2 * NR + 2 * c + i % 2] = q;
                }
            }
        }
        let mut padded = vec![0f32; panels * NR];
        padded[..n].copy_from_slice(bias);
        Packed {
            k,
            n,
            pairs,
            data,
            scale,
            bias: padded,
            input_max: input_max(k) as f32,
        }
    }

    /// `out = then(x · W + bias)` for the `m` rows of `x` (`[m × k]`, row-major), `out`
    /// row-major `[m × n]`. Panics when the slices are too short: the encoder's own
    /// mistake, never the input's.
    pub fn product(&self, out: &mut [f32], x: &[f32], m: usize, then: Then) {
        let (k, n) = (self.k, self.n);
        assert!(x.len() >= m * k, "a product's rows out of their slice");
        assert!(out.len() >= m * n, "a product's result out of its slice");
        if m == 0 || n == 0 {
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if avx2::usable() {
            avx2::product(self, out, x, m, then);
            return;
        }
        plain(self, out, x, m, then);
    }

    /// Row `row` (`k` inputs) as integers of at most `input_max` into `into` (`k`
    /// long), and what one step of them is worth. A row of zeros, or one with an
    /// infinite input, is all zeros worth nothing; a non-number input counts as zero.
    /// The AVX2 path's `quantise` gives the same integers.
    fn quantise(&self, row: &[f32], into: &mut [i16]) -> f32 {
        let most = row
            .iter()
            .fold(0f32, |m, x| if x.abs() > m { x.abs() } else { m });
        let Some(to) = self.steps_in(most) else {
            into.fill(0);
            return 0.0;
        };
        for (q, x) in into.iter_mut().zip(row) {
            *q = round(x * to);
        }
        most / self.input_max
    }

    /// How many steps one unit of a row whose largest magnitude is `most` is worth, if
    /// the row is to be quantised at all (every input then lands inside `input_max`).
    fn steps_in(&self, most: f32) -> Option<f32> {
        // A row so small that its steps overflow to infinity (below about 1e-35) is as
        // good as zeros: its product is the bias to float32's precision anyway.
        let to = self.input_max / most;
        (most.is_finite() && most > 0.0 && to.is_finite()).then_some(to)
    }
}

/// `x` to the nearest integer, ties to even (as the vector conversion rounds), as an
/// `i16`; a non-number is 0. The callers keep `x` inside `input_max`.
fn round(x: f32) -> i16 {
    x.round_ties_even() as i16
}

/// Rows per sweep over the panels, for `k` inputs a row (two bytes each).
fn sweep_rows(k: usize) -> usize {
    (ROWS_BYTES / (2 * k.max(1))).max(MR) / MR * MR
}

/// The same sums without vector instructions: a reference and a fallback.
fn plain(w: &Packed, out: &mut [f32], x: &[f32], m: usize, then: Then) {
    let (k, n) = (w.k, w.n);
    let mut q = vec![0i16; 2 * w.pairs];
    for r in 0..m {
        let step = w.quantise(&x[r * k..][..k], &mut q[..k]);
        for p in 0..n.div_ceil(NR) {
            let mut acc = [0i32; NR];
            let panel = &w.data[p * w.pairs * 2 * NR..][..w.pairs * 2 * NR];
            for (pair, wp) in q.chunks_exact(2).zip(panel.chunks_exact(2 * NR)) {
                for (c, a) in acc.iter_mut().enumerate() {
                    *a += i32::from(pair[0]) * i32::from(wp[2 * c])
                        + i32::from(pair[1]) * i32::from(wp[2 * c + 1]);
                }
            }
            let cols = NR.min(n - p * NR);
            let dst = &mut out[r * n + p * NR..][..cols];
            for (c, d) in dst.iter_mut().enumerate() {
                let col = p * NR + c;
                let v = acc[c] as f32 * (step * w.scale[col]) + w.bias[col];
                *d = match then {
                    Then::Store => v,
                    Then::Gelu => crate::math::gelu(v),
                };
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx2;

#[cfg(test)]
mod tests;
