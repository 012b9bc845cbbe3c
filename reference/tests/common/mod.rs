//! Shared fixtures of the reference tests: a synthetic OVMF image with a footer table and SEV metadata
//! (the shape of an AmdSev build, which Debian does not ship), and the locations of the real inputs.

#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};

/// Debian's 2 MiB OVMF build, which carries SNP metadata (`ovmf` package).
pub const OVMF_SNP: &str = "/usr/share/OVMF/OVMF_CODE.fd";
/// Debian's 4 MiB OVMF build, which carries none.
pub const OVMF_4M: &str = "/usr/share/OVMF/OVMF_CODE_4M.fd";

/// An EFI GUID in its on-disk byte order.
pub fn guid(a: u32, b: u16, c: u16, d: [u8; 8]) -> [u8; 16] {
    let mut out = [0u8; 16];
    out[..4].copy_from_slice(&a.to_le_bytes());
    out[4..6].copy_from_slice(&b.to_le_bytes());
    out[6..8].copy_from_slice(&c.to_le_bytes());
    out[8..].copy_from_slice(&d);
    out
}

pub fn footer_guid() -> [u8; 16] {
    guid(0x96b5_82de, 0x1fb2, 0x45f7, [0xba, 0xea, 0xa3, 0x66, 0xc5, 0x5a, 0x08, 0x2d])
}
pub fn sev_metadata_guid() -> [u8; 16] {
    guid(0xdc88_6566, 0x984a, 0x4798, [0xa7, 0x5e, 0x55, 0x85, 0xa7, 0xbf, 0x67, 0xcc])
}
pub fn reset_block_guid() -> [u8; 16] {
    guid(0x00f7_71de, 0x1a7e, 0x4fcb, [0x89, 0x0e, 0x68, 0xc7, 0x7e, 0x2f, 0xb4, 0x4e])
}
pub fn hash_table_guid() -> [u8; 16] {
    guid(0x7255_371f, 0x3a3b, 0x4b04, [0x92, 0x7b, 0x1d, 0xa6, 0xef, 0xa8, 0xd4, 0x54])
}

/// A synthetic OVMF-shaped image of `size` bytes: pseudo-random contents, a footer table with the SEV-ES
/// reset block, the SEV hashes table location and the SEV metadata offset, and "ASEV" metadata with the
/// given (gpa, size, type) sections.
pub fn synthetic_ovmf(size: usize, sections: &[(u32, u32, u32)], hash_table_gpa: u32) -> Vec<u8> {
    let mut b: Vec<u8> = (0..size).map(|i| (i as u32).wrapping_mul(2_654_435_761).rotate_left(7) as u8).collect();
    // The metadata 0x1000 bytes before the end.
    let meta_at = size - 0x1000;
    let mut meta = Vec::new();
    meta.extend_from_slice(b"ASEV");
    meta.extend_from_slice(&(16 + 12 * sections.len() as u32).to_le_bytes());
    meta.extend_from_slice(&1u32.to_le_bytes());
    meta.extend_from_slice(&(sections.len() as u32).to_le_bytes());
    for (gpa, len, kind) in sections {
        for v in [gpa, len, kind] {
            meta.extend_from_slice(&v.to_le_bytes());
        }
    }
    b[meta_at..meta_at + meta.len()].copy_from_slice(&meta);
    let mut entries: Vec<([u8; 16], Vec<u8>)> = vec![
        (reset_block_guid(), [0x0080_b004u32.to_le_bytes(), 0u32.to_le_bytes()].concat()),
        (sev_metadata_guid(), (0x1000u32).to_le_bytes().to_vec()),
    ];
    if hash_table_gpa != 0 {
        entries.push((hash_table_guid(), [hash_table_gpa.to_le_bytes(), 0x400u32.to_le_bytes()].concat()));
    }
    let mut table = Vec::new();
    for (id, data) in &entries {
        table.extend_from_slice(data);
        table.extend_from_slice(&((data.len() + 18) as u16).to_le_bytes());
        table.extend_from_slice(id);
    }
    table.extend_from_slice(&((table.len() + 18) as u16).to_le_bytes());
    table.extend_from_slice(&footer_guid());
    let end = size - 32;
    b[end - table.len()..end].copy_from_slice(&table);
    b
}

/// The sections of an AmdSev-like build: SEC memory, secrets, CPUID, kernel hashes.
pub fn amdsev_sections() -> Vec<(u32, u32, u32)> {
    vec![(0x80_0000, 0x9000, 1), (0x80_9000, 0x1000, 2), (0x80_a000, 0x1000, 3), (0x80_b000, 0x1000, 0x10)]
}

/// The repository's Python venv (scripts/setup-python.sh).
pub fn venv_python() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python")
}

/// Whether `path` exists; otherwise a visible notice (and a failure under `CI=true`).
#[track_caller]
pub fn require(path: &Path, what: &str) -> bool {
    if path.exists() {
        return true;
    }
    assert!(!std::env::var("CI").is_ok_and(|v| v == "true"), "{what} missing at {} under CI=true", path.display());
    eprintln!("NOTICE: skipping: {what} not found at {} (run scripts/setup.sh)", path.display());
    false
}
