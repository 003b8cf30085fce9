//! The vector and fused columns: the same rows embedded with memoryd's model (from the
//! venv that scripts/setup-python makes), searched by meaning alone, and fused with the
//! words as `hybrid::recall` does. Vectors are kept between runs in the bench cache, keyed
//! by the text and `embed::model::METHOD`. Without the model these columns are left out,
//! with a line saying so.

use crate::sets::{cache_dir, venv};
use crate::systems::{FUSED, VECTORS};
use crate::System;
use memoryd::embed::late::{self, Question};
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
use std::rc::Rc;

pub struct VecWorld {
    index: Index,
    model: Embedder,
    store: Store,
    /// The day relative time cues count from: the day after the newest record.
    now: time::Day,
    /// Each question's nearest rows, computed once: every vector column and every
    /// calibration of `--sweep` asks the same questions.
    asked: RefCell<HashMap<String, Asked>>,
}

/// A question's nearest rows and its pieces.
type Asked = (Vec<Near>, Rc<Question>);

/// The fused column as it was before late interaction: the merge's order alone.
pub const MERGE_ALONE: &str = "default before (merge alone)";

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

fn pieces_file() -> PathBuf {
    cache_dir().join("pieces.bin")
}

/// Each text's pieces as stored (`late::to_bytes`), by `key`.
fn load_pieces() -> HashMap<u64, Vec<u8>> {
    let mut out = HashMap::new();
    let Ok(buf) = std::fs::read(pieces_file()) else {
        return out;
    };
    let mut at = 0;
    while at + 12 <= buf.len() {
        let k = u64::from_le_bytes(buf[at..at + 8].try_into().unwrap());
        let n = u32::from_le_bytes(buf[at + 8..at + 12].try_into().unwrap()) as usize;
        at += 12;
        if at + n > buf.len() {
            break;
        }
        out.insert(k, buf[at..at + n].to_vec());
        at += n;
    }
    out
}

