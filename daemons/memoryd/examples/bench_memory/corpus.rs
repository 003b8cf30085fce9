//! A generated, repeatable corpus: session logs shaped like loopd's (owner and assistant
//! turns with the odd tool result and summary), words drawn from a Zipf-like
//! vocabulary so that common words are common and FTS5's posting lists look real.

use proto::head::{head_file_name, log_file_name, Head, Reason, SummarySource};
use proto::label::{DataClass, Label};
use proto::record::{Origin, Record};
use std::io::{BufWriter, Write};
use std::path::Path;

/// Distinct words in the vocabulary.
const VOCABULARY: usize = 20_000;

/// Sessions the records are spread over, round robin.
const SESSIONS: usize = 10;

/// xorshift64*: small, fast and repeatable; the bench needs no better randomness.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

pub struct Words {
    words: Vec<String>,
    /// Cumulative weights 1/rank, for sampling by rank.
    cdf: Vec<f64>,
}

impl Words {
    pub fn new(rng: &mut Rng) -> Words {
        const SYLLABLES: [&str; 16] = [
            "ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ba", "de", "fi", "go", "hu", "je",
            "pe", "zu",
        ];
        let mut words = Vec::with_capacity(VOCABULARY);
        let mut seen = std::collections::HashSet::new();
        while words.len() < VOCABULARY {
            let n = 2 + rng.below(3);
            let w: String = (0..n).map(|_| SYLLABLES[rng.below(16)]).collect();
            if seen.insert(w.clone()) {
                words.push(w);
            }
        }
        let mut total = 0.0;
        let cdf = (1..=VOCABULARY)
            .map(|rank| {
                total += 1.0 / rank as f64;
                total
            })
            .collect();
        Words { words, cdf }
    }

    pub fn pick(&self, rng: &mut Rng) -> &str {
        let total = self.cdf[self.cdf.len() - 1];
        let x = (rng.next() as f64 / u64::MAX as f64) * total;
        let i = self.cdf.partition_point(|&c| c < x).min(VOCABULARY - 1);
        &self.words[i]
    }

    /// The rank of `word` in the vocabulary, 1 the commonest.
    pub fn rank(&self, word: &str) -> Option<usize> {
        self.words.iter().position(|w| w == word).map(|i| i + 1)
    }

    pub fn sentence(&self, rng: &mut Rng, min: usize, max: usize) -> String {
        let n = min + rng.below(max - min + 1);
        let mut s = String::new();
        for i in 0..n {
            if i > 0 {
                s.push(' ');
            }
            s.push_str(self.pick(rng));
        }
        s
    }
}

fn time(i: usize) -> String {
    proto::time::format_unix_millis(1_780_000_000_000 + i as i64 * 1000)
}

/// How the records are spread over the sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One session after another, as one owner mostly works: the logs are read in time
    /// order.
    Sequential,
    /// Ten sessions taking turns, record by record: the worst case for a first
    /// catch-up, which reads each log whole and so goes back in time at every log.
    Interleaved,
}

/// Writes `texts` as one session's records under `state_dir`, the owner's and the
/// assistant's turns in turn: every one of them indexed (and embedded).
pub fn write_texts(state_dir: &Path, texts: &[String]) {
    let dir = state_dir.join("sessions").join("bench-texts");
    std::fs::create_dir_all(&dir).expect("create session dir");
    std::fs::write(
        dir.join(head_file_name(0)),
        serde_json::to_vec(&head()).expect("head json"),
    )
    .expect("write head");
    let mut log = BufWriter::new(std::fs::File::create(dir.join(log_file_name(0))).expect("log"));
    for (i, text) in texts.iter().enumerate() {
        let record = if i % 2 == 0 {
            Record::User {
                time: time(i),
                content: text.clone(),
                origin: Origin::Owner,
                matrix: None,
            }
        } else {
            Record::Assistant {
                cut: false,
                time: time(i),
                content: Some(text.clone()),
                tool_calls: vec![],
            }
        };
        log.write_all(record.to_line().as_bytes())
            .expect("write record");
    }
    log.flush().expect("flush log");
}

fn head() -> Head {
    Head {
        epoch: 0,
        started: time(0),
        system: "You are a helpful assistant.".into(),
        tools: serde_json::json!([]),
        carry: None,
        carry_label: Label::PUBLIC,
        reason: Reason::Start,
        summary_source: SummarySource::Model,
    }
}

/// Writes `records` records over `SESSIONS` sessions under `state_dir` and returns the
/// texts memoryd will index, in order, for the bare-FTS5 comparison.
pub fn write_logs(
    state_dir: &Path,
    records: usize,
    layout: Layout,
    words: &Words,
    rng: &mut Rng,
) -> Vec<String> {
    let mut writers = Vec::new();
    for s in 0..SESSIONS {
        let dir = state_dir.join("sessions").join(format!("bench-{s}"));
        std::fs::create_dir_all(&dir).expect("create session dir");
        std::fs::write(
            dir.join(head_file_name(0)),
            serde_json::to_vec(&head()).expect("head json"),
        )
        .expect("write head");
        let f = std::fs::File::create(dir.join(log_file_name(0))).expect("create log");
        writers.push(BufWriter::new(f));
    }
    let mut indexed = Vec::with_capacity(records);
    for i in 0..records {
        let t = time(i);
        let roll = rng.below(100);
        let record = if roll < 47 {
            let content = words.sentence(rng, 4, 30);
            indexed.push(content.clone());
            Record::User {
                time: t,
                content,
                origin: Origin::Owner,
                matrix: None,
            }
        } else if roll < 94 {
            let content = words.sentence(rng, 8, 60);
            indexed.push(content.clone());
            Record::Assistant {
                cut: false,
                time: t,
                content: Some(content),
                tool_calls: vec![],
            }
        } else if roll < 97 {
            Record::ToolResult {
                time: t,
                call: i as u64,
                tool_call_id: format!("c{i}"),
                name: "http_fetch".into(),
                content: words.sentence(rng, 50, 200),
                class: DataClass::Public,
                untrusted: true,
            }
        } else {
            let content = words.sentence(rng, 10, 40);
            indexed.push(content.clone());
            Record::ToolSummary {
                time: t,
                call: i as u64,
                tool_call_id: format!("c{i}"),
                content,
                class: DataClass::Public,
                untrusted: true,
            }
        };
        let session = match layout {
            Layout::Sequential => i * SESSIONS / records,
            Layout::Interleaved => i % SESSIONS,
        };
        writers[session]
            .write_all(record.to_line().as_bytes())
            .expect("write record");
    }
    for mut w in writers {
        w.flush().expect("flush log");
    }
    indexed
}
