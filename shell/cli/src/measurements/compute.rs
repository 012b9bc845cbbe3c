//! `attest measurements compute` and `attest measurements merge`: reference values from the image, and the
//! accepted sets of a rolling upgrade.
//!
//! ```text
//!  compute: UKI (+ systemd-boot, load options,                                                     ┐
//!           credentials, sysexts)             ─► attest-reference ─► PCRs 4, 9, 11, 12, 13 (+ 15 = 0)│
//!           UKI in a TD (+ systemd-boot, disk) ─► RTMR1, RTMR2 (qemu-tdx: measurements 2, 3; + 4)     │
//!           OVMF + vCPUs + vCPU type + VMM    ─► SEV-SNP launch MEASUREMENT (for the SNP policy)    ├─► list-form file,
//!           TDVF                              ─► MRTD (qemu-tdx: measurement 0)                     ┘   one entry for
//!                                                                                                      (CSP, variant, image)
//!  merge:   list files (PATH or PATH=IMAGE) ─► one list, every set kept ─► --drop IMAGE … ─► file to sign
//! ```
//!
//! The written file is a Constellation-compatible release list; `--json` prints every event, digest and
//! launch step that went in (with the file itself under `"measurements"`). Unusable input — an unreadable
//! file, a PE image that is truncated or has overlapping sections or a bogus certificate table, a UKI
//! without `.linux`, an OVMF without SEV metadata — is reported with its typed reason and exits 2.

use super::super::{Status, UsageError};
use attest_engine::crypto::{HashAlgorithm, default_provider};
use attest_measurements::{
    AttestationVariant, Csp, Document, Measurement, Measurements, PcrIndex, ReleaseEntry, ReleaseMeasurements,
};
use attest_reference::boot::{self, BootConfig};
use attest_reference::cpio::MAX_ESP_FILES;
use attest_reference::snp::{self, KernelHashes, SnpLaunch, Vmm};
use attest_reference::{EspFile, Event, Ovmf, StubVersion, Uki, tdx};
use clap::Args;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

/// Largest image or firmware file read (1 GiB: a UKI with a large initrd; firmware is far smaller).
pub const MAX_IMAGE_FILE_SIZE: u64 = 1 << 30;

