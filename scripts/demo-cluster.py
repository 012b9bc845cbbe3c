#!/usr/bin/env python3
"""The main job: a local attested cluster bootstrap on loopback.

    make demo          (builds the release binaries, then runs this script)
    python3 scripts/demo-cluster.py target/release [--keep]

Starts, on 127.0.0.1 only:
  1. the key service (kms.API) with a freshly generated master secret;
  2. node-1: its own swtpm (EK certificate from a local EK CA), a simulated measured boot (PCRs 4, 8, 9
     extended with the "image" digests), and the bootstrapper (init server + join client);
  3. `attest init` against node-1: registers node-1's AK by credential activation, verifies node-1's aTLS
     attestation against the measurements, sends the init request, streams the logs, writes kubeconfig,
     the master secret and cluster.json;
  4. the join service (aTLS, AK registration, /metrics) with the cluster PKI node-1 created;
  5. node-2 and node-3, each with its own swtpm, EK certificate and the expected measurements: they
     register their AKs, attest to the join service and join;
  6. node-bad, whose PCR 9 differs (a modified kernel): the join service refuses it with a clear reason;
  7. the node's later life (lifecycle()): node-4 joins the control plane (its first join endpoint is down,
     the second answers); node-2 reboots (swtpm restarted: PCRs reset; same TPM state and LUKS2 disk image)
     and rejoins with the same disk key; `attest verify --cluster-id` against node-2's verify service
     succeeds and fails with a wrong cluster id; the join service stops and node-1, rebooted, recovers
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
    """swtpm's local CA (swtpm_localca) in a directory of our own: it signs every node's EK certificate."""

    def __init__(self, root):
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

    @property
    def tcti(self):
        return f"swtpm:host=127.0.0.1,port={self.port}"

    def manufacture(self, ca):
        run(["swtpm_setup", "--tpm2", "--tpmstate", self.tpm_dir, "--createek", "--create-ek-cert",
             "--create-platform-cert", "--lock-nvram", "--overwrite", "--config", ca.setup_conf])

    def start_tpm(self, procs):
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
        env = dict(os.environ, TPM2TOOLS_TCTI=self.tcti)
        for pcr, blob in sorted(self.image.items()):
            digest = hashlib.sha256(blob).hexdigest()
            run(["tpm2_pcrextend", f"{pcr}:sha256={digest}"], env=env)


def expected_pcrs(image):
    """The PCR values a measured boot of `image` produces from all-zero PCRs."""
    return {pcr: hashlib.sha256(b"\0" * 32 + hashlib.sha256(blob).digest()).hexdigest() for pcr, blob in image.items()}


def fingerprint(b):
    return hashlib.sha256(b).hexdigest()[:16]


def main():
    args = [a for a in sys.argv[1:] if a != "--keep"]
    keep = "--keep" in sys.argv[1:]
    bindir = Path(args[0] if args else "target/release").resolve()
    bins = {n: bindir / n for n in ("attest", "attest-bootstrapper", "join-service", "key-service")}
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
        ok = demo(root, bins, procs)
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


def demo(root, bins, procs):
    log(f"work directory {root}")
    ca = EkCa(root)
    measurements = root / "measurements.json"
    # As the default join measurements: PCR 15 = 0 too (a node already bound to a cluster cannot join).
    expected = {**expected_pcrs(GOOD_IMAGE), 15: "00" * 32}
    measurements.write_text(json.dumps(
        {str(pcr): {"expected": value, "warnOnly": False} for pcr, value in sorted(expected.items())},
        indent=2))
    log(f"measurements: PCRs {sorted(expected)} enforced, PCR 15 = 0 ({measurements.name})")

    # Master secret and init secret, as an operator would create them.
    master_secret = root / "master-secret.json"
    init_secret = root / "init-secret"
    init_secret.write_bytes(secrets.token_bytes(32))
    init_secret_hash = root / "init-secret.sha256"
    init_secret_hash.write_text(hashlib.sha256(init_secret.read_bytes()).hexdigest() + "\n")
    run([bins["attest"], "secret", "new", "--out", master_secret])

    kms = procs.start("key-service", [bins["key-service"], "--listen", "127.0.0.1:0", "--master-secret", master_secret])
    kms_addr = wait_for_line(root / "key-service.out", r"listening on (\S+)", kms).group(1)
    log(f"key service on {kms_addr}")

    nodes = [Node("node-1", root, GOOD_IMAGE, True), Node("node-2", root, GOOD_IMAGE, False, disk_image=True),
             Node("node-3", root, GOOD_IMAGE, False), Node("node-bad", root, BAD_IMAGE, False)]
    for n in nodes:
        n.manufacture(ca)
        n.start_tpm(procs)
        n.measured_boot()
    log(f"{len(nodes)} swtpm TPMs manufactured with EK certificates from the local EK CA and booted")

    first = nodes[0]
    boot = bootstrapper_args(bins, first, init_secret_hash)
    p1 = procs.start(first.name, boot)
    first.init_addr = wait_for_line(root / f"{first.name}.out", r"listening on (\S+)", p1).group(1)
    log(f"{first.name}: bootstrapper, init server on {first.init_addr}")

    out = root / "cluster"
    registry_cli = root / "cli-ak-registry.json"
    t = time.monotonic()
    r = subprocess.run([bins["attest"], "init", "--endpoint", first.init_addr, "--measurements", measurements,
                        "--ak-registry", registry_cli, "--ek-ca", ca.dir, "--master-secret", master_secret,
                        "--init-secret", init_secret, "--out", out, "--cluster-name", "attest-demo", "--json"],
                       capture_output=True)
    (root / "attest-init.log").write_bytes(r.stderr)
    if r.returncode != 0:
        raise Failure(f"attest init failed ({r.returncode}): {r.stderr.decode(errors='replace')}")
    init = json.loads(r.stdout)
    first.timing = time.monotonic() - t
    first.outcome = "initialized the cluster"
    log(f"attest init: cluster {init['clusterId'][:16]}… initialized in {first.timing:.1f}s")

    # The join service, configured from what init produced: the cluster PKI and the measurement salt.
    salt_file = root / "measurement-salt"
    salt_file.write_bytes(bytes.fromhex(init["measurementSalt"]))
    kube_config = root / "kubernetes.json"
    kube_config.write_text(json.dumps({"kubernetesVersion": "v1.31.1",
                                       "components": []}))
    join = procs.start("join-service", [
        bins["join-service"], "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
        "--registration-listen", "127.0.0.1:0", "--key-service", kms_addr, "--measurements", measurements,
        "--measurement-salt", salt_file, "--ak-registry", root / "join-ak-registry.json",
        "--ek-ca", ca.dir / "swtpm-localca-rootca-cert.pem", "--ek-ca", ca.dir / "issuercert.pem",
        "--pki-dir", first.state_dir / "pki", "--api-server-endpoint", "127.0.0.1:6443",
        "--kubernetes-config", kube_config, "--token-issuer", "dry-run", "--dry-run-dir", root / "tokens"])
    addrs = wait_for_lines(root / "join-service.out", r"listening on (\S+)", 3, join)
    join_addr, metrics_addr, reg_addr = addrs
    log(f"join service on {join_addr} (AK registration {reg_addr}, metrics http://{metrics_addr}/metrics)")

    started = {}
    for n in nodes[1:]:
        argv = bootstrapper_args(bins, n, init_secret_hash) + ["--join-service", join_addr, "--registration", reg_addr]
        started[n.name] = (procs.start(n.name, argv), time.monotonic())
    for n in nodes[1:3]:
        p, t = started[n.name]
        event = json.loads(wait_for_line(root / f"{n.name}.out", r'^\{.*"event":"bootstrapped".*\}$', p,
                                         timeout=JOIN_TIMEOUT).group(0))
        if event.get("path") != "join" or event.get("cluster_id") != init["clusterId"]:
            raise Failure(f"{n.name}: unexpected bootstrap event {event}")
        n.timing = time.monotonic() - t
        n.outcome = "joined"
        log(f"{n.name}: joined in {n.timing:.1f}s")

    bad = nodes[3]
    p, t = started[bad.name]
    m = wait_for_line(root / "join-service.log", r"attestation refused.*reason=(PCR \d+: expected \w+, found \w+)",
                      join, timeout=REFUSAL_TIMEOUT)
    bad.timing = time.monotonic() - t
    bad.outcome = "refused"
    bad.reason = m.group(1)
    log(f"{bad.name}: refused by the join service: {bad.reason}")

    # Bootstrapped nodes keep serving their attestation (verify service) and node-bad keeps retrying: stop
    # them all, so that every TPM is free to read back (swtpm serves one connection at a time).
    for n in nodes:
        p = p1 if n is first else started[n.name][0]
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            raise Failure(f"{n.name}: bootstrapper did not exit")
    ok = check_and_summarize(root, nodes, init, master_secret, metrics_addr)
    if ok:
        ok = lifecycle(root, bins, procs, ca, nodes, init, measurements, master_secret, init_secret_hash, join,
                       join_addr, reg_addr)
    return ok


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
    env = dict(os.environ, TPM2TOOLS_TCTI=node.tcti)
    out = run(["tpm2_pcrread", "sha256:15"], env=env).stdout.decode()
    m = re.search(r"15\s*:\s*0x([0-9A-Fa-f]{64})", out)
    if not m:
        raise Failure(f"{node.name}: cannot read PCR 15: {out}")
    return m.group(1).lower()


def check_and_summarize(root, nodes, init, master_secret_file, metrics_addr):
    """Checks every node's outcome independently of the services and prints the summary."""
    ms = json.loads(master_secret_file.read_text())
    key, salt = base64.b64decode(ms["key"]), base64.b64decode(ms["salt"])
    measurement_secret = hkdf_sha256(key, salt, b"key-measurementSecret")
    measurement_salt = bytes.fromhex(init["measurementSalt"])
    cluster_id = hkdf_sha256(measurement_secret, measurement_salt, b"key-clusterID").hex()
    problems = []
    if cluster_id != init["clusterId"]:
        problems.append(f"cluster id {init['clusterId']} is not HKDF(measurement secret, salt)")
    locked_pcr15 = hashlib.sha256(b"\0" * 32 + bytes.fromhex(cluster_id)).hexdigest()

    issued = {}
    for line in (root / "join-service.log").read_text(errors="replace").splitlines():
        m = re.search(r'join ticket issued node="([^"]+)".*ak_digest=(\w+).*token_id=(\w+)', line)
        if m:
            issued[m.group(1)] = (m.group(2), m.group(3))

    rows = []
    for n in nodes:
        pcr = pcr15(n)
        state_file = n.state_dir / "node-state.json"
        state = json.loads(state_file.read_text()) if state_file.exists() else None
        if n.outcome == "refused":
            ak = "-"
            checks = n.reason
            disk = "no key issued"
            if state is not None or pcr != "0" * 64:
                problems.append(f"{n.name}: refused but has node state or a set PCR 15")
            lock = "unlocked (PCR 15 = 0)" if pcr == "0" * 64 else f"PCR 15 = {pcr[:16]}…"
        else:
            if n is nodes[0]:
                att = init["attestation"]
                ak = att["akDigest"][:16]
                checks = f"{att['variant']}: PCRs {', '.join(str(c['pcr']) for c in att['pcrsChecked'])} matched"
            else:
                digest, token = issued.get(n.name, ("?", "?"))
                ak = digest[:16]
                checks = f"qemu-vtpm: PCRs {', '.join(map(str, sorted(GOOD_IMAGE)))} matched; token {token}"
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
                problems.append(f"{n.name}: PCR 15 {pcr} is not the cluster id extended")
            lock = "locked (PCR 15 = cluster id ✓)" if pcr == locked_pcr15 else f"PCR 15 = {pcr[:16]}…"
        rows.append((n.name, "control-plane" if n.control_plane else "worker", n.outcome or "-", n.timing or 0.0, ak,
                     checks, disk, lock))

    print()
    print("summary")
    print("=======")
    print(f"cluster id      {cluster_id}  (= HKDF(measurement secret, measurement salt) ✓)")
    print(f"measurements    PCRs {', '.join(map(str, sorted(GOOD_IMAGE)))} and 15 (= 0) enforced; every AK registered by "
          f"TPM2 credential activation against the local EK CA")
    print()
    for name, role, outcome, timing, ak, checks, disk, lock in rows:
        print(f"{name} ({role}): {outcome} in {timing:.1f}s")
        print(f"    attestation  AK {ak}  {checks}")
        print(f"    state disk   {disk}")
        print(f"    node lock    {lock}")
    try:
        text = urllib.request.urlopen(f"http://{metrics_addr}/metrics", timeout=5).read().decode()
        wanted = ("attest_join_tickets_issued_total", "attest_join_refused_total", "attest_join_attestations_total")
        shown = [l for l in text.splitlines() if l.startswith(wanted) and not l.endswith(" 0")]
        print()
        print("join service /metrics (non-zero counters):")
        for line in shown:
            print(f"    {line}")
    except OSError as e:
        print(f"(metrics unavailable: {e})")
    print()
    if problems:
        for p in problems:
            print(f"PROBLEM: {p}")
        return False
    print("all checks passed: 1 node initialized, 2 joined, 1 refused for its PCR 9")
    return True


