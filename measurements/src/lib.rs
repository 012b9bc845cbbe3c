//! Expected-measurement files (Constellation-compatible JSON/YAML maps of PCR → expected value).
//!
//! Filled by the "Engine II" issue; until then the crate only reserves its place in the workspace.
