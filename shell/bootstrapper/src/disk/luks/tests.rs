//! LUKS disk tests: command construction, a fake cryptsetup that records what it is given, and the real
//! `cryptsetup` on a file (header, keyslot, token; no device mapper needed).

use super::*;
use crate::life::state::{Phase, Role};

fn state() -> NodeState {
    NodeState {
        version: STATE_FORMAT_VERSION,
        role: Role::Worker,
        measurement_salt: [1; 32],
        cluster_id: [2; 32],
        disk_uuid: "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9".into(),
        phase: Phase::Bootstrapped,
        dry_run: false,
        disk_protection: None,
        last_refusal: None,
    }
}

fn strings(c: &CommandLine) -> Vec<String> {
    c.args.iter().map(|a| a.to_string_lossy().into_owned()).collect()
}

#[test]
fn commands_keep_the_key_off_the_command_line() {
    let uuid = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
    let d = LuksDisk::new(Path::new("/dev/vdb")).with_integrity(Integrity::Available).with_mapper_name("state");
    let f = d.format_command(uuid);
    assert_eq!(f.program, PathBuf::from("cryptsetup"));
    assert_eq!(
        strings(&f).join(" "),
        format!(
            "luksFormat --type luks2 --batch-mode --cipher aes-xts-plain64 --key-size 512 --pbkdf pbkdf2 \
             --pbkdf-force-iterations 1000 --integrity hmac-sha256 --integrity-no-wipe --uuid {uuid} --key-file - /dev/vdb"
        )
    );
    assert!(f.stdin_key);
    let no = LuksDisk::new(Path::new("/dev/vdb")).with_integrity(Integrity::Unavailable("test"));
    assert!(!strings(&no.format_command(uuid)).contains(&"--integrity".to_owned()));
    assert!(no.protection().contains("NO integrity protection: test"), "{}", no.protection());
    assert!(d.protection().contains("integrity hmac-sha256"));
    assert_eq!(strings(&d.open_command()), ["open", "--type", "luks2", "--key-file", "-", "/dev/vdb", "state"]);
    assert!(d.open_command().stdin_key);
    let h = LuksDisk::header_only(Path::new("/img"));
    assert_eq!(strings(&h.open_command()), ["open", "--test-passphrase", "--type", "luks2", "--key-file", "-", "/img"]);
    assert!(!strings(&h.format_command(uuid)).contains(&"--integrity".to_owned()), "header-only maps nothing");
    assert!(h.protection().contains("NOT encrypted"));
    assert!(!d.is_luks_command().stdin_key && !d.token_export_command().stdin_key);
    assert!(d.token_import_command().stdin_key);
    assert_eq!(strings(&d.uuid_command()), ["luksUUID", "/dev/vdb"]);
}

/// A fake cryptsetup (a shell script) records its arguments and standard input: the key arrives on stdin
/// and nowhere in the arguments; a fresh setup formats, a reopen never does.
#[test]
fn setup_and_reopen_with_a_fake_cryptsetup() {
    let tmp = attest_test_support::TempDir::new("luks-fake");
    let dir = tmp.path();
    let script = dir.join("cryptsetup");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nD={d}\necho \"$@\" >> $D/args\ncase \"$1\" in\n  isLuks) test -f $D/formatted ;;\n  \
             luksFormat) cat > $D/format-key; touch $D/formatted ;;\n  open) cat > $D/open-key ;;\n  \
             luksUUID) echo 0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9 ;;\n  \
             token) echo 'Failed to get token 31 for export.' >&2; exit 1 ;;\n  *) exit 1 ;;\nesac\n",
            d = dir.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let disk = LuksDisk::header_only(Path::new("/dev/fake")).with_cryptsetup(&script);
    assert!(matches!(disk.reopen(&[1; 32]), Err(DiskError::NotBootstrapped { .. })), "nothing to reopen yet");
    let uuid = disk.disk_uuid().unwrap();
    assert!(is_uuid(&uuid));
    assert_eq!(disk.disk_uuid().unwrap(), uuid, "stable before formatting");
    let key = [0xA5u8; 32];
    let report = disk.setup(&key).unwrap();
    assert!(report.contains("formatted"), "{report}");
    assert_eq!(std::fs::read(dir.join("format-key")).unwrap(), key);
    assert_eq!(std::fs::read(dir.join("open-key")).unwrap(), key);
    let args = std::fs::read_to_string(dir.join("args")).unwrap();
    assert!(args.contains(&format!("--uuid {uuid} --key-file - /dev/fake")), "{args}");
    assert!(!args.contains(&hex::encode(key)) && !args.contains('\u{a5}'));
    // Formatted now: the UUID comes from the header; reopen opens and never formats.
    assert_eq!(disk.disk_uuid().unwrap(), "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9");
    let before = std::fs::read_to_string(dir.join("args")).unwrap().matches("luksFormat").count();
    assert!(disk.reopen(&key).unwrap().contains("the key opens"));
    assert_eq!(std::fs::read_to_string(dir.join("args")).unwrap().matches("luksFormat").count(), before);
    // No token 31 (the fake fails `token export`): no recorded state.
    assert_eq!(disk.header_state().unwrap(), HeaderState::Absent);
}

