//! The encoder: a BERT forward pass (all-MiniLM-L6-v2's: post-norm layers, GELU, absolute
//! positions) written for this one job, on flat `f32` buffers. It computes what candle's
//! `BertModel` computes for the same weights, to within 0.9999 cosine (a unit test holds
//! the two together), faster where the measurements said the time went (`scripts/bench memory`,
//! docs/memoryd.md "The embedder's speed"):
//!
//! - the windows of a pass are packed end to end, not padded to the longest, so the
//!   products run over real tokens only and attention over each window's own length;
//! - every dense layer is one product over all the pass's tokens (candle's `Linear`
//!   multiplies each window separately by a broadcast weight: many small products), and
//!   the query, key and value weights are one matrix, read once;
//! - the dense weights are quantised to 16-bit integers and packed once at load for
//!   `memoryd_kernels::packed`'s integer product (twice float32's multiply-adds an
//!   instruction), which scales the sums back, adds the bias and applies GELU as it
//!   stores (the `gemm` crate packed the weights again on every call, and ran a query's
//!   dozen rows slowly);
//! - attention reads each head's columns where they lie in the fused rows (no transposed
//!   copies), and the scale is folded into the product;
//! - GELU's erf is a polynomial, not a call per element (`memoryd_kernels::math`).
//!
//! The output is each window's mean over its tokens (mean pooling), not yet normalised.

use super::matmul::{product, Mat};
use memoryd_kernels::math::exp;
use memoryd_kernels::packed::{Packed, Then, MAX_INPUTS};
use std::collections::HashMap;

/// The mean of `rows` (`hidden` wide, at least one row).
pub fn mean_of(rows: &[f32], hidden: usize) -> Vec<f32> {
    let mut mean = vec![0f32; hidden];
    for row in rows.chunks_exact(hidden) {
        mean.iter_mut().zip(row).for_each(|(m, x)| *m += x);
    }
    let n = (rows.len() / hidden.max(1)).max(1) as f32;
    mean.iter_mut().for_each(|m| *m /= n);
    mean
}

/// A layer norm: `(x - mean) / sqrt(var + eps) * gamma + beta` over one token's row.
pub struct Norm {
    pub gamma: Vec<f32>,
    pub beta: Vec<f32>,
    pub eps: f32,
}

/// One transformer layer's weights, each dense matrix with its bias packed for the
/// products (`packed`).
pub struct Layer {
    /// Query, key and value side by side: `[hidden × 3·hidden]`.
    pub qkv: Packed,
    pub out: Packed,
    pub attn_norm: Norm,
    pub up: Packed,
    pub down: Packed,
    pub ffn_norm: Norm,
}

pub struct Bert {
    pub hidden: usize,
    pub heads: usize,
    pub inner: usize,
    pub vocab: usize,
    pub max_positions: usize,
    /// `[vocab × hidden]`
    pub words: Vec<f32>,
    /// `[max_positions × hidden]`, with token type 0's row already added (every token is
    /// of type 0: one segment).
    pub positions: Vec<f32>,
    pub embed_norm: Norm,
    pub layers: Vec<Layer>,
}

/// Scratch buffers of one pass, sized to its tokens.
struct Scratch {
    x: Vec<f32>,
    qkv: Vec<f32>,
    ctx: Vec<f32>,
    mid: Vec<f32>,
    up: Vec<f32>,
    scores: Vec<f32>,
}

impl Bert {
    /// The mean of the last layer's token rows for each window (`ids`, special tokens
    /// included, each at most `max_positions` long and not empty), in order.
    pub fn pooled(&self, windows: &[&[u32]]) -> Vec<Vec<f32>> {
        let h = self.hidden;
        let x = self.last_layer(windows);
        let mut out = Vec::with_capacity(windows.len());
        let mut at = 0;
        for w in windows {
            out.push(mean_of(&x[at * h..(at + w.len()) * h], h));
            at += w.len();
        }
        out
    }

    /// The last layer's row of every token of the windows, packed end to end in their
    /// order (`[total tokens × hidden]`): what mean pooling and the token codes
    /// (`late`) are read from.
    pub fn last_layer(&self, windows: &[&[u32]]) -> Vec<f32> {
        let h = self.hidden;
        let total: usize = windows.iter().map(|w| w.len()).sum();
        let longest = windows.iter().map(|w| w.len()).max().unwrap_or(0);
        let mut s = Scratch {
            x: vec![0.0; total * h],
            qkv: vec![0.0; total * 3 * h],
            ctx: vec![0.0; total * h],
            mid: vec![0.0; total * h],
            up: vec![0.0; total * self.inner],
            scores: vec![0.0; longest * longest],
        };
        self.embed(windows, &mut s.x);
        for layer in &self.layers {
            self.layer(layer, windows, total, &mut s);
        }
        s.x
    }

