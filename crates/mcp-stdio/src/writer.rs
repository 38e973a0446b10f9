//! The one write loop both halves use for a stream they own: every batch of queued lines in
//! one write, until told to stop.

use tokio::io::{AsyncWrite, AsyncWriteExt as _};
use tokio::sync::Notify;

/// Writes what `take` hands over (the bytes queued so far, and whether to stop once they are
/// out), waiting on `wake` in between, until told to stop or a write fails; then shuts the
/// writer down, which closes the stream for the other side.
pub(crate) async fn write_batches<W: AsyncWrite + Unpin>(
    mut writer: W,
    wake: &Notify,
    mut take: impl FnMut() -> (Vec<u8>, bool),
) {
    loop {
        let (buf, closing) = take();
        if !buf.is_empty() {
            if writer.write_all(&buf).await.is_err() || writer.flush().await.is_err() {
                break;
            }
            continue;
        }
        if closing {
            break;
        }
        wake.notified().await;
    }
    let _ = writer.shutdown().await;
}
