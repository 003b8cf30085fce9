//! The sentence-embedding model, in process: all-MiniLM-L6-v2 (a 6-layer BERT) read from a
//! sentence-transformers directory (`config.json`, `model.safetensors`, `tokenizer.json`,
//! `1_Pooling/config.json`, `modules.json`), run on the CPU by `bert` (weights read by
//! `safetensors`, shapes from `config.json` as `BertConfig`), then mean pooling over the real tokens and L2
//! normalisation, as the directory's pooling config and its `Normalize` module say. A
//! directory that asks for another pooling is refused rather than embedded wrongly.

use super::bert::{mean_of, Bert, Shape, Weights};
use super::bits::Bits;
use super::late::{self, MAX_PIECES};
use super::{safetensors, EmbedError, DIM};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokenizers::Tokenizer;

/// Word pieces per text, `[CLS]` and `[SEP]` included: the model's `max_seq_length`
/// (sentence_bert_config.json). Past it the text is cut, as sentence-transformers does.
pub const MAX_TOKENS: usize = 256;

/// How a record becomes its vector, named so that vectors kept elsewhere (the bench's
/// cache) are recomputed when it changes.
pub const METHOD: &str =
    "all-minilm-l6-v2 windows 256/32, mean, 16-bit integer products, signed pieces";

/// Word pieces two neighbouring windows of a long record share, so a sentence cut by one
/// window's end is whole in the next.
pub const WINDOW_OVERLAP: usize = 32;

/// Word pieces run through the model together. A pass packs its windows end to end (no
/// padding), so its dense layers are products of this many rows: the shape the bench's
/// GEMM bound times, where the matrix kernels run at full speed (a query's dozen rows are
/// bound by reading the weights from memory once instead). More only grows the buffers,
/// some 13 kB a word piece. Not swept further (docs/memoryd.md "The embedder's speed").
/// A longer window is a pass of its own.
pub const PASS_TOKENS: usize = 512;

/// Characters of a text handed to the tokenizer: about eight windows of English. A record
/// is embedded whole, in windows of `MAX_TOKENS` (`embed`), so this bounds what one
/// record costs; past it a pasted document is known by its first pages.
pub const MAX_TEXT_CHARS: usize = 8_192;

/// The largest weights file read. all-MiniLM-L6-v2's is 91 MB; the whole file is read into
/// memory, so a wrong path pointing at something huge is refused instead.
pub const MAX_WEIGHTS_BYTES: u64 = 512 * 1024 * 1024;

/// The largest tokenizer or config file read (the tokenizer is 466 kB).
pub const MAX_SMALL_BYTES: u64 = 16 * 1024 * 1024;

/// What memoryd reads of the model's `config.json` (a Hugging Face BERT config); the
/// other keys are ignored. The activation and the position embeddings are kept as the
/// file spells them, so one the encoder does not run is refused by name (`encoder`).
#[derive(serde::Deserialize)]
pub struct BertConfig {
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub hidden_act: String,
    pub layer_norm_eps: f64,
    /// Absent in older configs, which meant absolute positions.
    #[serde(default = "absolute")]
    pub position_embedding_type: String,
}

fn absolute() -> String {
    "absolute".into()
}

/// A loaded model. Cloning shares it, so the worker thread and the recall path hold one
/// copy of the weights between them.
#[derive(Clone)]
pub struct Embedder {
    inner: Arc<Inner>,
}

struct Inner {
    bert: Bert,
    tokenizer: Tokenizer,
    /// The `[CLS]` and `[SEP]` ids each window is wrapped in.
    cls: u32,
    sep: u32,
    /// By id: the word piece is punctuation only, and is no piece of a record or a
    /// question for late interaction (`late`).
    punctuation: Vec<bool>,
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
        let config: BertConfig =
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
        // pass to its longest text ourselves and cut long texts into windows.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(None)
            .map_err(|e| bad(file("tokenizer.json"), e.to_string()))?;
        let special = |t: &str| {
            tokenizer
                .token_to_id(t)
                .ok_or_else(|| bad(file("tokenizer.json"), format!("no {t} token")))
        };
        let (cls, sep) = (special("[CLS]")?, special("[SEP]")?);
        let size = tokenizer.get_vocab_size(true);
        let punctuation = (0..size)
            .map(|id| {
                tokenizer
                    .id_to_token(id as u32)
                    .is_some_and(|t| !t.is_empty() && t.chars().all(|c| c.is_ascii_punctuation()))
            })
            .collect();

