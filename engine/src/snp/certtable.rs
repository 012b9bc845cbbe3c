//! The certificate table of an SEV-SNP extended report (`SNP_GET_EXT_REPORT`; GHCB spec 56421 §4.1.8.1
//! "SNP Extended Guest Request", the certificate data format), a zero-copy view.
//!
//! ```text
//! entry 0:   GUID [16] | offset u32 LE | length u32 LE      offsets are from the start of the buffer
//! entry 1:   …
//! terminator: 24 zero bytes (zero GUID, zero offset, zero length)
//! certificate bytes (DER) at the offsets, then padding to the page-sized buffer
//! ```
//!
//! GUIDs are stored in RFC 4122 byte order (the order of the printed form, as Linux, virtee/sev and
//! go-sev-guest write and read them). Unlike the engine's other parsers, bytes that no entry references are
//! allowed: the guest hands over a page-sized buffer, and everything after the last certificate is padding.
//! Every entry must lie inside the buffer, after the table, and within [`MAX_CERT_LEN`].
//!
//! Parsing is pure and borrows every certificate from the buffer; malformed tables are
//! [`Error::SnpCertTable`] (the byte offset of the offending entry) or [`Error::LimitExceeded`].

use crate::error::Error;
use std::borrow::Cow;
use zerocopy::byteorder::{LittleEndian, U32};
use zerocopy::{FromBytes, Immutable, KnownLayout, Unaligned};

/// Largest certificate buffer accepted (the kernel caps the guest's buffer at a few pages; VCEK + ASK + ARK
/// take about 6 KiB).
pub const MAX_CERT_TABLE_SIZE: usize = 64 * 1024;
/// Most table entries (VCEK/VLEK, ASK/ASVK, ARK, CRL and a few vendor entries fit many times over).
pub const MAX_CERT_TABLE_ENTRIES: usize = 32;
/// Largest certificate referenced by one entry (an RSA-4096 ARK is about 1.6 KiB of DER).
pub const MAX_CERT_LEN: usize = 16 * 1024;
/// Size of one table entry.
pub const CERT_TABLE_ENTRY_SIZE: usize = 24;

/// One raw table entry.
#[derive(FromBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
struct RawEntry {
    guid: [u8; 16],
    offset: U32<LittleEndian>,
    length: U32<LittleEndian>,
}

const _: () = assert!(size_of::<RawEntry>() == CERT_TABLE_ENTRY_SIZE);

/// What an entry holds, by GUID.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CertKind {
    /// `63da758d-e664-4564-adc5-f4b93be8accd`: the VCEK.
    Vcek,
    /// `a8074bc2-a25a-483e-aae6-39c045a0b8a1`: the VLEK.
    Vlek,
    /// `4ab7b379-bbac-4fe4-a02f-05aef327c782`: the ASK (or ASVK).
    Ask,
    /// `c0b406a4-a803-4952-9743-3fb6014cd0ae`: the ARK.
    Ark,
    /// Any other GUID (kept, not interpreted).
    Unknown([u8; 16]),
}

const GUID_VCEK: [u8; 16] = guid(0x63da_758d, 0xe664, 0x4564, [0xad, 0xc5, 0xf4, 0xb9, 0x3b, 0xe8, 0xac, 0xcd]);
const GUID_VLEK: [u8; 16] = guid(0xa807_4bc2, 0xa25a, 0x483e, [0xaa, 0xe6, 0x39, 0xc0, 0x45, 0xa0, 0xb8, 0xa1]);
const GUID_ASK: [u8; 16] = guid(0x4ab7_b379, 0xbbac, 0x4fe4, [0xa0, 0x2f, 0x05, 0xae, 0xf3, 0x27, 0xc7, 0x82]);
const GUID_ARK: [u8; 16] = guid(0xc0b4_06a4, 0xa803, 0x4952, [0x97, 0x43, 0x3f, 0xb6, 0x01, 0x4c, 0xd0, 0xae]);

/// A GUID's bytes in RFC 4122 (printed) order.
const fn guid(a: u32, b: u16, c: u16, d: [u8; 8]) -> [u8; 16] {
    let a = a.to_be_bytes();
    let b = b.to_be_bytes();
    let c = c.to_be_bytes();
    [a[0], a[1], a[2], a[3], b[0], b[1], c[0], c[1], d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]]
}

impl CertKind {
    fn from_guid(g: [u8; 16]) -> Self {
        match g {
            GUID_VCEK => Self::Vcek,
            GUID_VLEK => Self::Vlek,
            GUID_ASK => Self::Ask,
            GUID_ARK => Self::Ark,
            other => Self::Unknown(other),
        }
    }

