//! The device loopd's access token belongs to, kept in `<state_dir>/matrix/device`
//! (docs/matrix.md, 'Faults'). A transaction id makes a retry the same event only from
//! the same device, so a token for another device (the owner logged the old one out and
//! made a new token) is said in the journal: an event whose sending a crash or an outage
//! cut short may then show twice. The new device is kept from then on.

use std::path::Path;
use std::sync::Mutex;

const FILE: &str = "device";

/// A device id is a few dozen characters; a longer file is not this one.
const MAX_DEVICE_BYTES: u64 = 4096;

/// The longest device id kept; the Matrix spec bounds identifiers at 255 bytes.
const MAX_DEVICE_ID: usize = 255;

/// Both threads connect with the same token: one of them says a change, once.
static KEEPING: Mutex<()> = Mutex::new(());

/// Keeps `device` (from `whoami`) as loopd's device, saying so when it is not the one
/// kept before. A file that cannot be read or written is a warning: the device is a
/// safeguard, not a reason to stop serving.
pub(crate) fn keep(state_dir: &Path, device: Option<&str>) {
    // The homeserver's words: kept and logged only when they are what a device id is
    // (Synapse makes ten capital letters), never a line of someone else's choosing.
    let Some(device) = device.filter(|d| is_device_id(d)) else {
        return;
    };
    let _one = KEEPING.lock().unwrap_or_else(|e| e.into_inner());
    let dir = super::store::dir(state_dir);
    let path = dir.join(FILE);
    let kept = if path.exists() {
        match plumbing::bounded::read_text(&path, MAX_DEVICE_BYTES) {
            // The file is loopd's own, but read back it is logged only as an id.
            Ok(text) => Some(text.trim().to_string()).filter(|d| is_device_id(d)),
            Err(e) => {
                plumbing::warn!(
                    "matrix: cannot read the device kept in {}: {e}",
                    path.display()
                );
                None
            }
        }
    } else {
        None
    };
    if kept.as_deref() == Some(device) {
        return;
    }
    match kept {
        Some(old) if !old.is_empty() => plumbing::warn!(
            "matrix: the access token is for device {device}, not {old} as before: events sent again after a crash or an outage are the same event only from one device, so one whose sending was cut short may show twice"
        ),
        _ => plumbing::info!("matrix: serving from device {device}"),
    }
    if let Err(e) = std::fs::create_dir_all(&dir) {
        plumbing::warn!(
            "matrix: cannot keep the device id in {}: {e}",
            path.display()
        );
    } else if let Err(e) = sessions::atomic::write(&dir, FILE, format!("{device}\n").as_bytes()) {
        plumbing::warn!("matrix: cannot keep the device id: {e}");
    }
}

/// Whether `d` reads as a device id: printable ASCII, at most `MAX_DEVICE_ID` bytes.
fn is_device_id(d: &str) -> bool {
    !d.is_empty() && d.len() <= MAX_DEVICE_ID && d.bytes().all(|b| b.is_ascii_graphic())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(state: &Path) -> Option<String> {
        std::fs::read_to_string(super::super::store::dir(state).join(FILE)).ok()
    }

    /// The device is kept at the first start, replaced by another token's, and never
    /// taken from a homeserver's answer that is no device id.
    #[test]
    fn the_device_is_kept_and_a_new_one_replaces_it_but_not_a_line_of_text() {
        let state = tempfile::tempdir().unwrap();
        keep(state.path(), Some("ABCDEFGHIJ"));
        assert_eq!(kept(state.path()).as_deref(), Some("ABCDEFGHIJ\n"));
        keep(state.path(), Some("KLMNOPQRST"));
        assert_eq!(kept(state.path()).as_deref(), Some("KLMNOPQRST\n"));
        keep(state.path(), Some("X\nmatrix: forged"));
        keep(state.path(), Some(&"Y".repeat(300)));
        keep(state.path(), None);
        assert_eq!(kept(state.path()).as_deref(), Some("KLMNOPQRST\n"));
    }
}