/// `compute` arguments.
#[derive(Debug, Args)]
pub struct ComputeArgs {
    /// Attestation variant of the entry (qemu-vtpm, aws-sev-snp, gcp-sev-snp, azure-sev-snp, qemu-tdx, …).
    #[arg(long)]
    pub variant: String,
    /// Cloud provider of the entry (default: the variant's; QEMU for qemu-vtpm).
    #[arg(long)]
    pub csp: Option<String>,
    /// The image's label in the file (`"image"`): how a rolling upgrade tells its sets apart.
    #[arg(long)]
    pub image: Option<String>,
    /// The unified kernel image the node boots (PCRs 4, 9, 11, 12).
    #[arg(long)]
    pub uki: Option<PathBuf>,
    /// A boot loader (systemd-boot) the firmware starts before the UKI.
    #[arg(long)]
    pub boot_loader: Option<PathBuf>,
    /// Load options the UKI is started with (they replace .cmdline and are measured into PCR 12).
    #[arg(long)]
    pub load_options: Option<String>,
    /// A credential systemd-stub finds in the UKI's drop-in directory (`<uki>.efi.extra.d/NAME.cred`;
    /// repeatable): measured into PCR 12 and the initrd.
    #[arg(long = "credential")]
    pub credentials: Vec<PathBuf>,
    /// A credential in the ESP's `\loader\credentials\NAME.cred` (repeatable).
    #[arg(long = "global-credential")]
    pub global_credentials: Vec<PathBuf>,
    /// A system extension image in the UKI's drop-in directory (`NAME.raw`; repeatable): measured into
    /// PCR 13 and the initrd.
    #[arg(long = "sysext")]
    pub sysexts: Vec<PathBuf>,
    /// TD variants: the raw boot disk image, whose GPT the firmware measures into RTMR1 (without it, a boot
    /// device with no GPT is assumed).
    #[arg(long)]
    pub disk: Option<PathBuf>,
    /// The stub's version when its .sdmagic does not say (252).
    #[arg(long)]
    pub stub: Option<String>,
    /// PCR banks to compute (sha256, sha384; repeatable). The file holds the first.
    #[arg(long = "bank", default_values_t = ["sha256".to_owned()])]
    pub banks: Vec<String>,
    /// Also expect the node lock's register to be zero (a node not yet bound to a cluster, as the join
    /// service's default): PCR 15, or on qemu-tdx RTMR3 (measurement 4).
    #[arg(long)]
    pub pcr15_zero: bool,
    /// SEV-SNP: the OVMF build (with SEV metadata) the guest is launched with.
    #[arg(long)]
    pub ovmf: Option<PathBuf>,
    /// SEV-SNP: number of vCPUs.
    #[arg(long)]
    pub vcpus: Option<u32>,
    /// SEV-SNP: QEMU vCPU type (EPYC, EPYC-v4, EPYC-Milan, EPYC-Genoa, …).
    #[arg(long)]
    pub vcpu_type: Option<String>,
    /// SEV-SNP: the vCPUs' CPUID signature instead of a type (hex, 0x… ).
    #[arg(long)]
    pub vcpu_signature: Option<String>,
    /// SEV-SNP: the hypervisor (qemu, ec2, gce).
    #[arg(long, default_value = "qemu")]
    pub vmm: String,
    /// SEV-SNP: SEV_FEATURES of the VMSA (hex).
    #[arg(long, default_value = "0x1")]
    pub guest_features: String,
    /// SEV-SNP direct kernel boot (AmdSev OVMF builds): the kernel QEMU hashes into the firmware.
    #[arg(long)]
    pub kernel: Option<PathBuf>,
    /// SEV-SNP direct kernel boot: the initrd.
    #[arg(long)]
    pub initrd: Option<PathBuf>,
    /// SEV-SNP direct kernel boot: the command line.
    #[arg(long)]
    pub append: Option<String>,
    /// TDX: the TDVF build (qemu-tdx: MRTD becomes measurement 0).
    #[arg(long)]
    pub tdvf: Option<PathBuf>,
    /// The release version written at the top of the file.
    #[arg(long = "release-version", default_value = "-")]
    pub release_version: String,
    /// The image reference written at the top of the file.
    #[arg(long = "ref", default_value = "-")]
    pub reference: String,
    /// The stream written at the top of the file.
    #[arg(long, default_value = "custom")]
    pub stream: String,
    /// Write the predicted TCG event log (crypto-agile, every bank) here.
    #[arg(long)]
    pub event_log: Option<PathBuf>,
    /// Write the measurements file here (default: standard output, unless --json).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Print every event, digest and launch step as JSON.
    #[arg(long)]
    pub json: bool,
    /// Threads to hash on (default: the machine's).
    #[arg(long)]
    pub threads: Option<usize>,
}

/// `merge` arguments.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Input files, each `PATH` or `PATH=IMAGE` (IMAGE labels the file's unlabelled entries; a map-form
    /// file becomes one entry per --variant).
    #[arg(required = true)]
    pub inputs: Vec<String>,
    /// Remove the sets labelled IMAGE (repeatable; the end of a rollout).
    #[arg(long = "drop")]
    pub drop: Vec<String>,
    /// Attestation variant(s) of map-form inputs (repeatable: a map applies to each; e.g. the nodes' variant
    /// and the join service's).
    #[arg(long = "variant")]
    pub variants: Vec<String>,
    /// Cloud provider of map-form inputs (default: each variant's).
    #[arg(long)]
    pub csp: Option<String>,
    /// Write the result here (default: standard output).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

