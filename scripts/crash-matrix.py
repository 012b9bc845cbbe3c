#!/usr/bin/env python3
"""The crash matrix: a crash at every persistence step of a node's life loses nothing.

    python3 scripts/crash-matrix.py BINDIR [--only FLOW[,FLOW…]] [--kinds sigkill,power-cut] [--keep]

BINDIR holds `attest-bootstrapper`, `join-service` and `key-service` built with their cargo feature
`fault-injection` (and `attest`); scripts/test.sh builds them into target/fault-debug. Only such builds honour
ATTEST_FAULT_POINTS (attest_util::fault): at a listed point the process prints `ATTEST-FAULT-POINT <name>`
and stops there, and this script kills it at exactly that step.

A real cluster on 127.0.0.1 (as the demo: swtpm TPMs with EK certificates, signed measurements, a key
service over mutual TLS, a join service on the first node's TPM over mutual aTLS, the dry-run Kubernetes
backend, LUKS2 headers on disk images) — then, for every flow and every point of it, a fresh node is taken
to that point and stopped there by one kind of fault:

  sigkill    the bootstrapper is killed (SIGKILL); the machine keeps running (same boot: PCR 15 stays)
  power-cut  the bootstrapper is killed and the machine loses power: the TPM is reset (PCRs cleared), the
             runtime directory (a tmpfs) is emptied, and the node's disk keeps only what reached it: the
             node's file system is an ext4 image on a loop device, and the image is copied at the moment of
             the fault, so writes still in the page cache (not fsynced) are lost; the page cache is dropped
             and the copy is mounted (its journal replayed) as the disk the node boots with

The node is then brought back as systemd and an operator would: the bootstrapper is started again; exit 4
("marked for reset") reboots the machine (TPM reset, runtime directory emptied) and starts it again; a node
waiting for `attest init` or for recovery gets `attest init` / `attest recover` again. It must end in a state
the design names:

  initialized / joined                   it finished (or its last step had already been recorded)
  reset and re-initialized / rejoined    its interrupted bootstrap was reset and it bootstrapped afresh
  rejoined with the same disk key        a bootstrapped node (rejoin, recovery) got its key back
  refusing with a clear reason           (no point of this matrix should end here)

and every end state is checked independently: PCR 15 = SHA-256(0³² ‖ cluster id), the LUKS2 header's node
state `bootstrapped` for this cluster and disk, and HKDF(master secret, "key-" + disk UUID) opens the
disk's keyslot. Data is lost if a node that was bootstrapped before the fault comes back with another disk,
another UUID, or a key that no longer opens it. The join service and the key service are also killed in the
middle of a join (token created, keys fetched, ticket not yet sent; a data key derived, not yet sent) and
restarted: the node's join must complete without a reset.

Ends with `crash points: N, recovered: N, data lost: 0` and exits 0 only when every case recovered and
nothing was lost. Needs root (loop mounts, drop_caches), swtpm, tpm2-tools, cryptsetup and mkfs.ext4; Python 3
standard library only. Every process it started is stopped by PID at the end, every mount undone.
"""

import base64
import concurrent.futures
import hashlib
import importlib.util
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("demo_cluster", HERE / "demo-cluster.py")
dc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(dc)
log, Failure, run = dc.log, dc.Failure, dc.run

POINT_TIMEOUT = 90   # seconds for a node to reach its fault point
STEP_TIMEOUT = 120   # seconds for one bring-back step (an event, or an exit)
MAX_BOOTS = 4        # starts of the bootstrapper while bringing a node back
WORKERS = 2          # nodes taken through their cases at a time (each has its own TPM and disk)

# Every persistence point, per flow, in the order the node reaches them (docs/ARCHITECTURE.md, "Crash safety").
COMMIT = ["lock.intent-written", "lock.extended", "disk.formatted", "commit.disk-set-up",
          "commit.state-file-written", "commit.state-header-written"]
