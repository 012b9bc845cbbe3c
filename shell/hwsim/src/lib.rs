//! # attest-hwsim
//!
//! **SIMULATED hardware, signed by TEST ROOTS.** Stand-ins for the confidential-computing hardware this
//! machine does not have, so that the issuers, the services and the demo run end to end on every attestation
//! variant — and the evidence they produce verifies only where a verifier was *built* to trust the test roots
//! (cargo feature `dangerous-test-roots`; see `attest_kds::test_roots`).
//!
//! | simulated | how | what the issuer sees |
//! |---|---|---|
//! | SEV-SNP guest device ([`snp`]) | a process answering MSG_REPORT_REQ on a Unix socket with reports signed by a generated VCEK (or VLEK), chained to a generated ASK/ASVK and ARK | `sim:/path` instead of `/dev/sev-guest`: only the lowest transport differs (`attest_attester::issuer::sevguest`) |
//! | Azure's paravisor ([`azure`]) | provisions a swtpm as Azure's paravisor provisions the vTPM: the AK persisted at 0x81000003, an HCL report at NV 0x01400001 whose SNP report (from the simulated device) binds runtime data carrying the AK as a JWK | a TPM with that NV index and key |
//! | Intel TDX ([`tdx`]) | a TD whose quotes are signed through a generated Intel-like PKI (root, PCK CA, PCK certificate with the SGX extension; TCB Info, QE Identity, CRLs), served below a system root: configfs-tsm entries (FIFOs), RTMR files, the ACPI CCEL table; for Azure, the paravisor's HCL report (TDX) in a swtpm and a stand-in of its quote endpoint on 127.0.0.1 | `sim:/root` as the TDX root (`attest_attester::issuer::tdguest`), `http://127.0.0.1:PORT/acc/tdquote` as Azure's quote endpoint |
//! | GCE's vTPM ([`gce`]) | an AK template and an AK certificate from a Google-like CA at Google's NV indices, plus a measured boot with its event log | a TPM with those NV indices |
//!
//! Everything it writes for verifiers goes into one **test-root directory** (`attest_kds::test_roots` names
//! the files): the test ARK and ASK/ASVK, ARK-signed CRLs, and the Google-like root. [`attack`] holds the
//! clients of the attacks run against a live join service (a replayed SNP report; a node whose VCEK the
//! join service's CRL revokes; a genuine node's evidence replayed for an earlier nonce or relayed under
//! another key — the demo's replayed TD quote and REPORTDATA not binding the handshake; an attested node that
//! asks for what is not its own).
//!
//! **May depend on:** everything an attester and a joining node use (engine, proto, attester with its
//! `simulated-hardware` feature, aTLS, gRPC, the bootstrapper's ticket request), `attest-kds` for the
//! test-root layout, and `attest-test-support`'s generators (a harness, like `hwtests`). **Must not be
//! depended on** by any product crate.

#![forbid(unsafe_code)]

pub mod attack;
pub mod azure;
pub mod gce;
pub mod snp;
pub mod tdx;
pub mod tsm;

/// The line every simulator prints and every demo step repeats.
pub const BANNER: &str = "SIMULATED hardware: evidence signed by TEST ROOTS (never trusted by release builds)";
