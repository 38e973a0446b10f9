//! SSE decoder and encoder tests, and the property that chunking never matters.

use proptest::prelude::*;

use super::*;

fn events(d: &mut Decoder) -> Vec<Result<Event, Error>> {
    std::iter::from_fn(|| d.next_event()).collect()
}

fn ev(event: &str, data: &str, id: Option<&str>) -> Result<Event, Error> {
    Ok(Event {
        event: event.into(),
        data: data.into(),
        id: id.map(Into::into),
    })
}

#[test]
fn fields_comments_and_multi_line_data() {
    let mut d = Decoder::new(1024);
    d.push(b": keep-alive\nevent: message\nid: 1\ndata: {\"a\":\ndata:1}\n\ndata:no space\n\n");
    assert_eq!(
        events(&mut d),
        [
            ev("message", "{\"a\":\n1}", Some("1")),
            ev("message", "no space", Some("1"))
        ]
    );
}

#[test]
fn every_line_end_and_a_bom() {
    for stream in [
        &b"\xEF\xBB\xBFdata: x\r\n\r\n"[..],
        b"data: x\r\rdata: y\n\n",
        b"data: x\n\n",
    ] {
        let mut d = Decoder::new(64);
        d.push(stream);
        assert_eq!(events(&mut d)[0], ev("message", "x", None), "{stream:?}");
    }
}

#[test]
fn a_cr_at_the_end_of_a_chunk_then_lf() {
    let mut d = Decoder::new(64);
    d.push(b"data: a\r");
    d.push(b"\ndata: b\r");
    d.push(b"\n\r");
    d.push(b"\n");
    assert_eq!(events(&mut d), [ev("message", "a\nb", None)]);
}

#[test]
fn a_priming_event_is_dispatched_with_empty_data_and_sets_the_id() {
    let mut d = Decoder::new(64);
    d.push(b"id: prime-1\nretry: 2500\ndata:\n\n");
    assert_eq!(events(&mut d), [ev("message", "", Some("prime-1"))]);
    assert_eq!(d.last_event_id(), Some("prime-1"));
    assert_eq!(d.retry_ms(), Some(2500));
}

#[test]
fn an_id_without_data_is_kept_but_not_dispatched() {
    let mut d = Decoder::new(64);
    d.push(b"id: 7\n\n");
    assert!(events(&mut d).is_empty());
    assert_eq!(d.last_event_id(), Some("7"));
}

#[test]
fn a_cut_event_does_not_move_the_resume_point() {
    let mut d = Decoder::new(64);
    d.push(b"id: 1\ndata: a\n\nid: 2\ndata: b");
    assert_eq!(events(&mut d).len(), 1);
    assert_eq!(d.last_event_id(), Some("1"), "event 2 never arrived whole");
}

#[test]
fn bad_retry_and_nul_ids_are_ignored() {
    let mut d = Decoder::new(64);
    d.push(b"retry: 1000\n\nretry: 10s\nid: a\0b\ndata: x\n\n");
    assert_eq!(d.retry_ms(), Some(1000));
    assert_eq!(events(&mut d), [ev("message", "x", None)]);
}

#[test]
fn oversized_events_are_skipped_and_the_stream_goes_on() {
    let mut d = Decoder::new(16);
    d.push(b"data: 0123456789\ndata: 0123456789\n\n");
    d.push(b"data: ");
    d.push(&[b'x'; 1000]);
    d.push(b"\n\ndata: ok\n\n");
    assert_eq!(
        events(&mut d),
        [
            Err(Error::TooLarge {
                limit: 16,
                head: b"0123456789\n0123456789".to_vec()
            }),
            Err(Error::TooLarge {
                limit: 16,
                head: vec![b'x'; 26]
            }),
            ev("message", "ok", None)
        ]
    );
}

#[test]
fn invalid_utf8_data_is_reported() {
    let mut d = Decoder::new(64);
    d.push(b"data: \xff\n\ndata: fine\n\n");
    assert_eq!(
        events(&mut d),
        [Err(Error::InvalidUtf8), ev("message", "fine", None)]
    );
}

