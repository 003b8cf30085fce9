//! The reference rows on LoCoMo: the systems an owner might pick instead of memoryd, asked
//! the same questions of the same records, each conversation its own haystack (as their own
//! LoCoMo figures are measured), beside memoryd asked the same way.
//!
//! The peers run in `eval/peers.py`, in the bench's own venv (`target/bench-venv`, made by
//! `scripts/bench recall` from pinned packages): bm25s over the records and over ±2-turn
//! windows, all-MiniLM-L6-v2 alone (exact cosine), and fluctlightdb's LoCoMo lane. Their hits
//! come back as record texts and are scored by the same code as memoryd's columns. memoryd's
//! rows here are an index of one conversation each (words only, the default, vectors only).
//! Without the venv, the model or the packages, the rows are left out with a line saying why.

use crate::sets::{cache_dir, venv, Question};
use crate::systems::{World, FUSED, VECTORS, WORDS};
use crate::vectors::VecWorld;
use crate::System;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::rc::Rc;
use std::time::{Duration, Instant};

/// How long the peers may take on LoCoMo: fluctlightdb's lane is some 0.3 to 1 s a question
/// on this machine (2 000 questions), the rest a few minutes together; past this the run is
/// stopped and the rows left out rather than the bench hanging on a stuck child.
const PEERS_DEADLINE: Duration = Duration::from_secs(60 * 60);

/// How often a running peers.py is looked at while waiting for it.
const POLL: Duration = Duration::from_millis(200);

/// The largest answer file read: some 2 000 questions × 5 systems × 10 record texts.
const MAX_ANSWER_BYTES: u64 = 256 * 1024 * 1024;

/// Texts whose sentence vector is computed both here and by peers.py, to check the peers'
/// MiniLM is memoryd's: the first this many records.
const CHECK_TEXTS: usize = 32;

/// memoryd's columns in this table: an index per conversation.
pub const WORDS_EACH: &str = "memoryd words, per conversation";
pub const FUSED_EACH: &str = "memoryd default, per conversation";
pub const VECTORS_EACH: &str = "memoryd vectors, per conversation";

/// A column's answers: per question text, the hits of each time it is asked, in order.
type Answers = HashMap<String, VecDeque<Vec<String>>>;

/// Query times per column, in milliseconds, in the order asked.
pub type Times = Rc<RefCell<BTreeMap<&'static str, Vec<f64>>>>;

/// The peers' answers and memoryd's per-conversation indexes, ready to be asked.
pub struct Peers {
    /// Per peer (in peers.py's order), each question's hits in the order of the file.
    answers: Vec<(&'static str, Answers)>,
    /// Each question's conversation, in the order of the file (`None`: its evidence is in
    /// none, and it is asked of nothing).
    samples: HashMap<String, VecDeque<Option<String>>>,
    /// Per conversation, memoryd's index of it alone.
    worlds: BTreeMap<String, (World, Option<VecWorld>, tempfile::TempDir)>,
    /// The peers' own query times, as peers.py measured them.
    peer_ms: BTreeMap<&'static str, Vec<f64>>,
    /// Seconds each peer took to index every conversation.
    pub index_s: BTreeMap<&'static str, f64>,
    pub times: Times,
}

fn python() -> PathBuf {
    std::env::var_os("BOXMAKER_BENCH_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| cache_dir().join("../bench-venv"))
        .join("bin/python")
}

fn peers_py() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("eval/peers.py")
}

fn model_dir() -> PathBuf {
    venv().join("share").join("all-minilm-l6-v2")
}

/// Runs `python args…` to its end or the deadline; its stderr is passed through (progress).
fn run_py(args: &[&std::ffi::OsStr]) -> Result<(), String> {
    let py = python();
    let mut child = Command::new(&py)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| format!("{}: {e}", py.display()))?;
    let deadline = Instant::now() + PEERS_DEADLINE;
    loop {
        match child.try_wait() {
            Ok(Some(st)) if st.success() => return Ok(()),
            Ok(Some(st)) => return Err(format!("peers.py ended with {st}")),
            Ok(None) if Instant::now() > deadline => {
                // Ours to stop: the child was started here.
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "peers.py still running after {} s",
                    PEERS_DEADLINE.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(POLL),
            Err(e) => return Err(format!("waiting for peers.py: {e}")),
        }
    }
}

/// The smallest cosine between memoryd's sentence vectors and peers.py's for the same texts:
/// near 1 when the peers' MiniLM is the model memoryd runs.
fn agreement(texts: &[String]) -> Result<f32, String> {
    let model = memoryd::embed::model::Embedder::load(&model_dir()).map_err(|e| e.to_string())?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let input = dir.path().join("texts");
    let output = dir.path().join("vectors.jsonl");
    // One text a line: the few records with a line break are left out of the check.
    let texts: Vec<&String> = texts.iter().filter(|t| !t.contains('\n')).collect();
    let joined: Vec<&str> = texts.iter().map(|t| t.as_str()).collect();
    std::fs::write(&input, joined.join("\n")).map_err(|e| e.to_string())?;
    run_py(&[
        peers_py().as_os_str(),
        "--vectors".as_ref(),
        model_dir().as_os_str(),
        input.as_os_str(),
        output.as_os_str(),
    ])?;
    let ours = model.embed(&joined).map_err(|e| e.to_string())?;
    let theirs = std::fs::read_to_string(&output).map_err(|e| e.to_string())?;
    let mut min = f32::MAX;
    for (a, line) in ours.iter().zip(theirs.lines()) {
        let b: Vec<f32> = serde_json::from_str(line).map_err(|e| format!("vectors: {e}"))?;
        min = min.min(a.iter().zip(&b).map(|(x, y)| x * y).sum());
    }
    Ok(min)
}

impl Peers {
    /// The peers run over the LoCoMo state at `state`, and memoryd's per-conversation
    /// indexes built; `None`, with a line saying why, when the peers cannot run.
    pub fn build(state: &Path, questions: &[Question], file: &str) -> Option<Peers> {
        match Peers::try_build(state, questions, file) {
            Ok(p) => Some(p),
            Err(why) => {
                eprintln!("reference rows left out: {why}");
                None
            }
        }
    }

