//! The bootstrapper's cloud metadata values (`attest_bootstrapper::metadata::value`): the join endpoints
//! list of a tag or attribute, and Azure IMDS's compute document. Never panics; an accepted list is within
//! its bounds and prints back to entries that parse to the same endpoints. The two files are compiled in as
//! they are (standard library and serde_json only), keeping the bootstrapper's stack out of the fuzz crate.
#![no_main]

// `value` names its error as `super::error`: both are modules of the crate root here.
#[allow(dead_code, unreachable_pub)]
#[path = "../../shell/bootstrapper/src/metadata/error.rs"]
mod error;
#[allow(dead_code, unreachable_pub)]
#[path = "../../shell/bootstrapper/src/metadata/value.rs"]
mod value;

use libfuzzer_sys::fuzz_target;
use value::{MAX_METADATA_ENDPOINTS, azure_tag, parse_endpoint_list};

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(list) = parse_endpoint_list(text, 30090) {
            assert!(!list.is_empty() && list.len() <= MAX_METADATA_ENDPOINTS);
            let printed: Vec<String> = list.iter().map(ToString::to_string).collect();
            assert_eq!(parse_endpoint_list(&printed.join(" "), 1).expect("printed entries parse"), list);
        }
    }
    if let Ok(value) = azure_tag("/metadata/instance/compute", data, "attest-join-endpoints") {
        let _ = parse_endpoint_list(&value, 30090);
    }
});
