//! The sentence-embedding model, in process: all-MiniLM-L6-v2 (a 6-layer BERT) read from a
//! sentence-transformers directory (`config.json`, `model.safetensors`, `tokenizer.json`,
//! `1_Pooling/config.json`, `modules.json`), run with candle on the CPU, then mean pooling
//! over the real tokens and L2 normalisation, as the directory's pooling config and its
//! `Normalize` module say. A directory that asks for another pooling is refused rather
//! than embedded wrongly.

use super::{EmbedError, DIM};
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokenizers::{Tokenizer, TruncationParams};

/// Word pieces per text, `[CLS]` and `[SEP]` included: the model's `max_seq_length`
/// (sentence_bert_config.json). Past it the text is cut, as sentence-transformers does.
pub const MAX_TOKENS: usize = 256;

/// Characters of a text handed to the tokenizer. 256 word pieces are rarely more than
/// 2 000 characters of English; tokenizing a whole 1 MiB record only to cut it to 256
/// pieces would cost time and memory for nothing.
pub const MAX_TEXT_CHARS: usize = 4_096;

/// The largest weights file read. all-MiniLM-L6-v2's is 91 MB; the whole file is read into
/// memory, so a wrong path pointing at something huge is refused instead.
pub const MAX_WEIGHTS_BYTES: u64 = 512 * 1024 * 1024;

/// The largest tokenizer or config file read (the tokenizer is 466 kB).
pub const MAX_SMALL_BYTES: u64 = 16 * 1024 * 1024;

/// A loaded model. Cloning shares it, so the worker thread and the recall path hold one
/// copy of the weights between them.
#[derive(Clone)]
pub struct Embedder {
    inner: Arc<Inner>,
}

struct Inner {
    bert: BertModel,
    tokenizer: Tokenizer,
    dir: PathBuf,
    /// What the weights are, by content: see `fingerprint`.
    fingerprint: String,
}

