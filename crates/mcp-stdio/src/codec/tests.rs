//! Codec tests: line ends, limits, and that chunking never matters.

use proptest::prelude::*;

use super::*;

fn all(decoder: &mut LineDecoder) -> Vec<Line> {
    std::iter::from_fn(|| decoder.next_line()).collect()
}

#[test]
fn splits_lines_and_accepts_every_line_end() {
    let mut d = LineDecoder::new(100);
    d.push(b"\xEF\xBB\xBF{\"a\":1}\n{\"b\":2}\r\n\n   \n{\"c\"");
    assert_eq!(
        all(&mut d),
        [
            Line::Frame(b"{\"a\":1}".to_vec()),
            Line::Frame(b"{\"b\":2}".to_vec())
        ]
    );
    d.push(b":3}\n");
    assert_eq!(all(&mut d), [Line::Frame(b"{\"c\":3}".to_vec())]);
    assert_eq!(d.buffered(), 0);
}

#[test]
fn an_oversized_line_is_skipped_and_the_stream_goes_on() {
    let mut d = LineDecoder::new(10);
    d.push(br#"{"id":7,"result":"#);
    assert_eq!(d.next_line(), None);
    assert_eq!(
        d.buffered(),
        0,
        "an unfinished oversized line is not buffered"
    );
    d.push(&[b'x'; 10_000]);
    assert_eq!(d.buffered(), 0);
    d.push(b"}\n{\"ok\":1}\n");
    let lines = all(&mut d);
    let Line::Oversize { head, len } = &lines[0] else {
        panic!("{lines:?}")
    };
    assert_eq!(*len, 17 + 10_000 + 1);
    assert!(head.starts_with(br#"{"id":7"#));
    assert_eq!(lines[1], Line::Frame(b"{\"ok\":1}".to_vec()));
    assert_eq!(
        mcp_protocol::sniff_id(head),
        Some(mcp_protocol::RequestId::Number(7))
    );
}

#[test]
fn a_complete_oversized_line_in_one_push() {
    let mut d = LineDecoder::new(4);
    d.push(b"123456\nab\n");
    assert_eq!(
        all(&mut d),
        [
            Line::Oversize {
                head: b"123456".to_vec(),
                len: 6
            },
            Line::Frame(b"ab".to_vec())
        ]
    );
}

#[test]
fn a_large_line_leaves_in_the_buffer_and_takes_its_memory_along() {
    let mut d = LineDecoder::new(4 << 20);
    let big = vec![b'x'; 1 << 20];
    // Read in place, as the transports do, in pieces.
    for piece in big.chunks(60_000) {
        d.read_buffer(64 << 10).extend_from_slice(piece);
        d.appended();
        assert_eq!(d.next_line(), None);
    }
    d.push(b"\r\n{\"next\":");
    assert_eq!(d.next_line(), Some(Line::Frame(big.clone())));
    assert_eq!(d.buffered(), 8, "what follows the line stays");
    assert!(
        d.capacity() < 64 << 10,
        "the decoder kept {} bytes of the line's buffer",
        d.capacity()
    );
    d.push(b"1}\n");
    assert_eq!(d.next_line(), Some(Line::Frame(b"{\"next\":1}".to_vec())));

    // Over the limit, only the head is kept, not the line's buffer.
    let mut d = LineDecoder::new(10_000);
    d.push(&[b'y'; 20_000]);
    d.push(b"\nok\n");
    assert_eq!(
        d.next_line(),
        Some(Line::Oversize {
            head: vec![b'y'; OVERSIZE_HEAD],
            len: 20_000
        })
    );
    assert_eq!(d.next_line(), Some(Line::Frame(b"ok".to_vec())));
}

proptest! {
    #[test]
    fn chunking_does_not_matter(
        bom in any::<bool>(),
        lines in prop::collection::vec(prop::collection::vec(prop::sample::select(b"ab{}\" \r".to_vec()), 0..40), 0..12),
        cuts in prop::collection::vec(0usize..400, 0..10),
        limit in 1usize..30,
        in_place in any::<bool>(),
    ) {
        let mut stream = Vec::new();
        if bom {
            stream.extend_from_slice(b"\xEF\xBB\xBF");
        }
        for l in &lines {
            stream.extend_from_slice(l);
            stream.push(b'\n');
        }
        let mut whole = LineDecoder::new(limit);
        whole.push(&stream);
        let expected = all(&mut whole);

        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(stream.len())).collect();
        cuts.sort_unstable();
        let mut pieces = LineDecoder::new(limit);
        let mut got = Vec::new();
        let mut at = 0;
        for (i, c) in cuts.into_iter().chain([stream.len()]).enumerate() {
            // Both ways in: a copy, and a read in place.
            if (i + usize::from(in_place)) % 2 == 0 {
                pieces.push(&stream[at..c]);
            } else {
                pieces.read_buffer(c - at).extend_from_slice(&stream[at..c]);
                pieces.appended();
            }
            at = c;
            got.extend(all(&mut pieces));
            prop_assert!(pieces.buffered() <= limit + 2, "buffered {} over limit {}", pieces.buffered(), limit);
        }
        prop_assert_eq!(got, expected);
    }
}
