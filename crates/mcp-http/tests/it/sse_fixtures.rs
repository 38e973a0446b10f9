//! Every SSE fixture is decoded twice, whole and one byte at a time; both must agree, and the
//! snapshot records the events, the last event id and the retry time.

use std::fmt::Write as _;
use std::path::Path;

use mcp_http::sse::Decoder;

fn run(bytes: &[u8], chunk: usize) -> String {
    let mut d = Decoder::new(256);
    let mut out = String::new();
    for piece in bytes.chunks(chunk.max(1)) {
        d.push(piece);
        while let Some(item) = d.next_event() {
            match item {
                Ok(e) => {
                    writeln!(out, "event {:?} id {:?} data {:?}", e.event, e.id, e.data).unwrap()
                }
                Err(e) => writeln!(out, "skipped: {e}").unwrap(),
            }
        }
    }
    writeln!(
        out,
        "last id {:?}, retry {:?}",
        d.last_event_id(),
        d.retry_ms()
    )
    .unwrap();
    out
}

#[track_caller]
fn check(path: &Path) {
    let bytes = std::fs::read(path).unwrap();
    let whole = run(&bytes, bytes.len());
    assert_eq!(
        run(&bytes, 1),
        whole,
        "{}: byte-by-byte decoding differs",
        path.display()
    );
    insta::assert_snapshot!(whole);
}

#[test]
fn ok() {
    insta::glob!("../../../../fixtures", "sse/ok/*.sse", |path| check(path));
}

#[test]
fn err() {
    insta::glob!("../../../../fixtures", "sse/err/*.sse", |path| check(path));
}
