//! Writing measurements back out, in the shapes Constellation reads. Output is deterministic (PCR order,
//! lowercase hex, two-space indent), so a file written here and signed stays byte-stable.

use crate::freshness::Freshness;
use crate::parse::Document;
use crate::pcr::Measurements;
use crate::release::ReleaseMeasurements;
use core::fmt::Write as _;

impl Document {
    /// The document as pretty JSON (its form's [`Measurements::to_json`] or [`ReleaseMeasurements::to_json`])
    /// with `freshness` as its top-level `measurementsVersion` and `expires` (left out when default, so an
    /// unversioned document is written in the plain, unversioned form).
    pub fn to_json_with(&self, freshness: &Freshness) -> String {
        let body = match self {
            Self::Map(map) => map.to_json(),
            Self::List(list) => list.to_json(),
        };
        if freshness.is_default() {
            return body;
        }
        // Both forms open with `{` and then a newline (a map: its first entry on the next line).
        let rest = body.strip_prefix('{').unwrap_or(&body);
        let members = freshness.json_members("  ");
        match self {
            Self::Map(_) => format!("{{\n{}{rest}", members.trim_end_matches('\n')),
            Self::List(_) => format!("{{\n{members}{}", rest.trim_start_matches('\n')),
        }
    }
}

impl Measurements {
    /// The map as pretty JSON: `{"<index>": {"expected": "<hex>", "warnOnly": <bool>}, …}` in PCR order,
    /// newline-terminated.
    pub fn to_json(&self) -> String {
        let mut out = String::new();
        write_json_map(&mut out, self, "");
        out.push('\n');
        out
    }

    /// The map as YAML, integer keys in PCR order; expected values are quoted so an all-digit value is
    /// never read back as a number.
    pub fn to_yaml(&self) -> String {
        let mut out = String::new();
        for (index, m) in self.iter() {
            let _ = write!(
                out,
                "{index}:\n  expected: \"{}\"\n  warnOnly: {}\n",
                hex::encode(m.expected()),
                m.is_warn_only()
            );
        }
        out
    }
}

impl ReleaseMeasurements {
    /// The release list as pretty JSON (Constellation's `measurements.json` shape), newline-terminated.
    pub fn to_json(&self) -> String {
        let s = |v: &str| serde_json::Value::String(v.to_owned()).to_string();
        let mut out = String::new();
        let _ = write!(
            out,
            "{{\n  \"version\": {},\n  \"ref\": {},\n  \"stream\": {},\n  \"list\": [",
            s(self.version()),
            s(self.reference()),
            s(self.stream())
        );
        for (i, e) in self.entries().iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            let _ = write!(
                out,
                "{sep}\n    {{\n      \"csp\": \"{}\",\n      \"attestationVariant\": \"{}\",\n",
                e.csp, e.variant
            );
            if let Some(image) = &e.image {
                let _ = writeln!(out, "      \"image\": {},", s(image));
            }
            out.push_str("      \"measurements\": ");
            write_json_map(&mut out, &e.measurements, "      ");
            out.push_str("\n    }");
        }
        out.push_str("\n  ]\n}\n");
        out
    }
}

fn write_json_map(out: &mut String, map: &Measurements, indent: &str) {
    if map.is_empty() {
        out.push_str("{}");
        return;
    }
    out.push('{');
    for (i, (index, m)) in map.iter().enumerate() {
        let sep = if i == 0 { "" } else { "," };
        let _ = write!(
            out,
            "{sep}\n{indent}  \"{index}\": {{\n{indent}    \"expected\": \"{}\",\n{indent}    \"warnOnly\": {}\n{indent}  }}",
            hex::encode(m.expected()),
            m.is_warn_only()
        );
    }
    let _ = write!(out, "\n{indent}}}");
}
