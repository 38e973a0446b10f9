//! Results bounded before they reach a model (seed 000 §8.4): a server may answer with
//! megabytes; the host passes on at most a configured number of bytes, and says what it left
//! out. Nothing is dropped silently: every cut leaves a marker in the result itself.

use mcp_protocol::schema::{CallToolResult, ContentBlock, ResourceContents};

/// The size of a content block as it would travel, roughly: the text or the base64 data.
fn block_size(block: &ContentBlock) -> usize {
    match block {
        ContentBlock::Text(t) => t.text.len(),
        ContentBlock::Image(b) | ContentBlock::Audio(b) => b.data.len(),
        ContentBlock::Resource(r) => contents_size(&r.resource),
        ContentBlock::ResourceLink(l) => l.uri.len() + l.name.len(),
        other => crate::catalog::json_size(other),
    }
}

fn contents_size(c: &ResourceContents) -> usize {
    c.uri.len() + c.text.as_ref().map_or(0, String::len) + c.blob.as_ref().map_or(0, String::len)
}

/// Cuts `text` to at most `keep` bytes on a character boundary and appends a marker that says
/// how much was cut.
fn cut(text: &mut String, keep: usize) {
    let total = text.len();
    let mut end = keep.min(total);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str(&format!(
        "\n[… {} of {total} bytes cut by the host: the result was over its size limit]",
        total - end
    ));
}

/// The base64 data length as the size of the decoded bytes, for a summary.
fn decoded_len(base64: &str) -> usize {
    base64.len() / 4 * 3
}

/// Bounds `result` to about `max_bytes` (text, base64 data and `structuredContent` counted;
/// the markers the host adds are not). Content comes first, in order: text is cut with a
/// marker, an image, audio or blob that does not fit is replaced by a text block saying its
/// type and size, and a block after the budget is spent by a marker; then
/// `structuredContent` is kept if it fits in what remains, else replaced by a marker. Returns
/// whether anything was cut.
pub fn bound_result(result: &mut CallToolResult, max_bytes: usize) -> bool {
    let mut left = max_bytes;
    let mut changed = false;
    let mut omitted = 0usize;
    let blocks = std::mem::take(&mut result.content);
    for mut block in blocks {
        let size = block_size(&block);
        if size <= left {
            left -= size;
            result.content.push(block);
            continue;
        }
        changed = true;
        if left == 0 {
            omitted += 1;
            continue;
        }
        let is_image = matches!(block, ContentBlock::Image(_));
        match &mut block {
            ContentBlock::Text(t) => {
                cut(&mut t.text, left);
                left = 0;
                result.content.push(block);
            }
            ContentBlock::Resource(r) if r.resource.text.is_some() => {
                let room = left.saturating_sub(r.resource.uri.len());
                if let Some(text) = r.resource.text.as_mut() {
                    cut(text, room);
                }
                left = 0;
                result.content.push(block);
            }
            ContentBlock::Image(b) | ContentBlock::Audio(b) => {
                let kind = if is_image { "image" } else { "audio" };
                let summary = format!(
                    "[{kind} of type {} and about {} bytes left out by the host: over the size limit]",
                    b.mime_type,
                    decoded_len(&b.data)
                );
                result.content.push(ContentBlock::text(summary));
            }
            ContentBlock::Resource(r) => {
                let summary = format!(
                    "[resource {} ({}, about {} bytes) left out by the host: over the size limit]",
                    r.resource.uri,
                    r.resource.mime_type.as_deref().unwrap_or("no type"),
                    decoded_len(r.resource.blob.as_deref().unwrap_or(""))
                );
                result.content.push(ContentBlock::text(summary));
            }
            _ => omitted += 1,
        }
    }
    if omitted > 0 {
        result.content.push(ContentBlock::text(format!(
            "[{omitted} more content block(s) left out by the host: the result was over its size limit]"
        )));
    }
    if let Some(structured) = &result.structured_content {
        let size = crate::catalog::json_size(structured);
        if size > left {
            changed = true;
            result.structured_content = None;
            result.content.push(ContentBlock::text(format!(
                "[structuredContent of {size} bytes left out by the host: over the size limit]"
            )));
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(value: serde_json::Value) -> CallToolResult {
        serde_json::from_value(value).expect("result")
    }

    fn texts(r: &CallToolResult) -> Vec<String> {
        r.content
            .iter()
            .map(|b| match b {
                ContentBlock::Text(t) => t.text.clone(),
                other => format!("<{}>", serde_json::to_string(other).unwrap_or_default()),
            })
            .collect()
    }

    #[test]
    fn small_results_pass_unchanged() {
        let mut r = result(
            serde_json::json!({"content": [{"type": "text", "text": "hi"}], "structuredContent": {"a": 1}}),
        );
        let before = r.clone();
        assert!(!bound_result(&mut r, 100));
        assert_eq!(r, before);
    }

    #[test]
    fn text_is_cut_with_a_marker_on_a_char_boundary() {
        let mut r = result(serde_json::json!({"content": [{"type": "text", "text": "ééééé"}]}));
        assert!(bound_result(&mut r, 5));
        let t = &texts(&r)[0];
        assert!(t.starts_with("éé\n[… 6 of 10 bytes cut"), "{t}");
    }

    #[test]
    fn binaries_are_summarized_and_later_blocks_counted() {
        let mut r = result(serde_json::json!({"content": [
            {"type": "text", "text": "abc"},
            {"type": "image", "data": "A".repeat(400), "mimeType": "image/png"},
            {"type": "text", "text": "x".repeat(10)},
            {"type": "resource_link", "uri": "file:///a", "name": "a"},
        ], "structuredContent": {"big": "y".repeat(50)}}));
        assert!(bound_result(&mut r, 8));
        let t = texts(&r);
        assert_eq!(t[0], "abc");
        assert!(
            t[1].contains("image of type image/png and about 300 bytes"),
            "{}",
            t[1]
        );
        assert!(t[2].starts_with("xxxxx\n[… 5 of 10 bytes cut"), "{}", t[2]);
        assert!(t[3].contains("1 more content block"), "{}", t[3]);
        assert!(t[4].contains("structuredContent of"), "{}", t[4]);
        assert!(r.structured_content.is_none());
    }
}
