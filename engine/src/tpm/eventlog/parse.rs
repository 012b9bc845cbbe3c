//! Decoding one event, the Spec ID event, and the whole-log validation rules (PFP §10.2, §10.4.5).

use super::{
    AlgorithmId, Algorithms, DigestLayout, Event, EventDigests, EventLog, EventType, MAX_ALGORITHMS, MAX_DIGEST_SIZE,
    MAX_DIGESTS_PER_EVENT, MAX_EVENT_DATA_SIZE, MAX_EVENTS, MAX_LOG_SIZE, PCR_COUNT, SPEC_ID_EVENT03_SIGNATURE,
    STARTUP_LOCALITY_SIGNATURE, SpecIdEvent,
};
use crate::error::Error;

/// A little-endian cursor over one structure starting at `start` in `input`. Truncation errors report
/// lengths relative to `start`.
struct Cursor<'a> {
    input: &'a [u8],
    start: usize,
    pos: usize,
    structure: &'static str,
}

impl<'a> Cursor<'a> {
    fn new(input: &'a [u8], start: usize, structure: &'static str) -> Self {
        Self { input, start, pos: start, structure }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], Error> {
        match self.pos.checked_add(n).filter(|end| *end <= self.input.len()) {
            Some(end) => {
                let out = &self.input[self.pos..end];
                self.pos = end;
                Ok(out)
            }
            None => Err(Error::Truncated {
                structure: self.structure,
                needed: (self.pos - self.start).saturating_add(n),
                found: self.input.len() - self.start,
            }),
        }
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], Error> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, Error> {
        Ok(self.array::<1>()?[0])
    }

    fn u16(&mut self) -> Result<u16, Error> {
        Ok(u16::from_le_bytes(self.array()?))
    }

    fn u32(&mut self) -> Result<u32, Error> {
        Ok(u32::from_le_bytes(self.array()?))
    }
}

fn malformed(offset: usize, reason: &'static str) -> Error {
    Error::EventLog { offset, reason }
}

/// Decodes the event at `offset`: a `TCG_PCClientPCREvent` (§10.2.1) for [`DigestLayout::Sha1`], else a
/// `TCG_PCR_EVENT2` (§10.2.2). Checks lengths, limits and the digest list against the Spec ID table;
/// returns the event and the offset just past it.
pub(super) fn decode_event<'a>(
    input: &'a [u8],
    offset: usize,
    index: usize,
    layout: DigestLayout<'a>,
) -> Result<(Event<'a>, usize), Error> {
    let structure = match layout {
        DigestLayout::Sha1 => "TCG_PCClientPCREvent",
        DigestLayout::Agile(_) => "TCG_PCR_EVENT2",
    };
    let mut c = Cursor::new(input, offset, structure);
    let pcr_index = c.u32()?;
    let event_type = EventType(c.u32()?);
    let digests = match layout {
        DigestLayout::Sha1 => EventDigests { raw: c.take(20)?, remaining: 1, layout },
        DigestLayout::Agile(table) => {
            // TPML_DIGEST_VALUES: count, then count × TPMT_HA {hashAlg, digest[size(hashAlg)]}.
            let count = c.u32()? as usize;
            if count > MAX_DIGESTS_PER_EVENT {
                return Err(Error::LimitExceeded {
                    what: "TCG_PCR_EVENT2 digest count",
                    limit: MAX_DIGESTS_PER_EVENT,
                    found: count,
                });
            }
            if count != table.len() / 4 {
                return Err(malformed(offset, "digest count differs from the Spec ID event's numberOfAlgorithms"));
            }
            let start = c.pos;
            let mut seen = 0u32;
            for _ in 0..count {
                let alg = AlgorithmId(c.u16()?);
                let Some((slot, size)) = layout.lookup(alg) else {
                    return Err(malformed(offset, "digest algorithm not declared in the Spec ID event"));
                };
                if seen & (1 << slot) != 0 {
                    return Err(malformed(offset, "two digests for the same algorithm"));
                }
                seen |= 1 << slot;
                c.take(size)?;
            }
            EventDigests { raw: &input[start..c.pos], remaining: count, layout }
        }
    };
    let size = c.u32()? as usize;
    if size > MAX_EVENT_DATA_SIZE {
        return Err(Error::LimitExceeded {
            what: "event data size (eventSize)",
            limit: MAX_EVENT_DATA_SIZE,
            found: size,
        });
    }
    let data = c.take(size)?;
    Ok((Event { index, offset, pcr_index, ty: event_type, digests, data }, c.pos))
}

