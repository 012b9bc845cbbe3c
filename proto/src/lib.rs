//! Protobuf wire contracts of attest.
//!
//! This crate will hold the attestation document and the `join.API`, `init.API` and `kms.API` messages
//! (DESIGN.md §2–§3), compiled with prost. It is filled by the "Engine II" and "Shell" issues; until then it
//! only reserves the name so that the workspace layout is final.