fn append_pieces(new: &[(u64, Vec<u8>)]) {
    std::fs::create_dir_all(cache_dir()).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(pieces_file())
        .unwrap();
    let mut buf = Vec::new();
    for (k, p) in new {
        buf.extend_from_slice(&k.to_le_bytes());
        buf.extend_from_slice(&(p.len() as u32).to_le_bytes());
        buf.extend_from_slice(p);
    }
    f.write_all(&buf).unwrap();
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

/// The index's text rows (id, class, text), those `filter` (an SQL `WHERE` clause, or
/// nothing) keeps.
fn rows(index: &Index, filter: &str) -> Vec<(i64, i64, String)> {
    index
        .conn()
        .prepare(&format!("SELECT rowid, class, text FROM docs {filter}"))
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
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
        let rows = rows(&index, "");
        let mut cache = load_cache();
        let mut pieces = load_pieces();
        let missing: Vec<&(i64, i64, String)> = rows
            .iter()
            .filter(|r| !cache.contains_key(&key(&r.2)) || !pieces.contains_key(&key(&r.2)))
            .collect();
        if !missing.is_empty() {
            eprintln!("embedding {} rows (cached for later runs)", missing.len());
        }
        for chunk in missing.chunks(256) {
            let texts: Vec<&str> = chunk.iter().map(|r| r.2.as_str()).collect();
            let es = model.embed_records(&texts).unwrap();
            let new: Vec<(u64, [f32; DIM])> = texts
                .iter()
                .zip(&es)
                .map(|(t, e)| (key(t), e.vector))
                .collect();
            let new_pieces: Vec<(u64, Vec<u8>)> = texts
                .iter()
                .zip(&es)
                .map(|(t, e)| (key(t), late::to_bytes(&e.pieces)))
                .collect();
            append_cache(&new);
            append_pieces(&new_pieces);
            cache.extend(new);
            pieces.extend(new_pieces);
        }
        let mut store = Store::default();
        memoryd::embed::table::prepare(index.conn(), "bench").unwrap();
        let tx = index.conn().unchecked_transaction().unwrap();
        for r in &rows {
            let v = &cache[&key(&r.2)];
            store.put(r.0, u8::try_from(r.1).unwrap(), &quant::encode(v));
            tx.execute(
                "INSERT OR REPLACE INTO vec_pieces (id, pieces) VALUES (?1, ?2)",
                rusqlite::params![r.0, pieces[&key(&r.2)]],
            )
            .unwrap();
        }
        tx.commit().unwrap();
        Some(VecWorld {
            index,
            model,
            store,
            now,
            asked: RefCell::default(),
        })
    }

    /// Indexes what was logged since, and embeds the new rows (vector and pieces), as
    /// the daemon's backfill would before the next question: for `asked`.
    pub fn refresh(&mut self) {
        self.index.catch_up(Budget::UNLIMITED).unwrap();
        let rows = rows(
            &self.index,
            "WHERE rowid NOT IN (SELECT id FROM vec_pieces)",
        );
        if rows.is_empty() {
            return;
        }
        let texts: Vec<&str> = rows.iter().map(|r| r.2.as_str()).collect();
        let es = self.model.embed_records(&texts).unwrap();
        for (r, e) in rows.iter().zip(es) {
            self.store
                .put(r.0, u8::try_from(r.1).unwrap(), &quant::encode(&e.vector));
            self.index
                .conn()
                .execute(
                    "INSERT OR REPLACE INTO vec_pieces (id, pieces) VALUES (?1, ?2)",
                    rusqlite::params![r.0, late::to_bytes(&e.pieces)],
                )
                .unwrap();
        }
        self.asked.borrow_mut().clear();
    }

    /// The default recall's first `limit` hits, time cues counted from `now`.
    pub fn fused_at(&self, q: &str, limit: u32, now: time::Day) -> Vec<String> {
        let (near, pieces) = self.ask(q);
        hybrid::recall_late(
            &self.index,
            &near,
            &pieces,
            q,
            DataClass::Private,
            limit,
            now,
        )
        .unwrap()
        .into_iter()
        .map(|h| h.text)
        .collect()
    }

    /// The default recall's first `limit` hits whole (with their relevance), time cues
    /// counted from `now`: what loopd's memory in the turn chooses from (`reach`).
    pub fn fused_hits_at(&self, q: &str, limit: u32, now: time::Day) -> Vec<proto::memory::Hit> {
        let (near, pieces) = self.ask(q);
        hybrid::recall_late(
            &self.index,
            &near,
            &pieces,
            q,
            DataClass::Private,
            limit,
            now,
        )
        .unwrap()
    }

    fn near(&self, q: &str) -> Vec<Near> {
        self.ask(q).0
    }

    /// The question's nearest rows and its pieces, as the vector side makes them.
    fn ask(&self, q: &str) -> Asked {
        if let Some(n) = self.asked.borrow().get(q) {
            return n.clone();
        }
        let (v, pieces) = self.model.embed_question(q).unwrap();
        let n = self.store.nearest(
            &quant::encode(&v),
            1,
            CANDIDATES as usize,
            hybrid::LITTLE_FLOOR,
        );
        let asked = (n, Rc::new(pieces));
        self.asked.borrow_mut().insert(q.to_string(), asked.clone());
        asked
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
                        .map(|(_, h)| h.text)
                        .collect()
                }),
            },
            System {
                name: FUSED,
                ask: Box::new(move |q| {
                    let (near, pieces) = self.ask(q);
                    hybrid::recall_late(
                        &self.index,
                        &near,
                        &pieces,
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
            System {
                name: MERGE_ALONE,
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

    /// Other calibrations, for `--sweep`: one column each. The first two are the fixed
    /// cosine scales used before the background (a background rank past every candidate
    /// puts it at `MIN_COSINE`, 0.25): 0.35..0.75 and 0.5..1.0; these and the merge's
    /// other constants are measured on the merge alone. The last columns change how much
    /// a candidate's place among the vector side's own nearest counts in late interaction
    /// (`own_slots`; 0 is the default before it), late interaction included.
    pub fn sweep(&self, depth: usize) -> Vec<System<'_>> {
        let base = hybrid::CALIBRATION;
        let fixed = |floor: f32, full: f32| hybrid::Calibration {
            background_rank: usize::MAX,
            margin_floor: floor - MIN_COSINE,
            margin_full: full - MIN_COSINE,
            cap: f32::INFINITY,
            both: 0.0,
            unrelated: 1.0,
            majority: f32::INFINITY,
            rarity: 0.0,
            ..base
        };
        let merged = [
            ("fixed 0.35..0.75", fixed(0.35, 0.75)),
            ("fixed 0.5..1.0", fixed(0.5, 1.0)),
            (
                "background 4th",
                hybrid::Calibration {
                    background_rank: 4,
                    ..base
                },
            ),
            (
                "background 14th",
                hybrid::Calibration {
                    background_rank: 14,
                    ..base
                },
            ),
            (
                "background 16th",
                hybrid::Calibration {
                    background_rank: 16,
                    ..base
                },
            ),
            (
                "margin 0..0.2",
                hybrid::Calibration {
                    margin_floor: 0.0,
                    margin_full: 0.2,
                    ..base
                },
            ),
            (
                "margin 0.05..0.3",
                hybrid::Calibration {
                    margin_floor: 0.05,
                    margin_full: 0.3,
                    ..base
                },
            ),
            (
                "no cap",
                hybrid::Calibration {
                    cap: f32::INFINITY,
                    ..base
                },
            ),
            ("both +0", hybrid::Calibration { both: 0.0, ..base }),
            (
                "unrelated ×1",
                hybrid::Calibration {
                    unrelated: 1.0,
                    ..base
                },
            ),
            (
                "majority off",
                hybrid::Calibration {
                    majority: f32::INFINITY,
                    ..base
                },
            ),
            (
                "names ×1",
                hybrid::Calibration {
                    name_missing: 1.0,
                    ..base
                },
            ),
            // A word hit's strength weighed by how rare the words it holds are (the
            // default: the square root of each group's rarity), or not at all.
            (
                "rarity off",
                hybrid::Calibration {
                    rarity: 0.0,
                    ..base
                },
            ),
            (
                "rarity ^0.75",
                hybrid::Calibration {
                    rarity: 0.75,
                    ..base
                },
            ),
            (
                "rarity ^1",
                hybrid::Calibration {
                    rarity: 1.0,
                    ..base
                },
            ),
            (
                "rarity ^2",
                hybrid::Calibration {
                    rarity: 2.0,
                    ..base
                },
            ),
        ];
        let own = |own_slots: f32| hybrid::Calibration { own_slots, ..base };
        let always = |own_slots: f32| hybrid::Calibration {
            own_slots,
            own_when_common: false,
            ..base
        };
        let little = |little: f32, sparse: f32| hybrid::Calibration {
            little,
            sparse,
            ..base
        };
        let own_places = [
            ("own slots 0", own(0.0)),
            ("own slots 1 always", always(1.0)),
            ("words found little off (before)", little(-1.0, base.sparse)),
            ("little, background 0.36", little(base.little, 0.36)),
            ("little, background 0.38", little(base.little, 0.38)),
            ("little, background any", little(base.little, f32::INFINITY)),
            ("little 0.34", little(0.34, base.sparse)),
        ];
        // Hits that say something else first (`hybrid::distinct`): left out (the default
        // before it), or with another share of words in common.
        let distinct = |share: f32| hybrid::Calibration {
            distinct: hybrid::distinct::Distinct { share },
            ..base
        };
        let distinct_first = [
            (
                "distinct off (before)",
                distinct(hybrid::distinct::OFF.share),
            ),
            ("distinct 0.6", distinct(0.6)),
            ("distinct 0.7", distinct(0.7)),
            ("distinct 0.9", distinct(0.9)),
        ];
        let own_places = own_places.into_iter().chain(distinct_first);
        // The merge's constants are measured on the merge alone (as when they were chosen);
        // the vector side's own places only count in late interaction.
        let cals = merged
            .into_iter()
            .map(|(name, cal)| (name, cal, hybrid::NEWER, false))
            .chain(
                own_places
                    .into_iter()
                    .map(|(name, cal)| (name, cal, hybrid::NEWER, true)),
            );
        // Newer tellings first (`hybrid::newer`): left out (the default before it), or
        // with another likeness, slack or reach (30: a later telling the ranking put
        // below the hits asked for is brought in).
        let newer = |same: f32, slack: f32| hybrid::Newer {
            same,
            slack,
            ..hybrid::NEWER
        };
        let newer_first = [
            ("newer off (before)", hybrid::newer::OFF),
            ("newer alike 0.25", newer(0.25, hybrid::NEWER.slack)),
            ("newer alike 0.35", newer(0.35, hybrid::NEWER.slack)),
            ("newer slack 0.1", newer(hybrid::NEWER.same, 0.1)),
            (
                "newer reach 30",
                hybrid::Newer {
                    reach: 30,
                    ..hybrid::NEWER
                },
            ),
        ];
        let cals = cals.chain(
            newer_first
                .into_iter()
                .map(|(name, n)| (name, base, n, true)),
        );
        // Words only, read as the fusion's word half reads them: the index asked for
        // `CANDIDATES` hits (so its ranking draws on more candidates), the first `depth`
        // kept. How much of the default's lead over words only is the deeper pool.
        let deep = System {
            name: "words only, 50 asked",
            ask: Box::new(move |q| {
                self.index
                    .search_at(q, DataClass::Private, CANDIDATES, self.now)
                    .unwrap()
                    .into_iter()
                    .take(depth)
                    .map(|r| r.hit.text)
                    .collect()
            }),
        };
        std::iter::once(deep)
            .chain(cals.map(|(name, cal, newer, late)| System {
                name,
                ask: Box::new(move |q| {
                    let (near, pieces) = self.ask(q);
                    hybrid::recall_newer(
                        cal,
                        newer,
                        &self.index,
                        hybrid::Seen {
                            near: &near,
                            pieces: late.then_some(&*pieces),
                            embedded: &|_| true,
                        },
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
            }))
            .collect()
    }
}

mod dump;
