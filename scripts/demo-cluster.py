#!/usr/bin/env python3
"""The main job: a local attested cluster bootstrap on loopback.

    make demo          (builds the release binaries and the test-root build for the SNP attacks, then runs this)
    python3 scripts/demo-cluster.py target/release [--snp-attacks target/simulated/release] [--keep]
    make demo VARIANT=aws-sev-snp   (azure-sev-snp, aws-sev-snp, gcp-sev-snp: SIMULATED SNP hardware with a
    python3 scripts/demo-cluster.py target/simulated/release --variant aws-sev-snp   test root; demo_variants.py)
    make demo VARIANT=qemu-tdx      (qemu-tdx, azure-tdx: SIMULATED Intel TDX, a TD per node, test root;
    python3 scripts/demo-cluster.py target/simulated/release --variant qemu-tdx      demo_variants.py)

A DRY RUN of Kubernetes: the nodes run the bootstrapper's dry-run backend (`--backend dry-run`: it writes
the kubeadm configuration and the cluster PKI but runs no kubeadm) and the join service writes its bootstrap
tokens as files (`--token-issuer dry-run`). Everything else is real: TPMs (swtpm), attestation, aTLS, the
key service over mutual TLS, keys, PCR 15 locks.

Starts, on 127.0.0.1 only:
  1. a measurements file for the "image" the nodes boot, signed with an operator key (ECDSA P-256);
  2. node-1: its own swtpm (EK certificate from a local EK CA), a simulated measured boot (PCRs 4, 8, 9
     extended with the "image" digests), and the bootstrapper (init server + join client);
  3. `attest init` against node-1: checks the measurements' signature, registers node-1's AK by credential
     activation, verifies node-1's aTLS attestation, sends the init request, streams the logs, writes
     kubeconfig, the master secret, cluster.json and the key-service PKI (the cluster-internal CA);
  4. the key service (kms.API over mutual TLS, only the join service's certificate admitted);
  5. the join service on node-1's hardware (mutual aTLS: it attests itself as node-1, with node-1's variant;
     AK registration, /metrics) with the cluster PKI node-1 created;
  6. node-2 and node-3, each with its own swtpm, EK certificate and the expected measurements: they
     register their AKs, verify the join service's attestation (qemu-vtpm: its AK by credential activation;
     the SNP variants: its SNP report, no EK certificate; its PCR 15 = the cluster), attest to it and join;
  7. node-bad, whose PCR 9 differs (a modified kernel): the join service refuses it with a clear reason;
  8. the attack section: attacks against the live cluster, each refused without partial state,
     ending in `attacks refused: N/N`;
  9. the node's later life (lifecycle()): node-4 joins the control plane (its first join endpoint is down,
     the second answers); node-2 reboots (swtpm restarted: PCRs reset; same TPM state and LUKS2 disk image)
     and rejoins with the same disk key from a verified join service; `attest verify --cluster-id` against
     node-2's verify service succeeds and fails with a wrong cluster id; a rolling upgrade (upgrade()):
     `attest measurements merge` rolls the signed measurements forward to accept image v1 and a new v2, the
     join service hot-reloads them, node-5 (v2) and node-6 (v1) both join, then v1 is dropped (re-signed)
     and node-6, rebooted, is refused on rejoin; the join service stops and node-1, rebooted, recovers
     through `attest recover`;
and prints a summary: who attested what, which checks ran, the keys derived (fingerprints only), the lock
state, timings. Every process it started is stopped by PID at the end, also on errors and Ctrl-C.

Python 3 standard library only. Exits 0 when everything behaved as expected, 1 otherwise.
"""

import base64
import hashlib
import hmac
import json
import os
import re
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

# The "image" a genuine node boots: digests measured into PCRs 4 (boot loader), 8 (kernel command line)
# and 9 (kernel + initrd), as a measured boot would extend them.
GOOD_IMAGE = {4: b"attest-demo boot loader v1", 8: b"attest-demo cmdline v1", 9: b"attest-demo kernel v1"}
# node-bad boots a different kernel.
BAD_IMAGE = {**GOOD_IMAGE, 9: b"attest-demo kernel v1 (patched)"}

READY_TIMEOUT = 60  # seconds for a process to print its address
JOIN_TIMEOUT = 120  # seconds for a node to join
REFUSAL_TIMEOUT = 60  # seconds for the join service to refuse node-bad

T0 = time.monotonic()


def log(msg):
    print(f"[{time.monotonic() - T0:6.1f}s] {msg}", flush=True)


class Failure(Exception):
    pass


class Processes:
    """Every process this script starts, stopped by PID at the end."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.procs = []  # (name, pid, Popen or None)

    def start(self, name, argv, env=None):
        out = open(self.workdir / f"{name}.out", "wb")
        err = open(self.workdir / f"{name}.log", "wb")
        p = subprocess.Popen(argv, stdout=out, stderr=err, env=env, start_new_session=True)
        self.procs.append((name, p.pid, p))
        return p

    def adopt(self, name, pid):
        self.procs.append((name, pid, None))

    def stop_all(self):
        for name, pid, p in reversed(self.procs):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
        deadline = time.monotonic() + 10
        for name, pid, p in reversed(self.procs):
            while alive(pid, p) and time.monotonic() < deadline:
                time.sleep(0.05)
            if alive(pid, p):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            if p is not None:
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
        stopped = [f"{name}({pid})" for name, pid, p in self.procs]
        self.procs = []
        return stopped


def alive(pid, popen=None):
    if popen is not None:
        return popen.poll() is None
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def wait_for_line(path, pattern, proc=None, timeout=READY_TIMEOUT):
    """Waits until a line of `path` matches `pattern`; returns the match."""
    rx = re.compile(pattern)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            for line in path.read_text(errors="replace").splitlines():
                m = rx.search(line)
                if m:
                    return m
        except FileNotFoundError:
            pass
        if proc is not None and proc.poll() is not None:
            raise Failure(f"{path.stem} exited ({proc.returncode}) before printing /{pattern}/; see {path.with_suffix('.log')}")
        time.sleep(0.05)
    raise Failure(f"timed out waiting for /{pattern}/ in {path}")


def wait_for_lines(path, pattern, count, proc=None, timeout=READY_TIMEOUT):
    """Waits until `count` lines of `path` match `pattern`; returns their first groups in order."""
    rx = re.compile(pattern)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            found = [m.group(1) for m in map(rx.search, path.read_text(errors="replace").splitlines()) if m]
        except FileNotFoundError:
            found = []
        if len(found) >= count:
            return found[:count]
        if proc is not None and proc.poll() is not None:
            raise Failure(f"{path.stem} exited ({proc.returncode}); see {path.with_suffix('.log')}")
        time.sleep(0.05)
    raise Failure(f"timed out waiting for {count} lines /{pattern}/ in {path}")


def free_port_pair():
    for _ in range(64):
        a = socket.socket()
        a.bind(("127.0.0.1", 0))
        port = a.getsockname()[1]
        b = socket.socket()
        try:
            b.bind(("127.0.0.1", port + 1))
        except OSError:
            a.close()
            continue
        a.close()
        b.close()
        return port
    raise Failure("no free loopback port pair")


def run(argv, **kw):
    r = subprocess.run(argv, capture_output=True, **kw)
    if r.returncode != 0:
        raise Failure(f"{' '.join(map(str, argv))} failed ({r.returncode}): {r.stderr.decode(errors='replace')}")
    return r


class EkCa:
    """swtpm's local CA (swtpm_localca) in a directory of our own: it signs every node's EK certificate.

    `certifies`: whether the simulated cloud gives its vTPMs EK certificates (not AWS's NitroTPM; the variant
    table says, through `attest-hwsim machine`). `for_join_service`: whether nodes verify the join service
    through its EK certificate (qemu-vtpm only: every other variant proves its AK in its evidence)."""

    def __init__(self, root):
        self.certifies = True
        self.for_join_service = True
        self.dir = root / "ek-ca"
        self.dir.mkdir(parents=True)
        localca = root / "swtpm-localca.conf"
        localca.write_text(
            f"statedir = {self.dir}\nsigningkey = {self.dir}/signkey.pem\n"
            f"issuercert = {self.dir}/issuercert.pem\ncertserial = {self.dir}/certserial\n"
        )
        self.setup_conf = root / "swtpm_setup.conf"
        self.setup_conf.write_text(
            "create_certs_tool = /usr/bin/swtpm_localca\n"
            f"create_certs_tool_config = {localca}\n"
            "create_certs_tool_options = /etc/swtpm-localca.options\n"
            "active_pcr_banks = sha256\n"
        )


class Node:
    # False for a variant without a vTPM (qemu-tdx: demo_variants.TdxVariant): no swtpm is manufactured, started
    # or measured; the node's hardware comes from its variant's simulator alone.
    has_vtpm = True

    def __init__(self, name, root, image, control_plane, disk_image=False):
        self.name = name
        # A LUKS2 header on a file (`--disk luks-header:`): this machine has no device mapper, so the disk
        # is formatted and its key checked, but not mapped. Otherwise the explicit key-file mode.
        self.disk_image = root / name / "state-disk.img" if disk_image else None
        self.dir = root / name
        self.tpm_dir = self.dir / "tpm"
        self.state_dir = self.dir / "state"
        self.tpm_dir.mkdir(parents=True)
        self.state_dir.mkdir(parents=True)
        if self.disk_image is not None:
            with open(self.disk_image, "wb") as f:
                f.truncate(20 * 1024 * 1024)
        self.image = image
        self.control_plane = control_plane
        self.port = None
        self.init_addr = None
        self.outcome = None
        self.reason = None
        self.timing = None
        self.on_reboot = None  # the variant's reboot of the node's other hardware (a TD: RTMR3 zero again)
        self.read_lock = None  # the variant's read of the lock register where it is not PCR 15

    @property
    def tcti(self):
        # Without a vTPM: a TCTI that leads nowhere (no issuer of such a variant opens a TPM).
        return f"swtpm:host=127.0.0.1,port={self.port}" if self.port else "swtpm:host=127.0.0.1,port=1"

    def manufacture(self, ca):
        if not self.has_vtpm:
            return
        certs = ["--create-ek-cert", "--create-platform-cert"] if ca.certifies else []
        run(["swtpm_setup", "--tpm2", "--tpmstate", self.tpm_dir, "--createek", *certs, "--lock-nvram",
             "--overwrite", "--config", ca.setup_conf])

    def start_tpm(self, procs):
        if not self.has_vtpm:
            return
        for _ in range(5):
            self.port = free_port_pair()
            pid_file = self.tpm_dir / "swtpm.pid"
            r = subprocess.run(["swtpm", "socket", "--tpm2", "--tpmstate", f"dir={self.tpm_dir}",
                                "--server", f"type=tcp,port={self.port},bindaddr=127.0.0.1",
                                "--ctrl", f"type=tcp,port={self.port + 1},bindaddr=127.0.0.1",
                                "--flags", "not-need-init,startup-clear", "--daemon",
                                "--pid", f"file={pid_file}"], capture_output=True)
            if r.returncode == 0:
                deadline = time.monotonic() + 10
                while not pid_file.exists() and time.monotonic() < deadline:
                    time.sleep(0.02)
                procs.adopt(f"{self.name}-swtpm", int(pid_file.read_text().strip()))
                return
        raise Failure(f"{self.name}: swtpm did not start: {r.stderr.decode(errors='replace')}")

    def measured_boot(self):
        """Extends the image digests into the PCRs, as firmware and boot loader would."""
        if not self.has_vtpm:
            return
        env = dict(os.environ, TPM2TOOLS_TCTI=self.tcti)
        for pcr, blob in sorted(self.image.items()):
            digest = hashlib.sha256(blob).hexdigest()
            run(["tpm2_pcrextend", f"{pcr}:sha256={digest}"], env=env)


def expected_pcrs(image):
    """The PCR values a measured boot of `image` produces from all-zero PCRs."""
    return {pcr: hashlib.sha256(b"\0" * 32 + hashlib.sha256(blob).digest()).hexdigest() for pcr, blob in image.items()}


def image_measurements(image, sim=None):
    """The measurements file's values for `image`: the PCRs and PCR 15 = 0, or what the variant measures
    instead (qemu-tdx: MRTD, RTMR0-2 and RTMR3 = 0)."""
    tdx = sim.measurements(image) if sim is not None and hasattr(sim, "measurements") else None
    return tdx if tdx is not None else {**expected_pcrs(image), 15: "00" * 32}


def image_refusal(sim, pcr=r"\d+"):
    """The join service's log line refusing a node for another image (its first group: the reason)."""
    custom = sim.image_refusal() if sim is not None and hasattr(sim, "image_refusal") else None
    return custom or rf"attestation refused.*reason=(PCR {pcr}: expected \w+, found \w+)"