    /// Word plus position (plus type 0) embeddings, normalised. An id past the vocabulary
    /// (a tokenizer that does not match the weights) reads as `[UNK]`'s neighbour 0.
    fn embed(&self, windows: &[&[u32]], x: &mut [f32]) {
        let h = self.hidden;
        let mut rows = x.chunks_exact_mut(h);
        for w in windows {
            for (p, &id) in w.iter().enumerate() {
                let Some(row) = rows.next() else { return };
                let id = (id as usize).min(self.vocab - 1);
                let word = &self.words[id * h..(id + 1) * h];
                let pos = &self.positions[p.min(self.max_positions - 1) * h..][..h];
                for ((r, a), b) in row.iter_mut().zip(word).zip(pos) {
                    *r = a + b;
                }
                norm(row, &self.embed_norm);
            }
        }
    }

    fn layer(&self, l: &Layer, windows: &[&[u32]], total: usize, s: &mut Scratch) {
        let h = self.hidden;
        l.qkv.product(&mut s.qkv, &s.x, total, Then::Store);
        self.attention(windows, &s.qkv, &mut s.ctx, &mut s.scores);
        l.out.product(&mut s.mid, &s.ctx, total, Then::Store);
        for (row, x) in s.mid.chunks_exact_mut(h).zip(s.x.chunks_exact(h)) {
            row.iter_mut().zip(x).for_each(|(m, x)| *m += x);
            norm(row, &l.attn_norm);
        }
        l.up.product(&mut s.up, &s.mid, total, Then::Gelu);
        l.down.product(&mut s.x, &s.up, total, Then::Store);
        for (row, m) in s.x.chunks_exact_mut(h).zip(s.mid.chunks_exact(h)) {
            row.iter_mut().zip(m).for_each(|(x, m)| *x += m);
            norm(row, &l.ffn_norm);
        }
    }

    /// Each window attends to itself only: per head, softmax(Q·Kᵀ / √d) · V into the
    /// head's columns of `ctx`.
    fn attention(&self, windows: &[&[u32]], qkv: &[f32], ctx: &mut [f32], scores: &mut [f32]) {
        let h = self.hidden;
        let d = h / self.heads;
        let scale = 1.0 / (d as f32).sqrt();
        let mut at = 0;
        for w in windows {
            let len = w.len();
            let rows = &qkv[at * 3 * h..(at + len) * 3 * h];
            for head in 0..self.heads {
                let q = Mat::rows(&rows[head * d..], len, d, 3 * h);
                let k = Mat::rows(&rows[h + head * d..], len, d, 3 * h);
                let v = Mat::rows(&rows[2 * h + head * d..], len, d, 3 * h);
                let sc = &mut scores[..len * len];
                product(sc, len, q, k.t(), scale, false);
                for row in sc.chunks_exact_mut(len) {
                    softmax(row);
                }
                let out = &mut ctx[at * h + head * d..(at + len - 1) * h + head * d + d];
                product(out, h, Mat::rows(sc, len, len, len), v, 1.0, false);
            }
            at += len;
        }
    }
}

/// `c = a · b` for row-major `[m × k]` and `[k × n]`, on this thread, through the `gemm`
/// crate (attention's products): the bench's GEMM bound times this.
pub fn gemm_product(c: &mut [f32], a: &[f32], b: &[f32], m: usize, k: usize, n: usize) {
    product(
        c,
        n,
        Mat::rows(a, m, k, k),
        Mat::rows(b, k, n, n),
        1.0,
        false,
    );
}

fn norm(row: &mut [f32], n: &Norm) {
    let len = row.len() as f32;
    let mean = row.iter().sum::<f32>() / len;
    let var = row.iter().map(|x| (x - mean) * (x - mean)).sum::<f32>() / len;
    let inv = 1.0 / (var + n.eps).sqrt();
    for ((x, g), b) in row.iter_mut().zip(&n.gamma).zip(&n.beta) {
        *x = (*x - mean) * inv * g + b;
    }
}

fn softmax(row: &mut [f32]) {
    let max = row.iter().fold(f32::NEG_INFINITY, |m, &x| m.max(x));
    // Its own loop, so it vectorises; the sum after it is a plain reduction.
    row.iter_mut().for_each(|x| *x = exp(*x - max));
    let inv = 1.0 / row.iter().sum::<f32>();
    row.iter_mut().for_each(|x| *x *= inv);
}

/// Weights by name, as the safetensors file holds them (`[out × in]` for a dense layer).
pub type Weights = HashMap<String, (Vec<usize>, Vec<f32>)>;

/// What a weights file lacks or holds wrongly.
pub type LoadError = String;

/// Shapes from the model's `config.json`.
pub struct Shape {
    pub hidden: usize,
    pub heads: usize,
    pub inner: usize,
    pub layers: usize,
    pub eps: f32,
}

