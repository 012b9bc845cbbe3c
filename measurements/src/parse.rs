//! Reading measurements documents (JSON or YAML, map or release-list form).
//!
//! The serde visitors below never build a generic value tree: they read straight into the final types
//! and keep the first *content* error (bad key, duplicate, bad hex, …) while the parser keeps checking
//! syntax, so a file is reported either with the parser's position (syntax, shape) or with a structured
//! [`Error`] naming the PCR or list entry. Duplicate keys are caught here, since neither `serde_json` nor
//! the YAML parser rejects them when deserializing into a visitor.

use crate::error::{Error, Form, cut};
use crate::pcr::{Measurement, Measurements, PcrIndex};
use crate::release::{AttestationVariant, Csp, ReleaseEntry, ReleaseMeasurements};
use crate::{MAX_FILE_SIZE, MAX_LIST_ENTRIES, MAX_YAML_FLOW_COLLECTIONS, MAX_YAML_SIZE};
use core::fmt;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// A parsed measurements document: a map, or a release list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Document {
    /// A map PCR index → measurement.
    Map(Measurements),
    /// A per-release list of maps by (CSP, attestation variant).
    List(ReleaseMeasurements),
}

impl Document {
    /// Which form the document has.
    pub fn form(&self) -> Form {
        match self {
            Self::Map(_) => Form::Map,
            Self::List(_) => Form::List,
        }
    }

    /// The measurements for `csp` and `variant` of a release list. A map is not tied to a CSP, so asking
    /// a map fails with [`Error::UnexpectedForm`] rather than returning it for any platform.
    pub fn select(&self, csp: Csp, variant: AttestationVariant) -> Result<&Measurements, Error> {
        match self {
            Self::List(list) => list.select(csp, variant),
            Self::Map(_) => Err(Error::UnexpectedForm { expected: Form::List, found: Form::Map }),
        }
    }

    /// The map that applies to an attestation variant of the engine: a map applies to every variant; a
    /// release list is searched for the variant's (CSP, attestationVariant) entry ([`for_engine_variant`]).
    /// A list accepting several sets for the variant gives [`Error::SeveralSets`]: callers that can admit any
    /// of several use [`sets_for_variant`](Self::sets_for_variant).
    pub fn for_variant(&self, variant: attest_engine::variant::Variant) -> Result<&Measurements, Error> {
        match self {
            Self::Map(map) => Ok(map),
            Self::List(list) => {
                let (csp, v) = for_engine_variant(variant)?;
                list.select(csp, v)
            }
        }
    }

    /// Every accepted set for an engine variant (at least one): the map itself, or each of the release
    /// list's entries for the variant (rolling upgrades), in file order.
    pub fn sets_for_variant(&self, variant: attest_engine::variant::Variant) -> Result<Vec<MeasurementSet<'_>>, Error> {
        match self {
            Self::Map(map) => Ok(vec![MeasurementSet { image: None, measurements: map }]),
            Self::List(list) => {
                let (csp, v) = for_engine_variant(variant)?;
                Ok(list
                    .select_all(csp, v)?
                    .into_iter()
                    .map(|e| MeasurementSet { image: e.image.as_deref(), measurements: &e.measurements })
                    .collect())
            }
        }
    }

    /// The single map of the document: the map itself, or the only entry of a one-entry release list
    /// ([`Error::AmbiguousList`] for more).
    pub fn into_single(self) -> Result<Measurements, Error> {
        match self {
            Self::Map(map) => Ok(map),
            Self::List(list) => match list.entries() {
                [only] => Ok(only.measurements.clone()),
                entries => Err(Error::AmbiguousList { entries: entries.len() }),
            },
        }
    }
}

/// One accepted measurement set of a variant, borrowed from a [`Document`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MeasurementSet<'a> {
    /// The image the set belongs to, when the file names it.
    pub image: Option<&'a str>,
    /// The expected values.
    pub measurements: &'a Measurements,
}

