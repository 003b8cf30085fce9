//! 8-bit codes for unit vectors, and their scores. A code is each component times its own
//! scale (127 over the largest component) rounded to an `i8`; the score of two codes is
//! their integer dot product divided by both scales, which is the cosine of the original
//! vectors to about three decimals: plenty to rank by, at a quarter of the memory and the
//! scan time of `f32`.

use super::DIM;

/// A vector's code and the inverse of its scale (multiply an integer dot product by it).
#[derive(Debug, Clone, PartialEq)]
pub struct Code {
    pub q: [i8; DIM],
    pub inv_scale: f32,
}

/// Bytes of a stored code: the scale's inverse (`f32`, little-endian) then the components.
pub const CODE_BYTES: usize = 4 + DIM;

pub fn encode(v: &[f32; DIM]) -> Code {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    if max <= f32::MIN_POSITIVE || !max.is_finite() {
        return Code {
            q: [0; DIM],
            inv_scale: 0.0,
        };
    }
    let scale = 127.0 / max;
    let mut q = [0i8; DIM];
    for (out, x) in q.iter_mut().zip(v) {
        // In [-127, 127] by construction; the cast saturates anyway.
        *out = (x * scale).round() as i8;
    }
    Code {
        q,
        inv_scale: max / 127.0,
    }
}

/// The integer dot product of two codes. Written so the compiler vectorises it (widening
/// multiply-add), which keeps a scan of a million codes within tens of milliseconds.
#[inline]
pub fn dot(a: &[i8; DIM], b: &[i8]) -> i32 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| i32::from(i16::from(x) * i16::from(y)))
        .sum()
}

pub fn to_bytes(c: &Code) -> Vec<u8> {
    let mut out = Vec::with_capacity(CODE_BYTES);
    out.extend_from_slice(&c.inv_scale.to_le_bytes());
    out.extend(c.q.iter().map(|&x| x.to_le_bytes()[0]));
    out
}

/// A stored code, or `None` when the blob is not one (a damaged row is re-embedded).
pub fn from_bytes(b: &[u8]) -> Option<Code> {
    if b.len() != CODE_BYTES {
        return None;
    }
    let inv_scale = f32::from_le_bytes(b[..4].try_into().ok()?);
    if !inv_scale.is_finite() || inv_scale < 0.0 {
        return None;
    }
    let mut q = [0i8; DIM];
    for (out, &x) in q.iter_mut().zip(&b[4..]) {
        *out = i8::from_le_bytes([x]);
    }
    Some(Code { q, inv_scale })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(seed: u32) -> [f32; DIM] {
        let mut v = [0f32; DIM];
        let mut s = seed.wrapping_mul(2_654_435_761).max(1);
        for x in v.iter_mut() {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            *x = (s as f32 / u32::MAX as f32) - 0.5;
        }
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter_mut().for_each(|x| *x /= n);
        v
    }

    #[test]
    fn code_scores_match_the_cosine() {
        for seed in 1..50 {
            let (a, b) = (unit(seed), unit(seed + 1000));
            let cos: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            let (ca, cb) = (encode(&a), encode(&b));
            let approx = dot(&ca.q, &cb.q) as f32 * ca.inv_scale * cb.inv_scale;
            assert!((cos - approx).abs() < 0.01, "{cos} vs {approx}");
            let self_score = dot(&ca.q, &ca.q) as f32 * ca.inv_scale * ca.inv_scale;
            assert!((self_score - 1.0).abs() < 0.01, "{self_score}");
        }
    }

    #[test]
    fn stored_bytes_round_trip_and_damage_is_refused() {
        let c = encode(&unit(7));
        assert_eq!(from_bytes(&to_bytes(&c)), Some(c));
        assert_eq!(from_bytes(&[0; 10]), None);
        let mut nan = vec![0u8; CODE_BYTES];
        nan[..4].copy_from_slice(&f32::NAN.to_le_bytes());
        assert_eq!(from_bytes(&nan), None);
    }

    #[test]
    fn a_zero_vector_scores_zero() {
        let z = encode(&[0.0; DIM]);
        let c = encode(&unit(3));
        assert_eq!(dot(&z.q, &c.q) as f32 * z.inv_scale, 0.0);
    }
}