/// Parses a `TCG_EfiSpecIDEventStruct` (§10.4.5.1) that fills `data` exactly. Errors name offset 0,
/// the first event's.
fn parse_spec_id(data: &[u8]) -> Result<SpecIdEvent<'_>, Error> {
    let mut c = Cursor::new(data, 0, "TCG_EfiSpecIDEventStruct");
    c.take(SPEC_ID_EVENT03_SIGNATURE.len())?; // matched by the caller
    let platform_class = c.u32()?;
    let spec_version_minor = c.u8()?;
    let spec_version_major = c.u8()?;
    let spec_errata = c.u8()?;
    let uintn_size = c.u8()?;
    // "Spec ID Event03" is the TPM 2.0 (family "2.0") format: specVersionMajor 2, specVersionMinor 0.
    if (spec_version_major, spec_version_minor) != (2, 0) {
        return Err(malformed(0, "Spec ID Event03 specVersion is not 2.0"));
    }
    if !matches!(uintn_size, 1 | 2) {
        return Err(malformed(0, "Spec ID Event03 uintnSize is neither 1 (UINT32) nor 2 (UINT64)"));
    }
    let n = c.u32()? as usize;
    if n == 0 {
        return Err(malformed(0, "Spec ID Event03 declares no algorithms"));
    }
    if n > MAX_ALGORITHMS {
        return Err(Error::LimitExceeded {
            what: "TCG_EfiSpecIDEventStruct numberOfAlgorithms",
            limit: MAX_ALGORITHMS,
            found: n,
        });
    }
    let digest_sizes = c.take(n * 4)?;
    for (i, (alg, size)) in (Algorithms { table: digest_sizes }).enumerate() {
        if size == 0 {
            return Err(malformed(0, "Spec ID Event03 declares a zero digestSize"));
        }
        if size > MAX_DIGEST_SIZE {
            return Err(Error::LimitExceeded {
                what: "TCG_EfiSpecIDEventStruct digestSize",
                limit: MAX_DIGEST_SIZE,
                found: size,
            });
        }
        if alg.registered_digest_size().is_some_and(|s| s != size) {
            return Err(malformed(0, "Spec ID Event03 digestSize differs from the algorithm's"));
        }
        if (Algorithms { table: digest_sizes }).take(i).any(|(a, _)| a == alg) {
            return Err(malformed(0, "Spec ID Event03 declares an algorithm twice"));
        }
    }
    let vendor_info_size = usize::from(c.u8()?);
    let vendor_info = c.take(vendor_info_size)?;
    if c.pos != data.len() {
        return Err(Error::TrailingData { structure: "TCG_EfiSpecIDEventStruct", extra: data.len() - c.pos });
    }
    Ok(SpecIdEvent {
        platform_class,
        spec_version_minor,
        spec_version_major,
        spec_errata,
        uintn_size,
        digest_sizes,
        vendor_info,
    })
}

/// Rules spanning events.
struct Validator {
    crypto_agile: bool,
    startup_locality: Option<u8>,
    pcr0_extended: bool,
}