def lock_register(sim):
    """The node lock's register: PCR 15, or the variant's (qemu-tdx: RTMR3)."""
    return getattr(sim, "lock_register", "PCR 15")


def lock_unbound(sim):
    return getattr(sim, "lock_unbound", "00" * 32)


def lock_bound(sim, cluster_id_hex):
    """The lock register of a node bound to the cluster: one extend with the cluster id from zero."""
    if sim is not None and hasattr(sim, "lock_bound"):
        return sim.lock_bound(cluster_id_hex)
    return hashlib.sha256(b"\0" * 32 + bytes.fromhex(cluster_id_hex)).hexdigest()


def fingerprint(b):
    return hashlib.sha256(b).hexdigest()[:16]


def main():
    args = [a for a in sys.argv[1:] if a != "--keep"]
    keep = "--keep" in sys.argv[1:]
    variant = "qemu-vtpm"
    snp_bins = None
    if "--snp-attacks" in args:
        i = args.index("--snp-attacks")
        snp_bins = Path(args[i + 1]).resolve() if i + 1 < len(args) else None
        del args[i:i + 2]
    if "--variant" in args:
        i = args.index("--variant")
        variant = args[i + 1] if i + 1 < len(args) else ""
        del args[i:i + 2]
    bindir = Path(args[0] if args else "target/release").resolve()
    names = ("attest", "attest-bootstrapper", "join-service", "key-service")
    if variant != "qemu-vtpm":
        names += ("attest-hwsim",)
    bins = {n: bindir / n for n in names}
    for n, p in bins.items():
        if not p.is_file():
            print(f"error: {p} not found; build with `cargo build --release --bin attest --bin key-service --bin join-service --bin attest-bootstrapper`", file=sys.stderr)
            return 2
    for tool in ("swtpm", "swtpm_setup", "tpm2_pcrextend"):
        if shutil.which(tool) is None:
            print(f"error: {tool} not found (run `make setup`)", file=sys.stderr)
            return 2

    root = Path(tempfile.mkdtemp(prefix="attest-demo-"))
    procs = Processes(root)

    def on_signal(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    ok = False
    try:
        sim = None
        if variant != "qemu-vtpm":
            sys.path.insert(0, str(Path(__file__).resolve().parent))
            import demo_variants
            kind = demo_variants.TdxVariant if variant in demo_variants.TDX_VARIANTS else \
                demo_variants.SimulatedVariant
            sim = kind(variant, root, bins, procs, sys.modules[__name__])
        if snp_bins is not None or sim is not None:
            sys.path.insert(0, str(Path(__file__).resolve().parent))
        ok = demo(root, bins, procs, sim, None if sim else snp_bins)
    except Failure as e:
        log(f"FAILED: {e}")
    except KeyboardInterrupt:
        log("interrupted")
    finally:
        stopped = procs.stop_all()
        log(f"stopped {len(stopped)} processes by PID: {', '.join(stopped)}")
        if ok and not keep:
            shutil.rmtree(root, ignore_errors=True)
            log("work directory removed (--keep keeps it)")
        else:
            log(f"logs and state kept in {root}")
    return 0 if ok else 1


def sign_measurements(root, measurements, bins):
    """The operator's signing key (openssl, P-256) and the measurements file signed with it as version 1
    (`attest measurements sign`: the signed file carries its monotonic version; verifiers refuse older ones)."""
    key = root / "measurements-signing.key"
    run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key])
    pub = root / "measurements.pub"
    run(["openssl", "ec", "-in", key, "-pubout", "-out", pub])
    run([bins["attest"], "measurements", "sign", measurements, "--key", key, "--version", "1", "-o", measurements])
    return pub, measurements.with_name(measurements.name + ".sig")


def signature_args(measurements, sig, pub):
    return ["--measurements", measurements, "--measurements-signature", sig, "--measurements-public-key", pub]


