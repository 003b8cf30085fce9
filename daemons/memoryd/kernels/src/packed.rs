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
mod avx2 {
    use super::{sweep_rows, Packed, Then, MR, NR};
    use std::arch::x86_64::*;
    use std::sync::OnceLock;

    /// Whether this CPU has AVX2 and FMA, asked once.
    pub fn usable() -> bool {
        static USABLE: OnceLock<bool> = OnceLock::new();
        *USABLE.get_or_init(|| {
            std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
        })
    }

    /// A sweep's rows ready for the kernel: each block's `MR` rows interleaved pair of
    /// inputs by pair (one `i32` holds a row's two 16-bit inputs), zero past the last
    /// row; each row's step; and one row's integers on their way.
    #[derive(Default)]
    struct Lhs {
        pairs: Vec<i32>,
        steps: Vec<f32>,
        row: Vec<i16>,
    }

    thread_local! {
        // Kept per thread: allocated anew, its pages were faulted in and zeroed on every
        // call.
        static LHS: std::cell::RefCell<Lhs> = std::cell::RefCell::new(Lhs::default());
    }

    pub fn product(w: &Packed, out: &mut [f32], x: &[f32], m: usize, then: Then) {
        // `run`'s unsafe block rests on this (one cached load a product).
        assert!(
            usable(),
            "the AVX2 kernel called on a CPU without AVX2 and FMA"
        );
        LHS.with_borrow_mut(|lhs| {
            let rows = sweep_rows(w.k).min(m.next_multiple_of(MR));
            // Every element is written before it is read, each sweep; only a longer
            // buffer is allocated (and zeroed) once.
            lhs.pairs.resize(rows * w.pairs, 0);
            lhs.steps.resize(rows, 0.0);
            lhs.row.resize(2 * w.pairs, 0);
            sweeps(w, out, x, m, then, lhs);
        });
    }

    /// The product, a sweep of rows at a time: each sweep's rows quantised and
    /// interleaved into `lhs`, then multiplied by every panel.
    fn sweeps(w: &Packed, out: &mut [f32], x: &[f32], m: usize, then: Then, lhs: &mut Lhs) {
        let (k, n, pairs) = (w.k, w.n, w.pairs);
        let panels = n.div_ceil(NR);
        let sweep = sweep_rows(k);
        let mut tail = [0f32; MR * NR];
        let mut r0 = 0;
        while r0 < m {
            let rows = sweep.min(m - r0);
            let blocks = rows.div_ceil(MR);
            for b in 0..blocks {
                let block = &mut lhs.pairs[b * MR * pairs..][..MR * pairs];
                for r in 0..MR {
                    let at = r0 + b * MR + r;
                    let step = if at < r0 + rows {
                        // The padding input of an odd `k` stays zero.
                        lhs.row[k..].fill(0);
                        quantise(w, &x[at * k..][..k], &mut lhs.row[..k])
                    } else {
                        lhs.row.fill(0);
                        0.0
                    };
                    lhs.steps[b * MR + r] = step;
                    for (i, two) in lhs.row.chunks_exact(2).enumerate() {
                        // Low half the even input, as `vpmaddwd` pairs them.
                        block[i * MR + r] =
                            i32::from(two[0] as u16) | (i32::from(two[1] as u16) << 16);
                    }
                }
            }
            for p in 0..panels {
                let cols = NR.min(n - p * NR);
                let panel = &w.data[p * pairs * 2 * NR..][..pairs * 2 * NR];
                let scale = &w.scale[p * NR..][..NR];
                let bias = &w.bias[p * NR..][..NR];
                let mut r = r0;
                while r < r0 + rows {
                    let block = MR.min(r0 + rows - r);
                    let a = &lhs.pairs[(r - r0) * pairs..][..MR * pairs];
                    let steps = &lhs.steps[r - r0..][..block];
                    let ends = Ends { scale, bias, then };
                    if cols == NR {
                        let at = r * n + p * NR;
                        let dst = &mut out[at..at + (block - 1) * n + NR];
                        run(a, pairs, panel, steps, &ends, dst, n);
                    } else {
                        // The last, partial panel: a whole block into `tail`, its
                        // columns copied out.
                        run(a, pairs, panel, steps, &ends, &mut tail, NR);
                        for b in 0..block {
                            out[(r + b) * n + p * NR..][..cols]
                                .copy_from_slice(&tail[b * NR..][..cols]);
                        }
                    }
                    r += block;
                }
            }
            r0 += rows;
        }
    }

