//! Variant names on the command line, generated from the engine's variant table: clap's possible values (with
//! each variant's summary as help) and the parser, for every command that takes a variant.
//!
//! ```
//! use attest_engine::variant::Variant;
//! #[derive(clap::Parser)]
//! struct Args {
//!     /// The node's attestation variant.
//!     #[arg(long, default_value = "qemu-vtpm", value_parser = attest_trust::variant_arg::any())]
//!     variant: Variant,
//! }
//! ```

use crate::TrustError;
use attest_engine::variant::{TABLE, Variant, VariantInfo};
use clap::builder::{PossibleValue, TypedValueParser};

/// A clap value parser for the variants of the table that `accept` admits; its possible values (listed in
/// `--help` and in the error for an unknown or refused name) are exactly those.
#[derive(Clone, Copy)]
pub struct VariantParser {
    accept: fn(&VariantInfo) -> bool,
    refused: &'static str,
}

impl std::fmt::Debug for VariantParser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VariantParser")
            .field("accepted", &Variant::names(self.accept))
            .field("refused", &self.refused)
            .finish()
    }
}

/// Every variant of the table.
pub fn any() -> VariantParser {
    VariantParser { accept: |_| true, refused: "" }
}

/// The variants whose documents carry a vTPM quote; `refused` says why the others are not taken here.
pub fn with_vtpm(refused: &'static str) -> VariantParser {
    VariantParser { accept: VariantInfo::has_vtpm, refused }
}

impl VariantParser {
    /// The variants this parser takes, in table order.
    pub fn accepted(&self) -> impl Iterator<Item = &'static VariantInfo> + '_ {
        TABLE.iter().filter(|row| (self.accept)(row))
    }
}

impl TypedValueParser for VariantParser {
    type Value = Variant;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Variant, clap::Error> {
        let invalid = |why: String| {
            let flag = arg.map_or_else(|| "the variant".to_owned(), |a| format!("--{}", a.get_id()));
            clap::Error::raw(clap::error::ErrorKind::InvalidValue, format!("{flag}: {why}\n")).with_cmd(cmd)
        };
        let text = value.to_str().ok_or_else(|| invalid("not UTF-8".to_owned()))?;
        let names = Variant::names(self.accept);
        match Variant::from_name(text) {
            Some(v) if (self.accept)(v.info()) => Ok(v),
            Some(v) => Err(invalid(format!("{v}: {} (possible values: {names})", self.refused))),
            None => Err(invalid(format!("unknown variant {text:?} (possible values: {names})"))),
        }
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(self.accepted().map(|row| PossibleValue::new(row.name).help(row.summary))))
    }
}

/// `auto` (`None`: the caller detects the variant) or a variant of the table; `auto` is listed first among
/// the possible values with `auto_help`.
#[derive(Clone, Copy, Debug)]
pub struct AutoOrVariant {
    variants: VariantParser,
    auto_help: &'static str,
}

/// `auto` or any variant of the table.
pub fn auto_or_any(auto_help: &'static str) -> AutoOrVariant {
    AutoOrVariant { variants: any(), auto_help }
}

/// A node's own variant (the bootstrapper's `--variant`, the join service's `--node-variant`): `auto`, detected
/// from the machine by the attester (which never detects `qemu-vtpm`), or any variant of the table.
pub fn node_variant() -> AutoOrVariant {
    auto_or_any("detected from the machine (never qemu-vtpm)")
}

impl TypedValueParser for AutoOrVariant {
    type Value = Option<Variant>;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Option<Variant>, clap::Error> {
        if value == "auto" {
            return Ok(None);
        }
        self.variants.parse_ref(cmd, arg, value).map(Some)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        let auto = PossibleValue::new("auto").help(self.auto_help);
        Some(Box::new(std::iter::once(auto).chain(self.variants.possible_values()?)))
    }
}

/// `VARIANT=VALUE` (e.g. `--variant-snp-policy aws-sev-snp=aws.toml`): the variant of the table and the text
/// after the first `=`.
pub fn parse_keyed(s: &str) -> Result<(Variant, String), TrustError> {
    let (name, value) = s.split_once('=').ok_or(TrustError::NotKeyed)?;
    let variant = name.parse::<Variant>().map_err(TrustError::UnknownVariant)?;
    Ok((variant, value.to_owned()))
}

