//! 128-bit digests of machine values for the searches that remember millions of them (the
//! exhaustive bound search, the diagram exploration): a digest is 16 bytes where a machine
//! with its sets is over a kilobyte, and two of ten million states sharing one is out of
//! reach (about 2^-82).
//!
//! The value's `Hash` stream is recorded as bytes first and hashed in one pass: SipHash fed
//! field by field spent most of a search's time in the overhead of its many small writes.
//! Integers are recorded as LEB128 varints (most are 0 or small) and raw bytes with their
//! length, so the record is prefix-free: two values with different `Hash` streams never share
//! a record, and only a hash collision can make them share a digest.

use std::hash::{DefaultHasher, Hash, Hasher};

/// Digests values, reusing one buffer for their records.
#[derive(Debug, Default)]
pub struct Digester {
    buf: Vec<u8>,
}

impl Digester {
    /// A digester with an empty buffer.
    pub fn new() -> Self {
        Self::default()
    }

    /// The digest of `value`'s `Hash` stream.
    pub fn digest(&mut self, value: &impl Hash) -> [u64; 2] {
        self.stream(|h| value.hash(h))
    }

    /// The digest of what `write` feeds the recorder (several values, or a projection of one
    /// streamed field by field without building it).
    pub fn stream(&mut self, write: impl FnOnce(&mut Recorder<'_>)) -> [u64; 2] {
        self.buf.clear();
        write(&mut Recorder(&mut self.buf));
        // Two SipHashes, the second keyed apart by a prefix: independent 64-bit halves.
        let mut a = DefaultHasher::new();
        a.write(&self.buf);
        let mut b = DefaultHasher::new();
        b.write_u64(0x9e37_79b9_7f4a_7c15);
        b.write(&self.buf);
        [a.finish(), b.finish()]
    }
}

/// A `Hasher` that records the stream it is fed (see the module's documentation).
#[derive(Debug)]
pub struct Recorder<'a>(&'a mut Vec<u8>);

impl Recorder<'_> {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }
}

impl Hasher for Recorder<'_> {
    /// Not a hash: the record is digested by [`Digester`].
    fn finish(&self) -> u64 {
        0
    }
    fn write(&mut self, bytes: &[u8]) {
        self.varint(bytes.len() as u64);
        self.0.extend_from_slice(bytes);
    }
    fn write_u8(&mut self, v: u8) {
        self.varint(v.into());
    }
    fn write_u16(&mut self, v: u16) {
        self.varint(v.into());
    }
    fn write_u32(&mut self, v: u32) {
        self.varint(v.into());
    }
    fn write_u64(&mut self, v: u64) {
        self.varint(v);
    }
    fn write_u128(&mut self, v: u128) {
        self.varint(v as u64);
        self.varint((v >> 64) as u64);
    }
    fn write_usize(&mut self, v: usize) {
        self.varint(v as u64);
    }
    fn write_i8(&mut self, v: i8) {
        self.write_i64(v.into());
    }
    fn write_i16(&mut self, v: i16) {
        self.write_i64(v.into());
    }
    fn write_i32(&mut self, v: i32) {
        self.write_i64(v.into());
    }
    fn write_i64(&mut self, v: i64) {
        // Zigzag: small negative numbers stay short too.
        self.varint(((v << 1) ^ (v >> 63)) as u64);
    }
    fn write_i128(&mut self, v: i128) {
        self.write_u128(((v << 1) ^ (v >> 127)) as u128);
    }
    fn write_isize(&mut self, v: isize) {
        self.write_i64(v as i64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Writer<'f> = &'f dyn Fn(&mut Recorder<'_>);

    #[test]
    fn different_streams_never_share_a_record() {
        // Without the varints' and lengths' prefix-freedom these would record alike.
        let pairs: [(Writer, Writer); 3] = [
            (&|h| (1u32, 0u32).hash(h), &|h| 128u32.hash(h)),
            (&|h| ("ab", "c").hash(h), &|h| ("a", "bc").hash(h)),
            (&|h| (-1i64).hash(h), &|h| 1i64.hash(h)),
        ];
        for (a, b) in pairs {
            let (mut ra, mut rb) = (Vec::new(), Vec::new());
            a(&mut Recorder(&mut ra));
            b(&mut Recorder(&mut rb));
            assert_ne!(ra, rb);
        }
        let mut d = Digester::new();
        assert_ne!(d.digest(&(1u32, 0u32)), d.digest(&128u32));
        assert_eq!(d.digest(&[7u32; 10]), d.digest(&[7u32; 10]));
    }

    #[test]
    fn small_integers_take_one_byte() {
        let mut buf = Vec::new();
        (0u32, 5u64, 127usize, Some(3u8)).hash(&mut Recorder(&mut buf));
        // Option's discriminant is an isize: one byte too.
        assert_eq!(buf.len(), 5, "{buf:?}");
    }
}
