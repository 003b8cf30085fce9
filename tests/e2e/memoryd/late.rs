//! Late interaction end to end (docs/memoryd.md, 'Late interaction'): the real memoryd
//! with `memory.embed_model` set keeps every row's word pieces beside its vector, and a
//! recall over its socket matches the question's pieces against its candidates'. Needs
//! the embedding model, like `vectors` (SKIPPED without it, failed in CI).

use super::vectors::{wait_embedded, with_model};
use super::*;
use crate::support::prereq::embed_model;

/// LoCoMo's turn for "What kind of flowers does Audrey take care of?": it shares no
/// word with the question.
const LILIES: &str = "Audrey: They're called Peruvian Lilies. They are so awesome - they have \
    such bright colors and delicate petals.";

/// A turn as the LoCoMo bench logs it: Audrey is the owner, Andrew the assistant.
fn said(turn: &str) -> proto::record::Record {
    if turn.starts_with("Audrey:") {
        user(turn)
    } else {
        assistant(turn)
    }
}

#[test]
fn a_turn_sharing_no_word_with_the_question_is_recalled_in_the_first_three_by_its_pieces() {
    let Some(model) = embed_model() else { return };
    let fx = Fixture::new("");
    with_model(&fx, &model);
    // The conversation as LoCoMo has it around the answer.
    let garden = Epoch::start(&fx, "garden");
    for t in [
        "Audrey: It's going great! The flowers are looking great and my veggie patch is \
         coming along.",
        "Andrew: Those flowers look great! What kind are they?",
        LILIES,
        "Andrew: They're beautiful! So vibrant and eye-catching. Are they difficult to care for?",
        "Audrey: Nope, they're easy to take care of, perfect for me! Just gotta water them \
         and make sure they get enough sun.",
    ] {
        garden.add(&said(t));
    }
    // Other talk holding the question's words: "take care", "Audrey", "flowers", "kind".
    let chat = Epoch::start(&fx, "chat");
    for t in [
        "Andrew: Take care of yourself, Audrey!",
        "Audrey: I take care of the dogs every morning before work.",
        "Andrew: Audrey, take care and talk soon!",
        "Andrew: You take such good care of your pups.",
        "Audrey: I take care of my grandma on Sundays.",
        "Andrew: We went hiking with the dogs on Saturday.",
        "Audrey: I got a new tattoo on my arm last week.",
        "Andrew: Caring for a puppy takes a lot of patience.",
        "Andrew: What kind of music do you like, Audrey?",
        "Andrew: I bought flowers for my mom's birthday.",
        "Audrey: The dogs knocked over the flowers on the table.",
        "Andrew: What kind of dog food do you buy?",
    ] {
        chat.add(&said(t));
    }
    let _d = Daemon::start("memoryd", &fx);
    // Every row has its vector and its pieces (stored together) before asking: a
    // candidate without pieces would leave the merge's order as it is.
    let s = wait_embedded(&fx);
    assert_eq!(s.rows, 17, "{s:?}");
    let hits = recall(&fx, "What kind of flowers does Audrey take care of?");
    let first: Vec<&str> = hits.iter().take(3).map(|h| h.text.as_str()).collect();
    assert!(first.contains(&LILIES), "{first:#?}");
}

/// Guards "relevance first, then recency" with meaning fused in: a fact told three times,
/// each telling acknowledged, is recalled with its latest telling first, though the
/// earlier tellings have more turns holding the question's words around them.
#[test]
fn the_latest_of_three_tellings_is_recalled_first_with_meaning_fused_in() {
    let Some(model) = embed_model() else { return };
    let fx = Fixture::new("");
    with_model(&fx, &model);
    let main = Epoch::start(&fx, "main");
    for spot in ["B12", "C7", "D3"] {
        main.add(&user(&format!("the parking spot is {spot}")));
        main.add(&assistant(&format!("Noted, parking spot {spot}.")));
    }
    let _d = Daemon::start("memoryd", &fx);
    let s = wait_embedded(&fx);
    assert_eq!(s.rows, 6, "{s:?}");
    for question in ["parking spot", "Where is my parking spot?"] {
        let hits = recall(&fx, question);
        let texts: Vec<&str> = hits.iter().map(|h| h.text.as_str()).collect();
        assert!(
            texts.first().is_some_and(|t| t.contains("D3")),
            "{question}: {texts:#?}"
        );
    }
}