FINAL = ["commit.backend-done", "commit.final-state-file-written", "commit.final-state-header-written"]
FLOWS = {
    "init": COMMIT + ["backend.init.config-written", "backend.init.pki-written",
                      "backend.init.kubeconfig-written"] + FINAL,
    "join": COMMIT + ["backend.join.files-written", "backend.join.config-written"] + FINAL,
    "rejoin": [f"rejoin.{s}" for s in ("keys-checked", "disk-reopened", "restarted", "state-written", "relocked")],
    "recovery": [f"recovery.{s}" for s in ("keys-checked", "disk-reopened", "restarted", "state-written",
                                           "relocked")],
    "reset": ["reset.token-removed", "reset.disk-reset", "reset.state-removed"],
    "services": ["join-service.keys-and-token", "join-service.ticket-ready", "key-service.data-key"],
}
KINDS = ("sigkill", "power-cut")
# Where a node of each flow may end (the design's named states).
EXPECTED = {
    "init": {"initialized", "reset and re-initialized"},
    "join": {"joined", "reset and rejoined"},
    "rejoin": {"rejoined with the same disk key"},
    "recovery": {"rejoined with the same disk key"},
    "reset": {"reset and rejoined"},
    "services": {"joined"},
}


def sh(*argv, **kw):
    return run([str(a) for a in argv], **kw)


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Cluster:
    """What every case shares: binaries, trust inputs, secrets, the TPM template and the running services."""

    def __init__(self, root, bins, procs):
        self.root, self.bins, self.procs = root, bins, procs
        self.ca = dc.EkCa(root)
        self.measurements = root / "measurements.json"
        expected = {**dc.expected_pcrs(dc.GOOD_IMAGE), 15: "00" * 32}
        self.measurements.write_text(json.dumps(
            {str(p): {"expected": v, "warnOnly": False} for p, v in sorted(expected.items())}))
        self.pub, self.sig = dc.sign_measurements(root, self.measurements, bins)
        self.master_secret = root / "master-secret.json"
        sh(bins["attest"], "secret", "new", "--out", self.master_secret)
        ms = json.loads(self.master_secret.read_text())
        self.key, self.salt = base64.b64decode(ms["key"]), base64.b64decode(ms["salt"])
        self.init_secret = root / "init-secret"
        self.init_secret.write_bytes(secrets.token_bytes(32))
        self.init_secret_hash = root / "init-secret.sha256"
        self.init_secret_hash.write_text(hashlib.sha256(self.init_secret.read_bytes()).hexdigest() + "\n")
        self.cli_registry = root / "cli-ak-registry.json"
        self.join_registry = root / "join-ak-registry.json"
        self.ports = {"join": free_port(), "registration": free_port(), "kms": free_port()}
        self.cluster_id = None
        self.seed = None

    def signature_args(self):
        return dc.signature_args(self.measurements, self.sig, self.pub)

    def joining_args(self):
        return (["--join-service", f"127.0.0.1:{self.ports['join']}"] + self.signature_args()
                + ["--join-service-ek-ca", self.ca.dir / "swtpm-localca-rootca-cert.pem",
                   "--join-service-ek-ca", self.ca.dir / "issuercert.pem",
                   "--registration", f"127.0.0.1:{self.ports['registration']}"])

    def disk_key(self, uuid):
        return dc.hkdf_sha256(self.key, self.salt, ("key-" + uuid).encode())

    def attest_init(self, addr, tag):
        """`attest init` against `addr` in the background (returns the process)."""
        return self.procs.start(f"attest-init-{tag}", [
            self.bins["attest"], "init", "--endpoint", addr, *self.signature_args(),
            "--ak-registry", self.cli_registry, "--ek-ca", self.ca.dir, "--master-secret", self.master_secret,
            "--init-secret", self.init_secret, "--out", self.root / f"cluster-{tag}", "--cluster-name", "crash",
            "--json"])

    def attest_recover(self, addr, tag, registry=None):
        """`attest recover` against `addr`, knowing the node's AK from `registry`: the join service's (where a
        node that joined registered its AK; the default) or `attest init`'s (a node that initialized)."""
        return self.procs.start(f"attest-recover-{tag}", [
            self.bins["attest"], "recover", "--endpoint", addr, *self.signature_args(),
            "--ak-registry", registry or self.join_registry, "--master-secret", self.master_secret, "--json"])

    # ---- the services ----------------------------------------------------------------------------------------

    def start_key_service(self, faults=None):
        pki = self.root / "cluster-seed" / "key-service-pki"
        env = dict(os.environ, **({"ATTEST_FAULT_POINTS": faults} if faults else {}))
        name = self.next_name("key-service")
        self.kms = self.procs.start(name, [
            self.bins["key-service"], "--listen", f"127.0.0.1:{self.ports['kms']}",
            "--master-secret", self.master_secret, "--tls-ca", pki / "ca.crt", "--tls-cert", pki / "key-service.crt",
            "--tls-key", pki / "key-service.key"], env=env)
        self.kms_log = self.root / f"{name}.log"
        wait_listening(self.root / f"{name}.out", self.kms)

    def start_join_service(self, faults=None):
        pki = self.root / "cluster-seed" / "key-service-pki"
        salt_file = self.root / "measurement-salt"
        kube = self.root / "kubernetes.json"
        kube.write_text(json.dumps({"kubernetesVersion": "v1.31.1", "components": []}))
        env = dict(os.environ, **({"ATTEST_FAULT_POINTS": faults} if faults else {}))
        name = self.next_name("join-service")
        self.join = self.procs.start(name, [
            self.bins["join-service"], "--listen", f"127.0.0.1:{self.ports['join']}",
            "--metrics-listen", "127.0.0.1:0", "--registration-listen", f"127.0.0.1:{self.ports['registration']}",
            "--tpm", self.seed.tcti, "--node-variant", "qemu-vtpm", "--key-service", f"127.0.0.1:{self.ports['kms']}",
            "--key-service-ca", pki / "ca.crt", "--key-service-cert", pki / "join-service.crt",
            "--key-service-key", pki / "join-service.key", *self.signature_args(), "--measurement-salt", salt_file,
            "--ak-registry", self.join_registry, "--pki-dir", self.seed.state_dir / "pki",
            "--api-server-endpoint", "127.0.0.1:6443", "--kubernetes-config", kube, "--token-issuer", "dry-run",
            "--dry-run-dir", self.root / "tokens", "--kds-url", "offline",
            "--ek-ca", self.ca.dir / "swtpm-localca-rootca-cert.pem", "--ek-ca", self.ca.dir / "issuercert.pem",
            # The cluster state `attest init` wrote (disks and names bound to attested nodes, the measurements
            # version): the join service's own copy survives its restarts, as on a cluster's volume.
            "--cluster-state", self.root / "join-cluster-state.json",
            "--cluster-state-seed", self.root / "cluster-seed" / "cluster-state.json"],
            env=env)
        self.join_log = self.root / f"{name}.log"
        dc.wait_for_lines(self.root / f"{name}.out", r"listening on (\S+)", 3, self.join)

    def next_name(self, what):
        self.started = getattr(self, "started", 0) + 1
        return f"{what}-{self.started}"


