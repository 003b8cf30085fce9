//! Each of the keeper's decisions (docs/turn.md, "Slot save and restore"), made by feeding
//! it events and the server's answers by hand: no thread, no HTTP, no file (the ledger
//! is kept in memory).

use super::*;
use std::time::Duration;

const MS: Duration = Duration::from_millis(1);

/// A config with idle saves on; the slots are the defaults, main 0 and background 1.
fn saving() -> Config {
    let mut cfg = Config::default();
    cfg.llama.slot_save_idle_s = 1;
    cfg
}

fn id(name: &str) -> SessionId {
    SessionId::parse(name).unwrap()
}

fn owner(name: &str, epoch: u64) -> Owner {
    Owner::new(&id(name), epoch)
}

/// `GET /slots` with the main slot (0) used since the server started, or not.
fn slots(main_used: bool) -> Result<Vec<SlotInfo>, SlotListError> {
    Ok(vec![
        SlotInfo {
            id: 0,
            n_ctx: 2048,
            used: main_used,
        },
        SlotInfo {
            id: 1,
            n_ctx: 2048,
            used: false,
        },
    ])
}

fn ran(cache_n: u64) -> TurnEnd {
    TurnEnd::Ran {
        cache_n: Some(cache_n),
    }
}

/// A turn of `name`'s `epoch` on a server whose slot holds what loopd last put there
/// (no restore asked), as the engine runs it.
fn turn(k: &mut Keeper, cfg: &Config, name: &str, epoch: u64) {
    let asked = k.before_turn(cfg, &id(name), epoch);
    assert_eq!(asked, [SlotAction::AskSlots(owner(name, epoch))]);
    k.slots(cfg, owner(name, epoch), slots(true));
    k.after_turn(cfg, &id(name), epoch, ran(0));
}

/// An idle save of `name`'s `epoch` that the server answered with `tokens`, at `now`.
fn save(k: &mut Keeper, cfg: &Config, name: &str, epoch: u64, tokens: u64, now: u64) {
    let asked = k.save(cfg);
    assert_eq!(
        asked,
        [SlotAction::Save {
            slot: 0,
            of: owner(name, epoch)
        }]
    );
    assert_eq!(
        k.saved(cfg, owner(name, epoch), Ok(tokens), MS, now),
        [SlotAction::StoreLedger]
    );
}

#[test]
fn slot_files_are_named_by_session_and_epoch() {
    assert_eq!(owner("main", 3).file(), "main-epoch-000003.bin");
}

#[test]
fn a_restore_took_when_most_of_it_was_reused() {
    assert!(took(322, 321));
    assert!(took(322, 161));
    assert!(!took(322, 160));
    assert!(!took(322, 0));
    assert!(took(0, 0));
}

#[test]
fn the_idle_save_comes_only_when_the_slot_changed_since_the_last_save() {
    let cfg = saving();
    let mut k = Keeper::new(Ledger::default());
    assert_eq!(k.idle_timeout(&cfg), None, "nothing in the slot yet");
    assert_eq!(k.save(&cfg), []);
    turn(&mut k, &cfg, "main", 0);
    assert_eq!(k.idle_timeout(&cfg), Some(Duration::from_secs(1)));
    save(&mut k, &cfg, "main", 0, 100, 10);
    assert_eq!(k.idle_timeout(&cfg), None, "saved: nothing changed since");
    assert_eq!(k.save(&cfg), []);
    turn(&mut k, &cfg, "main", 0);
    save(&mut k, &cfg, "main", 0, 120, 20);
}

#[test]
fn a_failed_save_is_not_retried_every_idle_period() {
    let cfg = saving();
    let mut k = Keeper::new(Ledger::default());
    turn(&mut k, &cfg, "main", 0);
    assert_eq!(k.save(&cfg).len(), 1);
    let refused = SlotError::Refused {
        status: 500,
        message: "disk full".into(),
    };
    assert_eq!(k.saved(&cfg, owner("main", 0), Err(refused), MS, 10), []);
    assert_eq!(k.idle_timeout(&cfg), None);
    assert_eq!(k.save(&cfg), []);
}