/// The release-list entry that holds an engine variant's measurements: (CSP, attestationVariant), as the
/// engine's variant table names it ([`attest_engine::variant::VariantInfo::constellation`]; e.g.
/// `gcp-shielded-vm`, a GCE vTPM whose AK Google certifies, reads Constellation's `gcp-sev-es` entry, the
/// variant that attests the same vTPM). Fails only for a table entry this crate does not know (a test keeps
/// every row known).
pub fn for_engine_variant(variant: attest_engine::variant::Variant) -> Result<(Csp, AttestationVariant), Error> {
    let entry = variant.info().constellation;
    Ok((Csp::from_name(entry.csp)?, AttestationVariant::from_name(entry.variant)?))
}

/// Parses a document, detecting the syntax: input whose first non-whitespace character is `{` or `[` is
/// JSON (and gets JSON error positions), anything else YAML. The form (map or list) is detected from the
/// keys.
///
/// Checks [`MAX_FILE_SIZE`] first. Never panics on any input.
pub fn parse_document(bytes: &[u8]) -> Result<Document, Error> {
    let text = precheck(bytes)?;
    if text.trim_start().starts_with(['{', '[']) { json(text) } else { yaml(text) }
}

/// Parses any measurements file into one map: JSON or YAML, map, legacy or one-entry release-list form
/// (see [`parse_document`] and [`Document::into_single`]). The fuzzing entry point.
pub fn parse_any(bytes: &[u8]) -> Result<Measurements, Error> {
    parse_document(bytes)?.into_single()
}

pub(crate) fn parse_json(bytes: &[u8]) -> Result<Document, Error> {
    json(precheck(bytes)?)
}

pub(crate) fn parse_yaml(bytes: &[u8]) -> Result<Document, Error> {
    yaml(precheck(bytes)?)
}

fn precheck(bytes: &[u8]) -> Result<&str, Error> {
    if bytes.len() > MAX_FILE_SIZE {
        return Err(Error::LimitExceeded { what: "file bytes", limit: MAX_FILE_SIZE, found: bytes.len() });
    }
    let text = core::str::from_utf8(bytes).map_err(|e| Error::NotUtf8 { valid_up_to: e.valid_up_to() })?;
    if text.trim().is_empty() {
        return Err(Error::EmptyInput);
    }
    Ok(text)
}

fn json(text: &str) -> Result<Document, Error> {
    serde_json::from_str::<RawDocument>(text).map_err(|e| Error::json(&e))?.finish()
}

fn yaml(text: &str) -> Result<Document, Error> {
    if text.len() > MAX_YAML_SIZE {
        return Err(Error::LimitExceeded { what: "YAML bytes", limit: MAX_YAML_SIZE, found: text.len() });
    }
    let openers = text.bytes().filter(|b| matches!(b, b'[' | b'{')).count();
    if openers > MAX_YAML_FLOW_COLLECTIONS {
        return Err(Error::LimitExceeded {
            what: "YAML flow collections",
            limit: MAX_YAML_FLOW_COLLECTIONS,
            found: openers,
        });
    }
    serde_yaml_ng::from_str::<RawDocument>(text).map_err(|e| Error::yaml(&e))?.finish()
}

impl Measurements {
    /// Parses a measurements map (or its legacy form) from JSON.
    pub fn from_json(bytes: &[u8]) -> Result<Self, Error> {
        expect_map(parse_json(bytes)?)
    }

    /// Parses a measurements map from YAML (integer or string keys).
    pub fn from_yaml(bytes: &[u8]) -> Result<Self, Error> {
        expect_map(parse_yaml(bytes)?)
    }

    /// Parses a measurements map from JSON or YAML (detected as in [`parse_document`]).
    pub fn parse(bytes: &[u8]) -> Result<Self, Error> {
        expect_map(parse_document(bytes)?)
    }
}

fn expect_map(doc: Document) -> Result<Measurements, Error> {
    match doc {
        Document::Map(map) => Ok(map),
        Document::List(_) => Err(Error::UnexpectedForm { expected: Form::Map, found: Form::List }),
    }
}