def wait_listening(out, proc):
    return dc.wait_for_line(out, r"listening on (\S+)", proc).group(1)


def kill(proc):
    """SIGKILL and reap."""
    if proc.poll() is None:
        proc.kill()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            kill(proc)


class Machine:
    """A node: its TPM (swtpm, state on the host), its runtime directory (a tmpfs: emptied by every reboot) and
    its disk (an ext4 image on a loop device, mounted: the state directory and the LUKS2 disk image live there)."""

    def __init__(self, c, name, control_plane=False, source=None):
        self.c, self.name, self.control_plane = c, name, control_plane
        # A clone is the same machine rebooted: the same TPM (so the same attested identity) and the same node
        # name, which the join service has bound to that identity.
        self.node_name = source.node_name if source is not None else name
        self.dir = c.root / name
        self.tpm_dir, self.run_dir, self.mnt = self.dir / "tpm", self.dir / "run", self.dir / "mnt"
        self.img = self.dir / "disk.ext4"
        for d in (self.tpm_dir, self.run_dir, self.mnt):
            d.mkdir(parents=True)
        if source is None:
            # Its own manufactured TPM: every machine is its own attested node (its own EK and AK), as the
            # join service binds names and disks to the attested identity.
            sh("swtpm_setup", "--tpm2", "--tpmstate", self.tpm_dir, "--createek", "--create-ek-cert",
               "--create-platform-cert", "--lock-nvram", "--overwrite", "--config", c.ca.setup_conf)
            with open(self.img, "wb") as f:
                f.truncate(64 * 1024 * 1024)
            sh("mkfs.ext4", "-q", "-F", self.img)
        else:
            # A clone of a stopped machine (its TPM state and its disk as they are).
            shutil.copy(source.tpm_dir / "tpm2-00.permall", self.tpm_dir / "tpm2-00.permall")
            sh("cp", "--sparse=always", source.img, self.img)
        self.mount()
        self.state_dir = self.mnt / "state"
        self.disk_image = self.mnt / "state-disk.img"
        if source is None:
            # Provisioning (before the machine's first boot): the state disk exists, durably.
            with open(self.disk_image, "wb") as f:
                f.truncate(20 * 1024 * 1024)
            sh("sync", "-f", self.mnt)
        self.swtpm = None
        self.boots = 0
        self.boot()

    @property
    def tcti(self):
        return f"swtpm:host=127.0.0.1,port={self.port}"

    def mount(self):
        sh("mount", "-o", "loop", self.img, self.mnt)

    def umount(self):
        subprocess.run(["umount", str(self.mnt)], capture_output=True)

    def boot(self):
        """Power on: the TPM starts (PCRs zero) and the measured boot extends the image's digests."""
        pid_file = self.tpm_dir / "swtpm.pid"
        # The free ports are found by binding and closing: on a machine shared with other test runs another
        # process can take one before swtpm binds it, so a bind failure picks new ports (a few times).
        for attempt in range(5):
            self.port = dc.free_port_pair()
            pid_file.unlink(missing_ok=True)
            r = subprocess.run(
                ["swtpm", "socket", "--tpm2", "--tpmstate", f"dir={self.tpm_dir}",
                 "--server", f"type=tcp,port={self.port},bindaddr=127.0.0.1",
                 "--ctrl", f"type=tcp,port={self.port + 1},bindaddr=127.0.0.1",
                 "--flags", "not-need-init,startup-clear", "--daemon", "--pid", f"file={pid_file}"],
                capture_output=True, text=True)
            if r.returncode == 0:
                break
            if "Address already in use" not in r.stderr or attempt == 4:
                raise dc.Failure(f"swtpm for {self.name} failed ({r.returncode}): {r.stderr.strip()}")
        deadline = time.monotonic() + 10
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        self.swtpm = int(pid_file.read_text().strip())
        self.c.procs.adopt(f"{self.name}-swtpm", self.swtpm)
        env = dict(os.environ, TPM2TOOLS_TCTI=self.tcti)
        for pcr, blob in sorted(dc.GOOD_IMAGE.items()):
            sh("tpm2_pcrextend", f"{pcr}:sha256={hashlib.sha256(blob).hexdigest()}", env=env)
        self.boots += 1

    def tpm_off(self, hard=False):
        if self.swtpm is None:
            return
        try:
            os.kill(self.swtpm, signal.SIGKILL if hard else signal.SIGTERM)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + 10
        while dc.alive(self.swtpm) and time.monotonic() < deadline:
            time.sleep(0.02)
        self.swtpm = None

    def empty_run_dir(self):
        for p in self.run_dir.iterdir():
            if p.is_dir():
                shutil.rmtree(p)
            else:
                p.unlink()

    def reboot(self):
        """A clean reboot (systemd after exit 4): file systems synced, TPM reset, tmpfs gone."""
        self.tpm_off()
        sh("sync", "-f", self.mnt)
        self.empty_run_dir()
        self.boot()

    def power_cut(self):
        """Power lost now: the disk keeps what reached it, the TPM and the tmpfs lose everything."""
        self.tpm_off(hard=True)
        cut = self.img.with_suffix(".cut")
        # The loop device's writes are in the backing file; the inner file system's unsynced pages are not.
        sh("cp", "--sparse=always", self.img, cut)
        self.umount()
        os.replace(cut, self.img)
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        self.empty_run_dir()
        self.mount()
        self.boot()

    def pcr15(self):
        env = dict(os.environ, TPM2TOOLS_TCTI=self.tcti)
        out = sh("tpm2_pcrread", "sha256:15", env=env).stdout.decode()
        return re.search(r"15\s*:\s*0x([0-9A-Fa-f]{64})", out).group(1).lower()

    def header_state(self):
        r = subprocess.run(["cryptsetup", "token", "export", "--token-id", "31", str(self.disk_image)],
                           capture_output=True)
        return json.loads(r.stdout)["node_state"] if r.returncode == 0 else None

    def disk_uuid(self):
        r = subprocess.run(["cryptsetup", "luksUUID", str(self.disk_image)], capture_output=True)
        return r.stdout.decode().strip() if r.returncode == 0 else None

    def bootstrapper(self, tag, faults=None, join=True, recover=True):
        argv = [self.c.bins["attest-bootstrapper"], "--tpm", self.tcti, "--state-dir", self.state_dir,
                "--init-listen", "127.0.0.1:0", "--node-name", self.node_name,
                "--init-secret-hash", self.c.init_secret_hash, "--disk", f"luks-header:{self.disk_image}",
                "--runtime-dir", self.run_dir, "--backend", "dry-run", "--variant", "qemu-vtpm",
                "--recover-listen", "127.0.0.1:0" if recover else "none",
                "--verify-listen", "none", "--verify-http-listen", "none"]
        if self.control_plane:
            argv.append("--control-plane")
        if join:
            argv += self.c.joining_args()
        env = dict(os.environ, **({"ATTEST_FAULT_POINTS": faults} if faults else {}))
        name = f"{self.name}-{tag}"
        p = self.c.procs.start(name, [str(a) for a in argv], env=env)
        return p, self.c.root / f"{name}.out", self.c.root / f"{name}.log"

    def destroy(self):
        self.tpm_off(hard=True)
        self.umount()
        shutil.rmtree(self.dir, ignore_errors=True)


