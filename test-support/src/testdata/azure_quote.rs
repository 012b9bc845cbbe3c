//! The Azure vTPM quote bundle as the testdata stores it in binary form (`azure-cvm-tooling/quote.bin`,
//! `trustee-az-snp-vtpm/quote.bin`, `trustee-az-tdx-vtpm/quote.bin`): the az-cvm-vtpm crate's
//! `Quote { signature, message, pcrs }` serialized with bincode 1's default (fixed-width) encoding.

/// A decoded Azure vTPM quote bundle.
///
/// The wire format, all lengths and counts little-endian:
///
/// ```text
/// u64 length + signature (raw RSASSA bytes) | u64 length + TPMS_ATTEST | u64 count + count × 32-byte SHA-256 PCRs
/// ```
///
/// ```
/// use attest_test_support::testdata::AzureQuote;
///
/// let mut b = Vec::new();
/// for field in [&b"sig"[..], b"attest"] {
///     b.extend_from_slice(&(field.len() as u64).to_le_bytes());
///     b.extend_from_slice(field);
/// }
/// b.extend_from_slice(&1u64.to_le_bytes());
/// b.extend_from_slice(&[7; 32]);
/// let q = AzureQuote::from_bincode(&b);
/// assert_eq!((&q.sig[..], &q.attest[..], &q.pcrs[..]), (&b"sig"[..], &b"attest"[..], &[[7; 32]][..]));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AzureQuote {
    /// The quote's signature over `attest`.
    pub sig: Vec<u8>,
    /// The signed TPMS_ATTEST.
    pub attest: Vec<u8>,
    /// The SHA-256 PCR values, PCR 0 first.
    pub pcrs: Vec<[u8; 32]>,
}

impl AzureQuote {
    /// Decodes a whole bundle.
    ///
    /// # Panics
    /// When `bytes` is truncated, a length does not fit in `usize`, or bytes follow the PCR values.
    #[track_caller]
    pub fn from_bincode(bytes: &[u8]) -> Self {
        let mut rest = bytes;
        let sig = take_vec(&mut rest, "signature").to_vec();
        let attest = take_vec(&mut rest, "TPMS_ATTEST").to_vec();
        let count = take_len(&mut rest, "PCR count");
        let pcrs = (0..count).map(|_| take(&mut rest, 32, "PCR value").try_into().expect("32 bytes")).collect();
        assert!(rest.is_empty(), "{} trailing bytes after the PCR values", rest.len());
        Self { sig, attest, pcrs }
    }
}

/// The next `n` bytes of `rest`, naming `what` when there are fewer.
#[track_caller]
fn take<'a>(rest: &mut &'a [u8], n: usize, what: &str) -> &'a [u8] {
    assert!(rest.len() >= n, "truncated {what}: {n} bytes wanted, {} left", rest.len());
    let (head, tail) = rest.split_at(n);
    *rest = tail;
    head
}

/// A u64-LE length or count.
#[track_caller]
fn take_len(rest: &mut &[u8], what: &str) -> usize {
    let le: [u8; 8] = take(rest, 8, what).try_into().expect("8 bytes");
    usize::try_from(u64::from_le_bytes(le)).unwrap_or_else(|_| panic!("{what} does not fit in usize"))
}

/// A u64-LE length and that many bytes.
#[track_caller]
fn take_vec<'a>(rest: &mut &'a [u8], what: &str) -> &'a [u8] {
    let n = take_len(rest, what);
    take(rest, n, what)
}

#[cfg(test)]
mod tests {
    use super::AzureQuote;

    fn bundle() -> Vec<u8> {
        let mut b = Vec::new();
        for field in [&[1u8, 2][..], &[3]] {
            b.extend_from_slice(&(field.len() as u64).to_le_bytes());
            b.extend_from_slice(field);
        }
        b.extend_from_slice(&2u64.to_le_bytes());
        b.extend_from_slice(&[4; 32]);
        b.extend_from_slice(&[5; 32]);
        b
    }

    #[test]
    fn decodes_every_field() {
        let q = AzureQuote::from_bincode(&bundle());
        assert_eq!(q, AzureQuote { sig: vec![1, 2], attest: vec![3], pcrs: vec![[4; 32], [5; 32]] });
    }

    #[test]
    #[should_panic(expected = "truncated PCR value")]
    fn rejects_truncation() {
        let b = bundle();
        AzureQuote::from_bincode(&b[..b.len() - 1]);
    }

    #[test]
    #[should_panic(expected = "1 trailing bytes")]
    fn rejects_trailing_bytes() {
        let mut b = bundle();
        b.push(0);
        AzureQuote::from_bincode(&b);
    }
}
