//! The node lock's register: where a bootstrapped node binds its cluster id, one column of the variant table
//! ([`VariantInfo::lock`](super::VariantInfo::lock)).
//!
//! A node that takes the lock (init or join) extends one measurement register with its cluster id. The
//! register resets only with the machine, so a restarted bootstrapper knows the node is bootstrapped, and
//! because the register is part of every attestation, a verifier can tell a node bound to no cluster (the
//! register holds zero) from a node of a given cluster (the register holds [`LockRegister::bound`]):
//!
//! | register | variants | bank | extended with | after one lock from reset |
//! |---|---|---|---|---|
//! | [`LockRegister::Pcr`]`(15)` | every variant with a vTPM | SHA-256 (32 bytes) | the 32-byte cluster id | SHA-256(0³² ‖ cluster id) |
//! | [`LockRegister::Rtmr`]`(3)` | a TD without a vTPM (`qemu-tdx`) | SHA-384 (48 bytes) | SHA-384(cluster id) | SHA-384(0⁴⁸ ‖ SHA-384(cluster id)) |
//!
//! A TD's RTMRs, like a TPM's PCRs, reset only when the TD is rebuilt (a reboot). RTMR0–2 belong to the
//! firmware and the boot chain (TDVF measures its configuration into RTMR0, the boot loader and kernel into
//! RTMR1, the OS's command line and initrd into RTMR2); RTMR3 is left to the guest's software. (Constellation
//! extends RTMR2 on `qemu-tdx`; here the lock stays out of the boot chain's registers.) An RTMR extend takes
//! 48 bytes, so the 32-byte cluster id is hashed first, as Constellation does for TDX.
//!
//! In a measurements file the register has the index of its variant's layout
//! ([`LockRegister::measurement_index`]): PCR 15 is `15`; RTMR3 is `4` (Constellation's TDX layout: 0 is MRTD,
//! 1–4 are RTMR0–3). The default join measurements expect the unbound value there (a node bound to a cluster
//! cannot join another); `attest verify --cluster-id` expects the bound one.

use crate::crypto::{CryptoProvider, Digest, HashAlgorithm};
use core::fmt;

/// The register a node's lock extends with the cluster id (see the [module docs](self)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LockRegister {
    /// A SHA-256 PCR of the vTPM, extended with the 32-byte cluster id.
    Pcr(u8),
    /// A TD's RTMR (SHA-384), extended with SHA-384(cluster id).
    Rtmr(u8),
}

impl LockRegister {
    /// The register's hash (its bank).
    pub const fn hash(self) -> HashAlgorithm {
        match self {
            Self::Pcr(_) => HashAlgorithm::Sha256,
            Self::Rtmr(_) => HashAlgorithm::Sha384,
        }
    }

    /// The register's size in bytes (32 or 48).
    pub const fn size(self) -> usize {
        self.hash().output_len()
    }

    /// The register's index in a measurements file of its variant: the PCR index, or (Constellation's TDX
    /// layout) the RTMR's index + 1.
    pub const fn measurement_index(self) -> u32 {
        match self {
            Self::Pcr(i) => i as u32,
            Self::Rtmr(i) => i as u32 + 1,
        }
    }

    /// The register after a reset: zero.
    pub fn unbound(self) -> Digest {
        Digest::zero(self.hash())
    }

    /// `bytes` as a value of this register; `None` when the length is not the register's.
    pub fn value(self, bytes: &[u8]) -> Option<Digest> {
        (bytes.len() == self.size()).then(|| Digest::new(bytes))
    }

    /// What the lock extends the register with for `cluster_id`: the id itself (a PCR of 32 bytes), or
    /// SHA-384 of it (an RTMR takes 48 bytes).
    pub fn extend_digest(self, provider: &CryptoProvider, cluster_id: &[u8; 32]) -> Digest {
        match self {
            Self::Pcr(_) => Digest::new(cluster_id),
            Self::Rtmr(_) => provider.digests.digest(HashAlgorithm::Sha384, &[cluster_id]),
        }
    }

    /// The register's extend operation: hash(`old` ‖ `digest`).
    pub fn extend(self, provider: &CryptoProvider, old: &Digest, digest: &Digest) -> Digest {
        provider.digests.digest(self.hash(), &[old.as_bytes(), digest.as_bytes()])
    }

    /// The register of a node bound to `cluster_id`: one lock extend from reset.
    pub fn bound(self, provider: &CryptoProvider, cluster_id: &[u8; 32]) -> Digest {
        self.extend(provider, &self.unbound(), &self.extend_digest(provider, cluster_id))
    }
}

impl fmt::Display for LockRegister {
    /// `PCR 15`, `RTMR3`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Pcr(i) => write!(f, "PCR {i}"),
            Self::Rtmr(i) => write!(f, "RTMR{i}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::default_provider;

    #[test]
    fn pcr15_and_rtmr3_bind_the_cluster_id() {
        let p = default_provider();
        let id = [0x42; 32];
        let pcr = LockRegister::Pcr(15);
        assert_eq!((pcr.size(), pcr.measurement_index(), pcr.to_string()), (32, 15, "PCR 15".into()));
        let mut input = [0u8; 64];
        input[32..].copy_from_slice(&id);
        assert_eq!(pcr.bound(p, &id).as_bytes(), p.digests.sha256(&input));
        assert_eq!(pcr.unbound().as_bytes(), [0; 32]);

        let rtmr = LockRegister::Rtmr(3);
        assert_eq!((rtmr.size(), rtmr.measurement_index(), rtmr.to_string()), (48, 4, "RTMR3".into()));
        let digest = p.digests.sha384(&id);
        assert_eq!(rtmr.extend_digest(p, &id).as_bytes(), digest);
        let mut input = [0u8; 96];
        input[48..].copy_from_slice(&digest);
        assert_eq!(rtmr.bound(p, &id).as_bytes(), p.digests.sha384(&input));
        assert_eq!(rtmr.unbound().as_bytes(), [0; 48]);
        assert_ne!(rtmr.bound(p, &id), rtmr.bound(p, &[0x43; 32]));

        assert!(rtmr.value(&[0; 32]).is_none() && pcr.value(&[0; 48]).is_none());
        assert_eq!(rtmr.value(&[1; 48]).unwrap().as_bytes(), [1; 48]);
    }
}
