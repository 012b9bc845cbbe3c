//! Conversion into the engine's [`PcrPolicy`], the form the attestation validators enforce.

use crate::error::Error;
use crate::pcr::Measurements;
use attest_engine::variant::{PcrExpectation, PcrPolicy};

impl Measurements {
    /// The expected SHA-256 PCR values as an engine [`PcrPolicy`]. SHA-384 maps are refused with
    /// [`Error::NotSha256`]: the validators compare the SHA-256 bank.
    pub fn to_pcr_policy(&self) -> Result<PcrPolicy, Error> {
        let mut entries = Vec::with_capacity(self.len());
        for (index, m) in self.iter() {
            let expected: [u8; 32] =
                m.expected().try_into().map_err(|_| Error::NotSha256 { index, found: m.expected().len() })?;
            entries.push(PcrExpectation { index: index.get(), expected, warn_only: m.is_warn_only() });
        }
        Ok(PcrPolicy { entries })
    }
}
