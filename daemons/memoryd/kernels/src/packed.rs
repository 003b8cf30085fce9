//! The dense layers' products: each weight matrix packed once, at load, into column
//! panels the product reads front to back, and the product over them.
//!
//! The `gemm` crate (memoryd's `embed::matmul`) packs its right-hand side, here the weights, again on
//! every call, and its blocking is tuned for large products: a query's dozen rows ran at
//! a fraction of its speed on a pass's 512 (docs/memoryd.md, "The embedder's speed").
//! Packed once, the weights are read by one small kernel that keeps a block of
//! `MR` × `NR` results in registers while it walks a panel; the same kernel serves a
//! query's few rows (every panel read once from memory, every weight used for each row)
//! and a backfill pass's hundreds. The bias is the accumulators' starting value, and
//! GELU, when asked, is applied to the block before it is stored: no extra pass over the
//! results for either.
//!
//! On x86-64 with AVX2 and FMA (checked at run time) the kernel is written with their
//! instructions; elsewhere a plain loop over the same panels does the same sums.

/// Columns in a panel: two 8-wide vectors.
pub const NR: usize = 16;

/// Rows in a block: six rows of two vectors are 12 accumulators, which with the two
/// weight vectors and a broadcast row value fill the 16 vector registers of AVX2.
pub const MR: usize = 6;

/// Bytes of the left-hand rows one sweep over the panels reuses: the rows are read
/// again for every panel, so a sweep takes as many rows as keep inside half a core's
/// 512 kB L2, the panel being read (up to 96 kB) beside them. A block runs over all
/// its inputs at once: splitting them (so a panel's part fits L1) measured no faster,
/// and slower at a pass's 512 rows.
const ROWS_BYTES: usize = 256 * 1024;

