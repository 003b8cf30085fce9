//! The vector and hybrid columns (issue 15): the same rows embedded with memoryd's model
//! (all-MiniLM-L6-v2, from the venv that scripts/setup-python makes), searched by
//! meaning alone, and fused with memoryd's lexical ranking as `Recall` does. Without the
//! model these columns are left out, with a line saying so.

use crate::System;
use memoryd::embed::model::Embedder;
use memoryd::embed::quant;
use memoryd::embed::store::{Near, Store};
use memoryd::embed::vectors::MIN_COSINE;
use memoryd::hybrid::{self, CANDIDATES};
use memoryd::index::{Budget, Index};
use proto::label::DataClass;
use std::path::{Path, PathBuf};

pub struct VecWorld {
    index: Index,
    model: Embedder,
    store: Store,
}

fn model_dir() -> PathBuf {
    let venv = std::env::var_os("BOXMAKER_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.venv"));
    venv.join("share").join("all-minilm-l6-v2")
}

impl VecWorld {
    /// Every row of the index under `state` embedded, or `None` without the model.
    pub fn build(state: &Path) -> Option<VecWorld> {
        let dir = model_dir();
        if !dir.join("model.safetensors").exists() {
            eprintln!("no embedding model at {} (scripts/setup-python): vector and hybrid columns left out", dir.display());
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
        let mut store = Store::default();
        for chunk in rows.chunks(memoryd::embed::worker::BATCH) {
            let texts: Vec<&str> = chunk.iter().map(|r| r.2.as_str()).collect();
            for (row, v) in chunk.iter().zip(model.embed(&texts).unwrap()) {
                store.put(row.0, u8::try_from(row.1).unwrap(), &quant::encode(&v));
            }
        }
        Some(VecWorld {
            index,
            model,
            store,
        })
    }

    fn near(&self, q: &str) -> Vec<Near> {
        let v = self.model.embed(&[q]).unwrap();
        self.store
            .nearest(&quant::encode(&v[0]), 1, CANDIDATES as usize, MIN_COSINE)
    }

    pub fn systems(&self, depth: usize) -> Vec<System<'_>> {
        vec![
            System {
                name: "vector (all-MiniLM-L6-v2)",
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
                name: "hybrid (memoryd with the model)",
                ask: Box::new(move |q| {
                    hybrid::recall_with(
                        &self.index,
                        &self.near(q),
                        q,
                        DataClass::Private,
                        depth as u32,
                    )
                    .unwrap()
                    .into_iter()
                    .map(|h| h.text)
                    .collect()
                }),
            },
        ]
    }

    /// Other fusion weights, for `--sweep`: one column each.
    pub fn sweep(&self, depth: usize) -> Vec<System<'_>> {
        let mut out = Vec::new();
        for rrf_k in [10.0, 60.0] {
            for vector in [0.5, 0.75, 1.0, 1.5] {
                let w = hybrid::Weights {
                    rrf_k,
                    lexical: 1.0,
                    vector,
                };
                let name: &'static str =
                    Box::leak(format!("k={rrf_k} vec={vector}").into_boxed_str());
                out.push(System {
                    name,
                    ask: Box::new(move |q| {
                        let lexical = self
                            .index
                            .search(q, DataClass::Private, CANDIDATES)
                            .unwrap();
                        let ids: Vec<i64> = self.near(q).iter().map(|n| n.id).collect();
                        let by_meaning = self.index.hits_by_ids(&ids, DataClass::Private).unwrap();
                        hybrid::fuse_with(w, q, lexical, by_meaning, depth)
                            .into_iter()
                            .map(|h| h.text)
                            .collect()
                    }),
                });
            }
        }
        out
    }
}
