//! The gRPC length-prefixed message framing (`grpc/doc/PROTOCOL-HTTP2.md`, "Length-Prefixed-Message"):
//!
//! ```text
//! +------------+---------------------------+------------------------+
//! | flag (u8)  | length (u32, big-endian)  | message (length bytes) |
//! +------------+---------------------------+------------------------+
//!   0 = plain, 1 = compressed (only with a negotiated grpc-encoding)
//! ```
//!
//! HTTP/2 DATA frames do not align with messages: a prefix may be split across frames and a frame may hold
//! several messages. [`MessageDecoder`] reassembles from arbitrary chunks, checks the announced length against
//! the limit as soon as the five prefix bytes are in (before buffering any body), and rejects the compressed
//! flag because this implementation negotiates only `identity`.

use bytes::{Buf, BufMut, Bytes, BytesMut};

/// Size of the message prefix: one flag byte and a 32-bit big-endian length.
pub const PREFIX_LEN: usize = 5;

/// Default maximum size of one received message: 4 MiB, the default of grpc-core, grpc-go and grpc-java.
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 4 * 1024 * 1024;

/// Why a message stream could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FrameError {
    /// The prefix announced a message larger than the limit (→ `RESOURCE_EXHAUSTED`).
    TooLarge {
        /// Announced length.
        len: usize,
        /// The configured limit.
        max: usize,
    },
    /// The compressed flag is set, but no compression was negotiated (→ `INTERNAL`).
    Compressed,
    /// The flag byte is neither 0 nor 1 (→ `INTERNAL`).
    InvalidFlag(u8),
    /// The stream ended inside a prefix or a message (→ `INTERNAL`).
    Truncated {
        /// Bytes left over.
        buffered: usize,
    },
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::TooLarge { len, max } => {
                write!(f, "message of {len} bytes exceeds the maximum message size of {max} bytes")
            }
            FrameError::Compressed => f.write_str("compressed flag set but no grpc-encoding was negotiated"),
            FrameError::InvalidFlag(b) => write!(f, "invalid message flag {b:#04x}"),
            FrameError::Truncated { buffered } => {
                write!(f, "stream ended inside a message ({buffered} bytes left over)")
            }
        }
    }
}

impl std::error::Error for FrameError {}

/// Encodes a message with its 5-byte prefix (flag 0) into one buffer.
pub fn encode<M: prost::Message>(message: &M) -> Bytes {
    let len = message.encoded_len();
    let mut buf = BytesMut::with_capacity(PREFIX_LEN + len);
    buf.put_u8(0);
    buf.put_u32(u32::try_from(len).unwrap_or(u32::MAX));
    // Cannot fail: the buffer has `len` bytes of room.
    let _ = message.encode(&mut buf);
    buf.freeze()
}

/// Reassembles length-prefixed messages from arbitrary chunks.
#[derive(Debug)]
pub struct MessageDecoder {
    buf: BytesMut,
    max: usize,
    /// The body length of the message whose prefix has been consumed, if any.
    pending: Option<usize>,
}

impl MessageDecoder {
    /// A decoder that rejects messages over `max` bytes.
    pub fn new(max: usize) -> MessageDecoder {
        MessageDecoder { buf: BytesMut::new(), max, pending: None }
    }

    /// Adds received bytes.
    pub fn push(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
    }

    /// The length of the message being received, once its prefix is in (for budgeting before buffering).
    pub fn pending_len(&self) -> Option<usize> {
        self.pending
    }

    /// Takes the next complete message, if there is one. Errors as soon as a bad prefix arrives.
    pub fn next_message(&mut self) -> Result<Option<Bytes>, FrameError> {
        if self.pending.is_none() {
            if self.buf.len() < PREFIX_LEN {
                return Ok(None);
            }
            let flag = self.buf[0];
            let len = u32::from_be_bytes([self.buf[1], self.buf[2], self.buf[3], self.buf[4]]) as usize;
            match flag {
                0 => {}
                1 => return Err(FrameError::Compressed),
                other => return Err(FrameError::InvalidFlag(other)),
            }
            if len > self.max {
                return Err(FrameError::TooLarge { len, max: self.max });
            }
            self.buf.advance(PREFIX_LEN);
            self.buf.reserve(len.saturating_sub(self.buf.len()));
            self.pending = Some(len);
        }
        match self.pending {
            Some(len) if self.buf.len() >= len => {
                self.pending = None;
                Ok(Some(self.buf.split_to(len).freeze()))
            }
            _ => Ok(None),
        }
    }

    /// Called at end of stream: an error if a prefix or message is incomplete.
    pub fn finish(&self) -> Result<(), FrameError> {
        let buffered = self.buf.len() + self.pending.map_or(0, |_| PREFIX_LEN);
        if buffered == 0 { Ok(()) } else { Err(FrameError::Truncated { buffered }) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(body: &[u8]) -> Vec<u8> {
        let mut v = vec![0];
        v.extend_from_slice(&(body.len() as u32).to_be_bytes());
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn reassembles_at_every_split() {
        let mut wire = frame(b"hello");
        wire.extend(frame(b""));
        wire.extend(frame(&[7; 300]));
        for split in 0..=wire.len() {
            for step in [1, 2, 3, 5, 7, 1000] {
                let mut d = MessageDecoder::new(1024);
                let mut got = Vec::new();
                let (a, b) = wire.split_at(split);
                for part in [a, b] {
                    for chunk in part.chunks(step) {
                        d.push(chunk);
                        while let Some(m) = d.next_message().unwrap() {
                            got.push(m);
                        }
                    }
                }
                d.finish().unwrap();
                assert_eq!(got.len(), 3);
                assert_eq!(&got[0][..], b"hello");
                assert!(got[1].is_empty());
                assert_eq!(&got[2][..], &[7; 300][..]);
            }
        }
    }

    #[test]
    fn size_checked_at_prefix() {
        let mut d = MessageDecoder::new(10);
        d.push(&[0, 0, 0, 0]);
        assert_eq!(d.next_message(), Ok(None));
        d.push(&[11]);
        assert_eq!(d.next_message(), Err(FrameError::TooLarge { len: 11, max: 10 }));
        let mut d = MessageDecoder::new(10);
        d.push(&[0, 0xFF, 0xFF, 0xFF, 0xFF]);
        assert_eq!(d.next_message(), Err(FrameError::TooLarge { len: u32::MAX as usize, max: 10 }));
    }

    #[test]
    fn flags_and_truncation() {
        let mut d = MessageDecoder::new(10);
        d.push(&[1, 0, 0, 0, 0]);
        assert_eq!(d.next_message(), Err(FrameError::Compressed));
        let mut d = MessageDecoder::new(10);
        d.push(&[2, 0, 0, 0, 0]);
        assert_eq!(d.next_message(), Err(FrameError::InvalidFlag(2)));
        for cut in 1..frame(b"abc").len() {
            let mut d = MessageDecoder::new(10);
            d.push(&frame(b"abc")[..cut]);
            assert_eq!(d.next_message(), Ok(None));
            assert!(matches!(d.finish(), Err(FrameError::Truncated { .. })), "{cut}");
        }
    }

    #[test]
    fn encode_prefix() {
        let b = encode(&attest_proto::kms::GetDataKeyRequest { data_key_id: String::new(), length: 32 });
        assert_eq!(&b[..], &[0, 0, 0, 0, 2, 2 << 3, 32]);
        assert_eq!(&encode(&()).to_vec(), &[0, 0, 0, 0, 0]);
    }
}