class Cluster:
    """What the attack section needs of the running cluster."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


def operator_inputs(root, bins, sim=None):
    """What an operator prepares (also scripts/container-test.py's cluster): the signed measurements of the good
    image, the master secret and the init secret with its hash."""
    measurements = root / "measurements.json"
    # As the default join measurements: PCR 15 = 0 too (a node already bound to a cluster cannot join).
    expected = image_measurements(GOOD_IMAGE, sim)
    measurements.write_text(json.dumps(
        {str(pcr): {"expected": value, "warnOnly": False} for pcr, value in sorted(expected.items())},
        indent=2))
    pub, sig = sign_measurements(root, measurements, bins)
    what = "PCRs" if 15 in expected else "MRTD and RTMR0-3 (indices)"
    log(f"measurements: {what} {sorted(expected)} enforced, {lock_register(sim)} = 0 ({measurements.name}, signed "
        f"as version 1: {sig.name})")

    # Master secret and init secret, as an operator would create them.
    master_secret = root / "master-secret.json"
    init_secret = root / "init-secret"
    init_secret.write_bytes(secrets.token_bytes(32))
    init_secret_hash = root / "init-secret.sha256"
    init_secret_hash.write_text(hashlib.sha256(init_secret.read_bytes()).hexdigest() + "\n")
    run([bins["attest"], "secret", "new", "--out", master_secret])
    return measurements, pub, sig, master_secret, init_secret, init_secret_hash


def demo(root, bins, procs, sim=None, snp_bins=None):
    """The demo; `sim` (demo_variants.SimulatedVariant) runs it on a simulated SNP variant."""
    log(f"work directory {root}")
    log("DRY RUN of Kubernetes: nodes use --backend dry-run (no kubeadm), the join service --token-issuer dry-run")
    ca = EkCa(root)
    measurements, pub, sig, master_secret, init_secret, init_secret_hash = operator_inputs(root, bins, sim)

    nodes = [Node("node-1", root, GOOD_IMAGE, True), Node("node-2", root, GOOD_IMAGE, False, disk_image=True),
             Node("node-3", root, GOOD_IMAGE, False), Node("node-bad", root, BAD_IMAGE, False)]
    if sim:
        sim.start()
        ca.certifies, ca.for_join_service = sim.ek_certificate, False
    for n in nodes:
        n.manufacture(ca)
        n.start_tpm(procs)
        n.measured_boot()
        if sim:
            sim.provision(n)
    if not Node.has_vtpm:
        log(f"{len(nodes)} simulated TDs booted, each on a machine of its own (no vTPM: no swtpm)")
    else:
        log(f"{len(nodes)} swtpm TPMs manufactured " + ("with EK certificates from the local EK CA" if ca.certifies
            else f"WITHOUT EK certificates (as {sim.variant if sim else ''}'s vTPM has none)") + " and booted")

    first = nodes[0]
    boot = bootstrapper_args(bins, first, init_secret_hash, sim, verify=False)
    p1 = procs.start(first.name, boot)
    first.init_addr = wait_for_line(root / f"{first.name}.out", r"listening on (\S+)", p1).group(1)
    log(f"{first.name}: bootstrapper, init server on {first.init_addr}")

    out = root / "cluster"
    registry_cli = root / "cli-ak-registry.json"
    t = time.monotonic()
    r = subprocess.run([bins["attest"], "init", "--endpoint", first.init_addr,
                        *signature_args(measurements, sig, pub),
                        "--ak-registry", registry_cli, *(["--ek-ca", ca.dir] if ca.certifies else []),
                        "--master-secret", master_secret,
                        "--init-secret", init_secret, "--out", out, "--cluster-name", "attest-demo", "--json"]
                       + (sim.verifier_args() if sim else []), capture_output=True)
    (root / "attest-init.log").write_bytes(r.stderr)
    if r.returncode != 0:
        raise Failure(f"attest init failed ({r.returncode}): {r.stderr.decode(errors='replace')}")
    init = json.loads(r.stdout)
    first.timing = time.monotonic() - t
    first.outcome = "initialized the cluster"
    log(f"attest init: cluster {init['clusterId'][:16]}… initialized in {first.timing:.1f}s "
        f"(measurements signature {init['trust']['measurementsSignature']}, key-service PKI in {out.name}/key-service-pki)")
    # node-1's bootstrapper exits once bootstrapped; its TPM (one connection at a time) then serves the join
    # service running on node-1. Its PCR 15 is read now, while the TPM is free.
    try:
        p1.wait(timeout=30)
    except subprocess.TimeoutExpired:
        raise Failure(f"{first.name}: bootstrapper did not exit after init")
    first.pcr15 = pcr15(first)

    pki = out / "key-service-pki"
    kms = procs.start("key-service", [bins["key-service"], "--listen", "127.0.0.1:0", "--master-secret", master_secret,
                                      "--tls-ca", pki / "ca.crt", "--tls-cert", pki / "key-service.crt",
                                      "--tls-key", pki / "key-service.key", "--log-level", "debug"])
    kms_addr = wait_for_line(root / "key-service.out", r"listening on (\S+)", kms).group(1)
    log(f"key service on {kms_addr} (mutual TLS: only the join service's certificate of the cluster CA)")

    # The operator's admission key: control-plane joins beyond the init node need an admission it signs.
    run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", root / "admission.key"])
    run(["openssl", "ec", "-in", root / "admission.key", "-pubout", "-out", root / "admission.pub"])
    (root / "admissions").mkdir()
    state = json.loads((out / "cluster-state.json").read_text())
    log(f"cluster state from attest init: measurements version {state['measurementsVersion']}, the init node "
        f"{state['nodes'][0]['names'][0]} bound to {state['nodes'][0]['identity'][:24]}… (control plane)")

    # The join service, configured from what init produced: the cluster PKI, the measurement salt, the
    # key-service client certificate, the cluster state; it attests as node-1, with node-1's hardware and variant.
    salt_file = root / "measurement-salt"
    salt_file.write_bytes(bytes.fromhex(init["measurementSalt"]))
    kube_config = root / "kubernetes.json"
    kube_config.write_text(json.dumps({"kubernetesVersion": "v1.31.1",
                                       "components": []}))
    join_argv = join_service_args(bins, root, first, kms_addr, pki, measurements, sig, pub, salt_file, kube_config, ca,
                                  own=sim.join_service_args(first) if sim else None)
    if ca.certifies:  # AK registration (qemu-vtpm nodes) against the EK CA; a cloud without EK certificates has none
        join_argv += ["--registration-listen", "127.0.0.1:0",
                      "--ek-ca", ca.dir / "swtpm-localca-rootca-cert.pem", "--ek-ca", ca.dir / "issuercert.pem"]
    join_argv += sim.verifier_args() if sim else []
    join = procs.start("join-service", join_argv)
    join_addr, metrics_addr, reg_addr = join_service_addrs(root / "join-service.out", join_argv, join)
    log(f"join service on {join_addr} (mutual aTLS as {first.name}: {sim.variant if sim else 'qemu-vtpm'} on its "
        f"hardware; {f'AK registration {reg_addr}' if reg_addr else 'no AK registration: no EK certificates'}, "
        f"metrics http://{metrics_addr}/metrics)")

    started = {}
    for n in nodes[1:]:
        argv = (bootstrapper_args(bins, n, init_secret_hash, sim)
                + joining_args(join_addr, reg_addr, measurements, sig, pub, ca))
        started[n.name] = (procs.start(n.name, argv), time.monotonic())
    for n in nodes[1:3]:
        p, t = started[n.name]
        event = json.loads(wait_for_line(root / f"{n.name}.out", r'^\{.*"event":"bootstrapped".*\}$', p,
                                         timeout=JOIN_TIMEOUT).group(0))
        if event.get("path") != "join" or event.get("cluster_id") != init["clusterId"]:
            raise Failure(f"{n.name}: unexpected bootstrap event {event}")
        if event.get("dry_run") is not True:
            raise Failure(f"{n.name}: a dry-run join must say so in its event: {event}")
        n.timing = time.monotonic() - t
        n.outcome = "joined (dry run)"
        log(f"{n.name}: verified the join service, joined in {n.timing:.1f}s (dry run)")

    bad = nodes[3]
    p, t = started[bad.name]
    m = wait_for_line(root / "join-service.log", image_refusal(sim), join, timeout=REFUSAL_TIMEOUT)
    bad.timing = time.monotonic() - t
    bad.outcome = "refused"
    bad.reason = m.group(1)
    log(f"{bad.name}: refused by the join service: {bad.reason}")

    # Joined nodes keep serving their attestation (verify service) and node-bad keeps retrying: stop them, so
    # that every TPM is free to read back (swtpm serves one connection at a time).
    for n in nodes[1:]:
        p = started[n.name][0]
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            raise Failure(f"{n.name}: bootstrapper did not exit")

    cluster = Cluster(root=root, bins=bins, procs=procs, ca=ca, nodes=nodes, join=join, join_addr=join_addr,
                      metrics_addr=metrics_addr, kms_addr=kms_addr, pki=pki, measurements=measurements, sig=sig,
                      pub=pub, salt_file=salt_file, kube_config=kube_config, init_secret_hash=init_secret_hash,
                      init=init, sim=sim, snp_ctx=None, snp_bins=snp_bins, version=1, attacker_rebooted=False)
    if sim:
        import demo_variants
        cluster.snp_ctx = demo_variants.AttackContext(sys.modules[__name__], root, bins, procs, ca, sim, join_addr,
                                                      join_argv, root / "join-service.log", root / "tokens",
                                                      metrics_addr)
    attacks_ok = attack_section(cluster)

    metrics_text = scrape(metrics_addr)
    # Stop the join service: node-1's TPM is read back next.
    stop(join, "join service")
    ok = check_and_summarize(root, nodes, init, master_secret, metrics_text, sim)
    if ok:
        # The join service again (same files, node-1's TPM) for the nodes' later life.
        join = procs.start("join-service-2", join_argv)
        join_addr, cluster.metrics_addr, reg_addr = join_service_addrs(root / "join-service-2.out", join_argv, join)
        cluster.join_log = root / "join-service-2.log"  # the upgrade step reads its refusals
        log(f"join service restarted on {join_addr} for the nodes' later life")
        ok = lifecycle(cluster, join, join_addr, reg_addr, master_secret)
    return ok and attacks_ok


def stop(proc, what):
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        raise Failure(f"{what} did not stop")


def join_service_args(bins, root, node, kms_addr, pki, measurements, sig, pub, salt_file, kube_config, ca, tag="",
                      own=None):
    """The join service's command line (it attests as `node`: its TPM and `own`, the variant flags of its hardware,
    qemu-vtpm by default; dry-run tokens, announced)."""
    return [bins["join-service"], "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
            "--tpm", node.tcti, *(own or ["--node-variant", "qemu-vtpm"]),
            "--key-service", kms_addr, "--key-service-ca", pki / "ca.crt",
            "--key-service-cert", pki / "join-service.crt", "--key-service-key", pki / "join-service.key",
            *signature_args(measurements, sig, pub), "--measurement-salt", salt_file,
            "--ak-registry", root / f"join-ak-registry{tag}.json", "--pki-dir", node.state_dir / "pki",
            "--api-server-endpoint", "127.0.0.1:6443", "--kubernetes-config", kube_config,
            "--token-issuer", "dry-run", "--dry-run-dir", root / f"tokens{tag}", "--kds-url", "offline",
            "--cluster-state", root / f"cluster-state{tag}.json",
            "--cluster-state-seed", root / "cluster" / "cluster-state.json",
            "--admissions", root / "admissions", "--admission-public-key", root / "admission.pub"]


def join_service_addrs(out, argv, proc):
    """The join service's join.API, /metrics and (when it serves one) AK registration addresses."""
    registration = "--registration-listen" in argv
    addrs = wait_for_lines(out, r"listening on (\S+)", 3 if registration else 2, proc)
    return addrs[0], addrs[1], addrs[2] if registration else None


def joining_args(join_addr, reg_addr, measurements, sig, pub, ca):
    """A joining node's flags: where the join service is, and how to verify it (its EK CA only where the join
    service is trusted through its EK certificate: qemu-vtpm)."""
    argv = ["--join-service", join_addr, *signature_args(measurements, sig, pub)]
    if ca.for_join_service:
        argv += ["--join-service-ek-ca", ca.dir / "swtpm-localca-rootca-cert.pem",
                 "--join-service-ek-ca", ca.dir / "issuercert.pem"]
    if reg_addr:
        argv += ["--registration", reg_addr]
    return argv


def scrape(metrics_addr):
    try:
        return urllib.request.urlopen(f"http://{metrics_addr}/metrics", timeout=5).read().decode()
    except OSError as e:
        return f"(metrics unavailable: {e})"


def hkdf_sha256(ikm, salt, info, length=32):
    """RFC 5869 HKDF-SHA256 (an independent check of the services' derivations)."""
    prk = hmac.new(salt, ikm, hashlib.sha256).digest()
    out, block, i = b"", b"", 1
    while len(out) < length:
        block = hmac.new(prk, block + info + bytes([i]), hashlib.sha256).digest()
        out += block
        i += 1
    return out[:length]


def pcr15(node):
    """The node lock's register: PCR 15 of its TPM, or what its variant reads instead (qemu-tdx: RTMR3)."""
    if node.read_lock is not None:
        return node.read_lock()
    env = dict(os.environ, TPM2TOOLS_TCTI=node.tcti)
    out = run(["tpm2_pcrread", "sha256:15"], env=env).stdout.decode()
    m = re.search(r"15\s*:\s*0x([0-9A-Fa-f]{64})", out)
    if not m:
        raise Failure(f"{node.name}: cannot read PCR 15: {out}")
    return m.group(1).lower()