    /// The GUID bytes (RFC 4122 order).
    pub fn guid(self) -> [u8; 16] {
        match self {
            Self::Vcek => GUID_VCEK,
            Self::Vlek => GUID_VLEK,
            Self::Ask => GUID_ASK,
            Self::Ark => GUID_ARK,
            Self::Unknown(g) => g,
        }
    }
}

/// A parsed certificate table: entries borrowed from the buffer.
#[derive(Clone, Debug)]
pub struct CertTable<'a> {
    entries: Vec<(CertKind, &'a [u8])>,
}

impl<'a> CertTable<'a> {
    /// Parses a certificate buffer. Duplicate GUIDs, entries outside the buffer or overlapping the table,
    /// empty entries and a missing terminator are errors.
    pub fn parse(buf: &'a [u8]) -> Result<Self, Error> {
        if buf.len() > MAX_CERT_TABLE_SIZE {
            return Err(Error::LimitExceeded {
                what: "certificate table size",
                limit: MAX_CERT_TABLE_SIZE,
                found: buf.len(),
            });
        }
        let bad = |offset, reason| Error::SnpCertTable { offset, reason };
        let mut raw = Vec::new();
        let mut pos = 0;
        loop {
            let Ok((entry, _)) = RawEntry::ref_from_prefix(&buf[pos..]) else {
                return Err(bad(pos, "table ends without the zero terminator entry"));
            };
            if entry.guid == [0; 16] {
                if entry.offset.get() != 0 || entry.length.get() != 0 {
                    return Err(bad(pos, "terminator entry with a non-zero offset or length"));
                }
                break;
            }
            if raw.len() == MAX_CERT_TABLE_ENTRIES {
                return Err(Error::LimitExceeded {
                    what: "certificate table entries",
                    limit: MAX_CERT_TABLE_ENTRIES,
                    found: raw.len() + 1,
                });
            }
            raw.push((pos, entry));
            pos += CERT_TABLE_ENTRY_SIZE;
        }
        let table_end = pos + CERT_TABLE_ENTRY_SIZE;
        let mut entries: Vec<(CertKind, &'a [u8])> = Vec::with_capacity(raw.len());
        for (at, e) in raw {
            let (offset, length) = (e.offset.get() as usize, e.length.get() as usize);
            if length == 0 {
                return Err(bad(at, "empty certificate entry"));
            }
            if length > MAX_CERT_LEN {
                return Err(Error::LimitExceeded { what: "certificate length", limit: MAX_CERT_LEN, found: length });
            }
            if offset < table_end {
                return Err(bad(at, "certificate offset points into the table"));
            }
            let data = offset
                .checked_add(length)
                .and_then(|end| buf.get(offset..end))
                .ok_or(bad(at, "certificate extends past the buffer"))?;
            let kind = CertKind::from_guid(e.guid);
            if entries.iter().any(|(k, _)| *k == kind) {
                return Err(bad(at, "duplicate GUID"));
            }
            entries.push((kind, data));
        }
        Ok(Self { entries })
    }

    /// The entries in table order.
    pub fn entries(&self) -> &[(CertKind, &'a [u8])] {
        &self.entries
    }

    /// The certificate of `kind`, if present.
    pub fn get(&self, kind: CertKind) -> Option<&'a [u8]> {
        self.entries.iter().find(|(k, _)| *k == kind).map(|(_, d)| *d)
    }

    /// The certificates as [`CarriedCerts`].
    pub fn carried(&self) -> CarriedCerts<'a> {
        CarriedCerts {
            vcek: self.get(CertKind::Vcek).map(Cow::Borrowed),
            vlek: self.get(CertKind::Vlek).map(Cow::Borrowed),
            intermediate: self.get(CertKind::Ask).map(Cow::Borrowed),
            ark: self.get(CertKind::Ark).map(Cow::Borrowed),
        }
    }
}

/// Certificates that came with the evidence (DER), borrowed from a certificate table or owned after PEM
/// decoding. Nothing here is trusted: each is vetted before use.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CarriedCerts<'a> {
    /// The VCEK.
    pub vcek: Option<Cow<'a, [u8]>>,
    /// The VLEK.
    pub vlek: Option<Cow<'a, [u8]>>,
    /// The ASK or ASVK.
    pub intermediate: Option<Cow<'a, [u8]>>,
    /// The ARK.
    pub ark: Option<Cow<'a, [u8]>>,
}

