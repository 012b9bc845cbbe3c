//! A big-endian reader for TPM 2.0 marshalled structures (TPM 2.0 Library Part 2 §4–§11), with one method
//! per primitive and typed `TPM2B_*` length prefixes.

use crate::error::Error;

/// Largest `TPM2B_*` buffer accepted anywhere (TPM2B_PUBLIC_KEY_RSA for 4096-bit keys is 512 bytes;
/// TPM2B_PUBLIC is at most ~600; MAX_DIGEST_BUFFER in the reference implementation is 1024).
pub(crate) const MAX_TPM2B: usize = 1024;

/// A cursor over marshalled TPM bytes.
#[derive(Clone, Debug)]
pub(crate) struct Reader<'a> {
    input: &'a [u8],
    pos: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(input: &'a [u8], what: &'static str) -> Self {
        Self { input, pos: 0, what }
    }

    pub(crate) fn err(&self, reason: &'static str) -> Error {
        Error::Tpm { structure: self.what, offset: self.pos, reason }
    }

    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8], Error> {
        let end = self.pos.checked_add(n).filter(|e| *e <= self.input.len()).ok_or_else(|| self.err("truncated"))?;
        let out = &self.input[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    pub(crate) fn u8(&mut self) -> Result<u8, Error> {
        Ok(self.bytes(1)?[0])
    }

    pub(crate) fn u16(&mut self) -> Result<u16, Error> {
        let b = self.bytes(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    pub(crate) fn u32(&mut self) -> Result<u32, Error> {
        let b = self.bytes(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub(crate) fn u64(&mut self) -> Result<u64, Error> {
        let b = self.bytes(8)?;
        Ok(u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
    }

    /// A `TPM2B_*`: a u16 size followed by that many bytes, at most `max`.
    pub(crate) fn tpm2b(&mut self, max: usize) -> Result<&'a [u8], Error> {
        let n = usize::from(self.u16()?);
        if n > max {
            return Err(Error::LimitExceeded { what: self.what, limit: max, found: n });
        }
        self.bytes(n)
    }

    /// The input between two positions already read.
    pub(crate) fn slice(&self, start: usize, end: usize) -> &'a [u8] {
        &self.input[start..end]
    }

    pub(crate) fn finish(&self) -> Result<(), Error> {
        if self.pos == self.input.len() {
            Ok(())
        } else {
            Err(Error::TrailingData { structure: self.what, extra: self.input.len() - self.pos })
        }
    }
}