def check_and_summarize(root, nodes, init, master_secret_file, metrics_text, sim=None):
    """Checks every node's outcome independently of the services and prints the summary."""
    variant = sim.variant if sim else "qemu-vtpm"
    ms = json.loads(master_secret_file.read_text())
    key, salt = base64.b64decode(ms["key"]), base64.b64decode(ms["salt"])
    measurement_secret = hkdf_sha256(key, salt, b"key-measurementSecret")
    measurement_salt = bytes.fromhex(init["measurementSalt"])
    cluster_id = hkdf_sha256(measurement_secret, measurement_salt, b"key-clusterID").hex()
    problems = []
    if cluster_id != init["clusterId"]:
        problems.append(f"cluster id {init['clusterId']} is not HKDF(measurement secret, salt)")
    locked_pcr15 = lock_bound(sim, cluster_id)
    register, unbound = lock_register(sim), lock_unbound(sim)

    issued = {}
    for line in (root / "join-service.log").read_text(errors="replace").splitlines():
        m = re.search(r'join ticket issued.*? node="([^"]+)".*ak_digest=(\w+).*token_id=(\w+)', line)
        if m:
            issued[m.group(1)] = (m.group(2), m.group(3))

    rows = []
    for n in nodes:
        pcr = getattr(n, "pcr15", None) or pcr15(n)
        state_file = n.state_dir / "node-state.json"
        state = json.loads(state_file.read_text()) if state_file.exists() else None
        if n.outcome == "refused":
            ak = "-"
            checks = n.reason
            disk = "no key issued"
            if state is not None or pcr != unbound:
                problems.append(f"{n.name}: refused but has node state or a set {register}")
            lock = f"unlocked ({register} = 0)" if pcr == unbound else f"{register} = {pcr[:16]}…"
        else:
            if n is nodes[0]:
                att = init["attestation"]
                ak = (att["akDigest"] or ("(HCL runtime)" if Node.has_vtpm else "(no vTPM)"))[:16]
                if att.get("pcrsChecked"):
                    checks = f"{att['variant']}: PCRs {', '.join(str(c['pcr']) for c in att['pcrsChecked'])} matched"
                else:
                    td = att.get("tdQuote") or {}
                    checks = (f"{att['variant']}: TD registers {', '.join(td.get('registersChecked') or [])} matched, "
                              f"TCB {td.get('tcbStatus')}")
                if att.get("simulatedHardware"):
                    checks += f"; launch {att['launch']}, SIMULATED (test root)"
            else:
                if n.name not in issued:
                    problems.append(f"{n.name}: the join service logged no ticket for it")
                digest, token = issued.get(n.name, ("?", "?"))
                ak = ("(HCL runtime)" if Node.has_vtpm else "(no vTPM)") if digest == "none" else digest[:16]
                measured = f"PCRs {', '.join(map(str, sorted(GOOD_IMAGE)))}" if Node.has_vtpm else "MRTD, RTMR0-2"
                checks = f"{variant}: {measured} matched; join service verified; dry-run token {token}"
                if sim:
                    checks += f"; {sim.detected(n)}, SIMULATED (test root)"
                # The kubelet certificate the join service signed: chains to node-1's cluster CA, for this node.
                cert = n.state_dir / "kubelet" / "pki" / "kubelet.crt"
                verify = subprocess.run(["openssl", "verify", "-CAfile", nodes[0].state_dir / "pki" / "ca.crt", cert],
                                        capture_output=True)
                subject = subprocess.run(["openssl", "x509", "-in", cert, "-noout", "-subject"],
                                         capture_output=True).stdout.decode()
                if verify.returncode != 0 or f"system:node:{n.name}" not in subject:
                    problems.append(f"{n.name}: kubelet certificate does not chain to the cluster CA for this node")
                else:
                    checks += f"; kubelet cert CN=system:node:{n.name} ✓ cluster CA"
            if state is None:
                problems.append(f"{n.name}: no node state")
                disk = "?"
            elif state.get("dry_run") is not True:
                problems.append(f"{n.name}: its node state does not say that it was bootstrapped as a dry run")
                disk = "?"
            else:
                if state.get("cluster_id") != cluster_id:
                    problems.append(f"{n.name}: node state names cluster {state.get('cluster_id')}")
                expected = hkdf_sha256(key, salt, ("key-" + state["disk_uuid"]).encode())
                # A LUKS2 disk image: the derived key must open its keyslot; a key-file disk: the file holds it.
                disk_key = expected if n.disk_image is not None and luks_key_opens(n.disk_image, expected) else \
                    (n.dir / "run" / "state-disk.key").read_bytes() if n.disk_image is None else b""
                if disk_key != expected:
                    problems.append(f"{n.name}: state-disk key is not HKDF(master secret, key-<disk uuid>)")
                disk = f"sha256 {hashlib.sha256(disk_key).hexdigest()[:12]}… = HKDF ✓" if disk_key == expected else "MISMATCH"
                if n.disk_image is not None and disk_key == expected:
                    disk += " (opens the LUKS2 keyslot of its disk image)"
            if pcr != locked_pcr15:
                problems.append(f"{n.name}: {register} {pcr} is not the cluster id extended")
            lock = f"locked ({register} = cluster id ✓)" if pcr == locked_pcr15 else f"{register} = {pcr[:16]}…"
        rows.append((n.name, "control-plane" if n.control_plane else "worker", n.outcome or "-", n.timing or 0.0, ak,
                     checks, disk, lock))

    print()
    print("summary")
    print("=======")
    print(f"cluster id      {cluster_id}  (= HKDF(measurement secret, measurement salt) ✓)")
    ak_trust = sim.ak_trust() if sim else "every AK registered by TPM2 credential activation against the local EK CA"
    measured = (f"PCRs {', '.join(map(str, sorted(GOOD_IMAGE)))} and 15 (= 0)" if Node.has_vtpm else
                "MRTD, RTMR0-2 and RTMR3 (= 0)")
    print(f"measurements    {measured} enforced (signed file); {ak_trust}")
    if sim:
        print(f"hardware        {sim.hardware_line()}")
        print(f"join service    {sim.join_service_trust()}")
    print("kubernetes      DRY RUN: no kubeadm ran (--backend dry-run); bootstrap tokens are files (--token-issuer dry-run)")
    print()
    for name, role, outcome, timing, ak, checks, disk, lock in rows:
        print(f"{name} ({role}): {outcome} in {timing:.1f}s")
        print(f"    attestation  AK {ak}  {checks}")
        print(f"    state disk   {disk}")
        print(f"    node lock    {lock}")
    wanted = ("attest_join_tickets_issued_total", "attest_join_refused_total", "attest_join_attestations_total",
              "attest_join_measurements_reloads_total", "attest_join_dry_run", "attest_join_waiver",
              "attest_join_measurements_version", "attest_join_measurements_rollbacks_total",
              "attest_atls_handshakes_refused_total")
    shown = [l for l in metrics_text.splitlines() if l.startswith(wanted) and not l.endswith(" 0")]
    print()
    print("join service /metrics (non-zero samples):")
    for line in shown:
        print(f"    {line}")
    if "attest_join_dry_run 1" not in metrics_text:
        problems.append("the join service's metrics do not announce its dry-run tokens")
    print()
    if problems:
        for p in problems:
            print(f"PROBLEM: {p}")
        return False
    hardware = "SIMULATED TDX hardware" if variant in ("qemu-tdx", "azure-tdx") else "SIMULATED SNP hardware"
    image = "its PCR 9" if Node.has_vtpm else "its RTMR2"
    print(f"all checks passed: 1 node initialized, 2 joined, 1 refused for {image} (Kubernetes as a dry run)"
          + (f" ({variant} on {hardware}, test root)" if sim else ""))
    return True


def bootstrapper_args(bins, node, init_secret_hash, sim=None, verify=True):
    """A node's bootstrapper; `verify=False` turns its verify service off, so that it exits once bootstrapped
    (node-1, whose TPM then serves the join service: swtpm takes one connection at a time)."""
    disk = f"luks-header:{node.disk_image}" if node.disk_image is not None else "key-file"
    argv = [bins["attest-bootstrapper"], "--tpm", node.tcti, "--state-dir", node.state_dir, "--init-listen",
            "127.0.0.1:0", "--node-name", node.name, "--init-secret-hash", init_secret_hash, "--disk", disk,
            "--runtime-dir", node.dir / "run", "--backend", "dry-run", "--recover-listen", "127.0.0.1:0"]
    argv += (["--verify-listen", "127.0.0.1:0", "--verify-http-listen", "127.0.0.1:0"] if verify
             else ["--verify-listen", "none", "--verify-http-listen", "none"])
    argv += sim.node_args(node) if sim else ["--variant", "qemu-vtpm"]
    if node.control_plane:
        argv.append("--control-plane")
    return argv


# ---------------------------------------------------------------------------------------------------------------
# The attack section: each attack runs against the live cluster above and returns
# (attack, refused, detail); `refused` is True only when the attack was refused AND left no partial state (no
# token, no lock, no key, no changed validator set); `refused` is None for an attack that does not apply to the
# variant (the SNP attacks on qemu-vtpm).

def attack_section(c):
    print()
    print("attacks against the live cluster")
    print("===========================================")
    results = []
    for attack in (attack_unpinned_launch_at_start, attack_key_service_without_client_certificate,
                   attack_key_service_plaintext_h2c, attack_unsigned_measurements, attack_impostor_join_service,
                   attack_replayed_snp_report, attack_revoked_vcek,
                   # Issue 23: the TDX attacks (simulated TDX hardware: make demo VARIANT=qemu-tdx|azure-tdx).
                   attack_replayed_td_quote, attack_unbound_report_data, attack_debug_td, attack_outdated_tcb,
                   attack_revoked_pck,
                   # Issue 24: an attested node that lies (node-3, rebooted: genuine, attested, a member).
                   attack_other_nodes_disk_key, attack_control_plane_as_worker, attack_other_nodes_name,
                   attack_unproven_csr_key, attack_rollback_on_reload, attack_rollback_at_restart,
                   attack_tls12_client):
        try:
            r = attack(c)
        except Failure as e:
            r = (attack.__name__, False, f"the attack could not be run: {e}")
        name, refused, detail = r
        if refused is None:
            print(f"  [n/a] {name}: {detail}")
            continue
        print(f"  [{'REFUSED' if refused else 'NOT REFUSED'}] {name}: {detail}")
        results.append(refused)
    n = sum(results)
    if c.attacker_rebooted:
        print(f"  [control] {rejoin_attacker(c)}")
    print(f"attacks refused: {n}/{len(results)}")
    return n == len(results)


def token_files(c, tag=""):
    d = c.root / f"tokens{tag}"
    return sorted(p.name for p in d.iterdir()) if d.is_dir() else []


def run_service_expecting_refusal(c, name, argv, expect):
    """Starts a service that must refuse to start: exit 3 and `expect` in its log, no address announced."""
    out, err = c.root / f"{name}.out", c.root / f"{name}.log"
    with open(out, "wb") as o, open(err, "wb") as e:
        try:
            r = subprocess.run(argv, stdout=o, stderr=e, timeout=60)
        except subprocess.TimeoutExpired:
            return False, "it did not refuse (still running after 60 s)"
    text = err.read_text(errors="replace")
    listening = "listening on" in out.read_text(errors="replace")
    ok = r.returncode == 3 and expect in text and not listening
    line = next((l for l in text.splitlines() if expect in l), text.strip().splitlines()[-1:] or ["(no log)"])
    return ok, f"exit {r.returncode}; {strip_log(line if isinstance(line, str) else line[0])}"


def strip_log(line):
    """A log line without its timestamp and level prefix, shortened."""
    m = re.search(r"(ERROR|WARN|INFO)\s+\S+:\s*(.*)", line)
    text = m.group(2) if m else line
    return text if len(text) <= 160 else text[:157] + "..."


def attack_unpinned_launch_at_start(c):
    """A join service started for an SNP variant without a pinned launch measurement refuses to start."""
    tokens = c.root / "tokens-unpinned"
    argv = join_service_args(c.bins, c.root, c.nodes[0], c.kms_addr, c.pki, c.measurements, c.sig, c.pub,
                             c.salt_file, c.kube_config, c.ca, tag="-unpinned")
    argv = [a if a != c.nodes[0].tcti else "swtpm:host=127.0.0.1,port=1" for a in argv]
    refused, detail = run_service_expecting_refusal(c, "attack-unpinned-launch", argv + ["--variant", "aws-sev-snp"],
                                                    "pins no launch measurement")
    clean = not tokens.exists()
    return ("unpinned launch measurement at start (join service, --variant aws-sev-snp, no pinned MEASUREMENT)",
            refused and clean, detail + ("; nothing created" if clean else "; PARTIAL STATE: a token directory"))


