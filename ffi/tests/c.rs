//! Builds the library (staticlib + cdylib, in `target/ffi-c-tests`) and the C tests in `ffi/tests/c/*.c`
//! with gcc against it, and runs
//! each twice: under AddressSanitizer + UBSan (linked with the staticlib) and under valgrind memcheck
//! (linked with the cdylib). Real vectors come from `$ATTEST_TESTDATA` (default `../shared/testdata`);
//! generated qemu-vtpm documents are written to `target/ffi-c-tests/debug/c-tests/` first (`ATTEST_FFI_FIXTURES`),
//! next to the compiled test programs.
//!
//! Without gcc or valgrind the tests print a NOTICE and skip; under `CI=true` that is a failure.

use attest_engine::crypto::default_provider;
use attest_engine::variant::Validator;
use attest_proto::attest::v1::{AttestationDocument, PcrValue, TpmEvidence};
use attest_test_support::tpm::{self, PcrBank, QuoteSpec, SoftAk};
use prost::Message;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const TESTS: [&str; 5] = ["api", "vectors", "threads", "tdx", "formats"];

fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// Whether `tool` runs; otherwise a NOTICE (or a failure under CI=true).
fn have(tool: &str) -> bool {
    let ok = Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success());
    assert!(ok || !ci(), "{tool} is required under CI=true");
    if !ok {
        eprintln!("NOTICE: skipping C tests that need {tool} (not installed)");
    }
    ok
}

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Builds the library and returns the directory holding `libattest_ffi.{a,so}`.
///
/// `cargo test` builds only the rlib of this crate for its tests, so the staticlib and cdylib next to the
/// test binary can be stale (or absent). Build them here, in a target directory of their own
/// (`target/ffi-c-tests`), because the outer `cargo test` holds the lock on its own build directory.
fn lib_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let exe = std::env::current_exe().unwrap();
        let target = exe.ancestors().nth(3).unwrap().to_path_buf(); // target/<profile>/deps/<exe>
        let target_dir = target.join("ffi-c-tests");
        let status = Command::new(env!("CARGO"))
            .args(["build", "--quiet", "-p", "attest-ffi", "--lib", "--target-dir"])
            .arg(&target_dir)
            .current_dir(manifest_dir().join(".."))
            .status()
            .expect("running cargo build");
        assert!(status.success(), "cargo build -p attest-ffi failed");
        let dir = target_dir.join("debug");
        for lib in ["libattest_ffi.a", "libattest_ffi.so"] {
            assert!(dir.join(lib).is_file(), "{} was not built", dir.join(lib).display());
        }
        // The library's SONAME carries the ABI major (ffi/build.rs): the name the loader looks for, as
        // `make install` lays it out.
        let soname = dir.join(format!("libattest_ffi.so.{}", attest_ffi::abi::ATTEST_ABI_VERSION_MAJOR));
        let _ = std::fs::remove_file(&soname);
        std::os::unix::fs::symlink("libattest_ffi.so", &soname).expect("linking the SONAME");
        dir
    })
}

fn testdata() -> PathBuf {
    let dir = attest_test_support::testdata::configured_dir();
    // Absolute, since the C programs run in another directory; a missing directory stays as given (the C
    // programs then skip with a NOTICE, or fail under CI=true).
    dir.canonicalize().unwrap_or(dir)
}

fn scratch() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = lib_dir().join("c-tests");
        std::fs::create_dir_all(&d).unwrap();
        write_fixtures(&d);
        d
    })
}

