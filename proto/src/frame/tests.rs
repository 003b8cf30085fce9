use super::*;
use crate::memory::{Request, Response};
use crate::DataClass;

fn recall() -> Request {
    Request::Recall {
        query: "tea".into(),
        max_class: DataClass::Private,
        limit: 5,
    }
}

#[test]
fn a_request_round_trips() {
    let bytes = encode(&recall()).unwrap();
    let len = u32::from_be_bytes(bytes[..4].try_into().unwrap()) as usize;
    assert_eq!(len, bytes.len() - 4);
    let back: Request = decode(&bytes[4..]).unwrap();
    assert_eq!(back, recall());
    let mut cursor = std::io::Cursor::new(bytes);
    assert_eq!(read_frame::<Request>(&mut cursor).unwrap(), recall());
}

#[test]
fn a_length_of_all_ones_is_refused_before_allocating() {
    let mut d = FrameDecoder::new();
    d.push(&[0xFF, 0xFF, 0xFF, 0xFF, 1, 2]);
    assert!(matches!(
        d.next_payload(),
        Err(FrameError::TooLarge(0xFFFF_FFFF))
    ));
    let mut r: &[u8] = &[0xFF, 0xFF, 0xFF, 0xFF];
    assert!(matches!(
        read_frame::<Request>(&mut r),
        Err(FrameError::TooLarge(_))
    ));
}

#[test]
fn a_length_just_over_the_limit_is_refused() {
    let mut d = FrameDecoder::new();
    d.push(&(MAX_FRAME + 1).to_be_bytes());
    assert!(matches!(d.next_payload(), Err(FrameError::TooLarge(_))));
    d = FrameDecoder::new();
    d.push(&MAX_FRAME.to_be_bytes());
    assert!(
        matches!(d.next_payload(), Ok(None)),
        "at the limit is allowed"
    );
}

/// A payload with this build's version mark in front of `body`.
fn marked(body: &[u8]) -> Vec<u8> {
    let mut out = WIRE_MAGIC.to_vec();
    out.extend_from_slice(&WIRE_VERSION.to_be_bytes());
    out.extend_from_slice(body);
    out
}

#[test]
fn a_garbage_payload_is_malformed() {
    assert!(matches!(
        decode::<Request>(&marked(&[0xEE, 0x01, 0x02])),
        Err(FrameError::Malformed(_))
    ));
    assert!(matches!(
        decode::<Response>(&marked(&[])),
        Err(FrameError::Malformed(_))
    ));
}

/// Regression: a length inside the frame past its end was "malformed frame: io error: ",
/// bincode's empty words for its slice running out.
#[test]
fn a_length_past_the_frames_end_is_said_in_words() {
    for body in [
        &[0x00, 0x05, b'a', b'b'][..],
        &[0x00, 0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
    ] {
        let e = decode::<Request>(&marked(body)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "malformed frame: a length inside the frame runs past its end",
            "{body:?}"
        );
    }
}

#[test]
fn a_peer_of_another_version_is_named_in_words_not_malformed() {
    // An unversioned frame, as loopd and memoryd sent before the mark existed: a bare
    // bincode `Request::Status` (variant 2).
    let old = decode::<Request>(&[2]).unwrap_err();
    assert!(matches!(
        old,
        FrameError::Version {
            peer: 1,
            ours: WIRE_VERSION
        }
    ));
    let newer = {
        let mut p = WIRE_MAGIC.to_vec();
        p.extend_from_slice(&(WIRE_VERSION + 1).to_be_bytes());
        p.push(2);
        decode::<Request>(&p).unwrap_err()
    };
    let words = newer.to_string();
    assert!(
        words.contains(&format!("version {}", WIRE_VERSION + 1))
            && words.contains(&format!("version {WIRE_VERSION}"))
            && !words.contains("malformed"),
        "{words}"
    );
}

// Regression: a zero-length frame was answered as "the peer speaks wire version 1", as if
// an older release had sent it; it is an empty frame, and a frame holding only the start
// of the mark is malformed.
#[test]
fn an_empty_frame_is_called_empty_and_a_cut_mark_malformed_not_an_old_version() {
    let mut d = FrameDecoder::new();
    d.push(&[0, 0, 0, 0]);
    let payload = d.next_payload().unwrap().unwrap();
    let words = decode::<Request>(&payload).unwrap_err().to_string();
    assert!(
        words.starts_with("empty frame") && !words.contains("version 1"),
        "{words}"
    );
    for cut in [&b"b"[..], b"bx", b"bx\0"] {
        let e = decode::<Request>(cut).unwrap_err();
        assert!(matches!(e, FrameError::Malformed(_)), "{cut:?}: {e:?}");
        assert!(e.to_string().contains("version mark"), "{e}");
    }
}

#[test]
fn trailing_bytes_are_refused() {
    let mut bytes = encode(&Request::Status).unwrap();
    bytes.push(0);
    assert!(matches!(
        decode::<Request>(&bytes[4..]),
        Err(FrameError::Trailing)
    ));
}

#[test]
fn a_frame_cut_in_half_waits_then_completes() {
    let bytes = encode(&recall()).unwrap();
    let (a, b) = bytes.split_at(bytes.len() / 2);
    let mut d = FrameDecoder::new();
    d.push(a);
    assert!(matches!(d.next_payload(), Ok(None)));
    d.push(b);
    let payload = d.next_payload().unwrap().unwrap();
    assert_eq!(decode::<Request>(&payload).unwrap(), recall());
    assert_eq!(d.buffered(), 0);
    let mut r: &[u8] = a;
    assert!(matches!(
        read_frame::<Request>(&mut r),
        Err(FrameError::Truncated { .. })
    ));
}

#[test]
fn a_small_payload_claiming_a_huge_vector_is_an_error() {
    // Response::Hits is variant 0 (varint 0), then a vector length of 2^62 as a varint
    // (0xFD then eight little-endian bytes), then junk: 12 bytes in all.
    let mut body = vec![0u8, 0xFD];
    body.extend_from_slice(&(1u64 << 62).to_le_bytes());
    body.push(0);
    body.push(0);
    assert_eq!(body.len(), 12);
    let payload = marked(&body);
    assert!(matches!(
        decode::<Response>(&payload),
        Err(FrameError::Malformed(_))
    ));
}

#[test]
fn two_frames_in_one_read_come_out_in_order() {
    let mut bytes = encode(&Request::Status).unwrap();
    bytes.extend(encode(&recall()).unwrap());
    let mut d = FrameDecoder::new();
    d.push(&bytes);
    let one: Request = decode(&d.next_payload().unwrap().unwrap()).unwrap();
    let two: Request = decode(&d.next_payload().unwrap().unwrap()).unwrap();
    assert_eq!((one, two), (Request::Status, recall()));
    assert!(d.next_payload().unwrap().is_none());
}

#[test]
fn encoding_a_message_over_the_limit_is_too_large_not_malformed() {
    let big = Response::Error {
        message: "x".repeat(MAX_FRAME as usize),
    };
    match encode(&big) {
        Err(FrameError::TooLarge(n)) => assert!(n > u64::from(MAX_FRAME)),
        other => panic!("{other:?}"),
    }
}
