//! A child's output kept within a bound, whatever it prints: [`Kept`] keeps the head and the
//! tail of a stream run to completion (the error a command prints last survives however much
//! it printed before), [`Tail`] the last bytes of a stream read as it arrives (the agent's).

/// Bytes of one stream kept: the first half and the last half of the budget, with a line
/// saying how much was cut between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget(pub usize);

impl Budget {
    /// Large enough for `gh issue list --limit 1000` with bodies; a bound all the same.
    pub const DEFAULT: Budget = Budget(64 * 1024 * 1024);
}

/// One stream's output: its head, and a tail that keeps moving.
pub(super) struct Kept {
    half: usize,
    head: Vec<u8>,
    tail: Vec<u8>,
    /// Bytes dropped from the front of `tail`.
    cut: u64,
}

impl Kept {
    pub(super) fn new(budget: Budget) -> Kept {
        Kept {
            half: (budget.0 / 2).max(1),
            head: Vec::new(),
            tail: Vec::new(),
            cut: 0,
        }
    }

    pub(super) fn push(&mut self, mut bytes: &[u8]) {
        let room = self.half.saturating_sub(self.head.len());
        let (first, rest) = bytes.split_at(bytes.len().min(room));
        self.head.extend_from_slice(first);
        bytes = rest;
        if bytes.is_empty() {
            return;
        }
        self.tail.extend_from_slice(bytes);
        // Trimmed in batches (at twice the half), so each byte is moved at most once more.
        if self.tail.len() >= 2 * self.half {
            let excess = self.tail.len() - self.half;
            self.tail.drain(..excess);
            self.cut += excess as u64;
        }
    }

    pub(super) fn text(&self) -> String {
        let mut all = self.head.clone();
        let extra = self.tail.len().saturating_sub(self.half);
        let cut = self.cut + extra as u64;
        if cut > 0 {
            all.extend_from_slice(format!("\n[… {cut} bytes of output cut …]\n").as_bytes());
        }
        all.extend_from_slice(&self.tail[extra..]);
        lossy(&all)
    }
}

/// Keeps the last `cap` bytes written to it. Bytes are compacted only when the buffer reaches
/// twice the cap, so each byte is moved a bounded number of times.
#[derive(Debug)]
pub(super) struct Tail {
    cap: usize,
    buf: Vec<u8>,
    truncated: bool,
}

impl Tail {
    pub(super) fn new(cap: usize) -> Tail {
        Tail {
            cap,
            buf: Vec::new(),
            truncated: false,
        }
    }

    pub(super) fn push(&mut self, chunk: &[u8]) {
        if chunk.len() >= self.cap {
            self.truncated |= !self.buf.is_empty() || chunk.len() > self.cap;
            self.buf.clear();
            self.buf.extend_from_slice(&chunk[chunk.len() - self.cap..]);
            return;
        }
        self.buf.extend_from_slice(chunk);
        if self.buf.len() > 2 * self.cap {
            let excess = self.buf.len() - self.cap;
            self.buf.drain(..excess);
            self.truncated = true;
        }
    }

    pub(super) fn into_string(mut self) -> String {
        if self.buf.len() > self.cap {
            let excess = self.buf.len() - self.cap;
            self.buf.drain(..excess);
            self.truncated = true;
        }
        let mut bytes = self.buf.as_slice();
        if self.truncated {
            // The cut may have split a UTF-8 sequence; drop its orphaned continuation bytes
            // rather than show a replacement character.
            let skip = bytes
                .iter()
                .take(3)
                .take_while(|b| (**b & 0b1100_0000) == 0b1000_0000)
                .count();
            bytes = &bytes[skip..];
        }
        String::from_utf8_lossy(bytes).into_owned()
    }
}

pub(super) fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_only_the_last_bytes() {
        let mut tail = Tail::new(4);
        tail.push(b"ab");
        tail.push(b"cd");
        tail.push(b"ef");
        assert_eq!(tail.into_string(), "cdef");

        let mut tail = Tail::new(4);
        tail.push(b"0123456789");
        assert_eq!(tail.into_string(), "6789");

        let mut tail = Tail::new(4);
        for _ in 0..1000 {
            tail.push(b"xyz");
            assert!(tail.buf.len() <= 8);
        }
        assert_eq!(tail.into_string(), "zxyz");
    }

    #[test]
    fn tail_drops_a_utf8_sequence_split_by_the_cut() {
        let mut tail = Tail::new(4);
        tail.push("aé€".as_bytes()); // 1 + 2 + 3 bytes; the last 4 start inside "é"
        assert_eq!(tail.into_string(), "€");
        let mut whole = Tail::new(16);
        whole.push("é€".as_bytes());
        assert_eq!(whole.into_string(), "é€");
    }
}
