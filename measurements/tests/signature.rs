//! Detached signatures: verified over the exact bytes before parsing, in DER or base64, with a P-256 key.

mod common;

use attest_engine::crypto::default_provider;
use attest_measurements::{
    AttestationVariant, Csp, Document, Error, MAX_FILE_SIZE, MAX_PUBLIC_KEY_SIZE, MAX_SIGNATURE_SIZE,
    SignedMeasurements, VerifyingKey,
};
use base64::Engine as _;
use common::{Signer, fixture, p384_public_key_pem, pem};

#[test]
fn verifies_then_parses_der_and_base64() {
    let signer = Signer::new();
    let file = fixture("release.json");
    let key = signer.public_key_pem();

    let der = signer.sign(&file);
    let signed = SignedMeasurements::verify_then_parse(&file, &der, key.as_bytes()).unwrap();
    assert!(signed.document().select(Csp::Aws, AttestationVariant::AwsSevSnp).is_ok());
    assert_eq!(signed.file_sha256(), &default_provider().digests.sha256(&file));

    // Constellation's measurements.json.sig: base64 text, maybe with a trailing newline or wrapped.
    let b64 = signer.sign_base64(&file);
    for sig in [b64.clone(), format!("{b64}\n"), format!("{}\n{}\n", &b64[..40], &b64[40..])] {
        let signed = SignedMeasurements::verify_then_parse(&file, sig.as_bytes(), key.as_bytes()).unwrap();
        assert!(matches!(signed.into_document(), Document::List(_)));
    }
}

#[test]
fn yaml_and_map_files() {
    let signer = Signer::new();
    let key = VerifyingKey::from_pem(signer.public_key_pem().as_bytes()).unwrap();
    for name in ["map.yaml", "legacy.json", "release.yaml"] {
        let file = fixture(name);
        let sig = signer.sign(&file);
        SignedMeasurements::verify_then_parse_with(default_provider(), &key, &file, &sig).unwrap();
    }
}

#[test]
fn signature_is_checked_before_parsing() {
    let signer = Signer::new();
    let key = signer.public_key_pem();
    // Garbage that would fail to parse: with a wrong signature the error is the signature, not the syntax.
    let garbage = b"{ not json at all";
    let other = signer.sign(b"something else");
    assert_eq!(SignedMeasurements::verify_then_parse(garbage, &other, key.as_bytes()), Err(Error::BadSignature));
    // Correctly signed garbage gets past the signature and fails in the parser.
    let sig = signer.sign(garbage);
    assert!(matches!(SignedMeasurements::verify_then_parse(garbage, &sig, key.as_bytes()), Err(Error::Json { .. })));
}

#[test]
fn tampered_file_rejected_at_every_byte() {
    let signer = Signer::new();
    let key = signer.public_key_pem();
    let file = fixture("map.json");
    let sig = signer.sign(&file);
    // Flip one bit in each byte (the file is ~700 bytes; each check is one P-256 verify).
    for i in 0..file.len() {
        let mut bad = file.clone();
        bad[i] ^= 0x01;
        assert_eq!(
            SignedMeasurements::verify_then_parse(&bad, &sig, key.as_bytes()),
            Err(Error::BadSignature),
            "byte {i}"
        );
    }
    // Appending whitespace (a no-op for the parser) still breaks the signature: exact bytes are signed.
    let mut longer = file.clone();
    longer.push(b'\n');
    assert_eq!(SignedMeasurements::verify_then_parse(&longer, &sig, key.as_bytes()), Err(Error::BadSignature));
    assert_eq!(
        SignedMeasurements::verify_then_parse(&file[..file.len() - 1], &sig, key.as_bytes()),
        Err(Error::BadSignature)
    );
}

#[test]
fn tampered_signature_rejected() {
    let signer = Signer::new();
    let key = signer.public_key_pem();
    let file = fixture("map.json");
    let sig = signer.sign(&file);
    for i in 0..sig.len() {
        for bit in [0x01, 0x80] {
            let mut bad = sig.clone();
            bad[i] ^= bit;
            let got = SignedMeasurements::verify_then_parse(&file, &bad, key.as_bytes());
            assert!(
                matches!(got, Err(Error::BadSignature | Error::SignatureEncoding)),
                "byte {i} bit {bit:#x}: {got:?}"
            );
        }
    }
    // Truncated at every length.
    for n in 0..sig.len() {
        let got = SignedMeasurements::verify_then_parse(&file, &sig[..n], key.as_bytes());
        assert!(matches!(got, Err(Error::BadSignature | Error::SignatureEncoding)), "length {n}");
    }
    // Another key's signature.
    let other = Signer::new();
    assert_eq!(
        SignedMeasurements::verify_then_parse(&file, &other.sign(&file), key.as_bytes()),
        Err(Error::BadSignature)
    );
}