/// Builds a certificate table (test helper and the inverse of [`CertTable::parse`]).
pub fn encode_cert_table(certs: &[(CertKind, &[u8])]) -> Vec<u8> {
    let table_len = (certs.len() + 1) * CERT_TABLE_ENTRY_SIZE;
    let mut head = Vec::with_capacity(table_len);
    let mut body = Vec::new();
    for (kind, der) in certs {
        head.extend_from_slice(&kind.guid());
        head.extend_from_slice(&((table_len + body.len()) as u32).to_le_bytes());
        head.extend_from_slice(&(der.len() as u32).to_le_bytes());
        body.extend_from_slice(der);
    }
    head.extend_from_slice(&[0; CERT_TABLE_ENTRY_SIZE]);
    head.extend_from_slice(&body);
    head
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guid_bytes() {
        // 63da758d-e664-4564-adc5-f4b93be8accd in printed order.
        assert_eq!(hex::encode(GUID_VCEK), "63da758de6644564adc5f4b93be8accd");
        assert_eq!(hex::encode(GUID_ARK), "c0b406a4a803495297433fb6014cd0ae");
    }

    #[test]
    fn round_trip_and_padding() {
        let mut buf = encode_cert_table(&[(CertKind::Vcek, b"vcek"), (CertKind::Ask, b"ask"), (CertKind::Ark, b"ark")]);
        buf.resize(4096, 0);
        let t = CertTable::parse(&buf).unwrap();
        assert_eq!(t.get(CertKind::Vcek), Some(&b"vcek"[..]));
        assert_eq!(t.get(CertKind::Ark), Some(&b"ark"[..]));
        assert_eq!(t.get(CertKind::Vlek), None);
        assert_eq!(t.entries().len(), 3);
    }

    #[test]
    fn rejects() {
        let good = encode_cert_table(&[(CertKind::Vcek, b"vcek")]);
        // Truncated at every length: never a panic, always an error.
        for n in 0..good.len() {
            assert!(CertTable::parse(&good[..n]).is_err(), "prefix {n}");
        }
        // Offset past the end.
        let mut b = good.clone();
        b[16..20].copy_from_slice(&1000u32.to_le_bytes());
        assert!(CertTable::parse(&b).is_err());
        // Offset into the table.
        let mut b = good.clone();
        b[16..20].copy_from_slice(&4u32.to_le_bytes());
        assert!(CertTable::parse(&b).is_err());
        // Length overflow.
        let mut b = good.clone();
        b[20..24].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(CertTable::parse(&b).is_err());
        // Duplicate GUIDs.
        assert!(CertTable::parse(&encode_cert_table(&[(CertKind::Vcek, b"a"), (CertKind::Vcek, b"b")])).is_err());
        // Terminator with a length.
        let mut b = good.clone();
        b[24 + 20] = 1;
        assert!(CertTable::parse(&b).is_err());
        // Too many entries.
        let many: Vec<(CertKind, &[u8])> =
            (0..=MAX_CERT_TABLE_ENTRIES as u8).map(|i| (CertKind::Unknown([i + 1; 16]), &b"x"[..])).collect();
        assert!(matches!(CertTable::parse(&encode_cert_table(&many)), Err(Error::LimitExceeded { .. })));
    }

    proptest::proptest! {
        /// Arbitrary bytes never panic; an accepted table's entries lie inside the buffer within the limits,
        /// and re-encoding them parses back to the same entries.
        #[test]
        fn parse_is_total_and_round_trips(data in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
            match CertTable::parse(&data) {
                Ok(t) => {
                    proptest::prop_assert!(t.entries().len() <= MAX_CERT_TABLE_ENTRIES);
                    let range = data.as_ptr_range();
                    for (_, der) in t.entries() {
                        proptest::prop_assert!(!der.is_empty() && der.len() <= MAX_CERT_LEN);
                        proptest::prop_assert!(range.contains(&der.as_ptr()));
                    }
                    let again = encode_cert_table(t.entries());
                    let reparsed = CertTable::parse(&again).expect("a re-encoded table parses");
                    proptest::prop_assert_eq!(reparsed.entries(), t.entries());
                }
                Err(e) => proptest::prop_assert_eq!(e.class(), crate::error::ErrorClass::Malformed),
            }
        }

        /// Well-formed tables of up to the entry limit, padded to any length, parse to what was encoded.
        #[test]
        fn encoded_tables_parse(
            certs in proptest::collection::vec(proptest::collection::vec(proptest::num::u8::ANY, 1..64), 0..MAX_CERT_TABLE_ENTRIES),
            padding in 0usize..256,
        ) {
            let kinds: Vec<(CertKind, &[u8])> = certs
                .iter()
                .enumerate()
                .map(|(i, c)| (CertKind::Unknown([i as u8 + 1; 16]), c.as_slice()))
                .collect();
            let mut buf = encode_cert_table(&kinds);
            buf.resize(buf.len() + padding, 0);
            let t = CertTable::parse(&buf).expect("an encoded table parses");
            proptest::prop_assert_eq!(t.entries(), kinds.as_slice());
        }
    }
}
