//! The engine's hands for the slot keeper (docs/turn.md, "Slot save and restore"): it
//! performs each `SlotAction` the keeper decided on with the one llama.cpp client (or, for
//! the ledger of saved files, in the state directory), hands the outcome back to the
//! keeper, and goes on with whatever that decides, in order. The keeper decides and this
//! module only acts.

use super::keeper::{Keeper, SlotAction, SlotActions};
use super::{check_tools, World};
use conversation::status::SlotSave;
use llama::slots::SlotError;
use std::collections::VecDeque;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// What a round of slot actions came to, for the engine's callers.
#[derive(Debug, Default)]
pub(crate) struct Performed {
    /// The main slot's save, for `/status`.
    pub(crate) saved: Option<SlotSave>,
    /// Each slot a forget asked erased, and how that went.
    pub(crate) erased: Vec<(u32, Result<(), SlotError>)>,
    /// Some file was asked emptied.
    pub(crate) emptied: bool,
}

/// Performs `actions` and every action their outcomes lead to, one at a time.
pub(crate) fn perform(keeper: &mut Keeper, world: &World, actions: SlotActions) -> Performed {
    let cfg = world.cfg.as_ref();
    let client = world.client.as_ref();
    let mut todo: VecDeque<SlotAction> = actions.into();
    let mut done = Performed::default();
    while let Some(action) = todo.pop_front() {
        let started = Instant::now();
        let next = match action {
            SlotAction::AskSlots(want) => keeper.slots(cfg, want, client.slot_list()),
            SlotAction::Restore { slot, of } => {
                let outcome = client.slot_restore(slot, &of.file());
                keeper.restored(cfg, of, outcome, started.elapsed());
                Vec::new()
            }
            SlotAction::Save { slot, of } => {
                let outcome = client.slot_save(slot, &of.file());
                if let Ok(tokens) = &outcome {
                    done.saved = Some(SlotSave {
                        session: of.session.to_string(),
                        epoch: of.epoch,
                        tokens: *tokens,
                    });
                }
                keeper.saved(cfg, of, outcome, started.elapsed(), now_secs())
            }
            SlotAction::Empty { slot, of } => {
                done.emptied = true;
                let outcome = client
                    .slot_erase(slot)
                    .and_then(|()| client.slot_save(slot, &of.file()))
                    .map(drop);
                keeper.emptied(cfg, of, outcome);
                Vec::new()
            }
            SlotAction::Erase { slot } => {
                done.erased.push((slot, client.slot_erase(slot)));
                Vec::new()
            }
            SlotAction::CheckServer => {
                check_tools(client);
                Vec::new()
            }
            SlotAction::StoreLedger => {
                keeper.ledger().store(&cfg.state_dir);
                Vec::new()
            }
        };
        todo.extend(next);
    }
    done
}

/// Seconds since the Unix epoch, as the slot ledger keeps them; a clock before 1970
/// reads as 0, which only makes files look old.
fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
