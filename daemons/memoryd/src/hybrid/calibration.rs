//! How the fusion weighs what each half found (`Calibration`), and the weights chosen by
//! measuring the evaluation sets (`CALIBRATION`; docs/measurements/memoryd.md,
//! "Calibrating the fusion").

use super::distinct::{Distinct, DISTINCT};

/// How a meaning hit's cosine is put on the words' relevance scale.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calibration {
    /// The rank (from 1) among the question's nearest records whose cosine is its
    /// background; with fewer candidates, `MIN_COSINE` (all the rest are below it).
    pub background_rank: usize,
    /// A cosine this far above the background counts nothing...
    pub margin_floor: f32,
    /// ...and this far above it as much as holding every word of the question.
    pub margin_full: f32,
    /// The most a hit found by meaning alone can count.
    pub cap: f32,
    /// How much a meaning hit naming none of the question's names is worth (times).
    pub name_missing: f32,
    /// How much a meaning hit from the time the question names is worth (times).
    pub in_span: f32,
    /// A word hit meaning found too counts its better strength plus this: being among
    /// the nearest of a long history is evidence of its own. When the meaning side
    /// returned every record it found near (fewer than it asked for), being among them
    /// says only that the cosine cleared `MIN_COSINE`, and the bonus is at most the
    /// hit's own meaning strength.
    pub both: f32,
    /// A word hit holding less than half of the question, which the meaning side would
    /// have returned had it been near (its list is not full) and did not, counts this
    /// much times its strength, and goes after the word hits as relevant as it: the
    /// model calls it unrelated, as "run" in "when does my travel document run out"
    /// matches a record about running. 1 turns the rule off.
    pub unrelated: f32,
    /// A word hit holding more than this share of the question's groups is passed by a
    /// hit found by meaning alone only when that hit counts `cap`, the most it can: most
    /// of the question's words in one record is evidence a near neighbour in meaning
    /// does not outweigh unless it is as near as any.
    pub majority: f32,
    /// How much a word hit's strength weighs the question's groups by how rare they are
    /// in the index (`index::Rarity`): its strength is the share of the question it
    /// holds with each group weighed by its rarity to this power. 0 weighs every group
    /// alike: the strength is the relevance. Only the strength moves; `Hit::relevance`
    /// and the rules reading the relevance (`unrelated`, `majority`) keep the plain share.
    pub rarity: f32,
    /// The head start late interaction gives a candidate for its place among the vector
    /// side's own nearest, as a share of what the merge's place gives (`late::FUSED`):
    /// a candidate counts the better of the two. 0: only the merge's place counts.
    /// Given in full when the words found nothing; otherwise times how common what the
    /// words' first hit holds is (`common_share`).
    pub own_slots: f32,
    /// Whether `own_slots` is weighed by `common_share` (false: always in full).
    pub own_when_common: bool,
    /// The words found little: their first hit holds at most this share of the
    /// question's groups (or there is none) and the question's background is at most
    /// `sparse`. Late interaction then orders the candidates by their places alone, the
    /// vector side's counting `little_own` of the merge's, and, when the words found
    /// anything at all, its nearest below `MIN_COSINE` are candidates too (docs/memoryd.md,
    /// "When the words found little").
    /// Below 0 turns the rule off.
    pub little: f32,
    /// The most the question's background may be for `little`: above it, the history
    /// holds a topic near the question, where the word pieces' match tells its turns apart.
    pub sparse: f32,
    /// The vector side's places' head start when the words found little, as a share of
    /// the merge's.
    pub little_own: f32,
    /// When late interaction's candidate says what a better one says and goes after
    /// those saying something else (`distinct`; docs/memoryd.md, "Hits that say
    /// something else").
    pub distinct: Distinct,
}

/// Chosen by measuring the evaluation sets (`scripts/bench recall --sweep`; the table is
/// in docs/measurements/memoryd.md, "Calibrating the fusion"). Eight records make the
/// background: on LoCoMo's long two-person conversations it sits at 0.45 to 0.55, so
/// only a record that clearly stands out from the topic's other turns can pass a word hit, and the fusion
/// is at least words alone in every category; in a small varied history the eighth
/// nearest is below `MIN_COSINE`, and a paraphrase at 0.35 goes ahead of word hits
/// holding a third of the question (our paraphrases as vectors alone find them). A
/// later rank (14) lets more paraphrases through in a large history of other talk, and
/// costs LoCoMo two evidence turns: the trade is written down there.
/// `rarity` 0.5 (each group weighed by the square root of its rarity) lets a paraphrase
/// pass word hits holding only the question's common word in a large history of other
/// talk, and keeps every LoCoMo cell at or above words alone; 1 lets more through and
/// costs LoCoMo's adversarial questions one first hit.
/// `cap` below 1 keeps the words' first hit first when it holds every word of the
/// question, whatever meaning alone finds; `both` lifts what both halves found over what
/// only one did.
/// `own_slots` 1 gives the vector side's nearest the head start in late interaction the
/// merge's places give: in a year of small talk naming each friend 150 times, the words
/// half fills the merge with turns that only name the person, and the record that says
/// where they live, nearest in meaning, started behind all of them (docs/memoryd.md,
/// "The vector side's own places"). Given always, it cost LoCoMo's multi-hop, temporal
/// and open-domain questions, whose words' first hit holds a word of a few turns: so it
/// is weighed by how common that is (`own_when_common`).
/// `little` 0.25 and `sparse` 0.37: a remark that only makes sense with an earlier one in
/// mind ("I ended up volunteering for that project, and now I'm totally overwhelmed.")
/// shares a word or two with long turns about something else, and the piece match ranks
/// those above the short earlier remark the vector side found; a quarter of the question
/// and a background of 0.37 take in most of LoCoMo-Plus's triggers and none of LoCoMo's
/// questions that the rule would lose (0.38 loses one; docs/memoryd.md, "When the words
/// found little").
/// `distinct` 0.8: the copies of a few everyday remarks took every place of the hits in a
/// long history of small talk; four fifths of the shorter record's words in common
/// moves them and nothing on LoCoMo, seven tenths cost a LoCoMo temporal question
/// (docs/memoryd.md, "Hits that say something else").
pub const CALIBRATION: Calibration = Calibration {
    background_rank: 8,
    margin_floor: 0.03,
    margin_full: 0.25,
    cap: 0.9,
    name_missing: 0.5,
    in_span: 1.5,
    both: 0.2,
    unrelated: 0.5,
    majority: 0.5,
    rarity: 0.5,
    own_slots: 1.0,
    own_when_common: true,
    little: 0.25,
    sparse: 0.37,
    little_own: 2.0,
    distinct: DISTINCT,
};