fn read_image(path: &Path, what: &str) -> Result<Vec<u8>, UsageError> {
    let err = |e: std::io::Error| UsageError::new(format!("cannot read {what} {}: {e}", path.display()));
    let meta = std::fs::metadata(path).map_err(err)?;
    if !meta.is_file() || meta.len() > MAX_IMAGE_FILE_SIZE {
        return Err(UsageError::new(format!(
            "{what} {} is not a regular file of at most {MAX_IMAGE_FILE_SIZE} bytes",
            path.display()
        )));
    }
    std::fs::read(path).map_err(err)
}

fn bad(path: &Path) -> impl Fn(attest_reference::Error) -> UsageError + '_ {
    move |e| UsageError::new(format!("{}: {e}", path.display()))
}

/// The entry's (CSP, variant): `--csp` or the variant's own CSP (QEMU for qemu-vtpm).
/// Whether `variant`'s measurements are its TD registers (0 = MRTD, 1–4 = RTMR0–3) rather than PCRs, as the
/// engine's variant table says; a Constellation variant the engine does not know is measured by PCRs.
fn td_registers(variant: &str) -> bool {
    use attest_engine::variant::{Measured, Variant};
    Variant::from_name(variant).is_some_and(|v| v.info().measured == Measured::TdRegisters)
}

fn csp_variant(variant: &str, csp: Option<&str>) -> Result<(Csp, AttestationVariant), UsageError> {
    let v = AttestationVariant::from_name(variant).map_err(|e| UsageError::new(format!("--variant: {e}")))?;
    let c = match csp {
        Some(c) => Csp::from_name(c).map_err(|e| UsageError::new(format!("--csp: {e}")))?,
        None if v.runs_on(Csp::Qemu) => Csp::Qemu,
        None => *Csp::ALL.iter().find(|c| v.runs_on(**c)).unwrap_or(&Csp::Qemu),
    };
    if !v.runs_on(c) {
        return Err(UsageError::new(format!("attestation variant {v} cannot run on {c}")));
    }
    Ok((c, v))
}

fn bank(name: &str) -> Result<HashAlgorithm, UsageError> {
    match name.to_ascii_lowercase().as_str() {
        "sha256" => Ok(HashAlgorithm::Sha256),
        "sha384" => Ok(HashAlgorithm::Sha384),
        _ => Err(UsageError::new(format!("--bank {name}: sha256 or sha384"))),
    }
}

fn hex_u64(what: &str, text: &str) -> Result<u64, UsageError> {
    u64::from_str_radix(text.trim_start_matches("0x"), 16).map_err(|_| UsageError::new(format!("{what}: not hex")))
}

fn event_type_name(t: u32) -> &'static str {
    match t {
        boot::event_type::SEPARATOR => "EV_SEPARATOR",
        boot::event_type::EFI_GPT_EVENT => "EV_EFI_GPT_EVENT",
        boot::event_type::EVENT_TAG => "EV_EVENT_TAG",
        boot::event_type::IPL => "EV_IPL",
        boot::event_type::EFI_BOOT_SERVICES_APPLICATION => "EV_EFI_BOOT_SERVICES_APPLICATION",
        boot::event_type::EFI_ACTION => "EV_EFI_ACTION",
        _ => "unknown",
    }
}

/// Bytes read from the start of a disk image for its GPT (the header at LBA 1, the entry array normally at
/// LBA 2; a table beyond this is reported as truncated).
const MAX_DISK_READ: u64 = 1 << 20;

/// The first [`MAX_DISK_READ`] bytes of a raw disk image (any size: only its GPT is read).
fn read_disk_start(path: &Path) -> Result<Vec<u8>, UsageError> {
    use std::io::Read as _;
    let err = |e: std::io::Error| UsageError::new(format!("cannot read disk image {}: {e}", path.display()));
    let mut start = Vec::new();
    std::fs::File::open(path).map_err(err)?.take(MAX_DISK_READ).read_to_end(&mut start).map_err(err)?;
    Ok(start)
}

/// Most bytes of ESP files of one kind read together (as one image: the stub puts them in one archive).
const MAX_ESP_FILES_SIZE: u64 = MAX_IMAGE_FILE_SIZE;