    fn try_build(state: &Path, questions: &[Question], file: &str) -> Result<Peers, String> {
        if !python().exists() {
            return Err(format!(
                "no bench venv at {} (scripts/bench recall makes it from eval/peers-requirements.txt)",
                python().display()
            ));
        }
        if !model_dir().join("model.safetensors").exists() {
            return Err(format!(
                "no embedding model at {} (scripts/setup-python)",
                model_dir().display()
            ));
        }
        // The answers are kept for `--peers-from`: the peers take 10 to 25 minutes on this
        // machine, memoryd's side of the table a minute and a half.
        let out = match std::env::args().skip_while(|a| a != "--peers-from").nth(1) {
            Some(from) => PathBuf::from(from),
            None => {
                let out = cache_dir().join(file);
                std::fs::create_dir_all(cache_dir()).map_err(|e| e.to_string())?;
                run_py(&[
                    peers_py().as_os_str(),
                    state.as_os_str(),
                    model_dir().as_os_str(),
                    out.as_os_str(),
                ])?;
                out
            }
        };
        let mut peers = Peers::read(&out, questions)?;

        let mut sample_texts: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for e in std::fs::read_dir(state.join("sessions")).map_err(|e| e.to_string())? {
            let e = e.map_err(|e| e.to_string())?;
            let sample = e.file_name().to_string_lossy().to_string();
            let one = tempfile::tempdir().map_err(|e| e.to_string())?;
            let dest = one.path().join("sessions").join(&sample);
            std::fs::create_dir_all(&dest).map_err(|e| e.to_string())?;
            for f in std::fs::read_dir(e.path()).map_err(|e| e.to_string())? {
                let f = f.map_err(|e| e.to_string())?;
                std::fs::copy(f.path(), dest.join(f.file_name())).map_err(|e| e.to_string())?;
                if f.path().extension().is_some_and(|x| x == "jsonl") {
                    let text = std::fs::read_to_string(f.path()).map_err(|e| e.to_string())?;
                    for l in text.lines() {
                        let v: serde_json::Value = serde_json::from_str(l)
                            .map_err(|e| format!("{}: {e}", f.path().display()))?;
                        if let Some(c) = v["content"].as_str() {
                            sample_texts
                                .entry(sample.clone())
                                .or_default()
                                .push(c.into());
                        }
                    }
                }
            }
            let world = World::build(one.path());
            let vec_world = VecWorld::build(one.path(), world.now);
            peers.worlds.insert(sample, (world, vec_world, one));
        }
        let check: Vec<String> = sample_texts
            .values()
            .flatten()
            .take(CHECK_TEXTS)
            .cloned()
            .collect();
        match agreement(&check) {
            Ok(min) => eprintln!(
                "peers' MiniLM against memoryd's embedder: smallest cosine {min:.5} over {} records",
                check.len()
            ),
            Err(why) => eprintln!("peers' MiniLM not checked against memoryd's: {why}"),
        }
        Ok(peers)
    }

