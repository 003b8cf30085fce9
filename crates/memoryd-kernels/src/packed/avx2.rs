//! The product in AVX2 instructions: each sweep's rows quantised and interleaved for
//! the kernel, and the kernel that keeps a block of sums in registers. Chosen at run
//! time (`usable`); `super::plain` does the same sums elsewhere.

use super::{sweep_rows, Packed, Then, MR, NR};
use std::arch::x86_64::*;
use std::sync::OnceLock;

/// Whether this CPU has AVX2 and FMA, asked once.
pub fn usable() -> bool {
    static USABLE: OnceLock<bool> = OnceLock::new();
    *USABLE.get_or_init(|| {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
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
                    block[i * MR + r] = i32::from(two[0] as u16) | (i32::from(two[1] as u16) << 16);
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
    let most = row[whole..]
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
