//! On-hardware tests for attest: real `/dev/tpmrm0` and `/dev/sev-guest` devices when present (skipping
//! with a message when absent, never failing for absence), and `swtpm` everywhere (the CI suite).
//!
//! # The swtpm harness
//!
//! [`Swtpm::start`] gives each test its own software TPM on loopback TCP ports, with its own state
//! directory, stopped by PID when dropped:
//!
//! ```text
//! swtpm_setup --tpm2 --tpmstate DIR --createek --create-ek-cert --create-platform-cert --lock-nvram
//!             --overwrite --config DIR/swtpm_setup.conf          (a local CA of our own, not /var/lib)
//! swtpm socket --tpm2 --tpmstate dir=DIR --server type=tcp,port=P,bindaddr=127.0.0.1
//!              --ctrl type=tcp,port=P+1,bindaddr=127.0.0.1 --flags not-need-init,startup-clear
//!              --daemon --pid file=DIR/swtpm.pid
//! ```
//!
//! Manufacturing (`swtpm_setup`) costs ≈ 1 s (EK key generation, certificate signing by the local CA) and
//! the local CA's own key generation on first use adds more, so the harness manufactures **once per test
//! binary** into a template directory and each [`Swtpm::start`] copies the template's state file
//! (`tpm2-00.permall`) into a fresh directory and starts `swtpm` on it. Every such TPM has the same
//! endorsement seed, EK and EK certificate — and therefore the same deterministic primary AK — but its own
//! PCRs, NV and persistent handles. [`Swtpm::start_unique`] manufactures a TPM of its own (own EPS and
//! EK, same CA) for tests that need two different TPMs.
//!
//! The CA is per process too (`swtpm_setup --config` → our own `swtpm-localca.conf` whose `statedir` is
//! in the temp directory), so tests never read or write `/var/lib/swtpm-localca`. [`Swtpm::ca_dir`]
//! gives its directory (`swtpm-localca-rootca-cert.pem`, `issuercert.pem`) for EK certificate checks.
//! [`Swtpm::start_without_ek_certificate`] gives a TPM manufactured as a cloud whose vTPM has an EK but no
//! certificate for it (AWS's NitroTPM): `swtpm_setup` without `--create-ek-cert --create-platform-cert`, from
//! a second template.

#![forbid(unsafe_code)]

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Why the harness could not provide a TPM.
#[derive(Debug)]
pub struct HarnessError(pub String);

impl std::fmt::Display for HarnessError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HarnessError {}

fn err(msg: impl Into<String>) -> HarnessError {
    HarnessError(msg.into())
}

/// A running swtpm, stopped (by PID) and its state directory removed when dropped.
#[derive(Debug)]
pub struct Swtpm {
    dir: PathBuf,
    port: u16,
    pid: u32,
}

/// Per-process directory: the CA, the template TPM state, and each instance's state.
struct Template {
    root: PathBuf,
    setup_conf: PathBuf,
    state: PathBuf,
}

static TEMPLATE: OnceLock<Result<Template, String>> = OnceLock::new();
/// The template TPM state without an EK certificate (in the same per-process directory).
static TEMPLATE_WITHOUT_EK_CERTIFICATE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
static INSTANCE: AtomicUsize = AtomicUsize::new(0);

/// Removes `attest-hwtests-<pid>` directories of processes that no longer exist.
fn remove_stale_roots(tmp: &Path) {
    let Ok(entries) = std::fs::read_dir(tmp) else { return };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix("attest-hwtests-")) else { continue };
        if pid.parse::<u32>().is_ok_and(|p| p != std::process::id() && !Path::new("/proc").join(pid).exists()) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

