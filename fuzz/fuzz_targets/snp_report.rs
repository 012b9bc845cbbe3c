//! `Report::parse` on arbitrary bytes; when it parses, every accessor is read.
#![no_main]

use attest_engine::snp::{Product, Report, TcbVersion};
use libfuzzer_sys::fuzz_target;
use std::hint::black_box;

fuzz_target!(|data: &[u8]| {
    let Ok(r) = Report::parse(data) else { return };
    black_box(format!("{r:?}"));
    black_box((r.raw(), r.as_bytes(), r.signed_bytes(), r.version(), r.guest_svn(), r.family_id(), r.image_id()));
    let p = r.policy();
    black_box((p.abi_minor(), p.abi_major(), p.smt(), p.migrate_ma(), p.debug(), p.single_socket()));
    black_box((p.cxl_allow(), p.mem_aes_256_xts(), p.rapl_dis(), p.ciphertext_hiding(), p.page_swap_disable()));
    let pi = r.platform_info();
    black_box((pi.smt_enabled(), pi.tsme_enabled(), pi.ecc_enabled(), pi.rapl_disabled()));
    black_box((pi.ciphertext_hiding_enabled(), pi.alias_check_complete()));
    black_box((r.vmpl(), r.author_key_en(), r.mask_chip_key(), r.signing_key().role()));
    black_box((r.report_data(), r.measurement(), r.host_data(), r.id_key_digest(), r.author_key_digest()));
    black_box((r.report_id(), r.report_id_ma(), r.chip_id(), r.cpuid(), r.cpuid_product()));
    black_box((r.current_version().to_string(), r.committed_version(), r.launch_mit_vector(), r.current_mit_vector()));
    black_box(r.signature_fixed());
    for raw in [r.current_tcb(), r.reported_tcb(), r.committed_tcb(), r.launch_tcb()] {
        for product in Product::ALL {
            if let Ok(t) = TcbVersion::decode(raw, product) {
                assert_eq!(t.encode(product), raw, "TCB decode/encode round trip");
                black_box(t.to_string());
            }
        }
    }
});