/// Reads ESP files given on the command line: (file name, contents).
fn read_esp_files(paths: &[PathBuf], what: &str) -> Result<Vec<(String, Vec<u8>)>, UsageError> {
    if paths.len() > MAX_ESP_FILES {
        return Err(UsageError::new(format!("more than {MAX_ESP_FILES} {what} files")));
    }
    let mut total = 0u64;
    let mut files = Vec::with_capacity(paths.len());
    for p in paths {
        let name = p
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| UsageError::new(format!("{what} {}: no UTF-8 file name", p.display())))?;
        let data = read_image(p, what)?;
        total += data.len() as u64;
        if total > MAX_ESP_FILES_SIZE {
            return Err(UsageError::new(format!("{what} files: more than {MAX_ESP_FILES_SIZE} bytes together")));
        }
        files.push((name.to_owned(), data));
    }
    Ok(files)
}

fn esp_files(files: &[(String, Vec<u8>)]) -> Vec<EspFile<'_>> {
    files.iter().map(|(name, data)| EspFile { name, data }).collect()
}

fn file_names(paths: &[PathBuf]) -> Vec<String> {
    paths.iter().map(|p| p.display().to_string()).collect()
}

/// Every event with its index under `key` (`pcr`, or `ccIndex` in a CC log), its register's name, type,
/// description and digest in every bank, for `--json`.
fn events_json(banks: &[HashAlgorithm], events: &[Event], key: &str, register: impl Fn(u8) -> String) -> Value {
    events
        .iter()
        .map(|e| {
            let digests: Map<String, Value> = banks
                .iter()
                .zip(&e.digests)
                .map(|(b, d)| (b.name().to_owned(), json!(hex::encode(d.as_bytes()))))
                .collect();
            let mut v = json!({"register": register(e.pcr), "type": event_type_name(e.event_type),
                   "typeCode": format!("{:#010x}", e.event_type), "description": e.description, "digests": digests});
            v[key] = json!(e.pcr);
            v
        })
        .collect()
}

fn write_out(path: &Path, data: &[u8]) -> Result<(), UsageError> {
    attest_util::fs::write_atomic(path, data, attest_util::fs::PUBLIC_FILE_MODE)
        .map_err(|e| UsageError::new(format!("cannot write {}: {e}", path.display())))
}

