//! The cloud metadata values (`attest-metadata`, which the bootstrapper's metadata sources re-export): the
//! join endpoints list of a tag or attribute, and Azure IMDS's compute document. Never panics; an accepted
//! list is within its bounds and prints back to entries that parse to the same endpoints.
#![no_main]

use attest_metadata::{MAX_METADATA_ENDPOINTS, azure_tag, parse_endpoint_list};
use libfuzzer_sys::fuzz_target;

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