# A minimal gRPC-over-HTTP/2 client (Python standard library only): the preface, SETTINGS, one HEADERS frame
# (HPACK literals without indexing), one DATA frame with a kms.API GetDataKeyRequest; returns the data key of
# the answer, or None with what happened instead.
def h2_get_data_key(sock, key_id):
    def frame(ftype, flags, stream, payload):
        return len(payload).to_bytes(3, "big") + bytes([ftype, flags]) + stream.to_bytes(4, "big") + payload

    def literal(name, value):
        name, value = name.encode(), value.encode()
        return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value

    headers = b"".join(literal(k, v) for k, v in [
        (":method", "POST"), (":scheme", "https"), (":path", "/kms.API/GetDataKey"),
        (":authority", "attest-key-service"), ("content-type", "application/grpc"), ("te", "trailers")])
    kid = key_id.encode()
    message = b"\x0a" + bytes([len(kid)]) + kid + b"\x10\x20"  # data_key_id = 1, length = 2 (32)
    grpc = b"\x00" + len(message).to_bytes(4, "big") + message
    sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b"") + frame(1, 4, 1, headers)
                 + frame(0, 1, 1, grpc))
    buf, data = b"", b""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        while len(buf) >= 9 and len(buf) >= 9 + int.from_bytes(buf[:3], "big"):
            length, ftype, flags = int.from_bytes(buf[:3], "big"), buf[3], buf[4]
            payload, buf = buf[9:9 + length], buf[9 + length:]
            if ftype == 4 and not flags & 1:
                sock.sendall(frame(4, 1, 0, b""))  # SETTINGS ACK
            elif ftype == 0:
                data += payload
            elif ftype == 1 and flags & 1:  # trailers: the call is over
                if len(data) >= 5 + 2 and data[5] == 0x0A:
                    return data[7:7 + data[6]], "a data key"
                return None, "the call ended without a data key"
            elif ftype in (3, 7):  # RST_STREAM, GOAWAY
                return None, "the connection reset the call"
        try:
            chunk = sock.recv(65536)
        except (OSError, ssl.SSLError) as e:
            return None, f"connection failed: {e}"
        if not chunk:
            return None, "the connection was closed"
        buf += chunk
    return None, "no answer within 10 s"


def kms_connect(c, cert=None, key=None):
    host, port = c.kms_addr.rsplit(":", 1)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.load_verify_locations(c.pki / "ca.crt")
    ctx.set_alpn_protocols(["h2"])
    if cert:
        ctx.load_cert_chain(cert, key)
    sock = socket.create_connection((host, int(port)), timeout=10)
    return ctx.wrap_socket(sock, server_hostname="attest-key-service")


def keys_derived(c):
    return sum(1 for l in (c.root / "key-service.log").read_text(errors="replace").splitlines()
               if "data key derived" in l)


def attack_key_service_without_client_certificate(c):
    """TLS to the key service without a client certificate: no key (control: the join service's certificate)."""
    before = keys_derived(c)
    # Control: the same client with the join service's certificate gets a key, so a refusal below is the
    # key service's doing, not a broken client.
    with kms_connect(c, c.pki / "join-service.crt", c.pki / "join-service.key") as s:
        control, _ = h2_get_data_key(s, "6f1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d")
    time.sleep(0.2)
    after_control = keys_derived(c)
    try:
        with kms_connect(c) as s:
            key, what = h2_get_data_key(s, "6f1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d")
    except (OSError, ssl.SSLError) as e:
        key, what = None, f"TLS handshake failed: {e}"
    time.sleep(0.2)
    no_key = key is None and keys_derived(c) == after_control
    ok = no_key and control is not None and len(control) == 32 and after_control == before + 1
    return ("unauthenticated key-service call (TLS, no client certificate)", ok,
            f"{what}; no key derived (control with the join service's certificate: "
            f"{'32-byte key' if control and len(control) == 32 else 'FAILED'})")


def attack_key_service_plaintext_h2c(c):
    """Plaintext HTTP/2 (h2c) to the key service: the TLS server closes it before any HTTP/2."""
    before = keys_derived(c)
    host, port = c.kms_addr.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=10) as s:
            key, what = h2_get_data_key(s, "measurementSecret")
    except OSError as e:
        key, what = None, f"connection failed: {e}"
    time.sleep(0.2)
    ok = key is None and keys_derived(c) == before
    return ("unauthenticated key-service call (plaintext h2c)", ok, f"{what}; no key derived")


def metric(c, name):
    m = re.search(rf"^{re.escape(name)} (\d+)$", scrape(c.metrics_addr), re.M)
    return int(m.group(1)) if m else None


def attack_unsigned_measurements(c):
    """A consumer refuses an unsigned measurements file at start; the running join service keeps its set."""
    # 1. At start: a join service given a measurements file that was changed after signing (PCR 9 = the
    #    patched kernel node-bad boots).
    forged = c.root / "measurements-forged.json"
    forged_map = {str(pcr): {"expected": value, "warnOnly": False} for pcr, value in sorted(expected_pcrs(BAD_IMAGE).items())}
    forged.write_text(json.dumps(forged_map, indent=2))
    argv = join_service_args(c.bins, c.root, c.nodes[0], c.kms_addr, c.pki, forged, c.sig, c.pub, c.salt_file,
                             c.kube_config, c.ca, tag="-forged")
    argv = [a if a != c.nodes[0].tcti else "swtpm:host=127.0.0.1,port=1" for a in argv]
    start_refused, start_detail = run_service_expecting_refusal(c, "attack-forged-measurements", argv, "does not verify")
    # 2. On reload: the running join service's file is overwritten with the forged content (its signature left
    #    as it was); the service must keep generation 1 and count a rejected reload.
    gen0, rejected0 = metric(c, "attest_join_measurements_generation"), metric(c, 'attest_join_measurements_reloads_total{outcome="rejected"}')
    original = c.measurements.read_bytes()
    c.measurements.write_text(json.dumps(forged_map, indent=2))
    try:
        wait_for_line(c.root / "join-service.log", r"measurements file rejected", c.join, timeout=30)
        gen1 = metric(c, "attest_join_measurements_generation")
        rejected1 = metric(c, 'attest_join_measurements_reloads_total{outcome="rejected"}')
    finally:
        c.measurements.write_bytes(original)
    kept = gen1 == gen0 == 1 and (rejected1 or 0) > (rejected0 or 0)
    clean = not (c.root / "tokens-forged").exists()
    return ("unsigned measurements file (forged PCR 9)", start_refused and kept and clean,
            f"at start: {start_detail}; on reload: the running join service kept generation {gen1} "
            f"(rejected reloads {rejected0} -> {rejected1})")


def attack_impostor_join_service(c):
    """A join service attesting with the wrong measurements (as the cluster's variant, on node-bad's hardware): a
    fresh node of the variant refuses its ticket and stays unlocked."""
    bad = c.nodes[3]  # node-bad's TPM (PCR 9: the patched kernel) serves the impostor
    impostor_pki = c.root / "impostor-kms-pki"
    run([c.bins["attest"], "secret", "key-service-pki", "--out", impostor_pki])
    argv = join_service_args(c.bins, c.root, bad, "127.0.0.1:1", impostor_pki, c.measurements, c.sig, c.pub,
                             c.salt_file, c.kube_config, c.ca, tag="-impostor",
                             own=c.sim.join_service_args(bad) if c.sim else None)
    # Whatever the impostor holds (here even the cluster CA, and a key-service PKI of its own), the node refuses it
    # on its attestation before it asks for anything.
    argv[argv.index("--pki-dir") + 1] = c.nodes[0].state_dir / "pki"
    argv += c.sim.verifier_args() if c.sim else []
    impostor = c.procs.start("join-service-impostor", argv)
    addr = wait_for_line(c.root / "join-service-impostor.out", r"listening on (\S+)", impostor).group(1)
    victim = Node("node-victim", c.root, GOOD_IMAGE, False)
    victim.manufacture(c.ca)
    victim.start_tpm(c.procs)
    victim.measured_boot()
    if c.sim:
        c.sim.provision(victim)
    argv = bootstrapper_args(c.bins, victim, c.init_secret_hash, c.sim) + joining_args(addr, None, c.measurements,
                                                                                      c.sig, c.pub, c.ca)
    p = c.procs.start(victim.name, argv)
    try:
        m = wait_for_line(c.root / f"{victim.name}.log", r"join: refused.*(join service refused by this node[^\"]*)",
                          p, timeout=JOIN_TIMEOUT)
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        impostor.send_signal(signal.SIGTERM)
        impostor.wait(timeout=30)
    unlocked = pcr15(victim) == lock_unbound(c.sim)
    no_state = not (victim.state_dir / "node-state.json").exists()
    no_key = not (victim.dir / "run" / "state-disk.key").exists()
    no_ticket = "join ticket issued" not in (c.root / "join-service-impostor.log").read_text(errors="replace")
    ok = unlocked and no_state and no_key and no_ticket
    return ("impostor join service (valid TLS, attestation of a patched kernel)", ok,
            f"{strip_log(m.group(1))}; node-victim: {lock_register(c.sim)} {'= 0' if unlocked else 'CHANGED'}, "
            f"{'no node state' if no_state else 'NODE STATE WRITTEN'}, {'no disk key' if no_key else 'DISK KEY KEPT'}, "
            f"{'no ticket issued' if no_ticket else 'A TICKET WAS ISSUED'}")


# ---- An attested node that lies --------------------------------------------------------------------------------
# node-3 joined as a worker. Its workload is compromised: with root on node-3 and node-3's genuine TPM (after a
# reboot: PCR 15 = 0 again, as every node that rejoins), the attacker runs its own join client (attest-hwsim's
# attack client) and asks for what is not node-3's. The join service binds disks, names and roles to the
# identity node-3's evidence names (qemu-vtpm: its registered AK) and refuses; nothing is issued.

def attacker(c):
    """node-3 (rebooted once, on first use) and the attack client's command line playing it."""
    n3 = c.nodes[2]
    if not c.attacker_rebooted:
        reboot(n3, c.procs)
        if c.sim:
            c.sim.provision(n3)
        c.attacker_rebooted = True
    hwsim = c.bins["attest-hwsim"] if c.sim else (c.snp_bins / "attest-hwsim" if c.snp_bins else None)
    if hwsim is None or not Path(hwsim).is_file():
        raise Failure("the attack client attest-hwsim is needed (make demo builds it; --snp-attacks DIR)")
    variant = c.sim.variant if c.sim else "qemu-vtpm"
    target = ["--variant", variant, "--tpm", n3.tcti]
    if c.sim:
        target += c.sim.attack_args(n3)
    return n3, hwsim, target


def disk_uuid_of(node):
    return json.loads((node.state_dir / "node-state.json").read_text())["disk_uuid"]