def first_event(out, proc, events, timeout=STEP_TIMEOUT, lines=()):
    """The first stdout line of `proc` that is one of the JSON `events` or matches one of `lines`; None when the
    process exits first."""
    ev = re.compile(r'^\{.*"event":"(' + "|".join(events) + r')".*\}$')
    other = [re.compile(l) for l in lines]
    deadline = time.monotonic() + timeout
    seen = 0
    while time.monotonic() < deadline:
        try:
            text = out.read_text(errors="replace").splitlines()
        except FileNotFoundError:
            text = []
        for line in text[seen:]:
            if ev.match(line):
                return json.loads(line)
            for rx in other:
                m = rx.search(line)
                if m:
                    return {"event": "line", "match": m}
        seen = len(text)
        if proc.poll() is not None:
            # One last read: the line may have been written just before the exit.
            text = out.read_text(errors="replace").splitlines()
            for line in text[seen:]:
                if ev.match(line):
                    return json.loads(line)
            return None
        time.sleep(0.05)
    raise Failure(f"{out.stem}: no {events}/{lines} within {timeout} s")


def wait_point(log_path, proc, point):
    m = dc.wait_for_line(log_path, r"ATTEST-FAULT-POINT (\S+)", proc, timeout=POINT_TIMEOUT)
    if m.group(1) != point:
        raise Failure(f"stopped at {m.group(1)}, not {point}")