        let weights_path = file("model.safetensors");
        let weights = read_bounded(&weights_path, MAX_WEIGHTS_BYTES).map_err(|(p, w)| bad(p, w))?;
        let fingerprint = format!(
            "crc32 {:08x} of {} bytes, {DIM} dimensions",
            crc32fast::hash(&weights),
            weights.len()
        );
        let bert = encoder(&weights, &config).map_err(|e| bad(weights_path, e))?;
        drop(weights);
        Ok(Embedder {
            inner: Arc::new(Inner {
                bert,
                tokenizer,
                cls,
                sep,
                punctuation,
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

    /// One vector and its pieces per record, in order: what the index stores for a row.
    pub fn embed_records(&self, texts: &[&str]) -> Result<Vec<Embedding>, EmbedError> {
        self.run(texts, 1, true)
    }

    /// `embed_records` on `threads` threads (`embed_on`): what the worker runs.
    pub fn embed_records_on(
        &self,
        texts: &[&str],
        threads: usize,
    ) -> Result<Vec<Embedding>, EmbedError> {
        self.run(texts, threads, true)
    }

    /// One unit-length vector per text, in order. A text longer than the model's window
    /// is cut into overlapping windows, each embedded, and its vector is their mean (made
    /// unit length again): the whole record is searchable by meaning, as one hit.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<[f32; DIM]>, EmbedError> {
        self.embed_on(texts, 1)
    }

    /// `embed` with the windows shared among `threads` threads, each a like number of
    /// word pieces, each thread running its share in passes of about `PASS_TOKENS` on
    /// its own core.
    pub fn embed_on(&self, texts: &[&str], threads: usize) -> Result<Vec<[f32; DIM]>, EmbedError> {
        Ok(self
            .run(texts, threads, false)?
            .into_iter()
            .map(|e| e.vector)
            .collect())
    }

    /// A question's vector and its content pieces for late interaction: its word pieces
    /// but punctuation and function words (`query::stop::is_function_word`), whose rows
    /// say little of what is asked; with none left, every piece but punctuation.
    pub fn embed_question(&self, text: &str) -> Result<([f32; DIM], late::Question), EmbedError> {
        let run = |why: String| EmbedError::Run { why };
        let enc = self
            .inner
            .tokenizer
            .encode(clip(text, MAX_TEXT_CHARS), false)
            .map_err(|e| run(e.to_string()))?;
        let ids = enc.get_ids();
        let tokens = enc.get_tokens();
        let windows = self.windows(ids);
        let Some(window) = windows.first() else {
            return Err(run("no window".into()));
        };
        let rows = self.inner.bert.last_layer(&[window]);
        // A question of one window (nearly every one) is embedded by the same pass; a
        // longer one by all its windows, as a record is.
        let vector = if windows.len() == 1 {
            let mut v = [0f32; DIM];
            v.iter_mut()
                .zip(&mean_of(&rows, DIM))
                .for_each(|(o, x)| *o = *x);
            unit(v)
        } else {
            self.embed(&[text])?
                .into_iter()
                .next()
                .unwrap_or([0.0; DIM])
        };
        let h = DIM;
        let piece = |i: usize| -> Option<Vec<f32>> {
            // Position i + 1 in the window: [CLS] comes first.
            let row = rows.get((i + 1) * h..(i + 2) * h)?;
            Some(row.to_vec())
        };
        let body = window.len().saturating_sub(2);
        let words: Vec<usize> = (0..body.min(ids.len()))
            .filter(|&i| !self.is_punctuation(ids[i]))
            .collect();
        let content: Vec<usize> = words
            .iter()
            .copied()
            .filter(|&i| {
                let t = tokens.get(i).map_or("", String::as_str);
                t.starts_with("##") || !crate::query::stop::is_function_word(t)
            })
            .collect();
        let chosen = if content.is_empty() { words } else { content };
        let rows: Vec<Vec<f32>> = chosen.into_iter().filter_map(piece).collect();
        Ok((vector, late::Question::new(&rows)))
    }

    fn is_punctuation(&self, id: u32) -> bool {
        self.inner
            .punctuation
            .get(id as usize)
            .copied()
            .unwrap_or(false)
    }

    /// The vectors (and, with `pieces`, each record's pieces) of `texts`, the windows
    /// shared among `threads` threads.
    fn run(
        &self,
        texts: &[&str],
        threads: usize,
        pieces: bool,
    ) -> Result<Vec<Embedding>, EmbedError> {
        let run = |why: String| EmbedError::Run { why };
        // (text, window's ids with [CLS] and [SEP])
        let mut windows: Vec<(usize, Vec<u32>)> = Vec::with_capacity(texts.len());
        for (i, text) in texts.iter().enumerate() {
            let enc = self
                .inner
                .tokenizer
                .encode(clip(text, MAX_TEXT_CHARS), false)
                .map_err(|e| run(e.to_string()))?;
            for w in self.windows(enc.get_ids()) {
                windows.push((i, w));
            }
        }
        let total: usize = windows.iter().map(|w| w.1.len()).sum();
        let threads = threads.clamp(1, windows.len().max(1));
        // Thread t takes the windows from the t-th share of the word pieces on: the
        // threads finish together however the lengths fall.
        let mut shares: Vec<std::ops::Range<usize>> = Vec::with_capacity(threads);
        let (mut start, mut seen) = (0, 0);
        for (i, w) in windows.iter().enumerate() {
            seen += w.1.len();
            if seen * threads >= total * (shares.len() + 1) && shares.len() + 1 < threads {
                shares.push(start..i + 1);
                start = i + 1;
            }
        }
        shares.push(start..windows.len());
        let share = |range: std::ops::Range<usize>| -> Embedded {
            let mut out = Vec::with_capacity(range.len());
            let mut pass: Vec<&[u32]> = Vec::new();
            let mut tokens = 0;
            for w in range.clone() {
                let ids = windows[w].1.as_slice();
                if tokens > 0 && tokens + ids.len() > PASS_TOKENS {
                    out.extend(self.forward(&pass, pieces));
                    pass.clear();
                    tokens = 0;
                }
                pass.push(ids);
                tokens += ids.len();
            }
            out.extend(self.forward(&pass, pieces));
            range.zip(out).collect()
        };
        let done: Vec<Embedded> = if shares.len() == 1 {
            vec![share(0..windows.len())]
        } else {
            std::thread::scope(|scope| {
                let mut rest = shares.into_iter();
                let first = rest.next().unwrap_or(0..0);
                let handles: Vec<_> = rest.map(|r| scope.spawn(move || share(r))).collect();
                let mut all = vec![Ok(share(first))];
                for h in handles {
                    all.push(
                        h.join()
                            .map_err(|_| run("an embedding thread panicked".into())),
                    );
                }
                all.into_iter().collect::<Result<Vec<_>, _>>()
            })?
        };
        let mut sums = vec![[0f32; DIM]; texts.len()];
        let mut kept: Vec<Vec<Bits>> = vec![Vec::new(); texts.len()];
        for part in done {
            for (w, (v, p)) in part {
                let text = windows[w].0;
                for (s, x) in sums[text].iter_mut().zip(v) {
                    *s += x;
                }
                let room = MAX_PIECES.saturating_sub(kept[text].len());
                kept[text].extend(p.into_iter().take(room));
            }
        }
        Ok(sums
            .into_iter()
            .zip(kept)
            .map(|(v, pieces)| Embedding {
                vector: unit(v),
                pieces,
            })
            .collect())
    }

    /// `ids` (without special tokens) as windows of at most `MAX_TOKENS` with `[CLS]`
    /// and `[SEP]`, neighbours sharing `WINDOW_OVERLAP`; one window for a short text or
    /// an empty one.
    fn windows(&self, ids: &[u32]) -> Vec<Vec<u32>> {
        let body = MAX_TOKENS - 2;
        let step = body - WINDOW_OVERLAP;
        let mut out = Vec::new();
        let mut start = 0;
        loop {
            let end = (start + body).min(ids.len());
            let mut w = Vec::with_capacity(end - start + 2);
            w.push(self.inner.cls);
            w.extend_from_slice(&ids[start..end]);
            w.push(self.inner.sep);
            out.push(w);
            if end == ids.len() {
                return out;
            }
            start += step;
        }
    }

    /// One pass of the model over `ids` (each with its special tokens): a unit vector per
    /// window, mean-pooled over its tokens, and, with `pieces`, the sign codes of its word
    /// pieces but the special tokens and punctuation (`late`).
    fn forward(&self, ids: &[&[u32]], pieces: bool) -> Vec<([f32; DIM], Vec<Bits>)> {
        let rows = self.inner.bert.last_layer(ids);
        let mut out = Vec::with_capacity(ids.len());
        let mut at = 0;
        for w in ids {
            let own = &rows[at * DIM..(at + w.len()) * DIM];
            let mut v = [0f32; DIM];
            v.iter_mut()
                .zip(&mean_of(own, DIM))
                .for_each(|(o, x)| *o = *x);
            let codes = if pieces {
                own.chunks_exact(DIM)
                    .zip(w.iter())
                    .skip(1)
                    .take(w.len().saturating_sub(2))
                    .filter(|(_, &id)| !self.is_punctuation(id))
                    .map(|(row, _)| late::sign_code(row))
                    .collect()
            } else {
                Vec::new()
            };
            out.push((unit(v), codes));
            at += w.len();
        }
        out
    }
}

/// A record as the index stores it: its unit vector and its pieces (`late`).
#[derive(Debug, Clone)]
pub struct Embedding {
    pub vector: [f32; DIM],
    pub pieces: Vec<Bits>,
}

/// `v` scaled to unit length (a zero vector stays zero).
fn unit(mut v: [f32; DIM]) -> [f32; DIM] {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

/// The encoder for `config`'s shapes from the safetensors bytes. Only what `bert` runs
/// is accepted: GELU (erf), absolute positions, `DIM` wide.
fn encoder(bytes: &[u8], config: &BertConfig) -> Result<Bert, String> {
    if config.hidden_act != "gelu" {
        return Err(format!(
            "activation {:?}, only gelu is run",
            config.hidden_act
        ));
    }
    if config.position_embedding_type != "absolute" {
        return Err(format!(
            "position embeddings {:?}, only absolute ones are run",
            config.position_embedding_type
        ));
    }
    if config.hidden_size != DIM {
        return Err(format!(
            "hidden size {}, memoryd stores {DIM}",
            config.hidden_size
        ));
    }
    let weights: Weights = safetensors::read(bytes).map_err(|e| e.to_string())?;
    Bert::from_weights(
        &weights,
        &Shape {
            hidden: config.hidden_size,
            heads: config.num_attention_heads,
            inner: config.intermediate_size,
            layers: config.num_hidden_layers,
            eps: config.layer_norm_eps as f32,
        },
    )
}

/// Windows embedded by one thread: (window, its vector and pieces).
type Embedded = Vec<(usize, ([f32; DIM], Vec<Bits>))>;

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

#[cfg(test)]
mod window_tests {
    use super::*;

    fn cos(a: &[f32; DIM], b: &[f32; DIM]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn a_long_record_is_found_by_a_sentence_from_its_end() {
        let Some(dir) = super::super::tests::model_dir() else {
            return;
        };
        let m = Embedder::load(&dir).expect("load");
        let opening = "The committee reviewed the quarterly budget figures and discussed \
                       the schedule for the next planning cycle in detail. ";
        let filler = opening.repeat(10);
        let long = format!(
            "{filler}Finally, the spare key to the garden shed is hidden under the third stone by the pond."
        );
        let v = m
            .embed(&[
                &long,
                opening,
                "where is the spare key to the garden shed hidden?",
            ])
            .expect("embed");
        // Embedded by its start only, the long record would be as far from the question
        // as its opening sentence is.
        assert!(
            cos(&v[0], &v[2]) > cos(&v[1], &v[2]) + 0.1,
            "long {} vs opening {}",
            cos(&v[0], &v[2]),
            cos(&v[1], &v[2])
        );
    }
}