    /// peers.py's answer file, checked against the questions it was asked.
    fn read(path: &Path, questions: &[Question]) -> Result<Peers, String> {
        let size = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
        if size > MAX_ANSWER_BYTES {
            return Err(format!(
                "peers.py wrote {size} bytes, more than {MAX_ANSWER_BYTES}"
            ));
        }
        let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
        let mut answers: Vec<(&'static str, Answers)> = Vec::new();
        let mut samples: HashMap<String, VecDeque<Option<String>>> = HashMap::new();
        let mut peer_ms: BTreeMap<&'static str, Vec<f64>> = BTreeMap::new();
        let mut index_s = BTreeMap::new();
        let mut first_system: Option<String> = None;
        for (n, l) in text.lines().enumerate() {
            let bad = |what: &str| format!("peers.py's answers, line {}: {what}", n + 1);
            let v: serde_json::Value = serde_json::from_str(l).map_err(|e| bad(&e.to_string()))?;
            let system = v["system"].as_str().ok_or_else(|| bad("no system"))?;
            let name = answers
                .iter()
                .map(|a| a.0)
                .find(|a| *a == system)
                .unwrap_or_else(|| {
                    // A handful of column names, for the life of the bench.
                    let leaked: &'static str = Box::leak(system.to_string().into_boxed_str());
                    answers.push((leaked, HashMap::new()));
                    leaked
                });
            if let Some(s) = v["index_s"].as_f64() {
                index_s.insert(name, s);
                continue;
            }
            let q = v["q"]
                .as_u64()
                .and_then(|q| questions.get(q as usize))
                .ok_or_else(|| bad("no question of that number"))?;
            let hits: Vec<String> = v["hits"]
                .as_array()
                .ok_or_else(|| bad("no hits"))?
                .iter()
                .map(|h| {
                    h.as_str()
                        .map(String::from)
                        .ok_or_else(|| bad("a hit not text"))
                })
                .collect::<Result<_, _>>()?;
            let sample = v["sample"].as_str().map(String::from);
            let (_, by_q) = answers
                .iter_mut()
                .find(|a| a.0 == name)
                .expect("pushed above");
            by_q.entry(q.text.clone()).or_default().push_back(hits);
            peer_ms
                .entry(name)
                .or_default()
                .push(v["ms"].as_f64().unwrap_or(0.0));
            // The conversations once, from the first system's lines.
            if first_system.get_or_insert_with(|| system.to_string()) == system {
                samples.entry(q.text.clone()).or_default().push_back(sample);
            }
        }
        // Every question answered by every peer, or the file is of another run.
        for (name, by_q) in &answers {
            let n: usize = by_q.values().map(VecDeque::len).sum();
            if n != questions.len() {
                return Err(format!(
                    "peers.py's answers: {name} answers {n} questions, the set has {}",
                    questions.len()
                ));
            }
        }
        Ok(Peers {
            answers,
            samples,
            worlds: BTreeMap::new(),
            peer_ms,
            index_s,
            times: Rc::default(),
        })
    }

    /// The columns: memoryd per conversation (words, default, vectors), then each peer. Each answers
    /// a question's asks in the order the bench asks them, once per question of the file.
    pub fn systems(&self, depth: usize) -> Vec<System<'_>> {
        let mut per_sample: BTreeMap<String, Vec<System<'_>>> = BTreeMap::new();
        for (sample, (world, vec_world, _)) in &self.worlds {
            let mut s: Vec<System<'_>> = world
                .systems(depth)
                .into_iter()
                .filter(|s| s.name == WORDS)
                .collect();
            if let Some(v) = vec_world {
                s.extend(v.systems(depth));
            }
            per_sample.insert(sample.clone(), s);
        }
        let per_sample = Rc::new(RefCell::new(per_sample));
        let mut out: Vec<System<'_>> = Vec::new();
        for (column, inner) in [
            (WORDS_EACH, WORDS),
            (FUSED_EACH, FUSED),
            (VECTORS_EACH, VECTORS),
        ] {
            let per_sample = Rc::clone(&per_sample);
            let mut samples = self.samples.clone();
            let times = Rc::clone(&self.times);
            out.push(System {
                name: column,
                ask: Box::new(move |q| {
                    let Some(Some(sample)) = samples.get_mut(q).and_then(|d| d.pop_front()) else {
                        return Vec::new();
                    };
                    let mut all = per_sample.borrow_mut();
                    let Some(s) = all
                        .get_mut(&sample)
                        .and_then(|v| v.iter_mut().find(|s| s.name == inner))
                    else {
                        return Vec::new();
                    };
                    let t0 = Instant::now();
                    let hits = (s.ask)(q);
                    // The vector column reuses the default's search of the same question
                    // (`VecWorld` keeps it), so its time would be a lookup: left blank.
                    if column != VECTORS_EACH {
                        let ms = t0.elapsed().as_secs_f64() * 1000.0;
                        times.borrow_mut().entry(column).or_default().push(ms);
                    }
                    hits
                }),
            });
        }
        for (name, by_q) in &self.answers {
            let mut by_q = by_q.clone();
            out.push(System {
                name,
                ask: Box::new(move |q| {
                    by_q.get_mut(q)
                        .and_then(|d| d.pop_front())
                        .unwrap_or_default()
                }),
            });
        }
        let mut times = self.times.borrow_mut();
        for (name, ms) in &self.peer_ms {
            times.insert(name, ms.clone());
        }
        out
    }
}

/// The `p`th percentile of `ms` (nearest rank), `None` when nothing was timed.
pub fn percentile(ms: &[f64], p: f64) -> Option<f64> {
    let mut v = ms.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    Some(v[rank.clamp(1, v.len()) - 1])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sets::Judge;

    fn question(text: &str) -> Question {
        Question {
            text: text.into(),
            category: "single-hop".into(),
            judge: Judge::Contains("x".into()),
            haystack: None,
        }
    }

    fn answers(lines: &[&str]) -> Result<Peers, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("peers.jsonl");
        std::fs::write(&path, lines.join("\n")).unwrap();
        Peers::read(
            &path,
            &[question("Who?"), question("Who?"), question("Where?")],
        )
    }