impl Embedder {
    /// Loads the model in `dir`. Every failure names the file.
    pub fn load(dir: &Path) -> Result<Embedder, EmbedError> {
        let file = |name: &str| dir.join(name);
        let bad = |path: PathBuf, why: String| EmbedError::Model { path, why };

        let pooling: serde_json::Value =
            json(&file("1_Pooling/config.json")).map_err(|(p, w)| bad(p, w))?;
        if pooling.get("pooling_mode_mean_tokens") != Some(&serde_json::Value::Bool(true)) {
            return Err(bad(
                file("1_Pooling/config.json"),
                "only mean pooling (pooling_mode_mean_tokens) is supported".into(),
            ));
        }
        let modules = read_small(&file("modules.json")).map_err(|(p, w)| bad(p, w))?;
        if !String::from_utf8_lossy(&modules).contains("models.Normalize") {
            return Err(bad(
                file("modules.json"),
                "no Normalize module: vectors would not be unit length".into(),
            ));
        }
        let config: Config =
            serde_json::from_slice(&read_small(&file("config.json")).map_err(|(p, w)| bad(p, w))?)
                .map_err(|e| bad(file("config.json"), e.to_string()))?;
        let dim = pooling
            .get("word_embedding_dimension")
            .and_then(serde_json::Value::as_u64);
        if dim != Some(DIM as u64) {
            return Err(bad(
                file("1_Pooling/config.json"),
                format!("word_embedding_dimension is {dim:?}, memoryd stores {DIM}"),
            ));
        }

        let mut tokenizer =
            Tokenizer::from_bytes(read_small(&file("tokenizer.json")).map_err(|(p, w)| bad(p, w))?)
                .map_err(|e| bad(file("tokenizer.json"), e.to_string()))?;
        // The shipped tokenizer.json pads every text to 128 and cuts there; we pad each
        // batch to its longest text ourselves and cut at the model's own limit.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..TruncationParams::default()
            }))
            .map_err(|e| bad(file("tokenizer.json"), e.to_string()))?;

        let weights_path = file("model.safetensors");
        let weights = read_bounded(&weights_path, MAX_WEIGHTS_BYTES).map_err(|(p, w)| bad(p, w))?;
        let fingerprint = format!(
            "crc32 {:08x} of {} bytes, {DIM} dimensions",
            crc32fast::hash(&weights),
            weights.len()
        );
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)
            .map_err(|e| bad(weights_path.clone(), e.to_string()))?;
        let bert = BertModel::load(vb, &config).map_err(|e| bad(weights_path, e.to_string()))?;
        Ok(Embedder {
            inner: Arc::new(Inner {
                bert,
                tokenizer,
                dir: dir.to_path_buf(),
                fingerprint,
            }),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// The weights by content (a CRC-32 of the file as read once at load, and its size):
    /// another file at the same path, or the same file elsewhere, is told apart by what
    /// it holds, so stored codes are kept exactly while they were made by these weights.
    pub fn fingerprint(&self) -> &str {
        &self.inner.fingerprint
    }

    /// One unit-length vector per text, in order.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<[f32; DIM]>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let run = |why: String| EmbedError::Run { why };
        let mut ids: Vec<Vec<u32>> = Vec::with_capacity(texts.len());
        for text in texts {
            let enc = self
                .inner
                .tokenizer
                .encode(clip(text, MAX_TEXT_CHARS), true)
                .map_err(|e| run(e.to_string()))?;
            ids.push(enc.get_ids().to_vec());
        }
        let len = ids.iter().map(Vec::len).max().unwrap_or(0).max(1);
        let mut flat_ids = Vec::with_capacity(ids.len() * len);
        let mut flat_mask = Vec::with_capacity(ids.len() * len);
        for row in &ids {
            flat_ids.extend_from_slice(row);
            flat_ids.resize(flat_ids.len() + len - row.len(), 0);
            flat_mask.extend(std::iter::repeat_n(1u32, row.len()));
            flat_mask.resize(flat_mask.len() + len - row.len(), 0);
        }
        let shape = (ids.len(), len);
        let forward = || -> candle_core::Result<Vec<Vec<f32>>> {
            let input = Tensor::from_vec(flat_ids, shape, &Device::Cpu)?;
            let mask = Tensor::from_vec(flat_mask, shape, &Device::Cpu)?;
            let types = input.zeros_like()?;
            let out = self.inner.bert.forward(&input, &types, Some(&mask))?;
            // Mean over the real tokens only: padding must not pull the mean.
            let maskf = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
            let summed = out.broadcast_mul(&maskf)?.sum(1)?;
            let counts = maskf.sum(1)?;
            let mean = summed.broadcast_div(&counts)?;
            let norm = mean.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12, f32::MAX)?;
            mean.broadcast_div(&norm)?.to_vec2::<f32>()
        };
        let rows = forward().map_err(|e| run(e.to_string()))?;
        rows.into_iter()
            .map(|row| {
                <[f32; DIM]>::try_from(row.as_slice()).map_err(|_| {
                    run(format!(
                        "the model gave {} dimensions, not {DIM}",
                        row.len()
                    ))
                })
            })
            .collect()
    }
}

/// The first `max` characters of `text`.
fn clip(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

fn json(path: &Path) -> Result<serde_json::Value, (PathBuf, String)> {
    serde_json::from_slice(&read_small(path)?).map_err(|e| (path.to_path_buf(), e.to_string()))
}

fn read_small(path: &Path) -> Result<Vec<u8>, (PathBuf, String)> {
    read_bounded(path, MAX_SMALL_BYTES)
}

/// Reads a regular file of at most `max` bytes. Runs on the worker thread, so blocking
/// reads are fine here; a FIFO or device at the path is refused, not waited on.
fn read_bounded(path: &Path, max: u64) -> Result<Vec<u8>, (PathBuf, String)> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let err = |e: std::io::Error| (path.to_path_buf(), e.to_string());
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
        .open(path)
        .map_err(err)?;
    let meta = file.metadata().map_err(err)?;
    if !meta.is_file() {
        return Err((path.to_path_buf(), "not a regular file".into()));
    }
    if meta.len() > max {
        return Err((
            path.to_path_buf(),
            format!("{} bytes, more than the {max} allowed", meta.len()),
        ));
    }
    let mut out = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(max + 1).read_to_end(&mut out).map_err(err)?;
    if out.len() as u64 > max {
        return Err((
            path.to_path_buf(),
            format!("more than the {max} bytes allowed"),
        ));
    }
    Ok(out)
}