class Case:
    def __init__(self, c, flow, point, kind, index):
        self.c, self.flow, self.point, self.kind, self.index = c, flow, point, kind, index
        self.outcome = None
        self.detail = ""
        self.data_lost = False
        self.reset = False

    @property
    def name(self):
        return f"{self.flow}:{self.point}:{self.kind}"


def fault(case, machine, proc, extra=()):
    """Stops the node at its point by the case's kind of fault (the process is paused there)."""
    kill(proc)
    for p in extra:
        kill(p)
    if case.kind == "power-cut":
        machine.power_cut()


def bring_back(case, m, *, join=True, recover=True, init=False, recovery=False, tag="back"):
    """Starts the node until it settles (module docs); returns the final event."""
    c = case.c
    for attempt in range(MAX_BOOTS):
        p, out, _ = m.bootstrapper(f"{tag}{attempt}", join=join, recover=recover)
        ev = first_event(out, p, ["bootstrapped", "already-bootstrapped", "rejoined", "refused", "interrupted",
                                  "failed", "recovery-listening", "reset"],
                         lines=[r"^listening on (\S+)"] if init else [])
        if ev is not None and ev["event"] == "reset":
            case.reset = True
            ev = first_event(out, p, ["bootstrapped", "refused", "failed"],
                             lines=[r"^listening on (\S+)"] if init else [])
        if ev is None or ev["event"] in ("interrupted", "failed"):
            code = p.wait(timeout=STEP_TIMEOUT)
            if code != 4:
                raise Failure(f"{m.name}: the bootstrapper exited {code} ({ev}); see {out.with_suffix('.log')}")
            case.reset = True
            m.reboot()  # exit 4: the unit reboots the machine
            continue
        if ev["event"] == "refused":
            stop(p)
            return ev
        if ev["event"] == "line":  # the init server listens: the operator runs `attest init` again
            cli = c.attest_init(ev["match"].group(1), f"{case.flow}-{case.point}-{case.kind}-{attempt}")
            if cli.wait(timeout=STEP_TIMEOUT) != 0:
                raise Failure(f"attest init failed again on {m.name}")
            ev = first_event(out, p, ["bootstrapped", "failed"])
        elif ev["event"] == "recovery-listening":
            tag = f"{case.flow}-{case.point}-{case.kind}-{attempt}"
            cli = c.attest_recover(ev["addr"], tag, registry=c.cli_registry if init else None)
            # The node races its join service (rejoin) against the operator (recovery): when the rejoin wins,
            # `attest recover` is told so, and the node's own "rejoined" event below is what counts.
            if cli.wait(timeout=STEP_TIMEOUT) != 0 and \
                    "already rejoined" not in (c.root / f"attest-recover-{tag}.out").read_text(errors="replace"):
                raise Failure(f"attest recover failed again on {m.name}")
            ev = first_event(out, p, ["rejoined", "refused"])
        stop(p)
        return ev
    raise Failure(f"{m.name} did not settle in {MAX_BOOTS} starts")