/// The real cryptsetup on a 20 MiB file: header, keyslot (PBKDF2), the node state in token 31, the key
/// checked with `open --test-passphrase`, a wrong key refused, and a reset that leaves a fresh disk.
#[test]
fn real_cryptsetup_on_a_file() {
    if crate::cluster::process::find_on_path("cryptsetup").is_none() {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "cryptsetup is missing (scripts/setup.sh installs it)");
        eprintln!("NOTICE: cryptsetup not installed; skipping the real LUKS2 header test");
        return;
    }
    let tmp = attest_test_support::TempDir::new("luks-real");
    let image = tmp.path().join("disk.img");
    std::fs::File::create(&image).unwrap().set_len(20 * 1024 * 1024).unwrap();
    let disk = LuksDisk::header_only(&image);
    assert_eq!(disk.header_state().unwrap(), HeaderState::Absent);
    let uuid = disk.disk_uuid().unwrap();
    let key = [0x5Au8; 32];
    disk.setup(&key).unwrap();
    assert_eq!(disk.disk_uuid().unwrap(), uuid, "formatted with the UUID the key was derived for");
    let mut s = state();
    s.disk_uuid.clone_from(&uuid);
    disk.record_state(&s).unwrap();
    assert_eq!(disk.header_state().unwrap(), HeaderState::Present(s.clone()));
    s.phase = Phase::Failed;
    disk.record_state(&s).unwrap();
    assert_eq!(disk.header_state().unwrap(), HeaderState::Present(s), "token replaced");
    disk.reopen(&key).unwrap();
    match disk.reopen(&[0x5B; 32]) {
        Err(DiskError::Command { action: "open", status, stderr }) => {
            assert_eq!(status.code(), Some(2), "{stderr}");
        }
        other => panic!("a wrong key must be refused: {other:?}"),
    }
    let header = std::fs::read(&image).unwrap();
    assert!(!header.windows(32).any(|w| w == key), "the key itself is not in the header");
    disk.reset().unwrap();
    assert_eq!(disk.header_state().unwrap(), HeaderState::Absent);
    assert!(disk.reopen(&key).is_err(), "keyslots erased");
    // A fresh setup after the reset works with a new key.
    disk.setup(&[0x77; 32]).unwrap();
    disk.reopen(&[0x77; 32]).unwrap();

    // A disk that cannot be read is an error, never a fresh disk (which the next step would format).
    let gone = LuksDisk::header_only(&tmp.path().join("missing.img"));
    assert!(
        matches!(gone.header_state(), Err(DiskError::Command { action: "isLuks", .. })),
        "{:?}",
        gone.header_state()
    );
    assert!(gone.disk_uuid().is_err());
}

#[test]
fn mounts_are_read_with_the_kernels_escapes() {
    let mounts = "/dev/vda1 / ext4 rw 0 0\n/dev/mapper/state /var/lib/attest ext4 rw 0 0\n\
                  tmpfs /run/with\\040space tmpfs rw 0 0\n";
    assert!(mounted_at(mounts, Path::new("/var/lib/attest")));
    assert!(mounted_at(mounts, Path::new("/run/with space")));
    assert!(!mounted_at(mounts, Path::new("/var/lib")));
    assert!(!mounted_at("", Path::new("/")));
}