impl Bert {
    /// Builds the encoder from the file's weights (names with or without a `bert.`
    /// prefix), transposing each dense matrix once to input-major.
    pub fn from_weights(w: &Weights, shape: &Shape) -> Result<Bert, LoadError> {
        let get = |name: &str, dims: &[usize]| -> Result<&Vec<f32>, LoadError> {
            let (got, data) = w
                .get(name)
                .or_else(|| w.get(&format!("bert.{name}")))
                .ok_or_else(|| format!("no tensor {name}"))?;
            if got != dims {
                return Err(format!("{name} is {got:?}, expected {dims:?}"));
            }
            Ok(data)
        };
        let first = |name: &str| -> Result<(Vec<usize>, &Vec<f32>), LoadError> {
            let (dims, data) = w
                .get(name)
                .or_else(|| w.get(&format!("bert.{name}")))
                .ok_or_else(|| format!("no tensor {name}"))?;
            Ok((dims.clone(), data))
        };
        let (h, i) = (shape.hidden, shape.inner);
        if shape.heads == 0 || h % shape.heads != 0 {
            return Err(format!("{h} dimensions in {} heads", shape.heads));
        }
        // The dense kernel's blocks are a row of inputs wide: an empty layer is a
        // malformed config.json, refused here rather than panicking at the first embed.
        if h == 0 || i == 0 {
            return Err(format!(
                "a layer of {h} by {i}: the model has no dense layers"
            ));
        }
        // The products' integer sums have room for rows this wide and no wider.
        if h.max(i) > MAX_INPUTS {
            return Err(format!(
                "a layer of {h} by {i}: wider than the {MAX_INPUTS} inputs a product takes"
            ));
        }
        let norm = |p: &str| -> Result<Norm, LoadError> {
            Ok(Norm {
                gamma: get(&format!("{p}.LayerNorm.weight"), &[h])?.clone(),
                beta: get(&format!("{p}.LayerNorm.bias"), &[h])?.clone(),
                eps: shape.eps,
            })
        };
        let (wdims, words) = first("embeddings.word_embeddings.weight")?;
        let (pdims, positions) = first("embeddings.position_embeddings.weight")?;
        if wdims.len() != 2 || wdims[1] != h || wdims[0] == 0 {
            return Err(format!("word embeddings are {wdims:?}"));
        }
        if pdims.len() != 2 || pdims[1] != h || pdims[0] == 0 {
            return Err(format!("position embeddings are {pdims:?}"));
        }
        let (tdims, types) = first("embeddings.token_type_embeddings.weight")?;
        if tdims.len() != 2 || tdims[1] != h || tdims[0] == 0 {
            return Err(format!("token type embeddings are {tdims:?}"));
        }
        let mut pos = positions.clone();
        for row in pos.chunks_exact_mut(h) {
            row.iter_mut().zip(&types[..h]).for_each(|(p, t)| *p += t);
        }
        // Not `with_capacity`: the count is config.json's, and a tensor missing for the
        // first absent layer is the error.
        let mut layers = Vec::new();
        for n in 0..shape.layers {
            let p = format!("encoder.layer.{n}");
            let dense = |name: &str, out: usize, inp: usize| -> Result<_, LoadError> {
                let wt = get(&format!("{p}.{name}.weight"), &[out, inp])?;
                let b = get(&format!("{p}.{name}.bias"), &[out])?.clone();
                Ok((transpose(wt, out, inp), b))
            };
            let packed = |name: &str, out: usize, inp: usize| -> Result<Packed, LoadError> {
                let (w, b) = dense(name, out, inp)?;
                Ok(Packed::new(&w, &b, inp, out))
            };
            let (q, qb) = dense("attention.self.query", h, h)?;
            let (k, kb) = dense("attention.self.key", h, h)?;
            let (v, vb) = dense("attention.self.value", h, h)?;
            let mut qkv = Vec::with_capacity(3 * h * h);
            for r in 0..h {
                for m in [&q, &k, &v] {
                    qkv.extend_from_slice(&m[r * h..(r + 1) * h]);
                }
            }
            layers.push(Layer {
                qkv: Packed::new(&qkv, &[qb, kb, vb].concat(), h, 3 * h),
                out: packed("attention.output.dense", h, h)?,
                attn_norm: norm(&format!("{p}.attention.output"))?,
                up: packed("intermediate.dense", i, h)?,
                down: packed("output.dense", h, i)?,
                ffn_norm: norm(&format!("{p}.output"))?,
            });
        }
        Ok(Bert {
            hidden: h,
            heads: shape.heads,
            inner: i,
            vocab: wdims[0],
            max_positions: pdims[0],
            words: words.clone(),
            positions: pos,
            embed_norm: norm("embeddings")?,
            layers,
        })
    }
}

/// `[rows × cols]` row-major to `[cols × rows]` row-major.
fn transpose(m: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut out = vec![0f32; m.len()];
    for r in 0..rows {
        for c in 0..cols {
            out[c * rows + r] = m[r * cols + c];
        }
    }
    out
}
