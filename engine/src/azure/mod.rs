//! Azure confidential VMs: the vTPM "HCL report" container that carries the hardware report and the
//! runtime data binding the vTPM attestation key, and THIM's certificate document (the VCEK Azure hands a
//! guest, [`parse_thim`]).

pub mod hcl;
pub mod runtime;
mod thim;
pub mod vtpm;

pub use hcl::{HardwareReportType, HclReport, IGVM_REQUEST_HEADER_SIZE, hcl_report_data};
pub use runtime::RuntimeData;
pub use thim::{MAX_THIM_SIZE, parse_thim};
pub use vtpm::{AzureSnpRequest, VerifiedAzureSnp, verify_azure_snp};