#[test]
fn with_idle_saves_off_the_keeper_asks_nothing() {
    let cfg = Config::default();
    let mut k = Keeper::new(Ledger::default());
    assert_eq!(k.before_turn(&cfg, &id("main"), 0), []);
    k.after_turn(&cfg, &id("main"), 0, ran(0));
    assert_eq!(k.idle_timeout(&cfg), None);
    assert_eq!(k.save(&cfg), []);
    assert_eq!(k.epoch_ended(&cfg, &id("main"), 0), []);
}

#[test]
fn after_a_server_restart_the_saved_file_is_restored_and_the_server_checked_again() {
    let cfg = saving();
    let mut k = Keeper::new(Ledger::default());
    turn(&mut k, &cfg, "main", 0);
    save(&mut k, &cfg, "main", 0, 100, 10);
    k.before_turn(&cfg, &id("main"), 0);
    // The main slot has run no task since the server started: it restarted.
    assert_eq!(
        k.slots(&cfg, owner("main", 0), slots(false)),
        [
            SlotAction::Restore {
                slot: 0,
                of: owner("main", 0)
            },
            SlotAction::CheckServer
        ]
    );
    k.restored(&cfg, owner("main", 0), Ok(100), MS);
    assert_eq!(k.idle_timeout(&cfg), None, "restored: the slot is as saved");
    assert_eq!(k.after_turn(&cfg, &id("main"), 0, ran(99)), Some(true));
}

#[test]
fn a_session_pushed_off_the_main_slot_is_restored_before_its_next_turn() {
    let cfg = saving();
    let mut k = Keeper::new(Ledger::default());
    turn(&mut k, &cfg, "main", 0);
    save(&mut k, &cfg, "main", 0, 100, 10);
    // Another session's turn: it has no file, so nothing is restored for it.
    turn(&mut k, &cfg, "other", 0);
    k.before_turn(&cfg, &id("main"), 0);
    assert_eq!(
        k.slots(&cfg, owner("main", 0), slots(true)),
        [SlotAction::Restore {
            slot: 0,
            of: owner("main", 0)
        }],
        "no server check: it did not restart"
    );
}

#[test]
fn the_slot_is_not_restored_while_it_holds_the_sessions_prompt() {
    let cfg = saving();
    let mut k = Keeper::new(Ledger::default());
    turn(&mut k, &cfg, "main", 0);
    save(&mut k, &cfg, "main", 0, 100, 10);
    k.before_turn(&cfg, &id("main"), 0);
    assert_eq!(k.slots(&cfg, owner("main", 0), slots(true)), []);
}

#[test]
fn only_a_file_the_ledger_names_for_this_epoch_is_asked_for() {
    let cfg = saving();
    let mut k = Keeper::new(Ledger::default());
    // Never saved: a restarted server is only checked again.
    turn(&mut k, &cfg, "main", 0);
    assert_eq!(
        k.slots(&cfg, owner("main", 0), slots(false)),
        [SlotAction::CheckServer]
    );
    // Saved for epoch 0, wanted for epoch 1: that file is another prompt's.
    save(&mut k, &cfg, "main", 0, 100, 10);
    assert_eq!(
        k.slots(&cfg, owner("main", 1), slots(false)),
        [SlotAction::CheckServer]
    );
}

#[test]
fn a_restore_that_did_not_take_is_told_by_the_next_completion() {
    let cfg = saving();
    let mut k = Keeper::new(Ledger::default());
    turn(&mut k, &cfg, "main", 0);
    save(&mut k, &cfg, "main", 0, 100, 10);
    k.slots(&cfg, owner("main", 0), slots(false));
    k.restored(&cfg, owner("main", 0), Ok(100), MS);
    assert_eq!(k.after_turn(&cfg, &id("main"), 0, ran(3)), Some(false));
    // The verdict is given once, for the turn right after the restore.
    assert_eq!(k.after_turn(&cfg, &id("main"), 0, ran(3)), None);
}