// ---- content checks --------------------------------------------------------------------------------

/// Parses a map key written as text: canonical decimal only.
fn parse_pcr_key(key: &str) -> Result<PcrIndex, Error> {
    let canonical =
        !key.is_empty() && key.bytes().all(|b| b.is_ascii_digit()) && !(key.len() > 1 && key.starts_with('0'));
    let index: u64 = match key.parse() {
        Ok(index) if canonical => index,
        _ => return Err(Error::InvalidPcrKey { key: cut(key) }),
    };
    PcrIndex::from_u64(index)
}

/// Decodes exact hex (either case); on error returns the offset of the first bad character, or the
/// length for an odd number of digits.
fn decode_hex(s: &str) -> Result<Vec<u8>, usize> {
    if let Some(bad) = s.bytes().position(|b| !b.is_ascii_hexdigit()) {
        // Everything before `bad` is ASCII, so the byte offset is the character offset.
        return Err(bad);
    }
    hex::decode(s).map_err(|_| s.len())
}

/// One map being read: what is accepted so far, and the first content error.
#[derive(Default)]
struct MapBuilder {
    map: Measurements,
    error: Option<Error>,
}

impl MapBuilder {
    fn fail(&mut self, error: Error) {
        self.error.get_or_insert(error);
    }

    fn add(&mut self, key: Result<PcrIndex, Error>, value: &RawValue) {
        if self.error.is_some() {
            return; // Keep the first error; the parser still checks the rest of the syntax.
        }
        let index = match key {
            Ok(index) => index,
            Err(e) => return self.fail(e),
        };
        if self.map.get(index).is_some() {
            return self.fail(Error::DuplicatePcr { index });
        }
        let bytes = match decode_hex(&value.expected) {
            Ok(bytes) => bytes,
            Err(offset) => return self.fail(Error::InvalidHex { index, offset }),
        };
        let measurement = match Measurement::from_vec(bytes, value.warn_only) {
            Ok(m) => m,
            Err(found) => return self.fail(Error::WrongLength { index: Some(index), found }),
        };
        if let Err(e) = self.map.insert(index, measurement) {
            self.fail(e);
        }
    }

    fn finish(self) -> Result<Measurements, Error> {
        match self.error {
            Some(e) => Err(e),
            None if self.map.is_empty() => Err(Error::NoMeasurements),
            None => Ok(self.map),
        }
    }
}

// ---- serde plumbing --------------------------------------------------------------------------------

/// One measurement as written: `"<hex>"` (legacy, enforced) or `{"expected": "<hex>", "warnOnly": bool}`
/// (`warnOnly` defaults to false, as Go's zero value in Constellation).
struct RawValue {
    expected: String,
    warn_only: bool,
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum ValueField {
    Expected,
    WarnOnly,
}

impl<'de> Deserialize<'de> for RawValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(r#"a hex string or {"expected": <hex string>, "warnOnly": <bool>}"#)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawValue, E> {
                Ok(RawValue { expected: v.to_owned(), warn_only: false })
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawValue, A::Error> {
                let (mut expected, mut warn_only) = (None, None);
                while let Some(field) = map.next_key::<ValueField>()? {
                    match field {
                        ValueField::Expected if expected.is_some() => {
                            return Err(de::Error::duplicate_field("expected"));
                        }
                        ValueField::WarnOnly if warn_only.is_some() => {
                            return Err(de::Error::duplicate_field("warnOnly"));
                        }
                        ValueField::Expected => expected = Some(map.next_value::<String>()?),
                        ValueField::WarnOnly => warn_only = Some(map.next_value::<bool>()?),
                    }
                }
                let expected = expected.ok_or_else(|| de::Error::missing_field("expected"))?;
                Ok(RawValue { expected, warn_only: warn_only.unwrap_or(false) })
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ListField {
    Version,
    Ref,
    Stream,
    List,
}

impl ListField {
    fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "version" => Self::Version,
            "ref" => Self::Ref,
            "stream" => Self::Stream,
            "list" => Self::List,
            _ => return None,
        })
    }
    const fn name(self) -> &'static str {
        match self {
            Self::Version => "version",
            Self::Ref => "ref",
            Self::Stream => "stream",
            Self::List => "list",
        }
    }
}

