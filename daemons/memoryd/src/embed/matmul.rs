//! Matrix products for the encoder (`bert`): one safe wrapper around the `gemm` crate, the
//! kernels candle's CPU backend calls, on row-major `f32` slices read through strides, so
//! a head's slice of the fused query/key/value rows is multiplied where it lies, with no
//! copy. Every product runs on the calling thread: the caller chooses the threads.

/// A matrix read from a slice: element (r, c) is `data[r * row + c * col]`.
#[derive(Clone, Copy)]
pub struct Mat<'a> {
    pub data: &'a [f32],
    pub rows: usize,
    pub cols: usize,
    pub row: usize,
    pub col: usize,
}

impl<'a> Mat<'a> {
    /// A row-major matrix of `rows` × `cols` starting at `data[0]`, rows `stride` apart.
    pub fn rows(data: &'a [f32], rows: usize, cols: usize, stride: usize) -> Mat<'a> {
        Mat {
            data,
            rows,
            cols,
            row: stride,
            col: 1,
        }
    }

    /// This matrix transposed (no copy: the strides swap).
    pub fn t(self) -> Mat<'a> {
        Mat {
            data: self.data,
            rows: self.cols,
            cols: self.rows,
            row: self.col,
            col: self.row,
        }
    }

    /// Whether every element lies inside `data`.
    fn fits(&self) -> bool {
        // Checked: a wrapped product would pass the test and let `gemm` out of the slice.
        self.rows == 0
            || self.cols == 0
            || ((self.rows - 1).checked_mul(self.row))
                .zip((self.cols - 1).checked_mul(self.col))
                .and_then(|(r, c)| r.checked_add(c))
                .is_some_and(|last| last < self.data.len())
    }
}

/// `out = scale · a · b`, or `out += scale · a · b` when `accumulate`; `out` is row-major
/// with rows `out_stride` apart. Panics when the shapes disagree or a matrix does not lie
/// inside its slice: those are the encoder's own mistakes, never the input's.
pub fn product(out: &mut [f32], out_stride: usize, a: Mat, b: Mat, scale: f32, accumulate: bool) {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    assert_eq!(b.rows, k, "inner dimensions of a matrix product");
    assert!(
        a.fits() && b.fits(),
        "a matrix product's operand out of its slice"
    );
    assert!(
        m == 0
            || n == 0
            || ((m - 1).checked_mul(out_stride))
                .and_then(|r| r.checked_add(n))
                .is_some_and(|end| end <= out.len()),
        "a matrix product's result out of its slice"
    );
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        if !accumulate {
            for r in 0..m {
                out[r * out_stride..r * out_stride + n].fill(0.0);
            }
        }
        return;
    }
    let is = |x: usize| isize::try_from(x).unwrap_or(isize::MAX);
    // SAFETY: the asserts above keep every element read or written inside its slice
    // (the last element of each matrix is in bounds and strides are non-negative), the
    // output is borrowed mutably so it overlaps neither input, and the product runs on
    // this thread (`Parallelism::None`), so the borrows outlive every access.
    #[allow(unsafe_code)]
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            out.as_mut_ptr(),
            1,
            is(out_stride),
            accumulate,
            a.data.as_ptr(),
            is(a.col),
            is(a.row),
            b.data.as_ptr(),
            is(b.col),
            is(b.row),
            1.0,
            scale,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(a: Mat, b: Mat) -> Vec<f32> {
        let mut out = vec![0f32; a.rows * b.cols];
        for r in 0..a.rows {
            for c in 0..b.cols {
                out[r * b.cols + c] = (0..a.cols)
                    .map(|i| a.data[r * a.row + i * a.col] * b.data[i * b.row + c * b.col])
                    .sum();
            }
        }
        out
    }

    #[test]
    fn strided_and_transposed_products_match_the_schoolbook_product() {
        let a: Vec<f32> = (0..60).map(|x| (x as f32 * 0.37).sin()).collect();
        let b: Vec<f32> = (0..80).map(|x| (x as f32 * 0.11).cos()).collect();
        // a: 3 × 4 inside rows of 20 (a head's columns in the fused rows); b: its 5 × 4
        // block read transposed, as the keys are in attention.
        let am = Mat::rows(&a[2..], 3, 4, 20);
        let bm = Mat::rows(&b, 5, 4, 16).t();
        let want = naive(am, bm);
        let mut out = vec![1f32; 3 * 7];
        product(&mut out, 7, am, bm, 0.5, false);
        for r in 0..3 {
            for c in 0..5 {
                let got = out[r * 7 + c];
                assert!((got - 0.5 * want[r * 5 + c]).abs() < 1e-5, "{got}");
            }
            assert_eq!(out[r * 7 + 5], 1.0, "columns past the result untouched");
        }
        product(&mut out, 7, am, bm, 0.5, true);
        assert!((out[0] - want[0]).abs() < 1e-5, "accumulated");
    }
}
