//! Making an answer fit in one frame without losing its best hits. A recall's hits come
//! best first; dropping hits from the end until the frame fits would let one long top hit
//! empty the whole answer. Instead every hit comes back and the longest texts are clipped
//! (on a character boundary, saying so and how long the text was) until the answer fits.

use crate::index::clipped_marker;
use proto::frame::{self, FrameError, HEADER, MAX_FRAME};
use proto::memory::{Hit, Response};

/// Bytes kept free below the frame limit for what the estimate below does not count
/// exactly (the markers' digits, the encoding's own framing of the list).
const SLACK: usize = 1024;

/// The response encoded as one frame, its hits' texts clipped as needed to fit. `None`
/// (logged) only for a response that cannot fit whatever is clipped, which memoryd's own
/// answers never are.
pub fn encode_fitting(mut response: Response) -> Option<Vec<u8>> {
    match frame::encode(&response) {
        Ok(bytes) => return Some(bytes),
        Err(FrameError::TooLarge(_)) => {}
        Err(e) => {
            plumbing::error!("encode response: {e}");
            return None;
        }
    }
    if let Response::Hits(hits) = &mut response {
        clip_to_fit(hits);
    }
    match frame::encode(&response) {
        Ok(bytes) => Some(bytes),
        Err(e) => {
            // Never the text of a hit: only how large the answer was.
            plumbing::error!("a response does not fit in a frame even clipped: {e}");
            None
        }
    }
}

/// Clips the texts of `hits` so their answer fits in a frame: each text keeps at most
/// an equal share of the room, a shorter text leaving what it does not need to the others.
pub fn clip_to_fit(hits: &mut [Hit]) {
    if hits.is_empty() {
        return;
    }
    // Everything but the texts: the hits with empty texts, encoded.
    let bare: Vec<Hit> = hits
        .iter()
        .map(|h| Hit {
            text: String::new(),
            ..h.clone()
        })
        .collect();
    let fixed = frame::encode(&Response::Hits(bare))
        .map(|b| b.len())
        .unwrap_or(MAX_FRAME as usize);
    let marker = clipped_marker(usize::MAX).len();
    let room = (MAX_FRAME as usize + HEADER).saturating_sub(fixed + SLACK + marker * hits.len());
    let share = fair_share(hits.iter().map(|h| h.text.len()).collect(), room);
    for hit in hits.iter_mut() {
        if hit.text.len() > share {
            clip(&mut hit.text, share);
        }
    }
}

/// The most bytes each of texts of `lens` may keep so that together they take at most
/// `room`: water-filling, so texts shorter than the share stay whole.
fn fair_share(mut lens: Vec<usize>, room: usize) -> usize {
    lens.sort_unstable();
    let mut left = room;
    let n = lens.len();
    for (i, len) in lens.iter().enumerate() {
        let share = left / (n - i);
        if *len > share {
            return share;
        }
        left -= len;
    }
    usize::MAX
}

/// Cuts `text` to at most `max` bytes on a character boundary and appends the marker
/// with its whole length in characters.
fn clip(text: &mut String, max: usize) {
    let chars = text.chars().count();
    let mut cut = max.min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
    text.push_str(&clipped_marker(chars));
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::label::{DataClass, Label};

    fn hit(text: String) -> Hit {
        Hit {
            session: "main".into(),
            epoch: 0,
            time: "2026-11-30T06:00:00.000Z".into(),
            kind: "session".into(),
            role: "owner".into(),
            label: Label::new(DataClass::Private, false),
            text,
            relevance: 0,
        }
    }

    /// Regression: an oversized top hit emptied the whole answer, since hits were
    /// dropped from the end until the frame fitted.
    #[test]
    fn an_oversized_top_hit_is_clipped_and_every_hit_comes_back_in_order() {
        let huge = format!("é{}", "x".repeat(3 << 20));
        let hits = vec![
            hit(huge.clone()),
            hit("second".into()),
            hit("y".repeat(400_000)),
            hit("third".into()),
        ];
        let bytes = encode_fitting(Response::Hits(hits)).expect("fits");
        assert!(bytes.len() <= MAX_FRAME as usize + HEADER);
        let mut input = bytes;
        let payload = frame::take_payload(&mut input).unwrap().unwrap();
        let Response::Hits(back) = frame::decode::<Response>(&payload).unwrap() else {
            panic!("not hits")
        };
        assert_eq!(back.len(), 4);
        assert!(back[0].text.starts_with("éxxx"));
        assert!(back[0]
            .text
            .ends_with(&clipped_marker(huge.chars().count())));
        assert_eq!(back[1].text, "second");
        assert_eq!(back[3].text, "third");
        // The shorter long hit keeps more than an equal quarter would give it.
        assert!(back[2].text.len() > (MAX_FRAME as usize) / 4);
    }

    #[test]
    fn a_clip_never_splits_a_character() {
        let mut t = "ééé".to_string();
        clip(&mut t, 3);
        assert!(t.starts_with('é') && !t.starts_with("éé"), "{t}");
    }

    #[test]
    fn texts_shorter_than_their_share_stay_whole() {
        assert_eq!(fair_share(vec![10, 20, 30], 100), usize::MAX);
        assert_eq!(fair_share(vec![10, 1000, 1000], 110), 50);
    }
}
