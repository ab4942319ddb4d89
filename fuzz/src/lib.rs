//! Helpers shared by the fuzz targets.
//!
//! Inputs are raw bytes so that seed files stay readable (a design, a cron line, a request body).
//! A target that needs more than one text splits its input at NUL bytes ([`sections`]): valid JSON
//! and the texts under test never hold a raw NUL, so a seed without one is a single section and
//! the later sections default to empty. Decisions the target makes along the way (which outcome a
//! step gets, how far time moves) are read from a [`Tape`] of the remaining bytes, which yields
//! zeros once used up, so every input is a complete, deterministic program.

/// The first `n - 1` NUL-separated sections of `data` and the rest (which may hold NULs).
/// Missing sections are empty.
pub fn sections<const N: usize>(data: &[u8]) -> [&[u8]; N] {
    let mut out = [&data[data.len()..]; N];
    let mut parts = data.splitn(N, |b| *b == 0);
    for slot in out.iter_mut() {
        match parts.next() {
            Some(p) => *slot = p,
            None => break,
        }
    }
    out
}

/// A source of decisions; zero once exhausted.
pub struct Tape<'a> {
    bytes: &'a [u8],
}

impl<'a> Tape<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Tape { bytes }
    }

    pub fn byte(&mut self) -> u8 {
        match self.bytes.split_first() {
            Some((b, rest)) => {
                self.bytes = rest;
                *b
            }
            None => 0,
        }
    }

    /// A number below `n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        usize::from(self.byte()) % n
    }

    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.byte(), self.byte(), self.byte(), self.byte()])
    }

    pub fn u64(&mut self) -> u64 {
        u64::from(self.u32()) << 32 | u64::from(self.u32())
    }

    /// One of `items`.
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    /// Up to `max` raw bytes of the tape as text (lossy UTF-8).
    pub fn text(&mut self, max: usize) -> String {
        let n = self.below(max + 1).min(self.bytes.len());
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        String::from_utf8_lossy(head).into_owned()
    }
}

/// Texts a value may hold that break naive handling: shell syntax, quotes, JSON, nesting,
/// control characters, template syntax, very long text.
pub fn hostile_text(tape: &mut Tape<'_>) -> String {
    const FIXED: [&str; 16] = [
        "",
        "$(touch /tmp/vwf-fuzz-pwned)",
        "`touch /tmp/vwf-fuzz-pwned`",
        "'; touch /tmp/vwf-fuzz-pwned; '",
        "\"; touch /tmp/vwf-fuzz-pwned; \"",
        "\\",
        "a\nb\r\n",
        "${IFS}*?[a]",
        "{{trigger.x}}",
        "{\"a\": [1, 2, {\"b\": null}]}",
        "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
        "42",
        "-1e400",
        "yes",
        "é🦀\u{202e}",
        "\u{1}\u{7f}",
    ];
    match tape.below(4) {
        0 => tape.text(64),
        1 => "x".repeat(tape.below(4) * 40_000),
        _ => tape.pick(&FIXED).to_string(),
    }
}