    #[test]
    fn answers_to_fewer_questions_than_the_set_has_are_refused() {
        let one = r#"{"system": "bm25s, turns", "q": 0, "sample": "a", "hits": [], "ms": 1.0}"#;
        let err = answers(&[one]).err().unwrap();
        assert!(err.contains("answers 1 questions, the set has 3"), "{err}");
    }

    #[test]
    fn a_line_that_is_not_json_or_names_no_asked_question_is_an_error_naming_its_line() {
        let good = r#"{"system": "bm25s, turns", "q": 0, "sample": "a", "hits": ["x"], "ms": 1.0}"#;
        let err = answers(&[good, "not json"]).err().unwrap();
        assert!(err.contains("line 2"), "{err}");
        let far = r#"{"system": "bm25s, turns", "q": 9, "sample": "a", "hits": [], "ms": 1.0}"#;
        let err = answers(&[far]).err().unwrap();
        assert!(
            err.contains("line 1") && err.contains("no question"),
            "{err}"
        );
        let not_text =
            r#"{"system": "bm25s, turns", "q": 0, "sample": "a", "hits": [3], "ms": 1.0}"#;
        assert!(answers(&[not_text]).err().unwrap().contains("not text"));
    }

    #[test]
    fn a_question_asked_twice_gets_each_of_its_answers_in_the_order_of_the_file() {
        let peers = answers(&[
            r#"{"system": "bm25s, turns", "q": 0, "sample": "a", "hits": ["first"], "ms": 1.0}"#,
            r#"{"system": "bm25s, turns", "q": 1, "sample": "b", "hits": ["second"], "ms": 2.0}"#,
            r#"{"system": "bm25s, turns", "q": 2, "sample": "b", "hits": [], "ms": 3.0}"#,
            r#"{"system": "bm25s, turns", "index_s": 0.5}"#,
        ])
        .unwrap();
        assert_eq!(peers.index_s.get("bm25s, turns"), Some(&0.5));
        let mut systems = peers.systems(10);
        let bm25 = systems
            .iter_mut()
            .find(|s| s.name == "bm25s, turns")
            .unwrap();
        assert_eq!((bm25.ask)("Who?"), vec!["first".to_string()]);
        assert_eq!((bm25.ask)("Who?"), vec!["second".to_string()]);
        assert!((bm25.ask)("Who?").is_empty(), "no third answer");
    }

    #[test]
    fn the_percentile_is_the_nearest_rank_and_nothing_timed_has_none() {
        let ms: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&ms, 50.0), Some(50.0));
        assert_eq!(percentile(&ms, 99.0), Some(99.0));
        assert_eq!(percentile(&[7.0], 99.0), Some(7.0));
        assert_eq!(percentile(&[], 50.0), None);
    }
}