/// Regression: a restore the server refused (400: the file deleted, damaged or written by
/// another model) or that loaded 0 tokens (the file replaced by an empty slot's) was
/// never judged, so the turn that read its whole prompt again went by without the
/// warning a restore that loaded tokens gets. The ledger says what was saved.
#[test]
fn a_restore_refused_or_loading_nothing_did_not_take_when_the_ledger_names_tokens() {
    let cfg = saving();
    let refused = || {
        Err(SlotError::Refused {
            status: 400,
            message:
                "Unable to restore slot, no available space in KV cache or invalid slot save file"
                    .into(),
        })
    };
    for outcome in [Ok(0), refused()] {
        let mut k = Keeper::new(Ledger::default());
        turn(&mut k, &cfg, "main", 0);
        save(&mut k, &cfg, "main", 0, 100, 10);
        // A restarted server.
        assert_eq!(
            k.slots(&cfg, owner("main", 0), slots(false)),
            [
                SlotAction::Restore {
                    slot: 0,
                    of: owner("main", 0)
                },
                SlotAction::CheckServer
            ]
        );
        k.restored(&cfg, owner("main", 0), outcome, MS);
        assert_eq!(k.after_turn(&cfg, &id("main"), 0, ran(0)), Some(false));
        // The turn read the whole prompt: the slot holds it now, to be saved again.
        assert_eq!(k.idle_timeout(&cfg), Some(Duration::from_secs(1)));
    }
}

#[test]
fn a_restore_that_loaded_nothing_is_judged_against_what_the_ledger_names() {
    // The turn after it reused most of the saved prompt all the same: it took.
    let cfg = saving();
    let mut k = Keeper::new(Ledger::default());
    turn(&mut k, &cfg, "main", 0);
    save(&mut k, &cfg, "main", 0, 100, 10);
    k.restored(&cfg, owner("main", 0), Ok(0), MS);
    assert_eq!(k.after_turn(&cfg, &id("main"), 0, ran(99)), Some(true));
    // Without a ledger entry for the epoch there is nothing to judge by.
    let mut k = Keeper::new(Ledger::default());
    k.restored(&cfg, owner("main", 0), Ok(0), MS);
    assert_eq!(k.after_turn(&cfg, &id("main"), 0, ran(0)), None);
}

#[test]
fn an_ended_epochs_file_is_overwritten_from_the_background_slot_and_never_restored() {
    let cfg = saving();
    let mut k = Keeper::new(Ledger::default());
    turn(&mut k, &cfg, "main", 0);
    save(&mut k, &cfg, "main", 0, 100, 10);
    assert_eq!(
        k.epoch_ended(&cfg, &id("main"), 0),
        [
            SlotAction::StoreLedger,
            SlotAction::Empty {
                slot: 1,
                of: owner("main", 0)
            }
        ],
        "the ledger forgets the file before it is emptied"
    );
    assert_eq!(k.idle_timeout(&cfg), None, "the slot is nobody's");
    k.emptied(&cfg, owner("main", 0), Ok(()));
    assert_eq!(
        k.slots(&cfg, owner("main", 0), slots(false)),
        [],
        "neither restored nor a restart: the keeper knew of nothing in the slot"
    );
    // An epoch whose file was never written has nothing to empty.
    turn(&mut k, &cfg, "main", 1);
    assert_eq!(k.epoch_ended(&cfg, &id("main"), 1), []);
}

#[test]
fn a_server_without_a_save_path_is_said_once_and_then_asked_nothing() {
    let cfg = saving();
    let mut k = Keeper::new(Ledger::default());
    turn(&mut k, &cfg, "main", 0);
    k.save(&cfg);
    assert_eq!(
        k.saved(&cfg, owner("main", 0), Err(SlotError::NoSavePath), MS, 10),
        []
    );
    assert!(!k.server_says_no_save_path(&cfg), "already said");
    assert_eq!(k.before_turn(&cfg, &id("main"), 0), []);
    k.after_turn(&cfg, &id("main"), 0, ran(0));
    assert_eq!(k.idle_timeout(&cfg), None);
    assert_eq!(k.save(&cfg), []);
    // A forget still erases the slots, and empties no file.
    assert_eq!(
        k.forgotten(&cfg, &id("main"), &[0]),
        [SlotAction::Erase { slot: 0 }, SlotAction::Erase { slot: 1 }]
    );
    // A reload to the same server: the owner may have restarted it with a save path.
    k.reload(&cfg, &cfg);
    assert_eq!(k.before_turn(&cfg, &id("main"), 0).len(), 1);
    assert!(
        k.server_says_no_save_path(&cfg),
        "said again after a reload"
    );
}

