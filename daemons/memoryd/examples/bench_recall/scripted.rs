//! The sets a script in `eval/` writes at run time into a state directory: session logs under
//! `sessions/` and `questions.jsonl` (`{"question", "category", "evidence": [record texts],
//! "conversation"?}`, a hit answering when it is one of the evidence records): LoCoMo
//! (`eval/locomo.py`), the synthetic year of one owner (`eval/year.py`) and LoCoMo-Plus
//! (`eval/locomo_plus.py`).

use crate::sets::{count_records, eval_dir, venv, Judge, Question, Set};
use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The year's sizes, in records, when `--size` names none: the short history, where plain
/// FTS5 is at its strongest, and a year of daily use (some 40 exchanges a day).
pub const YEAR_SIZES: [usize; 2] = [3_000, 30_000];

/// The largest year `--size` may ask for: its embedding alone takes some ten minutes per
/// 60 000 records on this machine, and its logs are written to a temporary directory.
const MAX_YEAR_RECORDS: usize = 300_000;

/// `cmd` (a script) run with a new state directory and then `args`; the state and its
/// questions.
pub fn run(
    mut cmd: Command,
    args: &[&OsStr],
) -> Result<(tempfile::TempDir, Vec<Question>), String> {
    let state = tempfile::tempdir().map_err(|e| e.to_string())?;
    let out = cmd
        .arg(state.path())
        .args(args)
        .stdout(Stdio::null())
        .output()
        .map_err(|e| format!("{:?}: {e}", cmd.get_program()))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    let path = state.path().join("questions.jsonl");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut questions = Vec::new();
    for (n, l) in text.lines().enumerate() {
        let bad = |what: &str| format!("{}:{}: {what}", path.display(), n + 1);
        let v: serde_json::Value = serde_json::from_str(l).map_err(|e| bad(&e.to_string()))?;
        let evidence = v["evidence"]
            .as_array()
            .ok_or_else(|| bad("no evidence"))?
            .iter()
            .map(|e| {
                e.as_str()
                    .map(String::from)
                    .ok_or_else(|| bad("evidence not text"))
            })
            .collect::<Result<_, _>>()?;
        questions.push(Question {
            text: v["question"]
                .as_str()
                .ok_or_else(|| bad("no question"))?
                .into(),
            category: v["category"]
                .as_str()
                .ok_or_else(|| bad("no category"))?
                .into(),
            judge: Judge::Evidence(evidence),
            haystack: v["conversation"].as_str().map(String::from),
        });
    }
    Ok((state, questions))
}

/// The venv's Python when there is one (eval/year.py needs only the standard library).
fn python() -> PathBuf {
    let p = venv().join("bin/python");
    if p.exists() {
        p
    } else {
        PathBuf::from("python3")
    }
}

/// The sizes `--size` names (`--size 3000` or `--size 3000,30000`), else `YEAR_SIZES`.
fn year_sizes() -> Vec<usize> {
    let Some(arg) = std::env::args().skip_while(|a| a != "--size").nth(1) else {
        return YEAR_SIZES.to_vec();
    };
    arg.split(',')
        .map(|s| {
            let n: usize = s
                .trim()
                .parse()
                .unwrap_or_else(|_| panic!("--size: {s:?} is not a number"));
            assert!(
                (100..=MAX_YEAR_RECORDS).contains(&n),
                "--size: {n} records, outside 100..={MAX_YEAR_RECORDS}"
            );
            n
        })
        .collect()
}

/// The synthetic year at each size asked for: one set each, the same facts and questions
/// with more everyday talk around them.
pub fn year() -> Vec<Set> {
    let mut out = Vec::new();
    for size in year_sizes() {
        let mut cmd = Command::new(python());
        cmd.arg(eval_dir().join("year.py"));
        let n = size.to_string();
        match run(cmd, &[n.as_ref()]) {
            Ok((state, questions)) => {
                let records = count_records(&state.path().join("sessions"));
                out.push(Set {
                    name: "year",
                    title: format!("year, {records} records"),
                    state,
                    questions,
                    records,
                });
            }
            Err(why) => eprintln!("year set of {size} records left out: {why}"),
        }
    }
    out
}

/// LoCoMo-Plus, from the clone BOXMAKER_LOCOMO_PLUS names (eval/locomo_plus.py says how to
/// get one when it is not set, and checks the pinned commit's files).
pub fn locomo_plus() -> Result<Set, String> {
    let mut cmd = Command::new(python());
    cmd.arg(eval_dir().join("locomo_plus.py"));
    let (state, questions) = run(cmd, &[])?;
    let records = count_records(&state.path().join("sessions"));
    Ok(Set {
        name: "locomo-plus",
        title: "locomo-plus".into(),
        state,
        questions,
        records,
    })
}