/// Runs `attest measurements compute`.
pub fn compute(a: &ComputeArgs) -> Result<Status, UsageError> {
    let provider = default_provider();
    let (csp, variant) = csp_variant(&a.variant, a.csp.as_deref())?;
    let threads = a.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from)).max(1);
    let banks = a.banks.iter().map(|b| bank(b)).collect::<Result<Vec<_>, _>>()?;
    let mut explain = Map::new();
    let mut map = Measurements::new();
    let put = |map: &mut Measurements, index: u32, value: &[u8]| -> Result<(), UsageError> {
        let m = Measurement::enforced(value).map_err(|e| UsageError::new(e.to_string()))?;
        let i = PcrIndex::new(index).map_err(|e| UsageError::new(e.to_string()))?;
        map.insert(i, m).map(|_| ()).map_err(|e| UsageError::new(e.to_string()))
    };

    if let Some(path) = &a.uki {
        let bytes = read_image(path, "UKI")?;
        let stub = match &a.stub {
            Some(s) => {
                Some(StubVersion::from_name(s).ok_or_else(|| UsageError::new(format!("--stub {s}: known: 252")))?)
            }
            None => None,
        };
        let uki = Uki::parse(&bytes, stub).map_err(bad(path))?;
        let loader = match &a.boot_loader {
            Some(p) => Some((read_image(p, "boot loader")?, p)),
            None => None,
        };
        let credentials = read_esp_files(&a.credentials, "credential")?;
        let global_credentials = read_esp_files(&a.global_credentials, "global credential")?;
        let sysexts = read_esp_files(&a.sysexts, "system extension")?;
        let config = BootConfig {
            banks: banks.clone(),
            boot_loader: loader.as_ref().map(|(b, _)| b.as_slice()),
            load_options: a.load_options.as_deref(),
            credentials: esp_files(&credentials),
            global_credentials: esp_files(&global_credentials),
            sysexts: esp_files(&sysexts),
            threads,
        };
        let sections: Vec<Value> = uki
            .pe()
            .sections()
            .iter()
            .map(|s| json!({"name": s.name().to_string(), "virtualAddress": s.virtual_address(), "size": s.loaded().len()}))
            .collect();
        let mut described = json!({"file": path.display().to_string(), "stub": uki.stub().name(), "sections": sections,
               "bootLoader": loader.as_ref().map(|(_, p)| p.display().to_string()), "loadOptions": a.load_options,
               "credentials": file_names(&a.credentials), "globalCredentials": file_names(&a.global_credentials),
               "sysexts": file_names(&a.sysexts)});
        if td_registers(&a.variant) {
            let disk = a.disk.as_ref().map(|d| read_disk_start(d)).transpose()?;
            let prediction = tdx::predict_rtmrs(provider, &uki, &config, disk.as_deref()).map_err(bad(path))?;
            for rtmr in tdx::PREDICTED_RTMRS {
                put(&mut map, u32::from(tdx::cc_index(rtmr)), &prediction.rtmr(provider, rtmr))?;
            }
            if let Some(out) = &a.event_log {
                write_out(out, &prediction.to_cc_event_log())?;
            }
            let rtmrs: Map<String, Value> = tdx::PREDICTED_RTMRS
                .iter()
                .map(|&r| (format!("RTMR{r}"), json!(hex::encode(prediction.rtmr(provider, r)))))
                .collect();
            described["disk"] = json!(a.disk.as_ref().map(|d| d.display().to_string()));
            described["events"] = events_json(&[HashAlgorithm::Sha384], &prediction.events, "ccIndex", |i| {
                format!("RTMR{}", i.saturating_sub(1))
            });
            described["rtmrs"] = Value::Object(rtmrs);
            described["notPredicted"] = json!({
                "RTMR0": "the VMM's configuration (TD HOB, ACPI tables, UEFI variables, boot order), not the image's: pin it from a booted TD",
                "RTMR3": "left to the OS: the node lock (--pcr15-zero expects it unbound)",
                "MRTD": "the firmware (--tdvf)"});
            explain.insert("tdRtmrs".into(), described);
        } else {
            if a.disk.is_some() {
                return Err(UsageError::new("--disk applies to TD variants (qemu-tdx): PCR 5 is not predicted"));
            }
            let prediction = boot::predict(provider, &uki, &config).map_err(bad(path))?;
            for &pcr in &prediction.pcrs {
                let value = prediction
                    .pcr(provider, banks[0], pcr)
                    .unwrap_or_else(|| attest_engine::crypto::Digest::zero(banks[0]));
                put(&mut map, u32::from(pcr), value.as_bytes())?;
            }
            if let Some(out) = &a.event_log {
                write_out(out, &prediction.to_event_log())?;
            }
            let pcrs: Map<String, Value> = prediction
                .banks
                .iter()
                .map(|&b| {
                    let values: Map<String, Value> = prediction
                        .pcrs
                        .iter()
                        .filter_map(|&p| {
                            prediction.pcr(provider, b, p).map(|v| (p.to_string(), json!(hex::encode(v.as_bytes()))))
                        })
                        .collect();
                    (b.name().to_owned(), Value::Object(values))
                })
                .collect();
            described["events"] = events_json(&prediction.banks, &prediction.events, "pcr", |i| format!("PCR{i}"));
            described["pcrs"] = Value::Object(pcrs);
            explain.insert("uki".into(), described);
        }
    } else if !(a.credentials.is_empty() && a.global_credentials.is_empty() && a.sysexts.is_empty()) || a.disk.is_some()
    {
        return Err(UsageError::new("--credential, --global-credential, --sysext and --disk need --uki"));
    }
    if a.pcr15_zero {
        // The node lock's register of the variant (PCR 15 with a vTPM; qemu-tdx: RTMR3, measurement 4).
        match attest_engine::variant::Variant::from_name(&a.variant).map(|v| v.info().lock) {
            Some(register @ attest_engine::variant::LockRegister::Rtmr(_)) => {
                put(&mut map, register.measurement_index(), register.unbound().as_bytes())?;
            }
            _ => put(&mut map, 15, attest_engine::crypto::Digest::zero(banks[0]).as_bytes())?,
        }
    }

    if let Some(path) = &a.ovmf {
        let bytes = read_image(path, "OVMF")?;
        let ovmf = Ovmf::parse(&bytes).map_err(bad(path))?;
        let vcpus = a.vcpus.ok_or_else(|| UsageError::new("--ovmf needs --vcpus"))?;
        let signature = match (&a.vcpu_type, &a.vcpu_signature) {
            (Some(t), None) => snp::vcpu_signature(t).ok_or_else(|| {
                let known: Vec<&str> = snp::VCPU_TYPES.iter().map(|(n, _)| *n).collect();
                UsageError::new(format!("--vcpu-type {t}: known: {}", known.join(", ")))
            })?,
            (None, Some(s)) => u32::try_from(hex_u64("--vcpu-signature", s)?)
                .map_err(|_| UsageError::new("--vcpu-signature: 32 bits"))?,
            _ => return Err(UsageError::new("--ovmf needs exactly one of --vcpu-type and --vcpu-signature")),
        };
        let vmm = Vmm::from_name(&a.vmm).ok_or_else(|| UsageError::new("--vmm: qemu, ec2 or gce"))?;
        let kernel_hashes = match &a.kernel {
            Some(k) => {
                let kernel = read_image(k, "kernel")?;
                let initrd = a.initrd.as_ref().map(|p| read_image(p, "initrd")).transpose()?;
                Some(KernelHashes::new(provider, &kernel, initrd.as_deref(), a.append.as_deref()))
            }
            None if a.initrd.is_some() || a.append.is_some() => {
                return Err(UsageError::new("--initrd and --append need --kernel"));
            }
            None => None,
        };
        let launch = SnpLaunch {
            ovmf: &ovmf,
            vcpus,
            vcpu_signature: signature,
            guest_features: hex_u64("--guest-features", &a.guest_features)?,
            vmm,
            kernel_hashes,
        };
        let digest = snp::launch_digest(provider, &launch, threads).map_err(bad(path))?;
        let steps: Vec<Value> = digest
            .steps
            .iter()
            .map(|s| json!({"what": s.what, "gpa": format!("{:#x}", s.gpa), "pages": s.pages, "digest": hex::encode(s.digest)}))
            .collect();
        let measurement = hex::encode(digest.measurement);
        explain.insert(
            "snp".into(),
            json!({"measurement": measurement, "vcpus": vcpus, "vcpuSignature": format!("{signature:#x}"),
                   "vmm": vmm.name(), "guestFeatures": format!("{:#x}", launch.guest_features),
                   "kernelHashes": launch.kernel_hashes.is_some(), "steps": steps,
                   "snpPolicy": format!("measurements = [\"{measurement}\"]")}),
        );
        if !a.json {
            eprintln!("SEV-SNP launch MEASUREMENT {measurement} (SNP policy: measurements = [\"{measurement}\"])");
        }
    }

    if let Some(path) = &a.tdvf {
        let bytes = read_image(path, "TDVF")?;
        let tdvf = Ovmf::parse(&bytes).map_err(bad(path))?;
        let mrtd = tdx::mrtd(provider, &tdvf).map_err(bad(path))?;
        if td_registers(&a.variant) {
            put(&mut map, 0, &mrtd)?;
        }
        explain.insert("tdx".into(), json!({"mrtd": hex::encode(mrtd), "checkedAgainstHardware": false}));
    }

    if map.is_empty() {
        if explain.contains_key("snp") {
            // An SNP launch alone: its value belongs in the SNP policy, not in a PCR file.
            if a.json {
                println!("{}", serde_json::to_string_pretty(&Value::Object(explain)).unwrap_or_default());
            }
            return Ok(Status::Accepted);
        }
        return Err(UsageError::new("nothing to compute: give --uki, --ovmf or --tdvf (or --pcr15-zero)"));
    }
    let entry = ReleaseEntry { csp, variant, measurements: map, image: a.image.clone() };
    let file = ReleaseMeasurements::new(a.release_version.clone(), a.reference.clone(), a.stream.clone(), vec![entry])
        .map_err(|e| UsageError::new(e.to_string()))?
        .to_json();
    if let Some(out) = &a.output {
        write_out(out, file.as_bytes())?;
    }
    if a.json {
        explain.insert("variant".into(), json!(variant.name()));
        explain.insert("csp".into(), json!(csp.name()));
        explain.insert("image".into(), json!(a.image));
        explain.insert("banks".into(), json!(banks.iter().map(|b| b.name()).collect::<Vec<_>>()));
        explain.insert("measurements".into(), serde_json::from_str(&file).unwrap_or(Value::Null));
        println!("{}", serde_json::to_string_pretty(&Value::Object(explain)).unwrap_or_default());
    } else if a.output.is_none() {
        print!("{file}");
    }
    Ok(Status::Accepted)
}