/// A qemu-vtpm document quoted by a software AK, its measurements (PCR 4 enforced, PCR 9 warn-only and
/// wrong), a variant with PCR 4 wrong, the AK's TPM2B_PUBLIC and the nonce.
fn write_fixtures(dir: &Path) {
    let ak = SoftAk::rsa();
    let mut pcrs: PcrBank = [[0; 32]; 24];
    for (i, p) in pcrs.iter_mut().enumerate() {
        *p = tpm::sha256(&[b"pcr", &[i as u8]]);
    }
    let nonce = b"ffi test nonce 0123456789abcdef!";
    let (instance_info, user_data) = (b"{\"instance\":\"c-test\"}".to_vec(), vec![0x5A; 32]);
    let extra = Validator::quote_nonce(default_provider(), &instance_info, &user_data, nonce);
    let q = ak.quote(&QuoteSpec::new(&extra, &pcrs, 0xFFFF));
    let doc = AttestationDocument {
        variant: "qemu-vtpm".into(),
        tpm: Some(TpmEvidence {
            ak_public: ak.tpm2b_public(),
            quote_attest: q.attest,
            quote_signature: q.signature,
            pcrs: (0..16u32)
                .map(|i| PcrValue { hash_alg: 0x000B, index: i, value: pcrs[i as usize].to_vec() })
                .collect(),
            ..Default::default()
        }),
        instance_info,
        user_data,
        ..Default::default()
    };
    let measurements = |pcr4: &[u8]| {
        format!(
            r#"{{"4": {{"expected": "{}", "warnOnly": false}}, "9": {{"expected": "{}", "warnOnly": true}}}}"#,
            hex::encode(pcr4),
            hex::encode([0xEE; 32])
        )
    };
    std::fs::write(dir.join("qemu-doc.pb"), doc.encode_to_vec()).unwrap();
    // The same TPM evidence labelled aws-sev-snp (no SNP evidence): for the launch-pinning gate.
    let aws = AttestationDocument { variant: "aws-sev-snp".into(), ..doc.clone() };
    std::fs::write(dir.join("aws-doc.pb"), aws.encode_to_vec()).unwrap();
    std::fs::write(dir.join("measurements.json"), measurements(&pcrs[4])).unwrap();
    std::fs::write(dir.join("measurements-wrong.json"), measurements(&[0x11; 32])).unwrap();
    std::fs::write(dir.join("ak.tpm2b"), ak.tpm2b_public()).unwrap();
    std::fs::write(dir.join("nonce.bin"), nonce).unwrap();
}

/// Compiles `ffi/tests/c/<name>.c`; `extra` selects sanitizers and the library to link.
fn compile(name: &str, suffix: &str, extra: &[&str], link: &[String]) -> PathBuf {
    let src = manifest_dir().join(format!("tests/c/{name}.c"));
    let out = scratch().join(format!("{name}-{suffix}"));
    let status = Command::new("gcc")
        .args(["-std=c11", "-g", "-O1", "-Wall", "-Wextra", "-Werror", "-pthread"])
        .args(extra)
        .arg("-I")
        .arg(manifest_dir().join("include"))
        .arg(&src)
        .args(link)
        .args(["-ldl", "-lpthread", "-lm", "-o"])
        .arg(&out)
        .status()
        .expect("running gcc");
    assert!(status.success(), "gcc failed for {}", src.display());
    out
}

fn run(mut cmd: Command, what: &str) {
    // cargo test points LD_LIBRARY_PATH at target/<profile>, whose cdylib may be stale; the programs find
    // theirs through their rpath.
    cmd.env("ATTEST_TESTDATA", testdata()).env("ATTEST_FFI_FIXTURES", scratch()).env_remove("LD_LIBRARY_PATH");
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    print!("{stdout}");
    eprint!("{stderr}");
    assert!(out.status.success(), "{what} failed ({})", out.status);
}

#[test]
fn c_tests_under_address_sanitizer() {
    if !have("gcc") {
        return;
    }
    let lib = lib_dir().join("libattest_ffi.a").display().to_string();
    for name in TESTS {
        let exe = compile(
            name,
            "asan",
            &["-fsanitize=address,undefined", "-fno-omit-frame-pointer"],
            std::slice::from_ref(&lib),
        );
        let mut cmd = Command::new(&exe);
        // Rust's std and aws-lc keep a few process-lifetime allocations (thread-local keys, the default
        // provider); they are still reachable at exit and LeakSanitizer reports no false positives for them.
        cmd.env("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=1:strict_string_checks=1")
            .env("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1");
        run(cmd, &format!("{name} (ASAN)"));
    }
}

#[test]
fn c_tests_under_valgrind() {
    if !have("gcc") || !have("valgrind") {
        return;
    }
    let dir = lib_dir();
    let link = [format!("-L{}", dir.display()), "-lattest_ffi".to_owned(), format!("-Wl,-rpath,{}", dir.display())];
    for name in TESTS {
        let exe = compile(name, "valgrind", &[], &link);
        let mut cmd = Command::new("valgrind");
        cmd.args(["--error-exitcode=1", "--leak-check=full", "--quiet"]).arg(&exe);
        run(cmd, &format!("{name} (valgrind)"));
    }
}
