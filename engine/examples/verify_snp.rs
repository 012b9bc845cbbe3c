//! Verifies an SEV-SNP report with the engine, as a program embedding it would:
//!
//! ```text
//! cargo run -p attest-engine --example verify_snp -- REPORT VCEK [CHAIN] [--at 2025-06-01] [--report-data HEX]
//! ```
//!
//! REPORT is the report as the SNP firmware returns it (raw, + IGVM request-data header, or an Azure HCL
//! report); VCEK and CHAIN are PEM or DER (CHAIN: ASK then optionally ARK; default AMD's pinned ones).
//! Prints every check and exits 0 accepted, 1 refused, 2 malformed input or usage.

use attest_engine::UnixTime;
use attest_engine::formats::snp::SnpEvidence;
use attest_engine::snp::{SnpPolicy, SnpRequest, SnpVerifier, Verdict};
use attest_engine::x509::pem::certificates_from_pem_or_der;
use std::process::ExitCode;

fn read(path: &str) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{path}: {e}"))
}

fn run() -> Result<bool, String> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut take = |flag: &str| -> Option<String> {
        let i = args.iter().position(|a| a == flag)?;
        let v = args.get(i + 1).cloned();
        args.drain(i..(i + 2).min(args.len()));
        v
    };
    let at = take("--at");
    let report_data = take("--report-data").map(|h| hex::decode(h).map_err(|e| format!("--report-data: {e}")));
    let report_data = report_data.transpose()?;
    let [report, vcek, rest @ ..] = args.as_slice() else {
        return Err("usage: verify_snp REPORT VCEK [CHAIN] [--at DATE] [--report-data HEX]".into());
    };
    let time = match at {
        Some(t) => UnixTime::parse(&t).ok_or(format!("--at {t}: not a date or time"))?,
        None => UnixTime::from_secs(
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_err(|e| e.to_string())?.as_secs(),
        ),
    };
    let report_bytes = read(report)?;
    let evidence = SnpEvidence::parse(&report_bytes).map_err(|e| format!("{report}: {e}"))?;
    let mut certs = certificates_from_pem_or_der(&read(vcek)?).map_err(|e| format!("{vcek}: {e}"))?;
    if let Some(chain) = rest.first() {
        certs.extend(certificates_from_pem_or_der(&read(chain)?).map_err(|e| format!("{chain}: {e}"))?);
    }
    let req = SnpRequest {
        report: evidence.report(),
        leaf: &certs[0],
        intermediate: certs.get(1).map(Vec::as_slice),
        root: certs.get(2).map(Vec::as_slice),
        product: None,
        report_data: report_data.as_deref(),
        time,
    };
    let mut verdict = Verdict::default();
    let result = evidence.verify(&SnpVerifier::new(), &req, &SnpPolicy::default(), &mut verdict);
    for (check, outcome) in verdict.iter() {
        println!("{:<24} {outcome:?}", check.name());
    }
    match result {
        Ok(ok) => {
            println!("ACCEPTED: {} report signed by its {} at {time}", ok.product(), ok.signer());
            Ok(true)
        }
        Err(e) if e.class() == attest_engine::error::ErrorClass::Refused => {
            println!("REFUSED: {e}");
            Ok(false)
        }
        Err(e) => Err(format!("{report}: {e}")),
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("verify_snp: {e}");
            ExitCode::from(2)
        }
    }
}
