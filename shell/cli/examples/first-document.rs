//! Evidence to verify on any machine, for README's "Verify your first report": what a `qemu-vtpm` node
//! sends in a handshake — its aTLS certificate carrying an attestation document (a TPM quote over PCRs 0–23
//! for a verifier's nonce, bound to the certificate's key) — and what the verifier holds: the expected
//! measurements and the AK registry that `attest init` writes after credential activation.
//!
//! ```text
//! cargo run -q -p attest-cli --example first-document -- DIR
//! attest document verify DIR/node.pem --variant qemu-vtpm --measurements DIR/measurements.json \
//!     --ak-registry DIR/aks.json --nonce "$(cat DIR/nonce.hex)"
//! ```
//!
//! The attestation key is a **software** key (a real TPM's AK sits in a TPM; `make demo` runs swtpm for
//! that): everything else — the quote's signature, the nonce, the PCR digest, the key binding, the
//! measurements — is checked exactly as for a node.

use attest_engine::crypto::default_provider;
use attest_engine::tpm::alg::TPM_ALG_SHA256;
use attest_engine::variant::{AkBasis, Validator, Variant};
use attest_proto::attest::v1::{AttestationDocument, PcrValue, TpmEvidence};
use attest_registration::{FileAkRegistry, ak_digest};
use attest_test_support::tpm::{PcrBank, QuoteSpec, SoftAk};
use prost::Message as _;
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = PathBuf::from(std::env::args().nth(1).ok_or("usage: first-document DIR")?);
    std::fs::create_dir_all(&dir)?;
    let ak = SoftAk::ecc_p256();
    // A node's PCRs (here made up; a booted node's come from its measured boot).
    let pcrs: PcrBank = core::array::from_fn(|i| default_provider().digests.sha256(format!("pcr {i}").as_bytes()));
    let mut nonce = [0u8; 32];
    openssl::rand::rand_bytes(&mut nonce)?;

    // The node's side: a fresh TLS key, a document binding it, the certificate carrying the document.
    let key = attest_atls::cert::fresh_key()?;
    let user_data = openssl::sha::sha256(&key.public_key_to_der()?);
    let extra = Validator::quote_nonce(default_provider(), &[], &user_data, &nonce);
    let quote = ak.quote(&QuoteSpec::new(&extra, &pcrs, 0x00FF_FFFF));
    let doc = AttestationDocument {
        variant: Variant::QemuVtpm.name().to_owned(),
        tpm: Some(TpmEvidence {
            ak_public: ak.tpm2b_public(),
            quote_attest: quote.attest,
            quote_signature: quote.signature,
            pcrs: (0u32..)
                .zip(pcrs)
                .map(|(index, v)| PcrValue { hash_alg: u32::from(TPM_ALG_SHA256), index, value: v.to_vec() })
                .collect(),
            ..TpmEvidence::default()
        }),
        user_data: user_data.to_vec(),
        ..AttestationDocument::default()
    };
    let cert = attest_atls::cert::build(&key, Some((Variant::QemuVtpm.oid(), &doc.encode_to_vec())))?;
    std::fs::write(dir.join("node.pem"), cert.to_pem()?)?;

    // The verifier's side: the measurements it expects (PCRs 4, 9, 11: boot chain, kernel, UKI) and the
    // AK it registered.
    let expected: Vec<String> = [4usize, 9, 11]
        .iter()
        .map(|i| format!(r#""{i}": {{"expected": "{}", "warnOnly": false}}"#, hex::encode(pcrs[*i])))
        .collect();
    std::fs::write(dir.join("measurements.json"), format!("{{{}}}\n", expected.join(", ")))?;
    let registry = dir.join("aks.json");
    let _ = std::fs::remove_file(&registry);
    FileAkRegistry::open(&registry)?.register(ak_digest(&ak.tpm2b_public())?, AkBasis::Pinned)?;
    std::fs::write(dir.join("nonce.hex"), hex::encode(nonce))?;
    println!("wrote {0}/node.pem, {0}/measurements.json, {0}/aks.json, {0}/nonce.hex", dir.display());
    Ok(())
}
