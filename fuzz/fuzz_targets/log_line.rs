//! Parses arbitrary text as a session log line. A parsed record must survive a round trip
//! through `to_line` unchanged; anything else must be an error value, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use proto::Record;

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(record) = Record::from_line(line) {
        let again = record.to_line();
        let back = Record::from_line(again.trim_end_matches('\n'));
        assert_eq!(back.as_ref(), Ok(&record), "round trip of {line:?}");
    }
});