def check_bootstrapped(case, m, uuid_before=None, own_cluster=False):
    """The independent checks of a node that says it is bootstrapped; returns a one-line summary. The node's
    cluster is the seed's, or (`own_cluster`: a node that initialized a cluster) the one its own salt gives:
    either way HKDF(HKDF(master secret, "key-measurementSecret"), salt, "key-clusterID")."""
    c = case.c
    problems = []
    state = m.header_state() or {}
    salt = bytes.fromhex(state.get("measurement_salt", ""))
    cluster_id = c.cluster_id
    if own_cluster:
        ms = dc.hkdf_sha256(c.key, c.salt, b"key-measurementSecret")
        cluster_id = dc.hkdf_sha256(ms, salt, b"key-clusterID").hex()
    pcr = m.pcr15()
    want = hashlib.sha256(b"\0" * 32 + bytes.fromhex(cluster_id)).hexdigest()
    if pcr != want:
        problems.append(f"PCR 15 {pcr[:16]}… is not the cluster id extended")
    uuid = m.disk_uuid()
    if state.get("phase") != "bootstrapped" or state.get("cluster_id") != cluster_id:
        problems.append(f"the disk header's node state is {state or None}")
    elif state.get("disk_uuid") != uuid:
        problems.append(f"the node state names disk {state.get('disk_uuid')}, the disk is {uuid}")
    if uuid is None or not dc.luks_key_opens(m.disk_image, c.disk_key(uuid)):
        problems.append("HKDF(master secret, key-<disk uuid>) does not open the disk")
    if uuid_before is not None and (uuid != uuid_before or not dc.luks_key_opens(m.disk_image, c.disk_key(uuid_before))):
        case.data_lost = True
        problems.append(f"the disk of the bootstrapped node changed ({uuid_before} → {uuid}): data lost")
    if problems:
        raise Failure("; ".join(problems))
    return f"PCR 15 = cluster ✓, header bootstrapped ✓, key opens disk {uuid[:8]}… ✓"


# ---- the flows ------------------------------------------------------------------------------------------------

def run_init(case):
    c = case.c
    m = Machine(c, f"init-{case.index}", control_plane=True)
    try:
        p, out, log_path = m.bootstrapper("fault", faults=case.point, join=False)
        addr = wait_listening(out, p)
        cli = c.attest_init(addr, f"fault-{case.index}")
        wait_point(log_path, p, case.point)
        fault(case, m, p, extra=[cli])
        ev = bring_back(case, m, join=False, init=True)
        if ev["event"] == "refused":
            return "refusing with a clear reason", ev.get("reason", "")
        detail = check_bootstrapped(case, m, own_cluster=True)
        return ("reset and re-initialized" if case.reset else "initialized"), detail
    finally:
        m.destroy()


def run_join(case):
    c = case.c
    m = Machine(c, f"join-{case.index}")
    try:
        p, _, log_path = m.bootstrapper("fault", faults=case.point)
        wait_point(log_path, p, case.point)
        fault(case, m, p)
        ev = bring_back(case, m)
        if ev["event"] == "refused":
            return "refusing with a clear reason", ev.get("reason", "")
        detail = check_bootstrapped(case, m)
        return ("reset and rejoined" if case.reset else "joined"), detail
    finally:
        m.destroy()


def joined_template(c):
    """A node that joined, then was shut down cleanly: cloned (disk and TPM) for every rejoin and recovery case."""
    if getattr(c, "joined", None) is None:
        m = Machine(c, "joined-template")
        p, out, _ = m.bootstrapper("join")
        ev = first_event(out, p, ["bootstrapped"])
        if not ev:
            raise Failure("the template node did not join")
        stop(p)
        m.tpm_off()
        sh("sync", "-f", m.mnt)
        c.joined = m
    return c.joined


