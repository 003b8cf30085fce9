//! Late interaction against a real index and the real model: session logs in a
//! temporary state directory, every row embedded as the daemon's worker does (its
//! vector and its pieces stored by `embed::table`), the question embedded as the
//! daemon's recall does. Without the model these say SKIPPED (`embed::tests::model_dir`).
//! This file holds the index and the model as the tests use them; the tests are split by
//! what they guard: a neighbour's pieces (`neighbours`), what the pieces find beside the
//! words (`pieces`), questions against their answers (`questions`), and the calibrations
//! (`little`, `own_places`).

use super::*;
use crate::embed::model::Embedder;
use crate::embed::quant;
use crate::embed::store::{Near, Store};
use crate::embed::table;
use crate::embed::vectors::MIN_COSINE;
use crate::fixture::{user_at, World};
use crate::hybrid::{recall_late, recall_with, CANDIDATES};
use crate::index::{class_rank, Budget};
use crate::query::time;
use std::sync::OnceLock;

const NOW: time::Day = (2026, 12, 1);
const T: &str = "2026-11-20T10:00:00.000Z";

/// The model, loaded once for every test of this module (it is some 90 MB).
fn model() -> Option<&'static Embedder> {
    static MODEL: OnceLock<Option<Embedder>> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            let dir = crate::embed::tests::model_dir()?;
            Some(Embedder::load(&dir).expect("load the model"))
        })
        .as_ref()
}

/// A state directory whose sessions are written, indexed and embedded.
struct Embedded {
    _world: World,
    ix: Index,
    store: Store,
    model: &'static Embedder,
}

/// One epoch's log: its session, its epoch and its owner's turns as (time, text).
type TimedLog<'a> = (&'a str, u64, Vec<(&'a str, &'a str)>);

/// Writes each `(session, epoch, texts)` as the owner's turns, indexes them and embeds
/// every row, vector and pieces, as the worker stores them.
fn embedded(model: &'static Embedder, logs: &[(&str, u64, &[&str])]) -> Embedded {
    let timed: Vec<TimedLog<'_>> = logs
        .iter()
        .map(|(s, e, texts)| (*s, *e, texts.iter().map(|t| (T, *t)).collect()))
        .collect();
    embedded_at(model, &timed)
}

/// `embedded` with each turn's time given: `(session, epoch, [(time, text)])`.
fn embedded_at(model: &'static Embedder, logs: &[TimedLog<'_>]) -> Embedded {
    let world = World::new();
    for (session, epoch, lines) in logs {
        let lines: String = lines.iter().map(|(t, s)| user_at(t, s).to_line()).collect();
        world.append(session, *epoch, &lines);
    }
    let mut ix = world.index();
    ix.catch_up(Budget::UNLIMITED).unwrap();
    table::prepare(ix.conn(), model.fingerprint()).unwrap();
    let jobs = table::next_jobs(ix.conn(), 10_000, |_| false, 0).unwrap();
    let texts: Vec<&str> = jobs.iter().map(|j| j.text.as_str()).collect();
    let done: Vec<table::Done> = model
        .embed_records(&texts)
        .unwrap()
        .into_iter()
        .zip(jobs)
        .map(|(e, job)| (job, quant::encode(&e.vector), e.pieces))
        .collect();
    assert_eq!(table::store(ix.conn(), &done).unwrap().len(), done.len());
    let mut store = Store::default();
    for (job, code, _) in &done {
        store.put(job.id, u8::try_from(job.class).unwrap(), code);
    }
    Embedded {
        _world: world,
        ix,
        store,
        model,
    }
}

impl Embedded {
    /// What the vector side finds for `q` at `max_class`, and the question's pieces.
    fn ask(&self, q: &str, max_class: DataClass) -> (Vec<Near>, Question) {
        let (v, pieces) = self.model.embed_question(q).unwrap();
        let rank = u8::try_from(class_rank(max_class)).unwrap();
        let near = self
            .store
            .nearest(&quant::encode(&v), rank, CANDIDATES as usize, MIN_COSINE);
        (near, pieces)
    }

    /// The recall with late interaction, as the daemon answers it.
    fn late(&self, q: &str, max_class: DataClass, limit: u32) -> Vec<String> {
        let (near, pieces) = self.ask(q, max_class);
        let hits = recall_late(&self.ix, &near, &pieces, q, max_class, limit, NOW).unwrap();
        hits.into_iter().map(|h| h.text).collect()
    }

    /// The merge's order alone, as recall was before late interaction.
    fn merge_alone(&self, q: &str, max_class: DataClass, limit: u32) -> Vec<String> {
        let (near, _) = self.ask(q, max_class);
        let hits = recall_with(&self.ix, &near, q, max_class, limit, NOW).unwrap();
        hits.into_iter().map(|h| h.text).collect()
    }

    fn id(&self, text: &str) -> i64 {
        self.ix
            .conn()
            .query_row("SELECT rowid FROM docs WHERE text = ?1", [text], |r| {
                r.get(0)
            })
            .unwrap()
    }

    /// The mean of the question's best cosines against row `text`'s own pieces.
    fn own_match(&self, q: &str, text: &str) -> f32 {
        let (_, pieces) = self.ask(q, DataClass::Private);
        let stored = table::pieces(self.ix.conn(), self.id(text))
            .unwrap()
            .unwrap();
        let best = pieces.best(&stored);
        best.iter().sum::<f32>() / best.len() as f32
    }

    /// `rerank` over the given candidates, in that merge order, with no cosines: the
    /// order comes from the pieces and the places alone.
    fn rerank_only(&self, q: &str, fused: &[&str], max_class: DataClass) -> Vec<String> {
        let (_, pieces) = self.ask(q, max_class);
        let fused: Vec<(i64, Hit)> = fused
            .iter()
            .map(|t| {
                let id = self.id(t);
                let hit = self
                    .ix
                    .hits_by_ids(&[id], DataClass::Secret)
                    .unwrap()
                    .remove(0)
                    .1;
                (id, hit)
            })
            .collect();
        let n = fused.len();
        let asked = Asked {
            pieces: &pieces,
            cosine: &HashMap::new(),
            background: 0.0,
            near_place: &HashMap::new(),
            own_slots: 0.0,
            match_weight: 1.0,
            codes: &Codes::default(),
            first: None,
            span: None,
            max_class,
            distinct: crate::hybrid::distinct::DISTINCT,
        };
        rerank(&self.ix, asked, fused, Vec::new(), n)
            .unwrap()
            .into_iter()
            .map(|h| h.text)
            .collect()
    }
}

fn at(hits: &[String], text: &str) -> usize {
    hits.iter().position(|h| h == text).unwrap_or(usize::MAX)
}

/// A question and the turn after it that answers it only with the question's help.
const Q_TRIP: &str = "How was Nate's trip to the Grand Canyon?";
const ASKED: &str = "How was your trip to the Grand Canyon, Nate?";
const ANSWER: &str = "Yes! It was amazing.";

mod distinct;
mod little;
mod neighbours;
mod own_places;
mod pieces;
mod questions;