    /// `Packed::quantise` in vector instructions (it was a fifth of a pass as a plain
    /// loop, `round` being a call per input): the same integers and step.
    fn quantise(w: &Packed, row: &[f32], into: &mut [i16]) -> f32 {
        assert_eq!(row.len(), into.len(), "a row and its integers");
        debug_assert!(usable(), "the AVX2 quantising called on a CPU without AVX2");
        // SAFETY: `usable()` was asserted by `product`, the only caller's caller; every
        // access is inside `row` and `into`, of the same length (asserted).
        unsafe { quantise_avx2(w, row, into) }
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn quantise_avx2(w: &Packed, row: &[f32], into: &mut [i16]) -> f32 {
        let k = row.len();
        let whole = k / 16 * 16;
        let sign = _mm256_set1_ps(-0.0);
        // `max(|x|, m)` keeps `m` where `x` is a non-number, as the plain fold does.
        let mut most = _mm256_setzero_ps();
        for i in (0..whole).step_by(8) {
            let x = _mm256_loadu_ps(row.as_ptr().add(i));
            most = _mm256_max_ps(_mm256_andnot_ps(sign, x), most);
        }
        let mut lanes = [0f32; 8];
        _mm256_storeu_ps(lanes.as_mut_ptr(), most);
        let most =
            row[whole..]
                .iter()
                .chain(&lanes)
                .fold(0f32, |m, x| if x.abs() > m { x.abs() } else { m });
        let Some(to) = w.steps_in(most) else {
            into.fill(0);
            return 0.0;
        };
        let tv = _mm256_set1_ps(to);
        for i in (0..whole).step_by(16) {
            let load = |at: usize| {
                let x = _mm256_loadu_ps(row.as_ptr().add(at));
                // Non-numbers to zero: the conversion would make them i32::MIN.
                let x = _mm256_and_ps(x, _mm256_cmp_ps::<_CMP_ORD_Q>(x, x));
                // Rounds to nearest, ties to even (the default rounding mode).
                _mm256_cvtps_epi32(_mm256_mul_ps(x, tv))
            };
            // Packing works within each 128-bit half: the permute puts the 16 back
            // in order.
            let packed = _mm256_packs_epi32(load(i), load(i + 8));
            let ordered = _mm256_permute4x64_epi64::<0b11_01_10_00>(packed);
            _mm256_storeu_si256(into.as_mut_ptr().add(i).cast(), ordered);
        }
        for (q, x) in into[whole..].iter_mut().zip(&row[whole..]) {
            *q = super::round(x * to);
        }
        most / w.input_max
    }

    /// What a block's sums become as they are stored: times the row's step and the
    /// column's `scale`, plus `bias`, then `then`.
    struct Ends<'a> {
        scale: &'a [f32],
        bias: &'a [f32],
        then: Then,
    }

    /// One block of `steps.len()` (1 to `MR`) rows, their `pairs` input pairs
    /// interleaved as `MR` rows, by one panel.
    fn run(
        a: &[i32],
        pairs: usize,
        panel: &[i16],
        steps: &[f32],
        ends: &Ends,
        dst: &mut [f32],
        dst_stride: usize,
    ) {
        let rows = steps.len();
        assert!(
            (1..=MR).contains(&rows)
                && a.len() >= pairs * MR
                && panel.len() >= pairs * 2 * NR
                && ends.scale.len() >= NR
                && ends.bias.len() >= NR
                && dst.len() >= (rows - 1) * dst_stride + NR,
            "a product block out of its slices"
        );
        // SAFETY: `usable()` was true (the caller checked it), so the CPU has the
        // instructions the kernels are compiled for; the assert above keeps every read
        // and write of `kernel` inside these slices (`a`: `pairs` groups of `MR`;
        // `panel`: `pairs` rows of `2·NR`; `steps`: `R`; `scale`, `bias`: `NR`; `dst`:
        // `R` rows of `NR`, `dst_stride` apart).
        unsafe {
            let (a, p, d) = (a.as_ptr(), panel.as_ptr(), dst.as_mut_ptr());
            let s = steps.as_ptr();
            let ds = dst_stride;
            match rows {
                1 => kernel::<1>(a, pairs, p, s, ends, d, ds),
                2 => kernel::<2>(a, pairs, p, s, ends, d, ds),
                3 => kernel::<3>(a, pairs, p, s, ends, d, ds),
                4 => kernel::<4>(a, pairs, p, s, ends, d, ds),
                5 => kernel::<5>(a, pairs, p, s, ends, d, ds),
                _ => kernel::<6>(a, pairs, p, s, ends, d, ds),
            }
        }
    }