def run_rejoin(case, recovery=False):
    c = case.c
    m = Machine(c, f"{case.flow}-{case.index}", source=joined_template(c))  # a reboot of the joined node
    try:
        uuid = m.disk_uuid()
        p, out, log_path = m.bootstrapper("fault", faults=case.point, join=not recovery, recover=recovery)
        extra = []
        if recovery:
            ev = first_event(out, p, ["recovery-listening"])
            extra.append(c.attest_recover(ev["addr"], f"fault-{case.index}"))
        wait_point(log_path, p, case.point)
        fault(case, m, p, extra=extra)
        ev = bring_back(case, m, join=not recovery, recover=recovery)
        if ev["event"] == "refused":
            return "refusing with a clear reason", ev.get("reason", "")
        detail = check_bootstrapped(case, m, uuid_before=uuid)
        if case.reset:
            case.data_lost = True
            raise Failure("a bootstrapped node was reset")
        return "rejoined with the same disk key", detail
    finally:
        m.destroy()


def interrupted_template(c):
    """A node whose join was interrupted after its state was recorded (`bootstrapping`), then rebooted: it is
    marked for reset. Cloned for every reset case."""
    if getattr(c, "interrupted", None) is None:
        m = Machine(c, "interrupted-template")
        p, _, log_path = m.bootstrapper("interrupt", faults="commit.backend-done")
        wait_point(log_path, p, "commit.backend-done")
        kill(p)
        m.tpm_off()
        sh("sync", "-f", m.mnt)
        c.interrupted = m
    return c.interrupted


def run_reset(case):
    c = case.c
    m = Machine(c, f"reset-{case.index}", source=interrupted_template(c))
    try:
        p, _, log_path = m.bootstrapper("fault", faults=case.point)
        wait_point(log_path, p, case.point)
        fault(case, m, p)
        case.reset = True
        ev = bring_back(case, m)
        if ev["event"] == "refused":
            return "refusing with a clear reason", ev.get("reason", "")
        return "reset and rejoined", check_bootstrapped(case, m)
    finally:
        m.destroy()


def run_service(case):
    """The join service or the key service, armed at the point, is killed when a join reaches it and started
    again; the node (its bootstrapper never stopped) must join without a reset."""
    c = case.c
    service = "kms" if case.point.startswith("key-service") else "join"
    # Restart the service armed (the cluster keys are cached by the join service for a minute: the key service
    # is reached for the node's own disk key on every join anyway).
    if service == "kms":
        stop(c.kms)
        c.start_key_service(faults=case.point)
    else:
        stop(c.join)
        c.start_join_service(faults=case.point)
    m = Machine(c, f"service-{case.index}")
    try:
        p, out, _ = m.bootstrapper("join")
        svc_log = c.kms_log if service == "kms" else c.join_log
        wait_point(svc_log, c.kms if service == "kms" else c.join, case.point)
        if service == "kms":
            kill(c.kms)
            c.start_key_service()
        else:
            kill(c.join)
            c.start_join_service()
        ev = first_event(out, p, ["bootstrapped", "failed", "refused", "join-client-stopped"])
        stop(p)
        if not ev or ev["event"] != "bootstrapped":
            raise Failure(f"the node did not join after the restart: {ev}")
        return "joined", check_bootstrapped(case, m)
    finally:
        m.destroy()


def run_case(case):
    t = time.monotonic()
    try:
        case.outcome, case.detail = RUNNERS[case.flow](case)
    except Failure as e:
        case.outcome, case.detail = "FAILED", str(e)
    except Exception as e:  # a harness error is a failed case, reported, not a crash of the run
        case.outcome, case.detail = "FAILED", f"{type(e).__name__}: {e}"
    case.seconds = time.monotonic() - t


def report(case):
    good = case.outcome in EXPECTED[case.flow] and not case.data_lost
    print(f"  [{'ok' if good else 'FAIL'}] {case.name:<58} → {case.outcome} ({case.seconds:.1f}s)"
          f"{'' if good else ': ' + case.detail}", flush=True)


RUNNERS = {"init": run_init, "join": run_join, "rejoin": run_rejoin,
           "recovery": lambda case: run_rejoin(case, recovery=True), "reset": run_reset, "services": run_service}