def issued_tickets(c):
    m = re.findall(r'^attest_join_tickets_issued_total\{kind="(\w+)"\} (\d+)$', scrape(c.metrics_addr), re.M)
    return {k: int(v) for k, v in m}


def lying_node_attack(c, name, args, reason_label):
    """Runs the attack client as node-3 with `args`; refused = the client was refused, the join service logged
    the refusal with `reason_label`, and nothing was issued (no ticket counted, no token, no key derived)."""
    n3, hwsim, target = attacker(c)
    tokens_before, issued_before, keys_before = token_files(c), issued_tickets(c), keys_derived(c)
    log_file = c.root / "join-service.log"
    since = len(log_file.read_text(errors="replace"))
    r = run([hwsim, "attack", *args[:1], "--join-service", c.join_addr, *target, *args[1:]])
    client = json.loads(r.stdout.decode().strip().splitlines()[-1])
    deadline, line = time.monotonic() + 10, None
    while line is None and time.monotonic() < deadline:
        for l in log_file.read_text(errors="replace")[since:].splitlines():
            if "ticket refused" in l and re.search(rf'reason="?{reason_label}', l):
                line = l
                break
        else:
            time.sleep(0.1)
    time.sleep(0.2)
    nothing = token_files(c) == tokens_before and issued_tickets(c) == issued_before and keys_derived(c) == keys_before
    ok = client.get("outcome") == "refused" and line is not None and nothing
    why = re.search(r'error=(.*?) waivers=', line or "")
    detail = (f"{why.group(1).strip(chr(34)) if why else 'no refusal logged'} ({reason_label}); "
              f"{'nothing issued (no ticket, token or key)' if nothing else 'SOMETHING WAS ISSUED'}")
    return (name, ok, detail)


def attack_other_nodes_disk_key(c):
    """node-3 asks for node-2's disk key (IssueRejoinTicket with node-2's disk UUID)."""
    uuid = disk_uuid_of(c.nodes[1])
    return lying_node_attack(c, f"another node's disk key (node-3 asks to rejoin with node-2's disk {uuid[:8]}…)",
                             ["rejoin", "--disk-uuid", uuid], "disk_not_owned")


def attack_control_plane_as_worker(c):
    """node-3, a worker, sets is_control_plane: the control-plane files (ca.key, etcd/ca.key, sa.key)."""
    return lying_node_attack(c, "control-plane files as a worker (node-3 sets is_control_plane)",
                             ["join", "--node-name", "node-3", "--disk-uuid", disk_uuid_of(c.nodes[2]),
                              "--control-plane"], "control_plane_not_authorized")


def attack_other_nodes_name(c):
    """node-3 asks for a kubelet certificate for system:node:node-2."""
    return lying_node_attack(c, "another node's name (node-3 asks for system:node:node-2)",
                             ["join", "--node-name", "node-2", "--disk-uuid", disk_uuid_of(c.nodes[2])],
                             "name_not_owned")


def attack_unproven_csr_key(c):
    """node-3 sends a kubelet CSR for a key other than the one it proved in the aTLS handshake."""
    return lying_node_attack(c, "a CSR for a key the node did not prove (not its aTLS key)",
                             ["join", "--node-name", "node-3", "--disk-uuid", disk_uuid_of(c.nodes[2]),
                              "--unproven-csr-key"], "csr_key_not_proven")


def rejoin_attacker(c):
    """After the attacks: node-3's own bootstrapper rejoins (its own disk key comes back; PCR 15 re-extended)."""
    n3 = c.nodes[2]
    p = c.procs.start(f"{n3.name}-rejoin", bootstrapper_args(c.bins, n3, c.init_secret_hash, c.sim) +
                      joining_args(c.join_addr, None, c.measurements, c.sig, c.pub, c.ca))
    event = json_event(c.root / f"{n3.name}-rejoin.out", "rejoined", p)
    stop(p, f"{n3.name}'s bootstrapper")
    if event.get("via") != "rejoin":
        raise Failure(f"{n3.name}: unexpected rejoin event {event}")
    return (f"node-3 (the attacker's node) rejoined with its own disk: {event.get('via')}, {lock_register(c.sim)} "
            f"re-extended")


def attack_rollback_on_reload(c):
    """The operator moves the measurements to version 2; the attacker puts the older, validly signed version
    1 back. The running join service refuses the reload (rollback) and keeps version 2."""
    v1, v1_sig = c.measurements.read_bytes(), c.sig.read_bytes()
    sign_as_operator(c, c.measurements)  # version 2, the same values
    v2, v2_sig = c.measurements.read_bytes(), c.sig.read_bytes()
    deadline = time.monotonic() + 30
    while metric(c, "attest_join_measurements_version") != c.version and time.monotonic() < deadline:
        time.sleep(0.2)
    gen0, rollbacks0 = metric(c, "attest_join_measurements_generation"), metric(c, "attest_join_measurements_rollbacks_total")
    log_file = c.root / "join-service.log"
    since = len(log_file.read_text(errors="replace"))
    for target, content in ((c.measurements, v1), (c.sig, v1_sig)):
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_bytes(content)
        os.replace(tmp, target)
    try:
        m = None
        deadline = time.monotonic() + 30
        while m is None and time.monotonic() < deadline:
            m = re.search(r"measurements file rejected.*(rollback: its measurementsVersion \d+ is below version \d+)",
                          log_file.read_text(errors="replace")[since:])
            time.sleep(0.2)
        gen1, rollbacks1 = metric(c, "attest_join_measurements_generation"), metric(c, "attest_join_measurements_rollbacks_total")
        version = metric(c, "attest_join_measurements_version")
    finally:
        c.measurements.write_bytes(v2)
        c.sig.write_bytes(v2_sig)
    ok = m is not None and gen1 == gen0 and (rollbacks1 or 0) == (rollbacks0 or 0) + 1 and version == c.version
    c.v1_measurements = (v1, v1_sig)
    return ("rolled-back measurements file at reload (version 1 put back after version 2)", ok,
            f"{m.group(1) if m else 'no rollback logged'}; the running join service kept generation {gen1}, "
            f"version {version} (attest_join_measurements_rollbacks_total {rollbacks0} -> {rollbacks1})")


def attack_rollback_at_restart(c):
    """The join service restarts with the older, validly signed version 1: its cluster state remembers version 2,
    so it refuses to start."""
    v1, v1_sig = getattr(c, "v1_measurements", (None, None))
    if v1 is None:
        return ("rolled-back measurements file at restart", False, "the reload attack did not run")
    old = c.root / "measurements-rolled-back.json"
    old.write_bytes(v1)
    old.with_name(old.name + ".sig").write_bytes(v1_sig)
    argv = join_service_args(c.bins, c.root, c.nodes[0], c.kms_addr, c.pki, old, old.with_name(old.name + ".sig"),
                             c.pub, c.salt_file, c.kube_config, c.ca)
    argv = [a if a != c.nodes[0].tcti else "swtpm:host=127.0.0.1,port=1" for a in argv]
    argv += c.sim.verifier_args() if c.sim else []
    refused, detail = run_service_expecting_refusal(c, "attack-rollback-restart", argv, "rollback")
    return ("rolled-back measurements file at restart (the join service, its cluster state at version 2)",
            refused, detail)


def attack_tls12_client(c):
    """A TLS 1.2 client (in which both attestation documents would travel in clear): refused in the handshake,
    logged with the reason and the client's address, counted in /metrics."""
    before = metric(c, 'attest_atls_handshakes_refused_total{reason="protocol_version"}') or 0
    issued_before = issued_tickets(c)
    host, port = c.join_addr.rsplit(":", 1)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_alpn_protocols(["h2"])
    sock = socket.create_connection((host, int(port)), timeout=10)
    local = "%s:%d" % sock.getsockname()[:2]
    try:
        with ctx.wrap_socket(sock, server_hostname=base64.b64encode(secrets.token_bytes(32)).decode()) as s:
            what = f"handshake completed ({s.version()})"
    except (ssl.SSLError, OSError, ValueError) as e:
        what = f"handshake failed: {e.__class__.__name__}: {getattr(e, 'reason', None) or e}"
    log_file = c.root / "join-service.log"
    line, deadline = None, time.monotonic() + 10
    while line is None and time.monotonic() < deadline:
        line = next((l for l in log_file.read_text(errors="replace").splitlines()
                     if "aTLS handshake refused" in l and "protocol_version" in l and local in l), None)
        time.sleep(0.1)
    after = metric(c, 'attest_atls_handshakes_refused_total{reason="protocol_version"}') or 0
    ok = what.startswith("handshake failed") and line is not None and after == before + 1 \
        and issued_tickets(c) == issued_before
    return ("a TLS 1.2 client (both documents would travel in clear)", ok,
            f"{what}; the join service logged it (reason protocol_version, peer {local}) and counted it "
            f"(attest_atls_handshakes_refused_total{{reason=\"protocol_version\"}} {before} -> {after})")


# ---- SNP attacks (simulated SNP hardware: make demo VARIANT=aws-sev-snp|gcp-sev-snp|azure-sev-snp) -------------
# They need a software SEV-SNP guest whose reports the test PKI signs and a join service trusting that test ARK
# (binaries built with the feature dangerous-test-roots); scripts/demo_variants.py runs them against the live
# join service. On qemu-vtpm there is no SNP report: not applicable.

def snp_attack(c, attack):
    if c.sim is None and c.snp_bins is None:
        return (attack.__name__, None, "needs simulated SNP hardware: pass --snp-attacks DIR (binaries built with "
                                       "the feature dangerous-test-roots), as make demo does")
    import demo_variants
    if c.sim is not None and c.sim.variant in demo_variants.TDX_VARIANTS:
        return (attack.__name__, None, f"not applicable on {c.sim.variant}: no SNP report (a TDX variant)")
    if c.snp_ctx is None:
        c.snp_ctx = snp_attack_setup(c)
    r = attack(c.snp_ctx)
    if not r.get("applicable", True):
        return (r["attack"], None, f"not applicable on {c.sim.variant}: {r['why']}")
    import demo_variants
    return (r["attack"], r["ok"], demo_variants.print_attack(r).split(":", 1)[1].strip())


