//! Conversion into the engine's [`PcrPolicy`] (vTPM variants) and [`TdxPolicy`] measurements (`qemu-tdx`),
//! the forms the attestation validators enforce.

use crate::error::Error;
use crate::pcr::Measurements;
use attest_engine::policy::Hex;
use attest_engine::tdx::TdxPolicy;
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

    /// The TD measurements of this map (Constellation's TDX layout: index 0 = MRTD, 1–4 = RTMR0–RTMR3, 48-byte
    /// SHA-384 values) written into a copy of `base`: MRTD becomes the only allowed value, each given RTMR the
    /// expected one; what the map does not name is taken from `base`. Refused with [`Error::NotTdx`]: an index
    /// above 4, a 32-byte value, a warn-only entry (a TD quote policy enforces or waives, nothing between).
    pub fn to_tdx_policy(&self, base: &TdxPolicy) -> Result<TdxPolicy, Error> {
        let mut policy = base.clone();
        for (index, m) in self.iter() {
            let value: [u8; 48] = m
                .expected()
                .try_into()
                .map_err(|_| Error::NotTdx { index, reason: "TD measurements are 48-byte SHA-384 values" })?;
            if m.is_warn_only() {
                return Err(Error::NotTdx { index, reason: "warn-only TD measurements are not supported" });
            }
            match index.get() {
                0 => policy.mrtd = vec![Hex(value)],
                1 => policy.rtmr0 = Some(Hex(value)),
                2 => policy.rtmr1 = Some(Hex(value)),
                3 => policy.rtmr2 = Some(Hex(value)),
                4 => policy.rtmr3 = Some(Hex(value)),
                _ => return Err(Error::NotTdx { index, reason: "TDX measurements are 0 (MRTD) to 4 (RTMR3)" }),
            }
        }
        Ok(policy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use attest_engine::tdx::TdxPolicy;

    fn map(json: &str) -> Measurements {
        Measurements::from_json(json.as_bytes()).unwrap()
    }

    #[test]
    fn tdx_layout() {
        let (mrtd, rtmr2) = ("aa".repeat(48), "bb".repeat(48));
        let tdx = map(&format!(r#"{{"0": {{"expected": "{mrtd}"}}, "3": {{"expected": "{rtmr2}"}}}}"#));
        let base = TdxPolicy { allow_debug: true, ..TdxPolicy::default() };
        let policy = tdx.to_tdx_policy(&base).unwrap();
        assert_eq!(policy.mrtd, vec![Hex([0xaa; 48])]);
        assert_eq!((policy.rtmr0, policy.rtmr1, policy.rtmr2, policy.rtmr3), (None, None, Some(Hex([0xbb; 48])), None));
        assert!(policy.allow_debug, "the rest comes from the base policy");
        assert!(tdx.to_pcr_policy().is_err(), "a TDX map is no PCR map");
        for (json, reason) in [
            (format!(r#"{{"5": {{"expected": "{mrtd}"}}}}"#), "0 (MRTD) to 4"),
            (format!(r#"{{"0": {{"expected": "{}"}}}}"#, "aa".repeat(32)), "48-byte"),
            (format!(r#"{{"1": {{"expected": "{mrtd}", "warnOnly": true}}}}"#), "warn-only"),
        ] {
            let e = map(&json).to_tdx_policy(&base).unwrap_err();
            assert!(matches!(e, Error::NotTdx { .. }) && e.to_string().contains(reason), "{e}");
        }
    }
}