/// Every flag of `cmd` and its subcommands that takes variant names, as `(command path and flag, the variant
/// names it lists)`: what a binary's test compares with the table (its lists must be generated from it).
pub fn variant_flags(cmd: &clap::Command) -> Vec<(String, Vec<&'static str>)> {
    fn walk(cmd: &clap::Command, path: &str, out: &mut Vec<(String, Vec<&'static str>)>) {
        let path = if path.is_empty() { cmd.get_name().to_owned() } else { format!("{path} {}", cmd.get_name()) };
        for arg in cmd.get_arguments() {
            let names: Vec<&'static str> = arg
                .get_possible_values()
                .iter()
                .filter_map(|p| Variant::from_name(p.get_name()).map(Variant::name))
                .collect();
            if !names.is_empty() {
                out.push((format!("{path} --{}", arg.get_long().unwrap_or_else(|| arg.get_id().as_str())), names));
            }
        }
        for sub in cmd.get_subcommands() {
            walk(sub, &path, out);
        }
    }
    let mut out = Vec::new();
    walk(cmd, "", &mut out);
    out
}

/// Checks that every variant flag of `cmd` lists exactly the table's variants, or exactly those with a vTPM
/// (for commands that check a vTPM quote), in table order; returns how many flags it checked.
pub fn check_flags_list_the_table(cmd: &clap::Command) -> Result<usize, TrustError> {
    let all: Vec<&str> = TABLE.iter().map(|r| r.name).collect();
    let vtpm: Vec<&str> = TABLE.iter().filter(|r| r.has_vtpm()).map(|r| r.name).collect();
    let flags = variant_flags(cmd);
    for (flag, names) in &flags {
        if *names != all && *names != vtpm {
            return Err(TrustError::VariantFlag { flag: flag.clone(), names: names.clone() });
        }
    }
    Ok(flags.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Any {
        #[arg(long, value_parser = any())]
        variant: Variant,
    }

    #[derive(Debug, Parser)]
    struct Vtpm {
        #[arg(long, value_parser = with_vtpm("TD quotes: attest tdx verify"))]
        variant: Variant,
    }

    #[test]
    fn every_name_of_the_table_parses_and_is_listed() {
        for row in &TABLE {
            let parsed = Any::try_parse_from(["x", "--variant", row.name]).unwrap();
            assert_eq!(parsed.variant, row.variant);
        }
        let listed: Vec<String> = any().possible_values().unwrap().map(|p| p.get_name().to_owned()).collect();
        let names: Vec<&str> = TABLE.iter().map(|r| r.name).collect();
        assert_eq!(listed, names);
    }

    #[test]
    fn unknown_and_refused_names_say_what_is_possible() {
        let e = Any::try_parse_from(["x", "--variant", "azure"]).unwrap_err().to_string();
        assert!(e.contains("unknown variant \"azure\"") && e.contains("azure-sev-snp"), "{e}");
        for row in TABLE.iter().filter(|r| !r.has_vtpm()) {
            let e = Vtpm::try_parse_from(["x", "--variant", row.name]).unwrap_err().to_string();
            assert!(e.contains("attest tdx verify") && !e.contains(&format!("values: {}", row.name)), "{e}");
        }
        for row in TABLE.iter().filter(|r| r.has_vtpm()) {
            assert_eq!(Vtpm::try_parse_from(["x", "--variant", row.name]).unwrap().variant, row.variant);
        }
    }

    #[test]
    fn auto_or_a_variant() {
        // As the binaries take it: mapped into a type of their own (a bare `Option` field would make clap
        // expect a parser of the inner type).
        #[derive(Clone, Debug, PartialEq)]
        struct Picked(Option<Variant>);
        #[derive(Debug, Parser)]
        struct Choice {
            #[arg(long, value_parser = auto_or_any("detect").map(Picked))]
            variant: Picked,
        }
        assert_eq!(Choice::try_parse_from(["x", "--variant", "auto"]).unwrap().variant, Picked(None));
        let tdx = Choice::try_parse_from(["x", "--variant", "qemu-tdx"]).unwrap().variant;
        assert_eq!(tdx, Picked(Some(Variant::QemuTdx)));
        let listed: Vec<String> =
            auto_or_any("detect").possible_values().unwrap().map(|p| p.get_name().to_owned()).collect();
        assert_eq!(listed.len(), TABLE.len() + 1);
        assert_eq!(listed[0], "auto");
    }

    #[test]
    fn keyed_values() {
        assert_eq!(parse_keyed("aws-sev-snp=a=b.toml").unwrap(), (Variant::AwsSevSnp, "a=b.toml".to_owned()));
        assert!(parse_keyed("aws-sev-snp").is_err());
        assert!(parse_keyed("nope=x").unwrap_err().to_string().contains("unknown attestation variant"));
    }
}