/// A map key: a PCR index (or why it is not one), a release-list field, or another name.
enum Key {
    Pcr(Result<PcrIndex, Error>),
    Field(ListField),
    Other(String),
}

/// Reads a key; `top_level` allows release-list field names (and names that are no PCR at all, which
/// are then judged once the form is known).
#[derive(Clone, Copy)]
struct KeySeed {
    top_level: bool,
}

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Key, D::Error> {
        d.deserialize_any(self)
    }
}

impl Visitor<'_> for KeySeed {
    type Value = Key;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a PCR index (0..=23)")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
        if !self.top_level || v.starts_with(|c: char| c.is_ascii_digit()) {
            return Ok(Key::Pcr(parse_pcr_key(v)));
        }
        Ok(ListField::from_name(v).map_or_else(|| Key::Other(cut(v)), Key::Field))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Key, E> {
        Ok(Key::Pcr(PcrIndex::from_u64(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Key, E> {
        Ok(Key::Pcr(match u64::try_from(v) {
            Ok(v) => PcrIndex::from_u64(v),
            Err(_) => Err(Error::InvalidPcrKey { key: v.to_string() }),
        }))
    }
}

/// A measurements map nested in a list entry (PCR keys only).
struct RawMap(MapBuilder);

impl<'de> Deserialize<'de> for RawMap {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawMap;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of PCR index to measurement")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawMap, A::Error> {
                let mut builder = MapBuilder::default();
                while let Some(key) = map.next_key_seed(KeySeed { top_level: false })? {
                    let value = map.next_value::<RawValue>()?;
                    match key {
                        Key::Pcr(key) => builder.add(key, &value),
                        // Unreachable with `top_level: false`; kept total instead of panicking.
                        Key::Field(f) => builder.fail(Error::InvalidPcrKey { key: f.name().to_owned() }),
                        Key::Other(key) => builder.fail(Error::InvalidPcrKey { key }),
                    }
                }
                Ok(RawMap(builder))
            }
        }
        d.deserialize_map(V)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    csp: String,
    #[serde(rename = "attestationVariant")]
    attestation_variant: String,
    measurements: RawMap,
    /// The image label of a rolling-upgrade set (our extension; optional).
    #[serde(default)]
    image: Option<String>,
}

impl RawEntry {
    fn finish(self) -> Result<ReleaseEntry, Error> {
        let csp = Csp::from_name(&self.csp)?;
        let variant = AttestationVariant::from_name(&self.attestation_variant)?;
        if !variant.runs_on(csp) {
            return Err(Error::CspVariantMismatch { csp, variant });
        }
        if let Some(label) = &self.image {
            crate::release::check_image_label(label)?;
        }
        Ok(ReleaseEntry { csp, variant, measurements: self.measurements.0.finish()?, image: self.image })
    }
}

/// The `list` array: at most [`MAX_LIST_ENTRIES`] entries kept, the rest only counted.
struct RawList {
    entries: Vec<RawEntry>,
    count: usize,
}

impl<'de> Deserialize<'de> for RawList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawList;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of {csp, attestationVariant, measurements}")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawList, A::Error> {
                let mut list = RawList { entries: Vec::new(), count: 0 };
                loop {
                    if list.count < MAX_LIST_ENTRIES {
                        match seq.next_element::<RawEntry>()? {
                            Some(entry) => list.entries.push(entry),
                            None => break,
                        }
                    } else if seq.next_element::<IgnoredAny>()?.is_none() {
                        break;
                    }
                    list.count += 1;
                }
                Ok(list)
            }
        }
        d.deserialize_seq(V)
    }
}