/// A `[k × n]` weight matrix (input-major, as the products read it) in panels of `NR`
/// columns: panel `p` holds columns `p·NR..(p+1)·NR` for every input `i` at
/// `data[(p·k + i)·NR..][..NR]`; past `n` the columns are zero. The bias is kept beside
/// it, padded the same way.
pub struct Packed {
    k: usize,
    n: usize,
    data: Vec<f32>,
    bias: Vec<f32>,
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
    /// Packs row-major `w` (`[k × n]`) with its bias (`n` long).
    pub fn new(w: &[f32], bias: &[f32], k: usize, n: usize) -> Packed {
        // The AVX2 path's blocks are `k` inputs wide (the loader refuses empty layers).
        assert!(k > 0, "a weight matrix with no inputs");
        assert_eq!(w.len(), k * n, "a weight matrix's size");
        assert_eq!(bias.len(), n, "a bias's size");
        let panels = n.div_ceil(NR);
        let mut data = vec![0f32; panels * k * NR];
        for p in 0..panels {
            let cols = NR.min(n - p * NR);
            for i in 0..k {
                let from = &w[i * n + p * NR..][..cols];
                data[(p * k + i) * NR..][..cols].copy_from_slice(from);
            }
        }
        let mut padded = vec![0f32; panels * NR];
        padded[..n].copy_from_slice(bias);
        Packed {
            k,
            n,
            data,
            bias: padded,
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
}

/// Rows per sweep over the panels, for `k` inputs a row.
fn sweep_rows(k: usize) -> usize {
    (ROWS_BYTES / (4 * k.max(1))).max(MR) / MR * MR
}

/// The same sums without vector instructions: a reference and a fallback.
fn plain(w: &Packed, out: &mut [f32], x: &[f32], m: usize, then: Then) {
    let (k, n) = (w.k, w.n);
    for r in 0..m {
        let row = &x[r * k..][..k];
        for p in 0..n.div_ceil(NR) {
            let mut acc = [0f32; NR];
            acc.copy_from_slice(&w.bias[p * NR..][..NR]);
            let panel = &w.data[p * k * NR..][..k * NR];
            for (xi, wi) in row.iter().zip(panel.chunks_exact(NR)) {
                acc.iter_mut().zip(wi).for_each(|(a, w)| *a += xi * w);
            }
            let cols = NR.min(n - p * NR);
            let dst = &mut out[r * n + p * NR..][..cols];
            for (d, a) in dst.iter_mut().zip(acc) {
                *d = match then {
                    Then::Store => a,
                    Then::Gelu => crate::math::gelu(a),
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

    pub fn product(w: &Packed, out: &mut [f32], x: &[f32], m: usize, then: Then) {
        // `run`'s unsafe block rests on this (one cached load a product).
        assert!(
            usable(),
            "the AVX2 kernel called on a CPU without AVX2 and FMA"
        );
        let k = w.k;
        let sweep = sweep_rows(k);
        // The sweep's rows, a block's `MR` rows interleaved input by input, so the
        // kernel reads them front to back; zero past the last row. Kept per thread:
        // allocated anew, its pages were faulted in and zeroed on every call.
        LHS.with_borrow_mut(|lhs| {
            lhs.clear();
            lhs.resize(sweep.min(m.next_multiple_of(MR)) * k, 0.0);
            sweeps(w, out, x, m, then, lhs);
        });
    }

    thread_local! {
        static LHS: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
    }

    /// The product, a sweep of rows at a time: each sweep's rows interleaved into `lhs`,
    /// then multiplied by every panel.
    fn sweeps(w: &Packed, out: &mut [f32], x: &[f32], m: usize, then: Then, lhs: &mut [f32]) {
        let (k, n) = (w.k, w.n);
        let panels = n.div_ceil(NR);
        let sweep = sweep_rows(k);
        let mut tail = [0f32; MR * NR];
        let mut r0 = 0;
        while r0 < m {
            let rows = sweep.min(m - r0);
            for (b, block) in lhs.chunks_exact_mut(MR * k).enumerate() {
                if b * MR >= rows {
                    break;
                }
                let first = r0 + b * MR;
                let real = MR.min(r0 + rows - first);
                // Written front to back, read from the block's rows side by side.
                for (i, group) in block.chunks_exact_mut(MR).enumerate() {
                    for (r, v) in group.iter_mut().enumerate() {
                        *v = if r < real {
                            x[(first + r) * k + i]
                        } else {
                            0.0
                        };
                    }
                }
            }
            for p in 0..panels {
                let cols = NR.min(n - p * NR);
                let panel = &w.data[p * k * NR..][..k * NR];
                let bias = &w.bias[p * NR..][..NR];
                let mut r = r0;
                while r < r0 + rows {
                    let block = MR.min(r0 + rows - r);
                    let a = &lhs[(r - r0) * k..][..MR * k];
                    if cols == NR {
                        let at = r * n + p * NR;
                        let dst = &mut out[at..at + (block - 1) * n + NR];
                        run(block, a, k, panel, bias, dst, n, then);
                    } else {
                        // The last, partial panel: a whole block into `tail`, its
                        // columns copied out.
                        run(block, a, k, panel, bias, &mut tail, NR, then);
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

    /// One block of `rows` (1 to `MR`) rows, their `depth` inputs interleaved as `MR`
    /// rows, by one panel.
    #[allow(clippy::too_many_arguments)]
    fn run(
        rows: usize,
        a: &[f32],
        depth: usize,
        panel: &[f32],
        bias: &[f32],
        dst: &mut [f32],
        dst_stride: usize,
        then: Then,
    ) {
        assert!(
            (1..=MR).contains(&rows)
                && a.len() >= depth * MR
                && panel.len() >= depth * NR
                && bias.len() >= NR
                && dst.len() >= (rows - 1) * dst_stride + NR,
            "a product block out of its slices"
        );
        // SAFETY: `usable()` was true (the caller checked it), so the CPU has the
        // instructions the kernels are compiled for; the assert above keeps every read
        // and write of `kernel` inside these slices (`a`: `depth` groups of `MR`;
        // `panel`: `depth` rows of `NR`; `dst`: `R` rows of `NR`, `dst_stride` apart).
        unsafe {
            let (a, p, b, d) = (a.as_ptr(), panel.as_ptr(), bias.as_ptr(), dst.as_mut_ptr());
            let ds = dst_stride;
            match rows {
                1 => kernel::<1>(a, depth, p, b, d, ds, then),
                2 => kernel::<2>(a, depth, p, b, d, ds, then),
                3 => kernel::<3>(a, depth, p, b, d, ds, then),
                4 => kernel::<4>(a, depth, p, b, d, ds, then),
                5 => kernel::<5>(a, depth, p, b, d, ds, then),
                _ => kernel::<6>(a, depth, p, b, d, ds, then),
            }
        }
    }

    /// `R` rows of `a` (interleaved by `MR`) times `depth` rows of one panel, plus the
    /// bias, into `R` rows of `NR` at `dst` (`dst_stride` apart). Twelve accumulators
    /// at most, in registers.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn kernel<const R: usize>(
        a: *const f32,
        depth: usize,
        panel: *const f32,
        bias: *const f32,
        dst: *mut f32,
        dst_stride: usize,
        then: Then,
    ) {
        let b0 = _mm256_loadu_ps(bias);
        let b1 = _mm256_loadu_ps(bias.add(8));
        let mut acc = [[b0, b1]; R];
        for i in 0..depth {
            let w0 = _mm256_loadu_ps(panel.add(i * NR));
            let w1 = _mm256_loadu_ps(panel.add(i * NR + 8));
            for (r, acc) in acc.iter_mut().enumerate() {
                let v = _mm256_broadcast_ss(&*a.add(i * MR + r));
                acc[0] = _mm256_fmadd_ps(v, w0, acc[0]);
                acc[1] = _mm256_fmadd_ps(v, w1, acc[1]);
            }
        }
        for (r, acc) in acc.iter().enumerate() {
            let d = dst.add(r * dst_stride);
            _mm256_storeu_ps(d, acc[0]);
            _mm256_storeu_ps(d.add(8), acc[1]);
            if then == Then::Gelu {
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

    fn check(k: usize, n: usize, rows: &[usize]) {
        let w: Vec<f32> = (0..k * n).map(|x| (x as f32 * 0.37).sin()).collect();
        let bias: Vec<f32> = (0..n).map(|x| (x as f32 * 0.7).cos()).collect();
        let packed = Packed::new(&w, &bias, k, n);
        // Sums of `k` terms of size one: float32 rounding grows with `k`.
        let tol = 1e-6 * k as f32;
        for &m in rows {
            let x: Vec<f32> = (0..m * k).map(|x| (x as f32 * 0.11).cos()).collect();
            let want = schoolbook(&w, &bias, &x, m, k, n);
            let mut got = vec![f32::NAN; m * n];
            packed.product(&mut got, &x, m, Then::Store);
            let mut slow = vec![f32::NAN; m * n];
            plain(&packed, &mut slow, &x, m, Then::Store);
            for (i, ((g, s), w)) in got.iter().zip(&slow).zip(&want).enumerate() {
                assert!((g - w).abs() < tol, "m {m}, element {i}: {g} vs {w}");
                assert!((s - w).abs() < tol, "plain, m {m}, element {i}: {s} vs {w}");
            }
            packed.product(&mut got, &x, m, Then::Gelu);
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                let w = crate::math::gelu(*w);
                assert!((g - w).abs() < tol, "gelu, m {m}, element {i}: {g} vs {w}");
            }
        }
    }
}
