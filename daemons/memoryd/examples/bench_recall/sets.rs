//! The evaluation sets: session logs in a state directory of their own, and questions
//! with how to tell a hit that answers.

use crate::metrics::One;
use crate::scripted;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The row of the questions every category but `UNANSWERABLE` sums to.
pub const ALL: &str = "all answerable";

/// LoCoMo's adversarial questions name the wrong person: their evidence is the turn about
/// the right one, which a recall should not put first; they are kept out of `ALL`.
pub const UNANSWERABLE: &str = "adversarial";

pub struct Set {
    /// What `--set` picks it by.
    pub name: &'static str,
    /// Its tables' heading (a size-picked set says its size).
    pub title: String,
    pub state: tempfile::TempDir,
    pub questions: Vec<Question>,
    pub records: usize,
}

pub struct Question {
    pub text: String,
    pub category: String,
    pub judge: Judge,
    /// The session directory this question is asked of alone (a LoCoMo conversation is
    /// its own haystack, as the benchmark is run); `None`: of every log of the set.
    pub haystack: Option<String>,
}

/// Logs indexed together and the questions asked of them.
pub struct Haystack<'a> {
    pub state: PathBuf,
    pub questions: Vec<&'a Question>,
    /// Keeps a haystack copied out of the set's state directory alive while it is asked.
    _copy: Option<tempfile::TempDir>,
}

impl Set {
    /// The set's haystacks: every log at once, or, when its questions name their own
    /// conversation, each conversation copied into a state directory of its own.
    pub fn haystacks(&self) -> Vec<Haystack<'_>> {
        let mut names: Vec<&str> = self
            .questions
            .iter()
            .filter_map(|q| q.haystack.as_deref())
            .collect();
        names.sort_unstable();
        names.dedup();
        if names.is_empty() {
            return vec![Haystack {
                state: self.state.path().to_path_buf(),
                questions: self.questions.iter().collect(),
                _copy: None,
            }];
        }
        names
            .into_iter()
            .map(|name| {
                let copy = tempfile::tempdir().unwrap();
                copy_dir(
                    &self.state.path().join("sessions").join(name),
                    &copy.path().join("sessions").join(name),
                );
                Haystack {
                    state: copy.path().to_path_buf(),
                    questions: self
                        .questions
                        .iter()
                        .filter(|q| q.haystack.as_deref() == Some(name))
                        .collect(),
                    _copy: Some(copy),
                }
            })
            .collect()
    }
}

pub enum Judge {
    /// A hit answers when its text contains this (case-insensitively).
    Contains(String),
    /// A hit answers when it is one of these records (texts).
    Evidence(HashSet<String>),
}

impl Judge {
    pub fn score(&self, hits: &[String], depth: usize) -> One {
        let hits = &hits[..hits.len().min(depth)];
        match self {
            Judge::Contains(answer) => {
                let answer = answer.to_lowercase();
                let first = hits.iter().position(|h| h.to_lowercase().contains(&answer));
                let found = |k: usize| f64::from(u8::from(first.is_some_and(|i| i < k)));
                One {
                    first,
                    evidence_at_5: found(5),
                    evidence_at_10: found(10),
                }
            }
            Judge::Evidence(ev) => {
                let first = hits.iter().position(|h| ev.contains(h));
                let share = |k: usize| {
                    let found: HashSet<&String> =
                        hits.iter().take(k).filter(|h| ev.contains(*h)).collect();
                    found.len() as f64 / ev.len() as f64
                };
                One {
                    first,
                    evidence_at_5: share(5),
                    evidence_at_10: share(10),
                }
            }
        }
    }
}

pub fn eval_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("eval")
}

/// The sets to hand, or only the one `--set` names: ours always; LoCoMo, and ours among
/// LoCoMo's conversations, when LoCoMo can be fetched. The synthetic year
/// (`scripted::year`, at each size `--size` names) and LoCoMo-Plus (`scripted::locomo_plus`)
/// only when named: they take minutes to embed the first time.
pub fn all(only: Option<&str>) -> Vec<Set> {
    match only {
        Some("year") => return scripted::year(),
        Some("locomo-plus") => {
            return match scripted::locomo_plus() {
                Ok(s) => vec![s],
                Err(why) => {
                    eprintln!("locomo-plus set left out: {why}");
                    Vec::new()
                }
            }
        }
        Some("own") => return vec![own()],
        _ => {}
    }
    let mut out = vec![own()];
    match locomo() {
        Ok(l) => {
            out.push(crowded(&l));
            out.push(l);
        }
        Err(why) => eprintln!("locomo set left out: {why}"),
    }
    out
}

/// Our questions asked of our sessions among LoCoMo's 272 (some 6 000 records of other
/// people's chat): a long history, where the vector side always returns as many records
/// as it asks for and a question's background is other people's talk. How the fusion
/// does for an owner whose history is large, which our set alone (some 300 records)
/// cannot show. A LoCoMo turn that happens to contain an answer string counts as right.
fn crowded(locomo: &Set) -> Set {
    let mut set = own();
    set.name = "own-crowded";
    set.title = "own-crowded".into();
    copy_dir(
        &locomo.state.path().join("sessions"),
        &set.state.path().join("sessions"),
    );
    set.records = count_records(&set.state.path().join("sessions"));
    set
}

fn own() -> Set {
    let eval = eval_dir();
    let state = tempfile::tempdir().unwrap();
    copy_dir(&eval.join("sessions"), &state.path().join("sessions"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(eval.join("questions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "tsv"))
        .collect();
    files.sort();
    let mut questions = Vec::new();
    for path in files {
        let category = path.file_stem().unwrap().to_string_lossy().to_string();
        for l in std::fs::read_to_string(&path).unwrap().lines() {
            if l.trim().is_empty() || l.starts_with('#') {
                continue;
            }
            let (q, a) = l
                .split_once('\t')
                .unwrap_or_else(|| panic!("{}: no tab in {l:?}", path.display()));
            questions.push(Question {
                text: q.trim().into(),
                category: category.clone(),
                judge: Judge::Contains(a.trim().into()),
                haystack: None,
            });
        }
    }
    let records = count_records(&state.path().join("sessions"));
    Set {
        name: "own",
        title: "own".into(),
        state,
        questions,
        records,
    }
}

/// The venv scripts/setup-python makes (its Python has pip).
pub fn venv() -> PathBuf {
    std::env::var_os("BOXMAKER_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv"))
}

/// Where fetched data and computed vectors are kept between runs.
pub fn cache_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-cache")
}

fn locomo() -> Result<Set, String> {
    let python = venv().join("bin/python");
    let mut cmd = std::process::Command::new(&python);
    cmd.arg(eval_dir().join("locomo.py"));
    let (state, questions) = scripted::run(cmd, &[cache_dir().as_os_str()])?;
    let records = count_records(&state.path().join("sessions"));
    Ok(Set {
        name: "locomo",
        title: "locomo".into(),
        state,
        questions,
        records,
    })
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

pub fn count_records(sessions: &Path) -> usize {
    let mut n = 0;
    for s in std::fs::read_dir(sessions).unwrap() {
        for f in std::fs::read_dir(s.unwrap().path()).unwrap() {
            let p = f.unwrap().path();
            if p.extension().is_some_and(|x| x == "jsonl") {
                n += std::fs::read_to_string(&p).unwrap().lines().count();
            }
        }
    }
    n
}
