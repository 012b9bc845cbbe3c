//! Helpers shared by the integration tests: the testdata directory (`attest_test_support::testdata`) and
//! decoding its vectors.
#![allow(dead_code, unreachable_pub)]

/// The testdata directory (`None` with a notice when absent; a failure under `CI=true`) and its files.
#[allow(unused_imports)] // not every test binary that includes this module reads testdata
pub use attest_test_support::testdata::{dir as testdata, read};

/// Decodes every CERTIFICATE block of a PEM file (or the DER file itself).
#[track_caller]
pub fn certs(dir: &std::path::Path, rel: &str) -> Vec<Vec<u8>> {
    attest_engine::x509::pem::certificates_from_pem_or_der(&read(dir, rel)).unwrap()
}

/// A proptest mutation of one of a parser's valid seeds: up to 8 byte edits (position seed, XOR mask) and an optional new length (shorter or longer).
#[derive(Clone, Debug)]
pub struct Mutation {
    pick: usize,
    edits: Vec<(usize, u8)>,
    resize: Option<usize>,
}

/// The strategy of [`Mutation`]s.
pub fn mutation() -> impl proptest::strategy::Strategy<Value = Mutation> {
    use proptest::prelude::{Strategy as _, any};
    (any::<usize>(), proptest::collection::vec((any::<usize>(), 1u8..=255), 0..8), proptest::option::of(any::<usize>()))
        .prop_map(|(pick, edits, resize)| Mutation { pick, edits, resize })
}

impl Mutation {
    /// Applies the mutation to one of `seeds`.
    pub fn apply(&self, seeds: &[Vec<u8>]) -> Vec<u8> {
        let mut v = seeds[self.pick % seeds.len()].clone();
        if !v.is_empty() {
            for (pos, mask) in &self.edits {
                let n = v.len();
                v[pos % n] ^= mask;
            }
        }
        if let Some(r) = self.resize {
            let n = v.len();
            v.resize(r % (n + 64), 0xA5);
        }
        v
    }
}
