//! The gRPC length-prefixed message decoder (`attest_grpc::codec::MessageDecoder`, what the server and
//! the client run on every DATA frame), plus the two header parsers a peer controls (`grpc-timeout`,
//! `grpc-message`); must never panic.
//!
//! Input: `max_size_selector (u8) ‖ chunk_size (u8) ‖ stream bytes`. The stream is fed to two decoders, one in
//! `chunk_size`-byte pieces and one whole; both must produce the same messages and the same error (framing
//! does not depend on how DATA frames cut the stream), every message must respect the limit, and the bytes
//! accounted for (prefixes + messages + what is still buffered) must add up to the input.
#![no_main]

use attest_grpc::{codec::{FrameError, MessageDecoder, PREFIX_LEN}};
use attest_grpc::metadata::parse_timeout;
use attest_grpc::status::percent_decode;
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use std::hint::black_box;

const MAX_SIZES: [usize; 4] = [0, 16, 1024, attest_grpc::codec::DEFAULT_MAX_MESSAGE_SIZE];

/// Feeds `stream` in `chunk`-byte pieces; returns the messages and the first error (decoding stops there, as
/// the server does).
fn run(max: usize, stream: &[u8], chunk: usize) -> (Vec<Bytes>, Result<(), FrameError>) {
    let mut d = MessageDecoder::new(max);
    let mut out = Vec::new();
    for piece in stream.chunks(chunk.max(1)) {
        d.push(piece);
        loop {
            match d.next_message() {
                Ok(Some(m)) => {
                    assert!(m.len() <= max, "message of {} bytes over the limit {max}", m.len());
                    out.push(m);
                }
                Ok(None) => break,
                Err(e) => return (out, Err(e)),
            }
        }
        if let Some(len) = d.pending_len() {
            assert!(len <= max);
        }
    }
    let end = d.finish();
    let used: usize = out.iter().map(|m| PREFIX_LEN + m.len()).sum();
    match &end {
        Ok(()) => assert_eq!(used, stream.len()),
        Err(FrameError::Truncated { buffered }) => assert_eq!(used + buffered, stream.len()),
        Err(e) => panic!("finish returned {e:?}"),
    }
    (out, end)
}

fuzz_target!(|data: &[u8]| {
    let [sel, chunk, stream @ ..] = data else { return };
    let max = MAX_SIZES[usize::from(sel & 3)];
    let whole = run(max, stream, stream.len());
    let pieces = run(max, stream, usize::from(*chunk));
    assert_eq!(whole, pieces, "framing depends on the chunking");
    black_box(parse_timeout(stream));
    black_box(percent_decode(stream));
});