#[test]
fn the_encoder_round_trips() {
    let mut out = Vec::new();
    encode_priming(&mut out, "s1-0", Some(3000));
    encode_comment(&mut out, "ping");
    encode_event(
        &mut out,
        Some("message"),
        Some("s1-1"),
        "{\"jsonrpc\":\"2.0\"}",
    );
    encode_event(&mut out, None, None, "two\nlines\r\nand\rmore");
    let mut d = Decoder::new(1024);
    d.push(&out);
    assert_eq!(
        events(&mut d),
        [
            ev("message", "", Some("s1-0")),
            ev("message", "{\"jsonrpc\":\"2.0\"}", Some("s1-1")),
            ev("message", "two\nlines\nand\nmore", Some("s1-1")),
        ]
    );
    assert_eq!(d.retry_ms(), Some(3000));
}

#[test]
fn a_line_break_anywhere_in_data_written_in_place_starts_a_new_data_line() {
    // One line, and a break at each place a 64-byte chunk can put it.
    for at in [None, Some(0), Some(63), Some(64), Some(65), Some(199)] {
        let mut data = "x".repeat(200);
        if let Some(at) = at {
            data.replace_range(at..=at, "\n");
        }
        let mut want = Vec::new();
        encode_event(&mut want, None, Some("7"), &data);
        let mut got = Vec::new();
        encode_event_in_place(&mut got, None, Some("7"), |out| {
            out.extend_from_slice(data.as_bytes());
        });
        assert_eq!(got, want, "line break at {at:?}");
        let lines = got
            .split(|&b| b == b'\n')
            .filter(|l| l.starts_with(b"data: "))
            .count();
        assert_eq!(lines, if at.is_some() { 2 } else { 1 });
    }
}

proptest! {
    #[test]
    fn chunking_does_not_matter(
        bom in any::<bool>(),
        body in prop::collection::vec(prop::sample::select(b"da:t i\r\n\nevr1:\xff".to_vec()), 0..300),
        cuts in prop::collection::vec(0usize..300, 0..12),
        limit in 1usize..40,
    ) {
        let mut stream = if bom { b"\xEF\xBB\xBF".to_vec() } else { Vec::new() };
        stream.extend(body);
        let mut whole = Decoder::new(limit);
        whole.push(&stream);
        let expected = events(&mut whole);
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(stream.len())).collect();
        cuts.sort_unstable();
        let mut pieces = Decoder::new(limit);
        let mut got = Vec::new();
        let mut at = 0;
        for c in cuts.into_iter().chain([stream.len()]) {
            pieces.push(&stream[at..c]);
            at = c;
            got.extend(events(&mut pieces));
        }
        prop_assert_eq!(got, expected);
        prop_assert_eq!(pieces.last_event_id(), whole.last_event_id());
        prop_assert_eq!(pieces.retry_ms(), whole.retry_ms());
    }

    #[test]
    fn data_written_in_place_is_framed_as_encode_event_frames_it(
        data in "[a-z{}\":\n\r ]{0,200}",
        id in prop::option::of("[a-z0-9-]{1,8}"),
        before in "[a-z]{0,5}",
    ) {
        let mut want = before.clone().into_bytes();
        encode_event(&mut want, Some("message"), id.as_deref(), &data);
        let mut got = before.into_bytes();
        encode_event_in_place(&mut got, Some("message"), id.as_deref(), |out| {
            out.extend_from_slice(data.as_bytes());
        });
        prop_assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(&want));
    }

    #[test]
    fn encoded_data_decodes_back(data in "[a-z{}\":\n\r ]{0,60}", id in "[a-z0-9-]{1,8}") {
        let mut out = Vec::new();
        encode_event(&mut out, None, Some(&id), &data);
        let mut d = Decoder::new(4096);
        d.push(&out);
        let expected = data.replace("\r\n", "\n").replace('\r', "\n");
        prop_assert_eq!(events(&mut d), vec![ev("message", &expected, Some(&id))]);
    }
}