def setup(c):
    """The cluster every case joins: the seed node initializes it; the key and join services run."""
    seed = Machine(c, "seed", control_plane=True)
    c.seed = seed
    p, out, _ = seed.bootstrapper("init", join=False, recover=False)
    addr = wait_listening(out, p)
    cli = c.attest_init(addr, "seed")
    if cli.wait(timeout=STEP_TIMEOUT) != 0:
        raise Failure("attest init of the seed node failed")
    init = json.loads((c.root / "attest-init-seed.out").read_text())
    c.cluster_id = init["clusterId"]
    (c.root / "measurement-salt").write_bytes(bytes.fromhex(init["measurementSalt"]))
    p.wait(timeout=60)  # verify off: it exits once bootstrapped, and its TPM serves the join service
    c.start_key_service()
    c.start_join_service()
    log(f"cluster {c.cluster_id[:16]}…: seed initialized; key service and join service running")


def main():
    args = sys.argv[1:]
    keep = "--keep" in args
    args = [a for a in args if a != "--keep"]
    only, kinds = list(FLOWS), list(KINDS)
    if "--only" in args:
        i = args.index("--only")
        only = args[i + 1].split(",")
        del args[i:i + 2]
    if "--kinds" in args:
        i = args.index("--kinds")
        kinds = args[i + 1].split(",")
        del args[i:i + 2]
    if not args:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        # Loop mounts and drop_caches need root: skip with a notice, except in CI, where it must run.
        print("NOTICE: crash-matrix needs root (loop mounts of the nodes' disks); skipped", file=sys.stderr)
        return 2 if os.environ.get("CI") == "true" else 0
    bindir = Path(args[0]).resolve()
    bins = {n: bindir / n for n in ("attest", "attest-bootstrapper", "join-service", "key-service")}
    for p in bins.values():
        if not p.is_file():
            print(f"crash-matrix: {p} not found (build with the feature fault-injection; see scripts/test.sh)",
                  file=sys.stderr)
            return 2
    for tool in ("swtpm", "swtpm_setup", "tpm2_pcrextend", "tpm2_pcrread", "cryptsetup", "mkfs.ext4"):
        if shutil.which(tool) is None:
            print(f"crash-matrix: {tool} not found (run `make setup`)", file=sys.stderr)
            return 2
    root = Path(tempfile.mkdtemp(prefix="attest-crash-"))
    procs = dc.Processes(root)
    c = Cluster(root, bins, procs)
    c.cases = []
    started = time.monotonic()
    ok = False
    machines = []
    try:
        setup(c)
        print()
        print(f"crash matrix, {WORKERS} nodes at a time")
        print("=======================")
        for flow in only:
            for point in FLOWS[flow]:
                for kind in (["sigkill"] if flow == "services" else kinds):
                    c.cases.append(Case(c, flow, point, kind, len(c.cases)))
        # The templates first (shared by the cases that clone them), then the cases two at a time — except
        # those that restart the shared services, which run alone at the end.
        if any(k.flow in ("rejoin", "recovery") for k in c.cases):
            joined_template(c)
        if any(k.flow == "reset" for k in c.cases):
            interrupted_template(c)
        with concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:
            parallel = [k for k in c.cases if k.flow != "services"]
            for case, _ in zip(parallel, pool.map(run_case, parallel)):
                report(case)
        for case in (k for k in c.cases if k.flow == "services"):
            run_case(case)
            report(case)
        recovered = sum(1 for k in c.cases if k.outcome in EXPECTED[k.flow] and not k.data_lost)
        lost = sum(1 for k in c.cases if k.data_lost)
        print()
        print(f"crash points: {len(c.cases)}, recovered: {recovered}, data lost: {lost}  "
              f"({time.monotonic() - started:.0f} s)")
        ok = recovered == len(c.cases) and lost == 0
    except Failure as e:
        log(f"FAILED: {e}")
    except KeyboardInterrupt:
        log("interrupted")
    finally:
        stopped = procs.stop_all()
        for m in [getattr(c, "seed", None), getattr(c, "joined", None), getattr(c, "interrupted", None)]:
            if m is not None:
                m.destroy()
        for line in subprocess.run(["mount"], capture_output=True, text=True).stdout.splitlines():
            if str(root) in line:  # anything a failed case left mounted
                subprocess.run(["umount", line.split(" on ")[1].split(" type ")[0]], capture_output=True)
        log(f"stopped {len(stopped)} processes by PID")
        if ok and not keep:
            shutil.rmtree(root, ignore_errors=True)
        else:
            log(f"logs and state kept in {root}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