def snp_attack_setup(c):
    """For the qemu-vtpm demo: SIMULATED aws-sev-snp hardware (attest-hwsim, test root) and a join service of
    the test-root build that admits aws-sev-snp nodes of this cluster (same signed measurements, key service
    and cluster PKI), on a TPM of its own; the SNP attacks run against it."""
    import demo_variants
    bins = {n: c.snp_bins / n for n in ("attest", "attest-bootstrapper", "join-service", "key-service",
                                        "attest-hwsim")}
    missing = [str(p) for p in bins.values() if not p.is_file()]
    if missing:
        raise Failure(f"--snp-attacks: {', '.join(missing)} not found")
    sim = demo_variants.SimulatedVariant("aws-sev-snp", c.root, bins, c.procs, sys.modules[__name__])
    sim.start()
    host = Node("snp-join-host", c.root, GOOD_IMAGE, True)
    host.manufacture(c.ca)
    host.start_tpm(c.procs)
    argv = join_service_args(bins, c.root, c.nodes[0], c.kms_addr, c.pki, c.measurements, c.sig, c.pub,
                             c.salt_file, c.kube_config, c.ca, tag="-snp")
    argv = demo_variants._rewrite(argv, {"--tpm": host.tcti, "--registration-listen": "127.0.0.1:0"})
    argv += ["--ek-ca", c.ca.dir / "swtpm-localca-rootca-cert.pem", "--ek-ca", c.ca.dir / "issuercert.pem"]
    argv += sim.verifier_args()
    p = c.procs.start("join-service-snp", argv)
    join_addr, metrics_addr, _ = wait_for_lines(c.root / "join-service-snp.out", r"listening on (\S+)", 3, p)
    log(f"[SIMULATED, test root] aws-sev-snp join service for the SNP attacks on {join_addr}")
    return demo_variants.AttackContext(sys.modules[__name__], c.root, bins, c.procs, c.ca, sim, join_addr, argv,
                                       c.root / "join-service-snp.log", c.root / "tokens-snp", metrics_addr)


def attack_replayed_snp_report(c):
    """An aws-sev-snp / gcp-sev-snp node replays a recorded SNP report next to a fresh quote; the join service
    refuses it (the report does not bind this attestation's key and nonce) and issues no token or key."""
    import demo_variants
    return snp_attack(c, demo_variants.attack_replayed_snp_report)


def attack_revoked_vcek(c):
    """A node whose VCEK (VLEK on AWS) the test PKI's CRL revokes attests to a join service holding that CRL;
    it is refused (revoked by the ARK's CRL) and no token or key is issued."""
    import demo_variants
    return snp_attack(c, demo_variants.attack_revoked_vcek)


# ---- TDX attacks (simulated TDX hardware: make demo VARIANT=qemu-tdx|azure-tdx) -------------------------------
# scripts/demo_variants.py runs them against the live join service: attack clients on simulated TDs of the test
# PKI. On the other variants there is no TD quote: not applicable.

def tdx_attack(c, attack):
    import demo_variants
    if c.sim is None or c.sim.variant not in demo_variants.TDX_VARIANTS:
        on = c.sim.variant if c.sim else "qemu-vtpm"
        return (attack.__name__, None, f"not applicable on {on}: no TD quote (make demo VARIANT=qemu-tdx|azure-tdx)")
    r = attack(c.snp_ctx)
    return (r["attack"], r["ok"], demo_variants.print_attack(r).split(":", 1)[1].strip())


def attack_replayed_td_quote(c):
    """A genuine TD's evidence recorded for an earlier nonce, replayed: refused, nothing issued."""
    import demo_variants
    return tdx_attack(c, demo_variants.attack_replayed_td_quote)


def attack_unbound_report_data(c):
    """A genuine TD's quote whose REPORTDATA does not bind this handshake's key: refused, nothing issued."""
    import demo_variants
    return tdx_attack(c, demo_variants.attack_unbound_report_data)


def attack_debug_td(c):
    """A TD with the DEBUG attribute: refused, nothing issued."""
    import demo_variants
    return tdx_attack(c, demo_variants.attack_debug_td)


def attack_outdated_tcb(c):
    """A TD on an out-of-date TDX module: refused, nothing issued."""
    import demo_variants
    return tdx_attack(c, demo_variants.attack_outdated_tcb)


def attack_revoked_pck(c):
    """A TD whose PCK certificate the collateral's CRL revokes: refused, nothing issued."""
    import demo_variants
    return tdx_attack(c, demo_variants.attack_revoked_pck)


def luks_key_opens(image, key):
    """Whether `key` opens a keyslot of the LUKS2 header on `image` (cryptsetup, key on stdin; no mapping)."""
    r = subprocess.run(["cryptsetup", "open", "--test-passphrase", "--type", "luks2", "--key-file", "-", image],
                       input=key, capture_output=True)
    return r.returncode == 0


def json_event(path, event, proc, timeout=JOIN_TIMEOUT):
    """The first stdout line of a bootstrapper that is the JSON event `event`."""
    return json.loads(wait_for_line(path, r'^\{.*"event":"' + event + r'".*\}$', proc, timeout=timeout).group(0))


def reboot(node, procs):
    """Power-cycles a node's TPM: swtpm stopped and started again on the same state (PCRs reset), then the
    measured boot of its image again."""
    if node.has_vtpm:
        pid = int((node.tpm_dir / "swtpm.pid").read_text().strip())
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        (node.tpm_dir / "swtpm.pid").unlink(missing_ok=True)
        node.start_tpm(procs)
        node.measured_boot()
    if node.on_reboot is not None:
        node.on_reboot()


def check_result_schema(root, name, out, accepted):
    """`attest verify --json` carries the engine's result object (schemas/result-v1.schema.json), checked with
    the jsonschema library in .venv (skipped with a notice without it)."""
    repo = Path(__file__).resolve().parent.parent
    python = repo / ".venv" / "bin" / "python"
    result = json.loads(out)["result"]
    if result.get("accepted") is not accepted:
        raise Failure(f"{name}: result object says accepted={result.get('accepted')}: {out}")
    if not python.exists():
        log(f"NOTICE: {name}: no .venv, the result object is not checked against the schema")
        return
    path = root / f"{name}.result.json"
    path.write_text(json.dumps(result))
    r = subprocess.run([str(python), str(repo / "schemas/validate_result.py"),
                        str(repo / "schemas/result-v1.schema.json"), str(path)], capture_output=True, text=True)
    if r.returncode != 0:
        raise Failure(f"{name}: the result object does not conform to the schema: {r.stderr}")


def attest_verify(c, endpoint, service, cluster_id, registry):
    cluster = ["--cluster-id", cluster_id] if cluster_id else []
    r = subprocess.run([c.bins["attest"], "verify", "--endpoint", endpoint, "--service", service, *cluster,
                        *signature_args(c.measurements, c.sig, c.pub), "--ak-registry", registry,
                        "--json"] + (c.sim.verifier_args() if c.sim else []),
                       capture_output=True)
    return r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")


def admit_control_plane(c, node, proc):
    """The operator's control-plane admission for `node` (its bootstrapper `proc` running): `attest verify`
    against the node's verify service names the identity its evidence proves; `attest admission issue` signs
    a one-time admission for that identity and the name into the join service's admissions directory."""
    out = c.root / f"{node.name}.out"
    verify = json_event(out, "verify-service", proc)
    if not c.sim:
        # qemu-vtpm: the node's AK is trusted once registered with the join service (before its first join).
        wait_for_line(c.root / f"{node.name}.log", r"join: AK \w+ registered", proc, timeout=JOIN_TIMEOUT)
    rc, text, err = attest_verify(c, verify["grpc"], "grpc", None, c.root / "join-ak-registry.json")
    if rc != 0:
        raise Failure(f"attest verify {node.name} failed ({rc}): {err}")
    identity = json.loads(text)["identity"]
    path = c.root / "admissions" / f"{node.name}.json"
    run([c.bins["attest"], "admission", "issue", "--key", c.root / "admission.key", "--identity", identity,
         "--node-name", node.name, "--valid-for", "10m", "-o", path])
    log(f"operator: attest verify {node.name} → identity {identity[:24]}…; admission signed ({path.name}, once, 10 min)")
    return f"attest verify → {identity[:20]}…, attest admission issue"


