//! Honcho's entries of a `/forget` list (docs/forgetting.md, 'What Honcho keeps'): what
//! Honcho derived that holds the query (`honcho::derived`), numbered after the box's own
//! entries, shown before anything is deleted, and deleted only as the owner picks them —
//! by number, or all of them with `/forget all`.

use honcho::derived::{self, Derived};
use proto::config::Config;
use proto::DataClass;

/// Honcho's entries for `query`, and why the search stopped early if it did. None when
/// reporting is off.
pub(super) fn search(cfg: &Config, query: &str) -> (Vec<Derived>, Option<String>) {
    match derived::search(&cfg.honcho, query) {
        Some(s) => {
            plumbing::info!(
                "/forget listed {} entries in Honcho{}",
                s.found.len(),
                if s.failed.is_some() {
                    " (search not finished)"
                } else {
                    ""
                }
            );
            (s.found, s.failed)
        }
        None => (Vec::new(), None),
    }
}

/// Entry `n` of a list: where it is in Honcho, and its text.
pub(super) fn render_entry(n: usize, d: &Derived) -> String {
    let mut out = format!("\n{n}. {}:", d.place());
    for line in d.text().lines() {
        out.push_str("\n   ");
        out.push_str(line);
    }
    out
}

/// Entry `n` in a room that may be sent nothing above `max`: what Honcho derived from
/// reports of up to `honcho` is named by its place alone (docs/matrix.md, 'Labels').
pub(super) fn render_withheld(n: usize, d: &Derived, honcho: DataClass, max: DataClass) -> String {
    format!(
        "\n{n}. {}: derived from reports of up to honcho.max_class ({honcho}), above matrix.max_class ({max}): the list at the terminal shows it",
        d.place()
    )
}

/// The line a list ends with when Honcho could not be searched.
pub(super) fn unsearched(why: &str) -> String {
    format!("\nHoncho could not be searched to the end, so what it derived may not all be listed: {why}.")
}

/// `numbers` (from 1, over the box's `boxed` entries and then Honcho's) split into the
/// box's numbers and Honcho's chosen entries; `None` (all) takes every one of both.
pub(super) fn split<'a>(
    numbers: Option<&[usize]>,
    boxed: usize,
    honcho: &'a [Derived],
) -> (Option<Vec<usize>>, Vec<&'a Derived>) {
    let Some(numbers) = numbers else {
        return (None, honcho.iter().collect());
    };
    let ours = numbers.iter().copied().filter(|&n| n <= boxed).collect();
    let theirs = numbers
        .iter()
        .filter_map(|&n| honcho.get(n.checked_sub(boxed + 1)?))
        .collect();
    (Some(ours), theirs)
}

/// Deletes the chosen entries in Honcho; the sentence for the reply, when any was chosen.
pub(super) fn delete(cfg: &Config, chosen: &[&Derived]) -> Option<String> {
    let done = derived::delete(&cfg.honcho, chosen)?;
    plumbing::info!(
        "/forget: Honcho: {} conclusions deleted, {} card lines taken out{}",
        done.conclusions.len(),
        done.card_lines,
        if done.failed.is_some() {
            ", not finished"
        } else {
            ""
        }
    );
    Some(done.sentence())
}