impl Validator {
    fn check(&mut self, ev: &Event<'_>) -> Result<(), Error> {
        let offset = ev.offset;
        if ev.pcr_index as usize >= PCR_COUNT {
            return Err(malformed(offset, "pcrIndex is not below 24"));
        }
        if ev.ty != EventType::EV_NO_ACTION {
            if ev.pcr_index == 0 {
                self.pcr0_extended = true;
            }
            return Ok(());
        }
        if ev.data.starts_with(SPEC_ID_EVENT03_SIGNATURE) {
            return Err(malformed(offset, "Spec ID Event03 is not the first event"));
        }
        if let Some(rest) = ev.data.strip_prefix(STARTUP_LOCALITY_SIGNATURE) {
            // TCG_EfiStartupLocalityEvent (§10.4.5.3): signature, then one locality byte; it sets PCR 0's
            // starting value, so it must come before PCR 0 is first extended, and only once.
            if !self.crypto_agile {
                return Err(malformed(offset, "StartupLocality event in a SHA-1 format log"));
            }
            if ev.pcr_index != 0 {
                return Err(malformed(offset, "StartupLocality event not in PCR 0"));
            }
            let &[locality] = rest else {
                return Err(malformed(offset, "StartupLocality event data is not 17 bytes"));
            };
            if self.startup_locality.is_some() {
                return Err(malformed(offset, "second StartupLocality event"));
            }
            if self.pcr0_extended {
                return Err(malformed(offset, "StartupLocality event after PCR 0 was extended"));
            }
            if !matches!(locality, 0 | 3 | 4) {
                return Err(malformed(offset, "StartupLocality locality is not 0, 3 or 4 (H-CRTM)"));
            }
            self.startup_locality = Some(locality);
        }
        Ok(())
    }
}

pub(super) fn parse(bytes: &[u8]) -> Result<EventLog<'_>, Error> {
    if bytes.len() > MAX_LOG_SIZE {
        return Err(Error::LimitExceeded { what: "TCG event log size", limit: MAX_LOG_SIZE, found: bytes.len() });
    }
    // The first event is always a TCG_PCClientPCREvent (§10.2.1); an empty input fails here.
    let (first, mut pos) = decode_event(bytes, 0, 0, DigestLayout::Sha1)?;
    let spec_id = if first.data.starts_with(SPEC_ID_EVENT03_SIGNATURE) {
        if first.ty != EventType::EV_NO_ACTION || first.pcr_index != 0 {
            return Err(malformed(0, "Spec ID Event03 is not an EV_NO_ACTION event in PCR 0"));
        }
        if first.digests.raw.iter().any(|b| *b != 0) {
            return Err(malformed(0, "Spec ID Event03 digest is not zero"));
        }
        Some(parse_spec_id(first.data)?)
    } else {
        None
    };
    let mut validator = Validator { crypto_agile: spec_id.is_some(), startup_locality: None, pcr0_extended: false };
    let layout = if let Some(s) = &spec_id {
        DigestLayout::Agile(s.digest_sizes)
    } else {
        // In a SHA-1 format log the first event is an ordinary measurement.
        validator.check(&first)?;
        DigestLayout::Sha1
    };
    let mut count = 1;
    while pos < bytes.len() {
        if count == MAX_EVENTS {
            return Err(Error::LimitExceeded {
                what: "TCG event log event count",
                limit: MAX_EVENTS,
                found: count + 1,
            });
        }
        let (event, end) = decode_event(bytes, pos, count, layout)?;
        validator.check(&event)?;
        pos = end;
        count += 1;
    }
    Ok(EventLog { bytes, spec_id, event_count: count, startup_locality: validator.startup_locality })
}

