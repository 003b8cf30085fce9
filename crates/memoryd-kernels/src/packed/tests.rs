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