/// Runs `attest measurements merge`.
pub fn merge(a: &MergeArgs) -> Result<Status, UsageError> {
    let mut merged: Option<ReleaseMeasurements> = None;
    for input in &a.inputs {
        let (path, label) = match input.rsplit_once('=') {
            Some((p, l)) if !Path::new(input).exists() => (PathBuf::from(p), Some(l.to_owned())),
            _ => (PathBuf::from(input), None),
        };
        let bytes = super::super::input::read_file(&path, "measurements file")?;
        let fail = |e: attest_measurements::Error| UsageError::new(format!("{}: {e}", path.display()));
        let list = match attest_measurements::parse_document(&bytes).map_err(fail)? {
            Document::List(list) => {
                let entries = list
                    .entries()
                    .iter()
                    .cloned()
                    .map(|mut e| {
                        if e.image.is_none() {
                            e.image.clone_from(&label);
                        }
                        e
                    })
                    .collect();
                ReleaseMeasurements::new(list.version().into(), list.reference().into(), list.stream().into(), entries)
                    .map_err(fail)?
            }
            Document::Map(map) => {
                if a.variants.is_empty() {
                    return Err(UsageError::new(format!("{}: a map names no variant; give --variant", path.display())));
                }
                let mut entries = Vec::new();
                for variant in &a.variants {
                    let (csp, variant) = csp_variant(variant, a.csp.as_deref())?;
                    entries.push(ReleaseEntry { csp, variant, measurements: map.clone(), image: label.clone() });
                }
                ReleaseMeasurements::new("-".into(), "-".into(), "custom".into(), entries).map_err(fail)?
            }
        };
        merged = Some(match merged {
            None => list,
            Some(m) => m.merge(&list).map_err(fail)?,
        });
    }
    let mut merged = merged.ok_or_else(|| UsageError::new("no input"))?;
    for image in &a.drop {
        merged = merged.without_image(image).map_err(|e| UsageError::new(format!("--drop {image}: {e}")))?;
    }
    let text = merged.to_json();
    match &a.output {
        Some(out) => write_out(out, text.as_bytes())?,
        None => print!("{text}"),
    }
    for e in merged.entries() {
        eprintln!(
            "{} / {}: set {} ({} PCRs)",
            e.csp,
            e.variant,
            e.image.as_deref().unwrap_or("(unlabelled)"),
            e.measurements.len()
        );
    }
    Ok(Status::Accepted)
}
