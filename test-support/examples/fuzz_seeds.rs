//! Writes **synthetic** seeds for the fuzz targets that have no committed corpus of their own: SEV-SNP
//! reports, AMD-like certificates, HCL reports and runtime data, TPM quotes, signatures and public areas,
//! and a TCG event log, all made with this crate's builders and freshly generated keys. Nothing in them
//! comes from real evidence (`../shared/testdata` is never read), so they are committed under
//! `fuzz/corpus/<target>/synthetic-*`.
//!
//! ```sh
//! cargo run -p attest-test-support --example fuzz_seeds -- fuzz/corpus
//! ```
//!
//! Every run generates new keys, so the bytes change but the structure does not. Each file is in exactly the
//! format its target reads (`fuzz/fuzz_targets/<target>.rs`); the `snp_verify` pairs are signed by a
//! generated PKI, so the target (AMD's real roots) refuses them after parsing the report and the leaf.

use attest_test_support::tpm::{
    EventLogBuilder, PcrBank, QuoteSpec, SoftAk, TPM_ALG_RSAPSS, hcl_report, hcl_report_data,
    hcl_report_with_hash_type, runtime_json, sha256,
};
use attest_test_support::{Leaf, LeafSpec, Product, REPORT_LEN, ReportBuilder, SigningKeyKind, TestPki};
use std::path::PathBuf;

/// One generated PKI (RSA-4096 ARK and ASK/ASVK, as AMD's) and its leaf.
struct Chain {
    name: &'static str,
    pki: TestPki,
    leaf: Leaf,
}

impl Chain {
    fn new(name: &'static str, product: Product, kind: SigningKeyKind) -> Self {
        let pki = TestPki::with_rsa_bits(product, kind, 4096);
        let leaf = pki.issue_leaf(&LeafSpec::new());
        Self { name, pki, leaf }
    }
}

/// Writes `<root>/<target>/synthetic-<what>` files and counts their bytes.
struct Seeds {
    root: PathBuf,
    total: usize,
}

impl Seeds {
    fn write(&mut self, target: &str, what: &str, bytes: &[u8]) {
        let dir = self.root.join(target);
        std::fs::create_dir_all(&dir).expect("corpus directory");
        let path = dir.join(format!("synthetic-{what}"));
        std::fs::write(&path, bytes).expect("write seed");
        self.total += bytes.len();
        println!("{:>5} {}", bytes.len(), path.display());
    }
}

/// PCR values: distinct for every index.
fn pcr_values() -> PcrBank {
    let mut pcrs = [[0; 32]; 24];
    for (i, pcr) in pcrs.iter_mut().enumerate() {
        *pcr = sha256(&[b"pcr", &[i as u8]]);
    }
    pcrs
}

fn snp_seeds(out: &mut Seeds, chains: &[Chain]) {
    for c in chains {
        let report = ReportBuilder::for_leaf(&c.leaf).report_data([0x5A; 64]).sign(&c.leaf);
        out.write("snp_report", &format!("report-{}", c.name), &report);

        let mut pair = report.to_vec();
        pair.extend_from_slice(&c.leaf.der);
        out.write("snp_verify", &format!("report-{}", c.name), &pair);

        let (product, kind) = (c.pki.product().name().to_lowercase(), c.pki.kind());
        if kind == SigningKeyKind::Vcek {
            out.write("x509_cert", &format!("ark-{product}"), c.pki.ark_der());
            out.write("x509_cert", &format!("ask-{product}"), c.pki.ask_der());
        } else {
            out.write("x509_cert", &format!("asvk-{product}"), c.pki.ask_der());
        }
        out.write("x509_cert", &format!("{}-{product}", kind.url_segment()), &c.leaf.der);
    }

    // Report versions 2 (no CPUID) and 5 (mitigation vectors), and the optional fields set.
    let milan = &chains[0].leaf;
    let v2 = ReportBuilder::for_leaf(milan).version(2).guest_svn(7).vmpl(1).sign(milan);
    out.write("snp_report", "report-milan-v2", &v2);
    let turin = chains.iter().find(|c| c.pki.product() == Product::Turin).expect("a Turin chain");
    let v5 = ReportBuilder::for_leaf(&turin.leaf)
        .version(5)
        .policy(0x01F_0000)
        .family_id([1; 16])
        .image_id([2; 16])
        .author_key_en(true)
        .measurement([3; 48])
        .host_data([4; 32])
        .id_key_digest([5; 48])
        .author_key_digest([6; 48])
        .report_id([7; 32])
        .current_version(1, 55, 24)
        .committed_version(1, 55, 22)
        .platform_info(0x3F)
        .launch_mit_vector(1)
        .current_mit_vector(3)
        .sign(&turin.leaf);
    out.write("snp_report", "report-turin-v5", &v5);
}