def lifecycle(c, join, join_addr, reg_addr, master_secret):
    """A node's life after its first boot: control-plane join, reboot and rejoin, verify, recovery.
    Every node verifies the join service it asks (as on join). Prints one line per event and the closing
    `lifecycle:` line."""
    root, bins, procs, ca, nodes, init, sim = c.root, c.bins, c.procs, c.ca, c.nodes, c.init, c.sim
    init_secret_hash = c.init_secret_hash
    joining = lambda addr, reg: joining_args(addr, reg, c.measurements, c.sig, c.pub, ca)
    events = []
    cluster_id = init["clusterId"]
    ms = json.loads(master_secret.read_text())
    key, salt = base64.b64decode(ms["key"]), base64.b64decode(ms["salt"])
    events.append(f"init: node-1 initialized cluster {cluster_id[:16]}…")
    events.append("join: node-2 and node-3 joined as workers")
    events.append(f"refused: node-bad ({nodes[3].reason})")
    log("lifecycle: the node's life after its first boot")

    # A second control-plane node; its first join endpoint is down, the second (the join service) answers.
    cp = Node("node-4", root, GOOD_IMAGE, True)
    cp.manufacture(ca)
    cp.start_tpm(procs)
    cp.measured_boot()
    if sim:
        sim.provision(cp)
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    dead_addr = f"127.0.0.1:{dead.getsockname()[1]}"
    dead.close()
    argv = bootstrapper_args(bins, cp, init_secret_hash, sim) + joining(dead_addr, reg_addr) + ["--join-service",
                                                                                                join_addr]
    p = procs.start(cp.name, argv)
    # The request's control-plane flag alone gets nothing: the operator verifies node-4 (its verify service),
    # and admits exactly the identity its evidence names, once, for the name node-4.
    admission = admit_control_plane(c, cp, p)
    event = json_event(root / f"{cp.name}.out", "bootstrapped", p)
    if event.get("path") != "join" or event.get("cluster_id") != cluster_id:
        raise Failure(f"{cp.name}: unexpected bootstrap event {event}")
    ca_key = (nodes[0].state_dir / "pki" / "ca.key").read_bytes()
    if (cp.state_dir / "pki" / "ca.key").read_bytes() != ca_key:
        raise Failure(f"{cp.name}: the control-plane files are not the cluster's")
    if "controlPlane" not in (cp.state_dir / "kubeadm-join.yaml").read_text():
        raise Failure(f"{cp.name}: the join configuration has no controlPlane section")
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=30)
    used = re.search(r"control-plane admission used.*identity=(\S+)", c.join_log.read_text(errors="replace"))
    if not used:
        raise Failure(f"{cp.name}: the join service logged no use of its control-plane admission")
    events.append(f"control-plane join: the operator admitted node-4 ({admission}); node-4 joined the control "
                  f"plane with the cluster's CA files (first join endpoint {dead_addr} down, failover to {join_addr})")
    log(events[-1])

    # node-2 reboots: same TPM state and disk image, PCRs reset; it rejoins with the same disk key.
    n2 = nodes[1]
    state = json.loads((n2.state_dir / "node-state.json").read_text())
    reboot(n2, procs)
    p2 = procs.start(f"{n2.name}-reboot", bootstrapper_args(bins, n2, init_secret_hash, sim) +
                     joining(join_addr, reg_addr))
    out2 = root / f"{n2.name}-reboot.out"
    event = json_event(out2, "rejoined", p2)
    if (event.get("via") != "rejoin" or event.get("cluster_id") != cluster_id or not event.get("lock_extended")
            or event.get("lock_register") != lock_register(sim)):
        raise Failure(f"{n2.name}: unexpected rejoin event {event}")
    disk_key = hkdf_sha256(key, salt, ("key-" + state["disk_uuid"]).encode())
    if not luks_key_opens(n2.disk_image, disk_key):
        raise Failure(f"{n2.name}: the disk key HKDF(master, key-<uuid>) does not open its disk image")
    if luks_key_opens(n2.disk_image, bytes(32)):
        raise Failure(f"{n2.name}: a wrong key opens its disk image")
    reg = lock_register(sim)
    events.append(f"rejoin: node-2 rebooted ({reg} reset) and rejoined: rejoin ticket, same disk key "
                  f"(cryptsetup open --test-passphrase on its disk image; no device mapper here, so not mapped), "
                  f"{reg} re-extended")
    log(events[-1])

    # attest verify --cluster-id against node-2's verify service (gRPC and HTTP); a wrong id is refused.
    verify = json_event(out2, "verify-service", p2)
    registry = root / "join-ak-registry.json"
    for service in ("grpc", "http"):
        rc, out, err = attest_verify(c, verify[service], service, cluster_id, registry)
        if rc != 0:
            raise Failure(f"attest verify --service {service} --cluster-id failed ({rc}): {out} {err}")
        check_result_schema(root, f"verify-{service}", out, True)
    wrong = "ee" * 32
    rc, out, err = attest_verify(c, verify["grpc"], "grpc", wrong, registry)
    if rc != 1 or (reg not in err and reg.lower() not in err):
        raise Failure(f"attest verify with a wrong cluster id was not refused ({rc}): {out} {err}")
    check_result_schema(root, "verify-wrong-cluster", out, False)
    events.append(f"verify: attest verify --cluster-id against node-2's verify service (gRPC {verify['grpc']}, "
                  f"HTTP {verify['http']}) verified; a wrong cluster id refused ({reg})")
    log(events[-1])

    # A rolling upgrade: measurements rolled forward to a new image and back.
    events.append(upgrade(c, join_addr, reg_addr, cluster_id, joining))
    log(events[-1])

    # The join service stops; node-1 reboots and cannot rejoin; the operator recovers it.
    join.send_signal(signal.SIGTERM)
    join.wait(timeout=30)
    n1 = nodes[0]
    reboot(n1, procs)
    p1 = procs.start(f"{n1.name}-reboot", bootstrapper_args(bins, n1, init_secret_hash, sim) +
                     joining(join_addr, None))
    out1 = root / f"{n1.name}-reboot.out"
    recovery = json_event(out1, "recovery-listening", p1)["addr"]
    r = subprocess.run([bins["attest"], "recover", "--endpoint", recovery,
                        *signature_args(c.measurements, c.sig, c.pub),
                        "--ak-registry", root / "cli-ak-registry.json", "--master-secret", master_secret, "--json"]
                       + (sim.verifier_args() if sim else []), capture_output=True)
    (root / "attest-recover.log").write_bytes(r.stderr)
    if r.returncode != 0:
        raise Failure(f"attest recover failed ({r.returncode}): {r.stdout.decode()} {r.stderr.decode()}")
    event = json_event(out1, "rejoined", p1)
    if event.get("via") != "recovery" or event.get("cluster_id") != cluster_id:
        raise Failure(f"{n1.name}: unexpected recovery event {event}")
    n1_state = json.loads((n1.state_dir / "node-state.json").read_text())
    if (n1.dir / "run" / "state-disk.key").read_bytes() != hkdf_sha256(key, salt, ("key-" + n1_state["disk_uuid"]).encode()):
        raise Failure(f"{n1.name}: the recovered disk key is not HKDF(master, key-<uuid>)")
    v1 = json_event(out1, "verify-service", p1)
    rc, out, err = attest_verify(c, v1["grpc"], "grpc", cluster_id, root / "cli-ak-registry.json")
    if rc != 0:
        raise Failure(f"node-1 after recovery: attest verify --cluster-id failed ({rc}): {err}")
    events.append(f"recover: join service stopped; node-1 rebooted, could not rejoin, and recovered through "
                  f"attest recover ({recovery}): disk key back, {reg} = cluster id (verified)")
    log(events[-1])

    print()
    print("lifecycle")
    print("=========")
    for e in events:
        print(f"    {e}")
    print("lifecycle: init ok, join ok, control-plane join ok, rejoin ok, verify ok, upgrade ok, recover ok")
    return True


# The "new image" of the rolling upgrade: a new kernel (PCR 9).
NEW_IMAGE = {**GOOD_IMAGE, 9: b"attest-demo kernel v2"}


def sign_as_operator(c, path):
    """Signs `path` in place with the operator's measurements key under the next version (`attest measurements
    sign`): every new content gets a higher version, also a return to older values."""
    c.version += 1
    run([c.bins["attest"], "measurements", "sign", path, "--key", c.root / "measurements-signing.key",
         "--version", str(c.version), "-o", path])
    return path.with_name(path.name + ".sig")


def install_measurements(c, path):
    """Replaces the join service's signed measurements with `path` (file, then signature) and waits until its
    hot reload applied them (the validator-set generation moves on). Returns the new generation."""
    before = metric(c, "attest_join_measurements_generation")
    data, sig = path.read_bytes(), path.with_name(path.name + ".sig").read_bytes()
    for target, content in ((c.measurements, data), (c.sig, sig)):
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_bytes(content)
        os.replace(tmp, target)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        gen = metric(c, "attest_join_measurements_generation")
        if gen is not None and before is not None and gen > before:
            return gen
        time.sleep(0.2)
    raise Failure(f"the join service did not apply {path.name} (generation {before})")


def upgrade(c, join_addr, reg_addr, cluster_id, joining):
    """Rolling upgrade: the operator rolls the signed measurements forward (`attest measurements merge`: the
    old image v1 and the new v2 both accepted), a node of the new image and one of the old both join; then
    the old set is dropped (`merge --drop v1`, re-signed) and the old node, rebooted, is refused on rejoin
    by the join service's hot-reloaded validators. The v1 file is put back afterwards for the rest of the demo
    (the join service's own node boots v1)."""
    root, bins, procs, sim = c.root, c.bins, c.procs, c.sim
    # The nodes' variant, and qemu-vtpm: the join service attests with node-1's TPM (a map-form file applied
    # to both; the list names each).
    # A TDX join service attests as its node's variant alone (no qemu-vtpm entry: qemu-tdx's values are TD registers).
    variants = ([sim.variant] if sim.variant in ("qemu-tdx", "azure-tdx") else [sim.variant, "qemu-vtpm"]) if sim \
        else ["qemu-vtpm"]
    original = root / "measurements-v1.json"
    shutil.copy(c.measurements, original)
    shutil.copy(c.sig, original.with_name(original.name + ".sig"))
    v2 = root / "measurements-v2.json"
    v2.write_text(json.dumps({str(pcr): {"expected": value, "warnOnly": False} for pcr, value in
                              sorted(image_measurements(NEW_IMAGE, sim).items())}, indent=2))
    rollout = root / "measurements-rollout.json"
    run([bins["attest"], "measurements", "merge", f"{original}=v1", f"{v2}=v2",
         *[arg for v in variants for arg in ("--variant", v)], "-o", rollout])
    sign_as_operator(c, rollout)
    gen_rollout = install_measurements(c, rollout)
    log(f"upgrade: measurements rolled forward ({rollout.name}: {', '.join(variants)} accept v1 and v2, signed; "
        f"join service generation {gen_rollout})")

    started = []
    for name, image in (("node-5", NEW_IMAGE), ("node-6", GOOD_IMAGE)):
        n = Node(name, root, image, False)
        n.manufacture(c.ca)
        n.start_tpm(procs)
        n.measured_boot()
        if sim:
            sim.provision(n)
        p = procs.start(n.name, bootstrapper_args(bins, n, c.init_secret_hash, sim) + joining(join_addr, reg_addr))
        event = json_event(root / f"{n.name}.out", "bootstrapped", p)
        if event.get("path") != "join" or event.get("cluster_id") != cluster_id:
            raise Failure(f"{n.name}: unexpected bootstrap event {event}")
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=30)
        started.append(n)
    new_node, old_node = started
    log(f"upgrade: {new_node.name} (image v2) and {old_node.name} (image v1) both joined during the rollout")

    final = root / "measurements-v2-only.json"
    run([bins["attest"], "measurements", "merge", rollout, "--drop", "v1", "-o", final])
    sign_as_operator(c, final)
    # The old node keeps the rollout file it was configured with (it still believes the v1 join service);
    # the refusal comes from the join service, whose file no longer accepts v1.
    node_files = (rollout, rollout.with_name(rollout.name + ".sig"))
    refused_before = len(re.findall(r"attestation refused", c.join_log.read_text(errors="replace")))
    gen_final = install_measurements(c, final)
    reboot(old_node, procs)
    argv = (bootstrapper_args(bins, old_node, c.init_secret_hash, sim) +
            joining_args(join_addr, reg_addr, node_files[0], node_files[1], c.pub, c.ca))
    p = procs.start(f"{old_node.name}-reboot", argv)
    wait_for_line(root / f"{old_node.name}-reboot.log", r"rejoin: refused", p, timeout=JOIN_TIMEOUT)
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=30)
    log_text = c.join_log.read_text(errors="replace")
    reasons = re.findall(image_refusal(sim, "9"), log_text)
    if len(re.findall(r"attestation refused", log_text)) <= refused_before or not reasons:
        raise Failure(f"{old_node.name}: the join service did not refuse the old image ({image_refusal(sim, '9')})")
    if "rejoined" in (root / f"{old_node.name}-reboot.out").read_text(errors="replace"):
        raise Failure(f"{old_node.name}: rejoined with the old image after v1 was dropped")
    # Back to the v1 values: not by putting the old file back (a rollback, refused), but signed anew under the
    # next version.
    sign_as_operator(c, original)
    install_measurements(c, original)
    return (f"upgrade: measurements rolled forward (v1 + v2, merged and signed; hot reload, generation "
            f"{gen_rollout}); {new_node.name} (v2) and {old_node.name} (v1) joined; v1 dropped (generation "
            f"{gen_final}); {old_node.name} rebooted and its rejoin was refused ({reasons[-1][:20]}…); v1 values "
            f"restored under version {c.version}")


if __name__ == "__main__":
    sys.exit(main())
