//! The two nonce channels (`docs/ARCHITECTURE.md`, "aTLS"): 32 random bytes, standard base64 (RFC 4648 §4, with `+`, `/` and
//! `=` padding — 44 characters), sent by the client as the TLS ServerName and by the server as the
//! CommonName of the single acceptable-CA distinguished name in its CertificateRequest.
//!
//! Decoding is strict: exactly 44 characters of canonical standard base64 that decode to exactly 32 bytes,
//! and a CA list of exactly one name with exactly one CommonName. A nonce is never padded, truncated or
//! re-encoded to make it fit.

use super::error::{Error, NonceChannel};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use openssl::nid::Nid;
use openssl::stack::{Stack, StackRef};
use openssl::x509::{X509Name, X509NameBuilder};

/// Nonce length in bytes.
pub const NONCE_LEN: usize = 32;
/// Length of its base64 encoding.
pub const ENCODED_LEN: usize = 44;

/// A handshake nonce.
pub type Nonce = [u8; NONCE_LEN];

/// 32 bytes from OpenSSL's CSPRNG.
pub fn fresh() -> Result<Nonce, Error> {
    let mut n = [0u8; NONCE_LEN];
    openssl::rand::rand_bytes(&mut n)?;
    Ok(n)
}

/// Standard base64 of `nonce` (44 characters).
pub fn encode(nonce: &Nonce) -> String {
    STANDARD.encode(nonce)
}

/// Decodes a nonce received on `channel`.
pub fn decode(text: &str, channel: NonceChannel) -> Result<Nonce, Error> {
    if text.len() != ENCODED_LEN {
        return Err(Error::MalformedNonce { channel, reason: "not 44 characters (base64 of 32 bytes)" });
    }
    // The base64 crate's STANDARD engine rejects non-canonical trailing bits and missing or extra padding.
    let bytes = STANDARD
        .decode(text)
        .map_err(|_| Error::MalformedNonce { channel, reason: "not canonical standard base64" })?;
    bytes.try_into().map_err(|_| Error::MalformedNonce { channel, reason: "does not decode to 32 bytes" })
}

/// The server's CA list: one distinguished name, `CN=<base64 nonce>`.
pub fn ca_names(nonce: &Nonce) -> Result<Stack<X509Name>, Error> {
    let mut name = X509NameBuilder::new()?;
    name.append_entry_by_nid(Nid::COMMONNAME, &encode(nonce))?;
    let mut stack = Stack::new()?;
    stack.push(name.build())?;
    Ok(stack)
}

/// The server's nonce from the CA names its CertificateRequest carried.
pub fn from_ca_names(names: Option<&StackRef<X509Name>>) -> Result<Nonce, Error> {
    let channel = NonceChannel::AcceptableCa;
    let names = names.filter(|n| !n.is_empty()).ok_or(Error::MissingNonce { channel })?;
    if names.len() != 1 {
        return Err(Error::MalformedNonce { channel, reason: "more than one acceptable-CA name" });
    }
    let mut cns = names[0].entries_by_nid(Nid::COMMONNAME);
    let cn = cns.next().ok_or(Error::MalformedNonce { channel, reason: "the CA name has no CommonName" })?;
    if cns.next().is_some() || names[0].entries().count() != 1 {
        return Err(Error::MalformedNonce { channel, reason: "the CA name has more than one attribute" });
    }
    let text = std::str::from_utf8(cn.data().as_slice())
        .map_err(|_| Error::MalformedNonce { channel, reason: "the CommonName is not text" })?;
    decode(text, channel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_base64_and_the_ca_list() {
        let n = [0xFB; 32]; // encodes with '+' and '/' and ends in '='
        let text = encode(&n);
        assert_eq!(text.len(), ENCODED_LEN);
        assert!(text.contains('+') || text.contains('/'));
        assert!(text.ends_with('='));
        assert_eq!(decode(&text, NonceChannel::ServerName).unwrap(), n);
        let names = ca_names(&n).unwrap();
        assert_eq!(from_ca_names(Some(&names)).unwrap(), n);
    }

    #[test]
    fn refuses_anything_but_canonical_base64_of_32_bytes() {
        let ch = NonceChannel::ServerName;
        let good = encode(&[7; 32]);
        for bad in [
            String::new(),
            good[..43].to_owned(),
            format!("{good}="),
            good.replace('=', "A"),                   // 33 bytes' worth, no padding
            good.replace('+', "-").replace('/', "_"), // URL-safe alphabet (only if it had those)
            "!".repeat(44),
            format!("{}B=", &good[..42]),        // non-canonical trailing bits
            STANDARD.encode([1u8; 31]) + "AAAA", // 48 characters
        ] {
            if bad == good {
                continue;
            }
            assert!(matches!(decode(&bad, ch), Err(Error::MalformedNonce { .. })), "{bad:?}");
        }
    }

    #[test]
    fn refuses_ca_lists_that_are_not_a_single_common_name() {
        assert!(matches!(from_ca_names(None), Err(Error::MissingNonce { .. })));
        let empty: Stack<X509Name> = Stack::new().unwrap();
        assert!(matches!(from_ca_names(Some(&empty)), Err(Error::MissingNonce { .. })));
        let mut two = ca_names(&[1; 32]).unwrap();
        two.push(ca_names(&[2; 32]).unwrap().pop().unwrap()).unwrap();
        assert!(matches!(from_ca_names(Some(&two)), Err(Error::MalformedNonce { .. })));
        let mut b = X509NameBuilder::new().unwrap();
        b.append_entry_by_nid(Nid::ORGANIZATIONNAME, "x").unwrap();
        b.append_entry_by_nid(Nid::COMMONNAME, &encode(&[3; 32])).unwrap();
        let mut s = Stack::new().unwrap();
        s.push(b.build()).unwrap();
        assert!(matches!(from_ca_names(Some(&s)), Err(Error::MalformedNonce { .. })));
    }
}