def bootstrapper_args(bins, node, init_secret_hash):
    disk = f"luks-header:{node.disk_image}" if node.disk_image is not None else "key-file"
    argv = [bins["attest-bootstrapper"], "--tpm", node.tcti, "--state-dir", node.state_dir, "--init-listen",
            "127.0.0.1:0", "--node-name", node.name, "--init-secret-hash", init_secret_hash, "--disk", disk,
            "--runtime-dir", node.dir / "run", "--backend", "dry-run", "--verify-listen", "127.0.0.1:0",
            "--verify-http-listen", "127.0.0.1:0", "--recover-listen", "127.0.0.1:0"]
    if node.control_plane:
        argv.append("--control-plane")
    return argv


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
    pid = int((node.tpm_dir / "swtpm.pid").read_text().strip())
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    (node.tpm_dir / "swtpm.pid").unlink(missing_ok=True)
    node.start_tpm(procs)
    node.measured_boot()


def attest_verify(bins, endpoint, service, cluster_id, measurements, registry):
    r = subprocess.run([bins["attest"], "verify", "--endpoint", endpoint, "--service", service, "--cluster-id",
                        cluster_id, "--measurements", measurements, "--ak-registry", registry, "--json"],
                       capture_output=True)
    return r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")


def lifecycle(root, bins, procs, ca, nodes, init, measurements, master_secret, init_secret_hash, join, join_addr,
              reg_addr):
    """A node's life after its first boot (issue 16): control-plane join, reboot and rejoin, verify, recovery.
    Prints one line per event and the closing `lifecycle:` line."""
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
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    dead_addr = f"127.0.0.1:{dead.getsockname()[1]}"
    dead.close()
    argv = bootstrapper_args(bins, cp, init_secret_hash) + ["--join-service", dead_addr, "--join-service", join_addr,
                                                            "--registration", reg_addr]
    p = procs.start(cp.name, argv)
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
    events.append(f"control-plane join: node-4 joined the control plane with the cluster's CA files "
                  f"(first join endpoint {dead_addr} down, failover to {join_addr})")
    log(events[-1])

    # node-2 reboots: same TPM state and disk image, PCRs reset; it rejoins with the same disk key.
    n2 = nodes[1]
    state = json.loads((n2.state_dir / "node-state.json").read_text())
    reboot(n2, procs)
    p2 = procs.start(f"{n2.name}-reboot", bootstrapper_args(bins, n2, init_secret_hash) +
                     ["--join-service", join_addr, "--registration", reg_addr])
    out2 = root / f"{n2.name}-reboot.out"
    event = json_event(out2, "rejoined", p2)
    if event.get("via") != "rejoin" or event.get("cluster_id") != cluster_id or not event.get("pcr15_extended"):
        raise Failure(f"{n2.name}: unexpected rejoin event {event}")
    disk_key = hkdf_sha256(key, salt, ("key-" + state["disk_uuid"]).encode())
    if not luks_key_opens(n2.disk_image, disk_key):
        raise Failure(f"{n2.name}: the disk key HKDF(master, key-<uuid>) does not open its disk image")
    if luks_key_opens(n2.disk_image, bytes(32)):
        raise Failure(f"{n2.name}: a wrong key opens its disk image")
    events.append(f"rejoin: node-2 rebooted (PCR 15 reset) and rejoined: rejoin ticket, same disk key "
                  f"(cryptsetup open --test-passphrase on its disk image; no device mapper here, so not mapped), "
                  f"PCR 15 re-extended")
    log(events[-1])

    # attest verify --cluster-id against node-2's verify service (gRPC and HTTP); a wrong id is refused.
    verify = json_event(out2, "verify-service", p2)
    registry = root / "join-ak-registry.json"
    for service in ("grpc", "http"):
        rc, out, err = attest_verify(bins, verify[service], service, cluster_id, measurements, registry)
        if rc != 0:
            raise Failure(f"attest verify --service {service} --cluster-id failed ({rc}): {out} {err}")
    wrong = "ee" * 32
    rc, out, err = attest_verify(bins, verify["grpc"], "grpc", wrong, measurements, registry)
    if rc != 1 or "PCR 15" not in err:
        raise Failure(f"attest verify with a wrong cluster id was not refused ({rc}): {out} {err}")
    events.append(f"verify: attest verify --cluster-id against node-2's verify service (gRPC {verify['grpc']}, "
                  f"HTTP {verify['http']}) verified; a wrong cluster id refused (PCR 15)")
    log(events[-1])

    # The join service stops; node-1 reboots and cannot rejoin; the operator recovers it.
    join.send_signal(signal.SIGTERM)
    join.wait(timeout=30)
    n1 = nodes[0]
    reboot(n1, procs)
    p1 = procs.start(f"{n1.name}-reboot", bootstrapper_args(bins, n1, init_secret_hash) +
                     ["--join-service", join_addr])
    out1 = root / f"{n1.name}-reboot.out"
    recovery = json_event(out1, "recovery-listening", p1)["addr"]
    r = subprocess.run([bins["attest"], "recover", "--endpoint", recovery, "--measurements", measurements,
                        "--ak-registry", root / "cli-ak-registry.json", "--master-secret", master_secret, "--json"],
                       capture_output=True)
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
    rc, out, err = attest_verify(bins, v1["grpc"], "grpc", cluster_id, measurements, root / "cli-ak-registry.json")
    if rc != 0:
        raise Failure(f"node-1 after recovery: attest verify --cluster-id failed ({rc}): {err}")
    events.append(f"recover: join service stopped; node-1 rebooted, could not rejoin, and recovered through "
                  f"attest recover ({recovery}): disk key back, PCR 15 = cluster id (verified)")
    log(events[-1])

    print()
    print("lifecycle")
    print("=========")
    for e in events:
        print(f"    {e}")
    print("lifecycle: init ok, join ok, control-plane join ok, rejoin ok, verify ok, recover ok")
    return True


if __name__ == "__main__":
    sys.exit(main())
