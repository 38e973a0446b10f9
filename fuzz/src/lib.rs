//! Helpers shared by the fuzz targets in `fuzz_targets/`: how a target reads its parameters
//! from the front of the fuzzer's input, so that the fuzzer chooses them (a size limit, where
//! a byte stream is cut) along with the bytes themselves.

/// The input of a target that feeds a byte stream to an incremental decoder.
#[derive(Debug)]
pub struct Chunked<'a> {
    /// The decoder's size limit.
    pub max: usize,
    /// Where the stream is cut into pushes: ascending offsets into `stream`, possibly equal
    /// (an empty push), possibly 0 or `stream.len()`.
    pub cuts: Vec<usize>,
    /// Whether the items are drained after every push, or only after the last one.
    pub drain_each: bool,
    /// The bytes of the stream.
    pub stream: &'a [u8],
}

/// How many bytes of parameters [`Chunked::parse`] takes from the front of the input.
pub const CHUNKED_HEADER: usize = 4;

impl<'a> Chunked<'a> {
    /// Reads `[limit, cut, cut, cut]` and then the stream. The limit byte maps to a small
    /// limit (0..=191 bytes, below and around the 256-byte heads the decoders keep), a limit
    /// just past 256 (256..=752), or 1 MiB (255). Each cut byte is a fraction (n/256) of the
    /// stream's length; its top bit of the first one says whether to drain after every push.
    pub fn parse(data: &'a [u8]) -> Option<Self> {
        let (head, stream) = data.split_at_checked(CHUNKED_HEADER)?;
        let max = match head[0] {
            m @ 0..=191 => usize::from(m),
            255 => 1 << 20,
            m => 256 + usize::from(m - 192) * 8,
        };
        let mut cuts: Vec<usize> = head[1..]
            .iter()
            .map(|&c| stream.len() * usize::from(c) / 256)
            .collect();
        cuts.sort_unstable();
        Some(Self {
            max,
            cuts,
            drain_each: head[1] & 0x80 != 0,
            stream,
        })
    }

    /// The stream as the pushes the cuts make: always `cuts.len() + 1` pieces, some of which
    /// may be empty.
    pub fn pieces(&self) -> Vec<&'a [u8]> {
        let mut out = Vec::with_capacity(self.cuts.len() + 1);
        let mut at = 0;
        for &cut in &self.cuts {
            out.push(&self.stream[at..cut]);
            at = cut;
        }
        out.push(&self.stream[at..]);
        out
    }
}