    /// `R` rows of `a` (input pairs interleaved by `MR`) times `pairs` pairs of one
    /// panel's rows, in 32-bit integer sums (twelve at most, in registers), scaled into
    /// `R` rows of `NR` floats at `dst` (`dst_stride` apart).
    #[target_feature(enable = "avx2,fma")]
    unsafe fn kernel<const R: usize>(
        a: *const i32,
        pairs: usize,
        panel: *const i16,
        steps: *const f32,
        ends: &Ends,
        dst: *mut f32,
        dst_stride: usize,
    ) {
        let mut acc = [[_mm256_setzero_si256(); 2]; R];
        for i in 0..pairs {
            let w0 = _mm256_loadu_si256(panel.add(i * 2 * NR).cast());
            let w1 = _mm256_loadu_si256(panel.add(i * 2 * NR + NR).cast());
            for (r, acc) in acc.iter_mut().enumerate() {
                let v = _mm256_set1_epi32(*a.add(i * MR + r));
                acc[0] = _mm256_add_epi32(acc[0], _mm256_madd_epi16(v, w0));
                acc[1] = _mm256_add_epi32(acc[1], _mm256_madd_epi16(v, w1));
            }
        }
        let s0 = _mm256_loadu_ps(ends.scale.as_ptr());
        let s1 = _mm256_loadu_ps(ends.scale.as_ptr().add(8));
        let b0 = _mm256_loadu_ps(ends.bias.as_ptr());
        let b1 = _mm256_loadu_ps(ends.bias.as_ptr().add(8));
        for (r, acc) in acc.iter().enumerate() {
            let step = _mm256_set1_ps(*steps.add(r));
            let d = dst.add(r * dst_stride);
            let v0 = _mm256_cvtepi32_ps(acc[0]);
            let v1 = _mm256_cvtepi32_ps(acc[1]);
            _mm256_storeu_ps(d, _mm256_fmadd_ps(v0, _mm256_mul_ps(step, s0), b0));
            _mm256_storeu_ps(d.add(8), _mm256_fmadd_ps(v1, _mm256_mul_ps(step, s1), b1));
            if ends.then == Then::Gelu {
                // In place while the row is in L1; `gelu` is inlined here, so this loop
                // is compiled with AVX2 too.
                for v in std::slice::from_raw_parts_mut(d, NR) {
                    *v = crate::math::gelu(*v);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schoolbook(w: &[f32], bias: &[f32], x: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
        let mut out = vec![0f32; m * n];
        for r in 0..m {
            for c in 0..n {
                out[r * n + c] = bias[c] + (0..k).map(|i| x[r * k + i] * w[i * n + c]).sum::<f32>();
            }
        }
        out
    }

    #[test]
    fn packed_products_match_the_schoolbook_product_for_every_row_count_and_a_partial_panel() {
        check(37, 2 * NR + 5, &[1, 2, 5, MR, MR + 1, 3 * MR + 4]);
    }

    #[test]
    fn rows_past_one_sweep_are_multiplied_like_the_first() {
        // Wide enough rows that a sweep holds fewer than the rows asked for.
        let k = 1600;
        let m = sweep_rows(k) + MR + 1;
        assert!(m > sweep_rows(k));
        check(k, NR + 3, &[m]);
    }

    #[test]
    fn a_row_of_tiny_inputs_or_a_column_of_tiny_weights_stays_inside_its_integer_bounds() {
        // Steps of a row below about 1e-35 overflow to infinity; a column's step below
        // `MIN_POSITIVE` is subnormal. Either used to give integers past their bounds
        // (and sums that wrapped); both now count as zeros.
        let k = 384;
        let w = vec![1f32; k * NR];
        let packed = Packed::new(&w, &[0.5; NR], k, NR);
        let mut x = vec![0f32; 2 * k];
        x[..k].fill(1e-36);
        x[k] = -1e-36;
        let mut q = vec![0i16; k];
        for row in x.chunks_exact(k) {
            assert_eq!(packed.quantise(row, &mut q), 0.0);
            assert!(q.iter().all(|&v| v == 0));
        }
        let mut got = vec![f32::NAN; 2 * NR];
        packed.product(&mut got, &x, 2, Then::Store);
        let mut slow = vec![f32::NAN; 2 * NR];
        plain(&packed, &mut slow, &x, 2, Then::Store);
        assert!(
            got.iter().chain(&slow).all(|&v| v == 0.5),
            "{got:?} {slow:?}"
        );

        let tiny = Packed::new(&[1534.0 * f32::from_bits(1), 1.0], &[0.0; 2], 1, 2);
        assert!(tiny.data.iter().all(|&v| i32::from(v).abs() <= WEIGHT_MAX));
    }

    #[test]
    fn the_widest_rows_allowed_still_have_inputs_of_many_steps() {
        assert!(input_max(MAX_INPUTS) >= 32);
        assert!(input_max(1536) == 1366 && input_max(384) == 5466);
    }

    #[test]
    fn the_largest_inputs_times_the_largest_weights_do_not_wrap_the_integer_sums() {
        // Every input at its row's largest and every weight at its column's: each sum
        // is `k · input_max · WEIGHT_MAX`, the most `input_max` allows.
        for k in [384, 1536, 1537] {
            let w = vec![-1f32; k * NR];
            let x = vec![1f32; 2 * k];
            let packed = Packed::new(&w, &[0.0; NR], k, NR);
            let mut got = vec![0f32; 2 * NR];
            packed.product(&mut got, &x, 2, Then::Store);
            let mut slow = vec![0f32; 2 * NR];
            plain(&packed, &mut slow, &x, 2, Then::Store);
            for (g, s) in got.iter().zip(&slow) {
                assert!((g + k as f32).abs() < 1e-3 * k as f32, "k {k}: {g}");
                assert!((s + k as f32).abs() < 1e-3 * k as f32, "k {k}, plain: {s}");
            }
        }
    }

    #[test]
    fn a_row_of_zeros_or_of_non_numbers_gives_the_bias_not_garbage() {
        let (k, n) = (8, NR);
        let w: Vec<f32> = (0..k * n).map(|x| (x as f32 * 0.3).sin()).collect();
        let bias: Vec<f32> = (0..n).map(|x| x as f32).collect();
        let packed = Packed::new(&w, &bias, k, n);
        let mut x = vec![0f32; 2 * k];
        x[k + 3] = f32::NAN;
        let mut got = vec![f32::NAN; 2 * n];
        packed.product(&mut got, &x, 2, Then::Store);
        assert_eq!(&got[..n], &bias[..], "zeros");
        assert_eq!(&got[n..], &bias[..], "a non-number");
    }

    fn check(k: usize, n: usize, rows: &[usize]) {
        let w: Vec<f32> = (0..k * n).map(|x| (x as f32 * 0.37).sin()).collect();
        let bias: Vec<f32> = (0..n).map(|x| (x as f32 * 0.7).cos()).collect();
        let packed = Packed::new(&w, &bias, k, n);
        for &m in rows {
            let x: Vec<f32> = (0..m * k).map(|x| (x as f32 * 0.11).cos()).collect();
            let want = schoolbook(&w, &bias, &x, m, k, n);
            let mut got = vec![f32::NAN; m * n];
            packed.product(&mut got, &x, m, Then::Store);
            let mut slow = vec![f32::NAN; m * n];
            plain(&packed, &mut slow, &x, m, Then::Store);
            // Each of the `k` terms is off by at most half a step of its input and of its
            // weight (inputs and weights here are at most 1): rounding, not a wrong sum.
            let tol = k as f32 * (0.5 / WEIGHT_MAX as f32 + 0.5 / input_max(k) as f32 + 1e-6);
            for (i, ((g, s), w)) in got.iter().zip(&slow).zip(&want).enumerate() {
                assert!((g - w).abs() < tol, "m {m}, element {i}: {g} vs {w}");
                // The same integer sums: only the scaling back may round differently.
                assert!(
                    (g - s).abs() <= 1e-5 * w.abs().max(1.0),
                    "plain, m {m}, element {i}: {s} vs {g}"
                );
            }
            packed.product(&mut got, &x, m, Then::Gelu);
            plain(&packed, &mut slow, &x, m, Then::Gelu);
            for (i, (g, s)) in got.iter().zip(&slow).enumerate() {
                assert!(
                    (g - s).abs() <= 1e-5 * s.abs().max(1.0),
                    "gelu, m {m}, element {i}: {g} vs {s}"
                );
            }
        }
    }
}
