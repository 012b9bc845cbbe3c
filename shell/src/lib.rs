//! attest shell