#[test]
fn signature_encodings() {
    let signer = Signer::new();
    let key = signer.public_key_pem();
    let file = fixture("map.json");
    let verify = |sig: &[u8]| SignedMeasurements::verify_then_parse(&file, sig, key.as_bytes());
    assert_eq!(verify(b""), Err(Error::SignatureEncoding));
    assert_eq!(verify(b"!!!not base64!!!"), Err(Error::SignatureEncoding));
    // Valid base64 of something that is not a DER SEQUENCE.
    assert_eq!(
        verify(base64::engine::general_purpose::STANDARD.encode(b"hello").as_bytes()),
        Err(Error::SignatureEncoding)
    );
    // DER with trailing bytes is not DER; as text it is not base64 either.
    let mut trailing = signer.sign(&file);
    trailing.push(0);
    assert_eq!(verify(&trailing), Err(Error::SignatureEncoding));
    // A raw fixed-width r‖s signature is not accepted.
    assert!(verify(&[0x11; 64]).is_err());
    let big = vec![b'A'; MAX_SIGNATURE_SIZE + 1];
    assert_eq!(
        verify(&big),
        Err(Error::LimitExceeded { what: "signature bytes", limit: MAX_SIGNATURE_SIZE, found: MAX_SIGNATURE_SIZE + 1 })
    );
}

#[test]
fn file_size_limit_before_verifying() {
    let signer = Signer::new();
    let file = vec![b' '; MAX_FILE_SIZE + 1];
    let sig = signer.sign(&file);
    assert_eq!(
        SignedMeasurements::verify_then_parse(&file, &sig, signer.public_key_pem().as_bytes()),
        Err(Error::LimitExceeded { what: "file bytes", limit: MAX_FILE_SIZE, found: MAX_FILE_SIZE + 1 })
    );
}

#[test]
fn public_keys() {
    let signer = Signer::new();
    let file = fixture("map.json");
    let sig = signer.sign(&file);
    let verify = |key: &str| SignedMeasurements::verify_then_parse(&file, &sig, key.as_bytes());
    let invalid = |reason| Err(Error::InvalidPublicKey { reason });

    // Text around the block is ignored (as in a .pub file with a comment).
    assert!(verify(&format!("# measurements key\n{}", signer.public_key_pem())).is_ok());
    assert_eq!(
        VerifyingKey::from_spki_der(&signer.spki_der()).unwrap(),
        VerifyingKey::from_pem(signer.public_key_pem().as_bytes()).unwrap()
    );

    assert_eq!(verify(&p384_public_key_pem()), Err(Error::KeyNotP256));
    // RSA SubjectPublicKeyInfo header (rsaEncryption, NULL) with a dummy key.
    let rsa = [
        &[0x30, 0x16, 0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00][..],
        &[0x03, 0x05, 0x00, 0x30, 0x02, 0x05, 0x00],
    ]
    .concat();
    assert_eq!(verify(&pem("PUBLIC KEY", &rsa)), Err(Error::KeyNotP256));
    // Ed25519.
    let ed = [&[0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00][..], &[7; 32]].concat();
    assert_eq!(verify(&pem("PUBLIC KEY", &ed)), Err(Error::KeyNotP256));

    assert_eq!(verify(""), invalid("no PEM block"));
    assert_eq!(verify(&pem("CERTIFICATE", &signer.spki_der())), invalid("PEM label is not PUBLIC KEY"));
    assert_eq!(
        verify(&format!("{}{}", signer.public_key_pem(), signer.public_key_pem())),
        invalid("more than one PEM block")
    );
    assert_eq!(verify("-----BEGIN PUBLIC KEY-----\n!!!\n-----END PUBLIC KEY-----\n"), invalid("malformed PEM"));
    assert_eq!(verify("-----BEGIN PUBLIC KEY-----\nAAAA\n"), invalid("malformed PEM"));

    let der = signer.spki_der();
    // Truncated at every length.
    for n in 0..der.len() {
        assert!(
            matches!(VerifyingKey::from_spki_der(&der[..n]), Err(Error::InvalidPublicKey { .. } | Error::KeyNotP256)),
            "length {n}"
        );
    }
    let mut trailing = der.clone();
    trailing.push(0);
    assert_eq!(
        VerifyingKey::from_spki_der(&trailing).unwrap_err(),
        Error::InvalidPublicKey { reason: "not a DER SubjectPublicKeyInfo" }
    );
    // Compressed point (02 ‖ X), lengths adjusted.
    let mut compressed = der[..der.len() - 32].to_vec();
    compressed[1] -= 32;
    compressed[24] -= 32;
    compressed[26] = 0x02;
    assert_eq!(
        VerifyingKey::from_spki_der(&compressed).unwrap_err(),
        Error::InvalidPublicKey { reason: "P-256 point is not uncompressed" }
    );
    // Unused bits in the BIT STRING.
    let mut unused = der.clone();
    unused[25] = 1;
    assert_eq!(
        VerifyingKey::from_spki_der(&unused).unwrap_err(),
        Error::InvalidPublicKey { reason: "BIT STRING has unused bits" }
    );
    // An off-curve point parses as a key but never verifies.
    let mut off_curve = der.clone();
    *off_curve.last_mut().unwrap() ^= 1;
    let key = VerifyingKey::from_spki_der(&off_curve).unwrap();
    assert_eq!(
        SignedMeasurements::verify_then_parse_with(default_provider(), &key, &file, &sig),
        Err(Error::BadSignature)
    );
    let big = "A".repeat(MAX_PUBLIC_KEY_SIZE + 1);
    assert!(matches!(verify(&big), Err(Error::LimitExceeded { what: "public key bytes", .. })));
}
