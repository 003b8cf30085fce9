//! The vector and fused columns: the same rows embedded with memoryd's model (from the
//! venv that scripts/setup-python makes), searched by meaning alone, and fused with the
//! words as `hybrid::recall` does. Vectors are kept between runs in the bench cache, keyed
//! by the text and `embed::model::METHOD`. Without the model these columns are left out,
//! with a line saying so.

use crate::sets::{cache_dir, venv};
use crate::systems::{FUSED, VECTORS};
use crate::System;
use memoryd::embed::model::{Embedder, METHOD};
use memoryd::embed::quant;
use memoryd::embed::store::{Near, Store};
use memoryd::embed::vectors::MIN_COSINE;
use memoryd::embed::DIM;
use memoryd::hybrid::{self, CANDIDATES};
use memoryd::index::{Budget, Index};
use memoryd::query::time;
use proto::label::DataClass;
use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

pub struct VecWorld {
    index: Index,
    model: Embedder,
    store: Store,
    /// The day relative time cues count from: the day after the newest record.
    now: time::Day,
    /// Each question's nearest rows, computed once: every vector column and every
    /// calibration of `--sweep` asks the same questions.
    asked: RefCell<HashMap<String, Vec<Near>>>,
}

fn model_dir() -> PathBuf {
    venv().join("share").join("all-minilm-l6-v2")
}

fn key(text: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    METHOD.hash(&mut h);
    text.hash(&mut h);
    h.finish()
}

fn cache_file() -> PathBuf {
    cache_dir().join("vectors.bin")
}

fn load_cache() -> HashMap<u64, [f32; DIM]> {
    let mut out = HashMap::new();
    let Ok(mut f) = std::fs::File::open(cache_file()) else {
        return out;
    };
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).unwrap();
    for rec in buf.chunks_exact(8 + 4 * DIM) {
        let k = u64::from_le_bytes(rec[..8].try_into().unwrap());
        let mut v = [0f32; DIM];
        for (i, x) in v.iter_mut().enumerate() {
            *x = f32::from_le_bytes(rec[8 + 4 * i..12 + 4 * i].try_into().unwrap());
        }
        out.insert(k, v);
    }
    out
}

fn append_cache(new: &[(u64, [f32; DIM])]) {
    std::fs::create_dir_all(cache_dir()).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(cache_file())
        .unwrap();
    let mut buf = Vec::with_capacity(new.len() * (8 + 4 * DIM));
    for (k, v) in new {
        buf.extend_from_slice(&k.to_le_bytes());
        for x in v {
            buf.extend_from_slice(&x.to_le_bytes());
        }
    }
    f.write_all(&buf).unwrap();
}

impl VecWorld {
    /// Every row of the index under `state` embedded, or `None` without the model.
    pub fn build(state: &Path, now: time::Day) -> Option<VecWorld> {
        let dir = model_dir();
        if !dir.join("model.safetensors").exists() {
            eprintln!(
                "no embedding model at {} (scripts/setup-python): vector and fused columns left out",
                dir.display()
            );
            return None;
        }
        let model = Embedder::load(&dir).unwrap();
        let mut index = Index::open(state, DataClass::Private).unwrap();
        index.catch_up(Budget::UNLIMITED).unwrap();
        let rows: Vec<(i64, i64, String)> = index
            .conn()
            .prepare("SELECT rowid, class, text FROM docs")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let mut cache = load_cache();
        let missing: Vec<&(i64, i64, String)> = rows
            .iter()
            .filter(|r| !cache.contains_key(&key(&r.2)))
            .collect();
        if !missing.is_empty() {
            eprintln!("embedding {} rows (cached for later runs)", missing.len());
        }
        for chunk in missing.chunks(256) {
            let texts: Vec<&str> = chunk.iter().map(|r| r.2.as_str()).collect();
            let vs = model.embed_records(&texts).unwrap();
            let new: Vec<(u64, [f32; DIM])> =
                texts.iter().zip(vs).map(|(t, v)| (key(t), v)).collect();
            append_cache(&new);
            cache.extend(new);
        }
        let mut store = Store::default();
        for r in &rows {
            let v = &cache[&key(&r.2)];
            store.put(r.0, u8::try_from(r.1).unwrap(), &quant::encode(v));
        }
        Some(VecWorld {
            index,
            model,
            store,
            now,
            asked: RefCell::default(),
        })
    }

    fn near(&self, q: &str) -> Vec<Near> {
        if let Some(n) = self.asked.borrow().get(q) {
            return n.clone();
        }
        let v = self.model.embed(&[q]).unwrap();
        let n = self
            .store
            .nearest(&quant::encode(&v[0]), 1, CANDIDATES as usize, MIN_COSINE);
        self.asked.borrow_mut().insert(q.to_string(), n.clone());
        n
    }

    pub fn systems(&self, depth: usize) -> Vec<System<'_>> {
        vec![
            System {
                name: VECTORS,
                ask: Box::new(move |q| {
                    let ids: Vec<i64> = self.near(q).iter().take(depth).map(|n| n.id).collect();
                    self.index
                        .hits_by_ids(&ids, DataClass::Private)
                        .unwrap()
                        .into_iter()
                        .map(|h| h.text)
                        .collect()
                }),
            },
            System {
                name: FUSED,
                ask: Box::new(move |q| {
                    hybrid::recall_with(
                        &self.index,
                        &self.near(q),
                        q,
                        DataClass::Private,
                        depth as u32,
                        self.now,
                    )
                    .unwrap()
                    .into_iter()
                    .map(|h| h.text)
                    .collect()
                }),
            },
        ]
    }

    /// Other calibrations, for `--sweep`: one column each.
    pub fn sweep(&self, depth: usize) -> Vec<System<'_>> {
        let mut out = Vec::new();
        let base = hybrid::CALIBRATION;
        let mut cals = Vec::new();
        for (floor, full) in [
            (0.3, 0.7),
            (0.35, 0.75),
            (0.4, 0.9),
            (0.45, 1.0),
            (0.5, 1.0),
            (0.5, 1.2),
            (0.55, 1.2),
            (0.6, 1.2),
        ] {
            cals.push(hybrid::Calibration {
                floor,
                full,
                ..base
            });
        }
        cals.push(hybrid::Calibration {
            name_missing: 1.0,
            ..base
        });
        cals.push(hybrid::Calibration { both: 0.2, ..base });
        cals.push(hybrid::Calibration {
            floor: 0.5,
            full: 1.0,
            name_missing: 0.25,
            ..base
        });
        for cal in cals {
            let name: &'static str = Box::leak(
                format!(
                    "{}..{} n{} b{}",
                    cal.floor, cal.full, cal.name_missing, cal.both
                )
                .into_boxed_str(),
            );
            out.push(System {
                name,
                ask: Box::new(move |q| {
                    hybrid::recall_calibrated(
                        cal,
                        &self.index,
                        &self.near(q),
                        q,
                        DataClass::Private,
                        depth as u32,
                        self.now,
                    )
                    .unwrap()
                    .into_iter()
                    .map(|h| h.text)
                    .collect()
                }),
            });
        }
        out
    }
}