fn template() -> Result<&'static Template, HarnessError> {
    TEMPLATE
        .get_or_init(|| {
            let tmp = std::env::temp_dir();
            remove_stale_roots(&tmp);
            let root = tmp.join(format!("attest-hwtests-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&root);
            let ca = root.join("ca");
            let state = root.join("template");
            for d in [&ca, &state] {
                std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
            }
            let localca_conf = root.join("swtpm-localca.conf");
            std::fs::write(
                &localca_conf,
                format!(
                    "statedir = {ca}\nsigningkey = {ca}/signkey.pem\nissuercert = {ca}/issuercert.pem\ncertserial = {ca}/certserial\n",
                    ca = ca.display()
                ),
            )
            .map_err(|e| e.to_string())?;
            let setup_conf = root.join("swtpm_setup.conf");
            std::fs::write(
                &setup_conf,
                format!(
                    "create_certs_tool = /usr/bin/swtpm_localca\ncreate_certs_tool_config = {}\n\
                     create_certs_tool_options = /etc/swtpm-localca.options\nactive_pcr_banks = sha256\n",
                    localca_conf.display()
                ),
            )
            .map_err(|e| e.to_string())?;
            manufacture(&state, &setup_conf, true).map_err(|e| e.0)?;
            Ok(Template { root, setup_conf, state })
        })
        .as_ref()
        .map_err(|e| err(e.clone()))
}

fn manufacture(state: &Path, setup_conf: &Path, ek_certificate: bool) -> Result<(), HarnessError> {
    let certificates: &[&str] = if ek_certificate { &["--create-ek-cert", "--create-platform-cert"] } else { &[] };
    let out = Command::new("swtpm_setup")
        .args(["--tpm2", "--tpmstate"])
        .arg(state)
        .arg("--createek")
        .args(certificates)
        .args(["--lock-nvram", "--overwrite", "--config"])
        .arg(setup_conf)
        .output()
        .map_err(|e| err(format!("running swtpm_setup (is swtpm-tools installed?): {e}")))?;
    if !out.status.success() {
        return Err(err(format!(
            "swtpm_setup failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(())
}

/// Two adjacent free loopback ports (P for the TPM, P+1 for the control channel).
fn free_port_pair() -> Option<u16> {
    for _ in 0..64 {
        let a = TcpListener::bind(("127.0.0.1", 0)).ok()?;
        let p = a.local_addr().ok()?.port();
        if p == u16::MAX {
            continue;
        }
        if TcpListener::bind(("127.0.0.1", p + 1)).is_ok() {
            return Some(p);
        }
    }
    None
}

impl Swtpm {
    /// Starts a swtpm with a copy of this test binary's manufactured TPM state (same EK as every other
    /// [`Swtpm::start`] in the process; fresh PCRs, NV and persistent handles).
    pub fn start() -> Result<Self, HarnessError> {
        let t = template()?;
        let dir = Self::new_dir(t)?;
        let from = t.state.join("tpm2-00.permall");
        std::fs::copy(&from, dir.join("tpm2-00.permall")).map_err(|e| err(format!("{}: {e}", from.display())))?;
        Self::run(dir)
    }

    /// Starts a swtpm manufactured for itself (its own endorsement seed and EK; certificate from the same CA).
    pub fn start_unique() -> Result<Self, HarnessError> {
        let t = template()?;
        let dir = Self::new_dir(t)?;
        manufacture(&dir, &t.setup_conf, true)?;
        Self::run(dir)
    }

    /// Starts a swtpm whose EK has no certificate (as AWS's NitroTPM): a copy of a second template, with the
    /// same endorsement seed among such TPMs of the process.
    pub fn start_without_ek_certificate() -> Result<Self, HarnessError> {
        let t = template()?;
        let state = TEMPLATE_WITHOUT_EK_CERTIFICATE
            .get_or_init(|| {
                let state = t.root.join("template-without-ek-certificate");
                std::fs::create_dir_all(&state).map_err(|e| format!("{}: {e}", state.display()))?;
                manufacture(&state, &t.setup_conf, false).map_err(|e| e.0)?;
                Ok(state)
            })
            .as_ref()
            .map_err(|e| err(e.clone()))?;
        let dir = Self::new_dir(t)?;
        let from = state.join("tpm2-00.permall");
        std::fs::copy(&from, dir.join("tpm2-00.permall")).map_err(|e| err(format!("{}: {e}", from.display())))?;
        Self::run(dir)
    }

    fn new_dir(t: &Template) -> Result<PathBuf, HarnessError> {
        let dir = t.root.join(format!("tpm-{}", INSTANCE.fetch_add(1, Ordering::Relaxed)));
        std::fs::create_dir_all(&dir).map_err(|e| err(format!("{}: {e}", dir.display())))?;
        Ok(dir)
    }

    fn run(dir: PathBuf) -> Result<Self, HarnessError> {
        let mut last = String::new();
        // A port found free can be taken before swtpm binds it; try a few pairs.
        for _ in 0..5 {
            let port = free_port_pair().ok_or_else(|| err("no free loopback port pair"))?;
            let pid_file = dir.join("swtpm.pid");
            let _ = std::fs::remove_file(&pid_file);
            let out = Command::new("swtpm")
                .args(["socket", "--tpm2", "--tpmstate"])
                .arg(format!("dir={}", dir.display()))
                .args(["--server", &format!("type=tcp,port={port},bindaddr=127.0.0.1")])
                .args(["--ctrl", &format!("type=tcp,port={},bindaddr=127.0.0.1", port + 1)])
                .args(["--flags", "not-need-init,startup-clear", "--daemon", "--pid"])
                .arg(format!("file={}", pid_file.display()))
                .args(["--log"])
                .arg(format!("file={},level=1", dir.join("swtpm.log").display()))
                .output()
                .map_err(|e| err(format!("running swtpm (is swtpm installed?): {e}")))?;
            if !out.status.success() {
                last = format!("swtpm failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr));
                continue;
            }
            let pid = wait_for_pid(&pid_file)?;
            let me = Self { dir, port, pid };
            me.wait_ready()?;
            return Ok(me);
        }
        let _ = std::fs::remove_dir_all(&dir);
        Err(err(last))
    }

    fn wait_ready(&self) -> Result<(), HarnessError> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if TcpStream::connect(("127.0.0.1", self.port + 1)).is_ok() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(err(format!("swtpm on port {} did not come up", self.port)));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Power-cycles the TPM, as a reboot of its machine would: stops this swtpm and starts a new one on the
    /// same state directory (same EK, persistent AK and NV; PCRs reset by `startup-clear`). Close every
    /// connection to it first.
    pub fn reboot(self) -> Result<Swtpm, HarnessError> {
        stop_process(self.pid);
        let dir = self.dir.clone();
        // The state directory outlives this process: skip `Drop`, which would remove it.
        std::mem::forget(self);
        Self::run(dir)
    }

    /// The TCTI string for tss-esapi: `swtpm:host=127.0.0.1,port=P`.
    pub fn tcti(&self) -> String {
        format!("swtpm:host=127.0.0.1,port={}", self.port)
    }

    /// The TPM command port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The swtpm process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// This TPM's state directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The local CA directory (`swtpm-localca-rootca-cert.pem`, `issuercert.pem`) that signed the EK
    /// certificates of every TPM in this process.
    pub fn ca_dir() -> Result<PathBuf, HarnessError> {
        Ok(template()?.root.join("ca"))
    }

    /// A `tpm2-tools` command with `TPM2TOOLS_TCTI` pointing at this TPM. The TPM serves one connection at
    /// a time, so drop any open `Tpm` for this swtpm first.
    pub fn tpm2_tool(&self, tool: &str) -> Command {
        let mut c = Command::new(tool);
        c.env("TPM2TOOLS_TCTI", self.tcti());
        c
    }
}

fn wait_for_pid(pid_file: &Path) -> Result<u32, HarnessError> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(pid) = std::fs::read_to_string(pid_file).ok().and_then(|s| s.trim().parse().ok()) {
            return Ok(pid);
        }
        if Instant::now() > deadline {
            return Err(err(format!("swtpm wrote no pid file {}", pid_file.display())));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Whether process `pid` is still running (a zombie waiting for its reaper counts as gone).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state is the first field after the parenthesized command name.
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

fn stop_process(pid: u32) {
    let _ = Command::new("kill").args(["-TERM", &pid.to_string()]).status();
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    if alive(pid) {
        let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
    }
}

impl Drop for Swtpm {
    fn drop(&mut self) {
        stop_process(self.pid);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Whether a device node exists; prints `SKIP: <path> not present` when it does not.
pub fn device_present(path: &str) -> bool {
    if Path::new(path).exists() {
        true
    } else {
        println!("SKIP: {path} not present");
        false
    }
}

/// Helpers shared by the swtpm, registration and device tests.
pub mod support {
    use attest_engine::UnixTime;
    use attest_engine::tpm::{AkPublic, EccCurve, TpmtPublic};
    use attest_engine::variant::{AkRegistry, Validator, Variant};
    use std::sync::Arc;

    /// A `qemu-vtpm` validator trusting the AKs of `registry` and expecting `expected` (built by the validator
    /// factory, as every consumer builds it).
    pub fn validator(registry: Arc<dyn AkRegistry>, expected: impl Into<attest_trust::Expected>) -> Validator {
        let factory = attest_trust::ValidatorFactory { ak_registry: Some(registry), ..Default::default() };
        factory.validator(Variant::QemuVtpm, expected.into()).expect("a qemu-vtpm validator with a registry")
    }

    /// How a node verifies a `qemu-vtpm` join service that attests with `issuer`'s TPM: its PCRs 0–7 as they
    /// are now (a freshly started swtpm's, the same on every TPM here), its AK by credential activation
    /// against `ek_ca`.
    #[track_caller]
    pub fn join_service_trust(
        issuer: &attest_attester::issuer::QemuVtpmIssuer,
        ek_ca: attest_registration::EkCaBundle,
    ) -> Arc<attest_bootstrapper::JoinServiceTrust> {
        use attest_attester::tpm::PcrMask;
        let pcrs = issuer.with_tpm(|tpm, _| tpm.read_pcrs(PcrMask::from_indices(&[0, 1, 2, 3, 4, 5, 6, 7]).unwrap()));
        let pcrs = pcrs.unwrap();
        let entries: Vec<String> = (0u8..8)
            .map(|i| {
                format!("\"{i}\": {{\"expected\": \"{}\", \"warnOnly\": false}}", hex::encode(pcrs.get(i).unwrap()))
            })
            .collect();
        let document = attest_measurements::parse_document(format!("{{{}}}", entries.join(", ")).as_bytes()).unwrap();
        let trust = Arc::new(attest_trust::Trust {
            measurements: attest_trust::SignatureState::Verified,
            launch: vec![(Variant::QemuVtpm, attest_engine::LaunchPinning::NotApplicable)],
            revocation: None,
        });
        Arc::new(
            attest_bootstrapper::JoinServiceTrust::new(
                &[Variant::QemuVtpm],
                &document,
                &attest_trust::ValidatorFactory::default(),
                Some(ek_ca),
                trust,
            )
            .unwrap(),
        )
    }

    /// The system clock as the engine's trusted time.
    pub fn now() -> UnixTime {
        let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        UnixTime::from_secs(secs)
    }

    /// 32 random bytes.
    pub fn random32() -> [u8; 32] {
        let mut b = [0u8; 32];
        openssl::rand::rand_bytes(&mut b).expect("RAND_bytes");
        b
    }

    /// A fresh self-signed CA certificate (PEM, RSA-2048, `CN=not the swtpm CA`, valid from now for a day)
    /// that no swtpm EK certificate chains to: the untrusted EK CA of the registration refusal tests.
    #[track_caller]
    pub fn foreign_ca_pem() -> Vec<u8> {
        use openssl::x509::{X509Builder, X509NameBuilder};
        let key = openssl::pkey::PKey::from_rsa(openssl::rsa::Rsa::generate(2048).unwrap()).unwrap();
        let mut name = X509NameBuilder::new().unwrap();
        name.append_entry_by_text("CN", "not the swtpm CA").unwrap();
        let name = name.build();
        let mut b = X509Builder::new().unwrap();
        b.set_version(2).unwrap();
        b.set_subject_name(&name).unwrap();
        b.set_issuer_name(&name).unwrap();
        b.set_pubkey(&key).unwrap();
        b.set_not_before(&openssl::asn1::Asn1Time::days_from_now(0).unwrap()).unwrap();
        b.set_not_after(&openssl::asn1::Asn1Time::days_from_now(1).unwrap()).unwrap();
        b.append_extension(openssl::x509::extension::BasicConstraints::new().critical().ca().build().unwrap()).unwrap();
        b.sign(&key, openssl::hash::MessageDigest::sha256()).unwrap();
        b.build().to_pem().unwrap()
    }

    /// The AK of a TPM2B_PUBLIC as a PEM SubjectPublicKeyInfo (what `tpm2_checkquote -u` reads).
    #[track_caller]
    pub fn ak_pem(tpm2b_public: &[u8]) -> Vec<u8> {
        use openssl::bn::{BigNum, BigNumContext};
        let tpmt = TpmtPublic::parse_tpm2b(tpm2b_public).expect("AK TPM2B_PUBLIC");
        let key = match tpmt.key() {
            AkPublic::Rsa { modulus, exponent } => {
                let rsa = openssl::rsa::Rsa::from_public_components(
                    BigNum::from_slice(modulus).unwrap(),
                    BigNum::from_u32(exponent).unwrap(),
                )
                .unwrap();
                openssl::pkey::PKey::from_rsa(rsa).unwrap()
            }
            AkPublic::Ecc { curve, x, y } => {
                let nid = match curve {
                    EccCurve::P256 => openssl::nid::Nid::X9_62_PRIME256V1,
                    EccCurve::P384 => openssl::nid::Nid::SECP384R1,
                };
                let group = openssl::ec::EcGroup::from_curve_name(nid).unwrap();
                let mut ctx = BigNumContext::new().unwrap();
                let mut point = openssl::ec::EcPoint::new(&group).unwrap();
                point
                    .set_affine_coordinates_gfp(
                        &group,
                        &BigNum::from_slice(x).unwrap(),
                        &BigNum::from_slice(y).unwrap(),
                        &mut ctx,
                    )
                    .unwrap();
                let ec = openssl::ec::EcKey::from_public_key(&group, &point).unwrap();
                openssl::pkey::PKey::from_ec_key(ec).unwrap()
            }
        };
        key.public_key_to_pem().unwrap()
    }
}