#[test]
fn a_reload_to_a_new_server_forgets_what_the_slot_held() {
    let cfg = saving();
    let mut k = Keeper::new(Ledger::default());
    turn(&mut k, &cfg, "main", 0);
    save(&mut k, &cfg, "main", 0, 100, 10);
    turn(&mut k, &cfg, "other", 0);
    let mut moved = cfg.clone();
    moved.llama.url = "http://127.0.0.1:8081".into();
    k.reload(&cfg, &moved);
    assert_eq!(k.idle_timeout(&moved), None, "nothing of ours in its slot");
    assert_eq!(k.save(&moved), []);
    // Its slot is used by someone else: nothing of loopd's was there to lose, so no
    // file is pushed over it and the server is not taken for restarted.
    assert_eq!(k.slots(&moved, owner("main", 0), slots(true)), []);
    // The same server on other slots is as new.
    turn(&mut k, &moved, "main", 0);
    let mut other_slots = moved.clone();
    other_slots.slots.main = 1;
    other_slots.slots.background = 0;
    k.reload(&moved, &other_slots);
    assert_eq!(k.idle_timeout(&other_slots), None);
}

#[test]
fn a_forget_erases_both_slots_and_empties_every_file_of_its_epochs() {
    let cfg = saving();
    let mut k = Keeper::new(Ledger::default());
    turn(&mut k, &cfg, "main", 2);
    save(&mut k, &cfg, "main", 2, 100, 10);
    assert_eq!(
        k.forgotten(&cfg, &id("main"), &[1, 2]),
        [
            SlotAction::StoreLedger,
            SlotAction::Erase { slot: 0 },
            SlotAction::Erase { slot: 1 },
            SlotAction::Empty {
                slot: 1,
                of: owner("main", 1)
            },
            SlotAction::Empty {
                slot: 1,
                of: owner("main", 2)
            },
        ]
    );
    assert_eq!(k.idle_timeout(&cfg), None);
    // The ledger no longer names the file: a restarted server gets nothing restored.
    assert_eq!(k.slots(&cfg, owner("main", 2), slots(false)), []);
}

#[test]
fn a_save_empties_the_files_of_sessions_idle_past_slot_keep_days() {
    let mut cfg = saving();
    cfg.llama.slot_keep_days = 30;
    let mut k = Keeper::new(Ledger::default());
    turn(&mut k, &cfg, "old", 0);
    save(&mut k, &cfg, "old", 0, 50, 0);
    turn(&mut k, &cfg, "main", 4);
    k.save(&cfg);
    let month = 31 * DAY_S;
    assert_eq!(
        k.saved(&cfg, owner("main", 4), Ok(100), MS, month),
        [
            SlotAction::StoreLedger,
            SlotAction::Empty {
                slot: 1,
                of: owner("old", 0)
            }
        ]
    );
    assert_eq!(k.ledger().get(&id("old")), None);
    // 0 keeps files for ever.
    cfg.llama.slot_keep_days = 0;
    turn(&mut k, &cfg, "main", 4);
    save(&mut k, &cfg, "main", 4, 100, 100 * month);
}

#[test]
fn a_full_context_leaves_the_slot_nobodys() {
    let cfg = saving();
    let mut k = Keeper::new(Ledger::default());
    turn(&mut k, &cfg, "main", 0);
    k.after_turn(&cfg, &id("main"), 0, TurnEnd::Full);
    assert_eq!(k.idle_timeout(&cfg), None);
    assert_eq!(k.save(&cfg), []);
}

#[test]
fn a_server_that_does_not_answer_slots_gets_no_restore() {
    let cfg = saving();
    let mut k = Keeper::new(Ledger::default());
    turn(&mut k, &cfg, "main", 0);
    save(&mut k, &cfg, "main", 0, 100, 10);
    assert_eq!(
        k.slots(&cfg, owner("main", 0), Err(SlotListError::NotAList)),
        []
    );
}
