//! Elementwise functions of the encoder, written so a loop of them vectorises: GELU's
//! erf by a polynomial and `exp` by its exponent bits, with no call per element.

/// GELU with the exact (erf) form BERT was trained with: `x/2 · (1 + erf(x/√2))`.
/// Inlined into the products' store, where it is compiled with their instructions.
#[inline(always)]
pub fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// erf to within 1.5e-7 (Abramowitz and Stegun 7.1.26), far below what moves a vector.
/// Branch-free, with `exp` below, so a loop of it vectorises.
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    const P: f32 = 0.327_591_1;
    const A: [f32; 5] = [
        0.254_829_6,
        -0.284_496_74,
        1.421_413_8,
        -1.453_152_1,
        1.061_405_4,
    ];
    let ax = x.abs();
    let t = 1.0 / (1.0 + P * ax);
    let poly = t * (A[0] + t * (A[1] + t * (A[2] + t * (A[3] + t * A[4]))));
    let y = 1.0 - poly * exp(-ax * ax);
    y.copysign(x)
}

/// e^x to within 2e-7 relative for the arguments here (softmax's, at most 0, and erf's,
/// `-x²`), without a call: `std`'s `exp` is a libm call per element, which no loop
/// vectorises, and GELU and softmax took a sixth of a pass through it. 2^n by the
/// exponent bits, e^r for |r| ≤ ln2/2 by its Taylor polynomial to r⁶.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    /// Past these e^x is 0 or overflows `f32`.
    const LOW: f32 = -87.0;
    const HIGH: f32 = 88.0;
    /// Adding and taking away 1.5·2²³ rounds to the nearest integer (in the default
    /// rounding mode) with plain float adds, which vectorise where `round` does not.
    const ROUND: f32 = 12_582_912.0;
    const LN2_HI: f32 = 0.693_145_75;
    const LN2_LO: f32 = 1.428_606_8e-6;
    let x = x.clamp(LOW, HIGH);
    let rounded = x * std::f32::consts::LOG2_E + ROUND;
    let n = rounded - ROUND;
    let r = x - n * LN2_HI - n * LN2_LO;
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0))))));
    // n as an integer from `rounded`'s low mantissa bits, not by a float-to-int cast
    // (Rust's saturating cast keeps the loop from vectorising); then 2^n by its bits.
    let n_int = rounded.to_bits().wrapping_sub(ROUND.to_bits());
    p * f32::from_bits(n_int.wrapping_add(127) << 23)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_known_values() {
        for (x, want) in [
            (0.0f32, 0.0f32),
            (0.5, 0.520_499_9),
            (1.0, 0.842_700_8),
            (-1.5, -0.966_105_1),
            (3.0, 0.999_977_9),
        ] {
            assert!((erf(x) - want).abs() < 3e-7, "erf({x}) = {}", erf(x));
        }
    }

    #[test]
    fn exp_matches_std_over_softmax_and_erf_arguments() {
        // Below -87 the result is held at e^-87 (1.6e-38): nothing a sum notices.
        let mut x = -87.0f32;
        while x <= 0.0 {
            let (got, want) = (exp(x), x.exp());
            assert!(
                (got - want).abs() <= 3e-7 * want + f32::MIN_POSITIVE,
                "exp({x}) = {got}, std {want}"
            );
            x += 0.0137;
        }
    }
}