/// Walks a Confidential Computing event log (UEFI 2.10 §38.4 `EFI_CC_EVENT`; the ACPI `CCEL` table's log
/// area, as TDX firmware writes it): a crypto-agile TCG log whose events carry a CC measurement-register
/// index (0 = MRTD, 1–4 = RTMR0–3) where a TCG log has a PCR index. The first event must be the Spec ID
/// Event03 (`EV_NO_ACTION`, zero digest; its index is not constrained, TDX firmware writes 1). Calls `f` for
/// every later event, and stops at the end of the input or where the rest of the log area is unwritten (all
/// 0xFF, as UEFI erases it, or all zero). Returns the length of the log and the number of events.
pub(crate) fn walk_cc_log<'a>(
    bytes: &'a [u8],
    max_index: u32,
    mut f: impl FnMut(&Event<'a>) -> Result<(), Error>,
) -> Result<(usize, usize), Error> {
    if bytes.len() > MAX_LOG_SIZE {
        return Err(Error::LimitExceeded { what: "CC event log size", limit: MAX_LOG_SIZE, found: bytes.len() });
    }
    let (first, mut pos) = decode_event(bytes, 0, 0, DigestLayout::Sha1)?;
    if !first.data.starts_with(SPEC_ID_EVENT03_SIGNATURE) || first.ty != EventType::EV_NO_ACTION {
        return Err(malformed(0, "a CC event log starts with an EV_NO_ACTION Spec ID Event03"));
    }
    if first.digests.raw.iter().any(|b| *b != 0) {
        return Err(malformed(0, "Spec ID Event03 digest is not zero"));
    }
    let spec_id = parse_spec_id(first.data)?;
    let layout = DigestLayout::Agile(spec_id.digest_sizes);
    let mut count = 1;
    loop {
        let rest = &bytes[pos..];
        if rest.iter().all(|b| *b == 0xFF) || rest.iter().all(|b| *b == 0) {
            return Ok((pos, count));
        }
        if count == MAX_EVENTS {
            return Err(Error::LimitExceeded { what: "CC event log event count", limit: MAX_EVENTS, found: count + 1 });
        }
        let (event, end) = decode_event(bytes, pos, count, layout)?;
        if event.pcr_index > max_index {
            return Err(malformed(pos, "CC measurement register index out of range"));
        }
        if event.ty == EventType::EV_NO_ACTION && event.data.starts_with(SPEC_ID_EVENT03_SIGNATURE) {
            return Err(malformed(pos, "Spec ID Event03 is not the first event"));
        }
        f(&event)?;
        pos = end;
        count += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tpm::eventlog::LogFormat;

    /// A crypto-agile log header declaring `algs`.
    fn header(algs: &[(u16, u16)]) -> Vec<u8> {
        let mut data = SPEC_ID_EVENT03_SIGNATURE.to_vec();
        data.extend_from_slice(&0u32.to_le_bytes()); // platformClass
        data.extend_from_slice(&[0, 2, 0, 2]); // minor, major, errata, uintnSize
        data.extend_from_slice(&(algs.len() as u32).to_le_bytes());
        for (a, s) in algs {
            data.extend_from_slice(&a.to_le_bytes());
            data.extend_from_slice(&s.to_le_bytes());
        }
        data.push(0); // vendorInfoSize
        let mut out = Vec::new();
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&3u32.to_le_bytes());
        out.extend_from_slice(&[0; 20]);
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        out.extend_from_slice(&data);
        out
    }

    fn event2(out: &mut Vec<u8>, pcr: u32, ty: u32, digests: &[(u16, &[u8])], data: &[u8]) {
        out.extend_from_slice(&pcr.to_le_bytes());
        out.extend_from_slice(&ty.to_le_bytes());
        out.extend_from_slice(&(digests.len() as u32).to_le_bytes());
        for (a, d) in digests {
            out.extend_from_slice(&a.to_le_bytes());
            out.extend_from_slice(d);
        }
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        out.extend_from_slice(data);
    }

    #[test]
    fn unknown_algorithm_is_skipped_by_its_declared_size() {
        let mut log = header(&[(0x00B, 32), (0x7777, 7)]);
        event2(&mut log, 4, 0xD, &[(0x7777, &[9; 7]), (0x00B, &[1; 32])], b"abc");
        let parsed = EventLog::parse(&log).unwrap();
        assert_eq!(parsed.format(), LogFormat::CryptoAgile);
        let ev = parsed.events().nth(1).unwrap();
        let digests: Vec<_> = ev.digests().collect();
        assert_eq!(digests, vec![(AlgorithmId(0x7777), &[9u8; 7][..]), (AlgorithmId::SHA256, &[1u8; 32][..])]);
        assert_eq!(ev.data(), b"abc");
    }

    #[test]
    fn digest_rules() {
        let mut missing = header(&[(0x00B, 32), (0x004, 20)]);
        let at = missing.len();
        event2(&mut missing, 4, 0xD, &[(0x00B, &[1; 32])], b"");
        assert_eq!(
            EventLog::parse(&missing).unwrap_err(),
            Error::EventLog { offset: at, reason: "digest count differs from the Spec ID event's numberOfAlgorithms" }
        );

        let mut dup = header(&[(0x00B, 32), (0x004, 20)]);
        event2(&mut dup, 4, 0xD, &[(0x00B, &[1; 32]), (0x00B, &[1; 32])], b"");
        assert!(matches!(
            EventLog::parse(&dup),
            Err(Error::EventLog { reason: "two digests for the same algorithm", .. })
        ));

        let mut undeclared = header(&[(0x00B, 32)]);
        event2(&mut undeclared, 4, 0xD, &[(0x00C, &[1; 48])], b"");
        assert!(matches!(EventLog::parse(&undeclared), Err(Error::EventLog { .. })));

        let wrong_size = header(&[(0x00B, 33)]);
        assert!(matches!(EventLog::parse(&wrong_size), Err(Error::EventLog { .. })));
        let too_big = header(&[(0x7777, 65)]);
        assert!(matches!(EventLog::parse(&too_big), Err(Error::LimitExceeded { limit: MAX_DIGEST_SIZE, .. })));
        let none = header(&[]);
        assert!(matches!(EventLog::parse(&none), Err(Error::EventLog { .. })));
    }

    #[test]
    fn startup_locality_rules() {
        let sl = |l: u8| [&STARTUP_LOCALITY_SIGNATURE[..], &[l]].concat();
        let mut ok = header(&[(0x00B, 32)]);
        event2(&mut ok, 0, 3, &[(0x00B, &[0; 32])], &sl(4));
        event2(&mut ok, 0, 0x8000_0010, &[(0x00B, &[1; 32])], b"HCRTM");
        assert_eq!(EventLog::parse(&ok).unwrap().startup_locality(), Some(4));

        let mut late = header(&[(0x00B, 32)]);
        event2(&mut late, 0, 8, &[(0x00B, &[1; 32])], b"v");
        event2(&mut late, 0, 3, &[(0x00B, &[0; 32])], &sl(3));
        assert!(matches!(EventLog::parse(&late), Err(Error::EventLog { .. })));

        let mut twice = header(&[(0x00B, 32)]);
        event2(&mut twice, 0, 3, &[(0x00B, &[0; 32])], &sl(3));
        event2(&mut twice, 0, 3, &[(0x00B, &[0; 32])], &sl(3));
        assert!(matches!(EventLog::parse(&twice), Err(Error::EventLog { reason: "second StartupLocality event", .. })));

        let mut reserved = header(&[(0x00B, 32)]);
        event2(&mut reserved, 0, 3, &[(0x00B, &[0; 32])], &sl(2));
        assert!(matches!(EventLog::parse(&reserved), Err(Error::EventLog { .. })));
    }

    #[test]
    fn spec_id_must_be_well_formed_once_signalled() {
        // A Spec ID Event03 signature in an event of the wrong type is not silently read as SHA-1 format.
        let mut log = header(&[(0x00B, 32)]);
        log[4] = 4;
        assert!(matches!(EventLog::parse(&log), Err(Error::EventLog { offset: 0, .. })));
        // Trailing bytes after vendorInfo.
        let mut log = header(&[(0x00B, 32)]);
        log.push(0);
        let size = u32::from_le_bytes(log[28..32].try_into().unwrap()) + 1;
        log[28..32].copy_from_slice(&size.to_le_bytes());
        assert!(matches!(
            EventLog::parse(&log),
            Err(Error::TrailingData { structure: "TCG_EfiSpecIDEventStruct", extra: 1 })
        ));
    }

    #[test]
    fn empty_and_pcr_range() {
        assert!(matches!(EventLog::parse(&[]), Err(Error::Truncated { .. })));
        let mut log = header(&[(0x00B, 32)]);
        event2(&mut log, 24, 0xD, &[(0x00B, &[1; 32])], b"");
        assert!(matches!(EventLog::parse(&log), Err(Error::EventLog { .. })));
    }
}
