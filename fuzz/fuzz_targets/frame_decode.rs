//! Feeds arbitrary bytes to the frame decoder in arbitrary chunkings, then decodes each
//! payload as both message types. Any panic, or an allocation past libFuzzer's limit
//! (a length trusted before checking), is a finding.
#![no_main]

use libfuzzer_sys::fuzz_target;
use proto::frame::{decode, FrameDecoder};
use proto::memory::{Request, Response};

fuzz_target!(|data: &[u8]| {
    // The first byte picks a chunk size so split headers and payloads are exercised.
    let Some((&step, rest)) = data.split_first() else {
        return;
    };
    let step = usize::from(step).max(1);
    let mut decoder = FrameDecoder::new();
    for chunk in rest.chunks(step) {
        decoder.push(chunk);
        loop {
            match decoder.next_payload() {
                Ok(Some(payload)) => {
                    let _ = decode::<Request>(&payload);
                    let _ = decode::<Response>(&payload);
                }
                Ok(None) => break,
                Err(_) => return,
            }
        }
    }
    // Bare payloads too, without the length prefix in the way.
    let _ = decode::<Request>(rest);
    let _ = decode::<Response>(rest);
});
