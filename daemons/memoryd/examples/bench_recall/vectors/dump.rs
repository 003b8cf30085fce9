//! Dumps of both halves' candidates per question, for designing the ranking outside
//! the bench (`scripts/bench recall --dump FILE [--all]`).

use super::VecWorld;
use memoryd::embed::quant;
use memoryd::hybrid::{self, CANDIDATES};
use memoryd::query::time;
use proto::label::DataClass;

impl VecWorld {
    /// For designing the fusion: one JSON line per question with both halves' candidates
    /// (word relevance or cosine, and whether each answers), written to `path`.
    pub fn dump(&self, set: &str, questions: &[&crate::sets::Question], path: &str) {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        for q in questions {
            let ok = |t: &str| q.judge.score(&[t.to_string()], 1).first == Some(0);
            let words = self
                .index
                .search_at(&q.text, DataClass::Private, CANDIDATES, self.now)
                .unwrap();
            let code = quant::encode(&self.model.embed(&[q.text.as_str()]).unwrap()[0]);
            let w: Vec<serde_json::Value> = words
                .iter()
                .map(|r| {
                    serde_json::json!([
                        r.relevance,
                        ok(&r.hit.text),
                        r.hit.text.chars().take(60).collect::<String>(),
                        self.store.cosine(&code, r.rowid)
                    ])
                })
                .collect();
            // What the words-only column answers: the index asked for the depth alone.
            let w10: Vec<bool> = self
                .index
                .search_at(&q.text, DataClass::Private, crate::DEPTH as u32, self.now)
                .unwrap()
                .iter()
                .map(|r| ok(&r.hit.text))
                .collect();
            let near = self.near(&q.text);
            let ids: Vec<i64> = near.iter().map(|n| n.id).collect();
            let hits = self.index.hits_by_ids(&ids, DataClass::Private).unwrap();
            let parsed = memoryd::query::parse(&q.text);
            let span = time::cue(&q.text, self.now);
            let cosine: std::collections::HashMap<i64, f32> =
                near.iter().map(|n| (n.id, n.score)).collect();
            let m: Vec<serde_json::Value> = hits
                .iter()
                .map(|(id, h)| {
                    serde_json::json!([
                        cosine[id],
                        ok(&h.text),
                        parsed.as_ref().is_none_or(|p| p.holds_names(&h.text)),
                        span.as_ref().is_some_and(|s| s.holds(&h.time)),
                        h.text.chars().take(60).collect::<String>()
                    ])
                })
                .collect();
            let line = serde_json::json!({"set": set, "cat": q.category, "q": q.text, "w": w, "w10": w10, "m": m});
            writeln!(f, "{line}").unwrap();
        }
    }

    /// For designing the ranking: the haystack's rows once (rowid, epoch, text), then per
    /// question the words' ranked candidates (rowid, relevance, held groups, neighbours'
    /// groups), the cosine of every row, and which rows answer, as JSON lines in `path`.
    pub fn dump_all(&self, set: &str, questions: &[&crate::sets::Question], path: &str) {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        let rows: Vec<(i64, i64, String, String)> = self
            .index
            .conn()
            .prepare("SELECT rowid, epoch, session, text FROM docs ORDER BY rowid")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let rows_json: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| serde_json::json!([r.0, r.1, r.2, r.3]))
            .collect();
        writeln!(f, "{}", serde_json::json!({"set": set, "rows": rows_json})).unwrap();
        for q in questions {
            let ok = |t: &str| q.judge.score(&[t.to_string()], 1).first == Some(0);
            let words = self
                .index
                .search_words(&q.text, DataClass::Private, CANDIDATES, self.now)
                .unwrap();
            let code = quant::encode(&self.model.embed(&[q.text.as_str()]).unwrap()[0]);
            let w: Vec<serde_json::Value> = words
                .hits
                .iter()
                .map(|r| serde_json::json!([r.rowid, r.relevance, r.held, r.near_held]))
                .collect();
            let rarity: Vec<f32> = (0..32)
                .map(|i| words.rarity.share(1 << i, 1.0))
                .take_while(|&x| x > 0.0)
                .collect();
            let cos: Vec<f32> = rows
                .iter()
                .map(|r| self.store.cosine(&code, r.0).unwrap_or(0.0))
                .collect();
            let good: Vec<i64> = rows.iter().filter(|r| ok(&r.3)).map(|r| r.0).collect();
            let parsed = memoryd::query::parse(&q.text);
            let named: Vec<i64> = rows
                .iter()
                .filter(|r| parsed.as_ref().is_none_or(|p| p.holds_names(&r.3)))
                .map(|r| r.0)
                .collect();
            let near = self.near(&q.text);
            let fused: Vec<String> = hybrid::recall_with(
                &self.index,
                &near,
                &q.text,
                DataClass::Private,
                CANDIDATES,
                self.now,
            )
            .unwrap()
            .into_iter()
            .map(|h| h.text)
            .collect();
            let line = serde_json::json!({"set": set, "cat": q.category, "q": q.text, "w": w,
                "rarity": rarity, "cos": cos, "good": good, "named": named, "fused": fused});
            writeln!(f, "{line}").unwrap();
        }
    }
}