/// The top-level object before the form is decided.
#[derive(Default)]
struct RawDocument {
    pcrs: MapBuilder,
    saw_pcr_key: bool,
    /// First key that is neither a PCR nor a release-list field.
    other_key: Option<String>,
    duplicate_field: Option<ListField>,
    version: Option<String>,
    reference: Option<String>,
    stream: Option<String>,
    list: Option<RawList>,
}

impl<'de> Deserialize<'de> for RawDocument {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawDocument;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a measurements map or a release list object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawDocument, A::Error> {
                let mut doc = RawDocument::default();
                while let Some(key) = map.next_key_seed(KeySeed { top_level: true })? {
                    match key {
                        Key::Pcr(key) => {
                            doc.saw_pcr_key = true;
                            let value = map.next_value::<RawValue>()?;
                            doc.pcrs.add(key, &value);
                        }
                        Key::Other(key) => {
                            map.next_value::<IgnoredAny>()?;
                            doc.pcrs.fail(Error::InvalidPcrKey { key: key.clone() });
                            doc.other_key.get_or_insert(key);
                        }
                        Key::Field(field) => {
                            let fresh = match field {
                                ListField::Version => doc.version.replace(map.next_value()?).is_none(),
                                ListField::Ref => doc.reference.replace(map.next_value()?).is_none(),
                                ListField::Stream => doc.stream.replace(map.next_value()?).is_none(),
                                ListField::List => doc.list.replace(map.next_value()?).is_none(),
                            };
                            if !fresh {
                                doc.duplicate_field.get_or_insert(field);
                            }
                        }
                    }
                }
                Ok(doc)
            }
        }
        d.deserialize_map(V)
    }
}

impl RawDocument {
    fn is_list(&self) -> bool {
        self.version.is_some() || self.reference.is_some() || self.stream.is_some() || self.list.is_some()
    }

    fn finish(self) -> Result<Document, Error> {
        if !self.is_list() {
            return self.pcrs.finish().map(Document::Map);
        }
        if self.saw_pcr_key {
            return Err(Error::MixedForms);
        }
        if let Some(field) = self.duplicate_field {
            return Err(Error::DuplicateField { field: field.name() });
        }
        if let Some(field) = self.other_key {
            return Err(Error::UnknownField { field });
        }
        let version = self.version.ok_or(Error::MissingField { field: "version" })?;
        let reference = self.reference.ok_or(Error::MissingField { field: "ref" })?;
        let stream = self.stream.ok_or(Error::MissingField { field: "stream" })?;
        let list = self.list.ok_or(Error::MissingField { field: "list" })?;
        if list.count > MAX_LIST_ENTRIES {
            return Err(Error::LimitExceeded { what: "list entries", limit: MAX_LIST_ENTRIES, found: list.count });
        }
        let entries = list
            .entries
            .into_iter()
            .enumerate()
            .map(|(position, e)| e.finish().map_err(|e| Error::ListEntry { position, error: Box::new(e) }))
            .collect::<Result<Vec<_>, _>>()?;
        ReleaseMeasurements::new(version, reference, stream, entries).map(Document::List)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pcr_keys() {
        assert_eq!(parse_pcr_key("0").unwrap().get(), 0);
        assert_eq!(parse_pcr_key("23").unwrap().get(), 23);
        assert_eq!(parse_pcr_key("24"), Err(Error::PcrIndexOutOfRange { index: 24 }));
        for bad in ["", "07", "00", "+1", "-1", " 1", "1 ", "1a", "99999999999999999999999"] {
            assert!(matches!(parse_pcr_key(bad), Err(Error::InvalidPcrKey { .. })), "{bad:?}");
        }
    }

    #[test]
    fn hex() {
        assert_eq!(decode_hex("aBcD"), Ok(vec![0xab, 0xcd]));
        assert_eq!(decode_hex("abc"), Err(3));
        assert_eq!(decode_hex("0xab"), Err(1));
        assert_eq!(decode_hex("ab é"), Err(2));
        assert_eq!(decode_hex(""), Ok(vec![]));
    }
}