fn azure_seeds(out: &mut Seeds, vcek: &Leaf, ak: &SoftAk) {
    let ek = SoftAk::rsa();
    let one = runtime_json(&[&ak.jwk()]);
    let two = runtime_json(&[&ek.jwk_with_kid("HCLEkPub"), &ak.jwk()]);
    out.write("azure_runtime", "runtime-ak", &one);
    out.write("azure_runtime", "runtime-ek-ak", &two);

    // REPORT_DATA binds the runtime data (SHA-256, IGVM hash_type 1, the only one the engine accepts).
    let report = ReportBuilder::for_leaf(vcek).report_data(hcl_report_data(&one)).sign(vcek);
    out.write("hcl_report", "hcl", &hcl_report(&report, &one));
    let report = ReportBuilder::for_leaf(vcek).report_data(hcl_report_data(&two)).sign(vcek);
    let mut hcl = hcl_report(&report, &two);
    // Without the NV index's zero padding: header, report, IGVM request header, runtime data.
    hcl.truncate(0x20 + REPORT_LEN + 20 + two.len());
    out.write("hcl_report", "hcl-ek-ak-unpadded", &hcl);
    // IGVM hash_type 2 (SHA-384): parses, but the binding check refuses it.
    let mut hcl = hcl_report_with_hash_type(&report, &two, 2);
    hcl.truncate(0x20 + REPORT_LEN + 20 + two.len());
    out.write("hcl_report", "hcl-sha384-unpadded", &hcl);
}

fn tpm_seeds(out: &mut Seeds, rsa: &SoftAk, ecc: &SoftAk) {
    let pcrs = pcr_values();
    for (name, ak, extra, selection) in
        [("rsa", rsa, &[0xA5; 32][..], 0x00FF_FFFF), ("ecc", ecc, &[0x3C; 64][..], 0x0000_00FF)]
    {
        let quote = ak.quote(&QuoteSpec::new(extra, &pcrs, selection));
        out.write("tpm_attest", &format!("quote-{name}"), &quote.attest);
        let sig_name = if name == "rsa" { "rsassa" } else { "ecdsa" };
        out.write("tpm_signature", sig_name, &quote.signature);
        out.write("tpm_public", &format!("tpmt-{name}"), &ak.tpmt_public());
        out.write("tpm_public", &format!("tpm2b-{name}"), &ak.tpm2b_public());
    }
    // RSAPSS has the RSASSA layout (sigAlg, hash, TPM2B sig); only the algorithm differs.
    let mut pss = rsa.sign(b"attest-fuzz");
    pss[..2].copy_from_slice(&TPM_ALG_RSAPSS.to_be_bytes());
    out.write("tpm_signature", "rsapss", &pss);

    out.write("event_log", "eventlog-spec-id-only", EventLogBuilder::new().bytes());
    out.write("event_log", "eventlog-typical-boot", EventLogBuilder::typical_boot().bytes());
}

fn main() {
    let root = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "fuzz/corpus".into()));
    assert!(root.is_dir(), "{}: not a directory (the fuzz corpus root)", root.display());
    let mut out = Seeds { root, total: 0 };

    let chains = [
        Chain::new("milan-vcek", Product::Milan, SigningKeyKind::Vcek),
        Chain::new("genoa-vcek", Product::Genoa, SigningKeyKind::Vcek),
        Chain::new("turin-vcek", Product::Turin, SigningKeyKind::Vcek),
        Chain::new("milan-vlek", Product::Milan, SigningKeyKind::Vlek),
    ];
    let (rsa, ecc) = (SoftAk::rsa(), SoftAk::ecc_p256());

    snp_seeds(&mut out, &chains);
    azure_seeds(&mut out, &chains[0].leaf, &rsa);
    tpm_seeds(&mut out, &rsa, &ecc);
    println!("{} bytes in total", out.total);
}
