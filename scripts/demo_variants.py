"""SIMULATED-hardware variants of the local cluster demo (`make demo VARIANT=…`), the SNP and the TDX attacks.

`qemu-vtpm` (the default) needs nothing of this module. This machine has no AMD SEV-SNP, Azure or GCE
hardware, so the SNP variants run on simulated hardware from `attest-hwsim`:

  * a simulated SEV-SNP guest device (one process, `sim:<socket>`) whose reports a generated test VCEK
    (GCP, Azure) or VLEK (AWS) signs, chained to a generated ASK/ASVK and ARK — the TEST ROOT;
  * for azure-sev-snp, each node's swtpm provisioned as Azure's paravisor provisions the vTPM (AK at
    0x81000003, HCL report at NV 0x01400001 binding the AK);
  * on aws-sev-snp, each node's swtpm WITHOUT an EK certificate, as AWS's NitroTPM has none (what a machine
    of the variant has comes from the variant table: `attest-hwsim machine --variant V`);
  * the join service attesting as node-1 with node-1's simulated hardware and variant, and the nodes
    verifying it with that variant's validator — its report binding the key and nonce, no EK certificate;
  * the verifiers (`attest init`, the join service, the bootstrappers verifying the join service) built with
    the cargo feature `dangerous-test-roots` into their own target directory and started with
    `--dangerous-test-roots`: release binaries refuse it.

The TDX variants (`TdxVariant`) run each node on a simulated TD of its own (`attest-hwsim tdx serve`, one
process per node, all on one simulated platform file and so under one Intel-like test root, each on a machine
of its own: its own PCK certificate and PPID, the TDX node identity):

  * qemu-tdx: no vTPM — no swtpm at all; the node's image is measured into RTMR2 at the TD's boot, the
    measurements file pins MRTD and RTMR0-2 (Constellation's TDX layout: 0 = MRTD, 1-4 = RTMR0-3) and RTMR3
    = 0, and the node lock lives in RTMR3 (a reboot is a new TD: RTMR3 zero again);
  * azure-tdx: each node's swtpm provisioned as Azure's paravisor provisions the vTPM (HCL report of TDX type
    binding the AK), the TD quote from the node's stand-in of the paravisor's quote endpoint; PCRs measured,
    the lock in PCR 15, MRTD pinned by the TDX policy file.

Every line this module prints about attestation says that the hardware is simulated with a test root.

The two SNP attacks (`attack_replayed_snp_report`, `attack_revoked_vcek`) and the five TDX attacks
(`TDX_ATTACKS`: a replayed quote, a quote whose REPORTDATA does not bind the handshake, a TD with DEBUG, an
out-of-date TCB, a revoked PCK) are functions for the demo's attack section: each runs against the live join
service of a running demo, returns a dict with its outcome, and checks that no token and no key was issued.
"""

import hashlib
import json
import re
import shutil
import subprocess
import time
from pathlib import Path

SNP_VARIANTS = ("azure-sev-snp", "aws-sev-snp", "gcp-sev-snp")
BANNER = "SIMULATED SEV-SNP hardware: every report is signed by a TEST ROOT (attest-hwsim), which only " \
         "binaries built with the cargo feature dangerous-test-roots trust"
# The launch MEASUREMENT of the simulated guest image, pinned by the SNP policy of every verifier.
LAUNCH_MEASUREMENT = hashlib.sha384(b"attest-demo guest image v1").hexdigest()


class _SimulatedHardware:
    """What every simulated variant has: the demo's module, binaries and processes, the test-root directory, and
    what a machine of the variant has (from the variant table). `demo` is the demo-cluster module (its log,
    wait_for_line, run and Failure are used)."""

    KNOWN = ()

    def __init__(self, variant, root, bins, procs, demo):
        if variant not in self.KNOWN:
            raise demo.Failure(f"unknown simulated variant {variant!r} (one of {', '.join(self.KNOWN)})")
        self.variant = variant
        self.root = root
        self.bins = bins
        self.procs = procs
        self.demo = demo
        self.roots = root / "test-roots"
        # What a machine of the variant has (its vTPM's EK certificate, the SNP signer, Azure's paravisor, a vTPM
        # at all), from the variant table.
        self.machine = json.loads(demo.run([bins["attest-hwsim"], "machine", "--variant", variant]).stdout)
        self.signer = self.machine["snp_signer"]
        self.ek_certificate = self.machine["ek_certificate"]

    def log(self, msg):
        self.demo.log(f"[SIMULATED, test root] {msg}")

    def detected(self, node):
        """What the node's bootstrapper says it detected (or was told)."""
        text = (self.root / f"{node.name}.log").read_text(errors="replace")
        m = re.search(r"attestation variant detected variant=(\S+)", text)
        return f"detected {m.group(1)}" if m else f"--variant {self.variant}"


class SimulatedVariant(_SimulatedHardware):
    """The simulated hardware of one SNP variant, and the arguments that point the demo's processes at it."""

    KNOWN = SNP_VARIANTS

    def __init__(self, variant, root, bins, procs, demo):
        super().__init__(variant, root, bins, procs, demo)
        self.socket = root / "sev-guest.sock"
        self.policy = root / "snp-policy.toml"

    @property
    def device(self):
        return f"sim:{self.socket}"

    @property
    def leaf(self):
        return self.roots / "snp" / "leaf.der"

    def start(self):
        """Starts the simulated SEV-SNP device (it writes the test roots) and writes the launch policy."""
        self.demo.log(BANNER)
        p = self.procs.start("snp-simulator", [self.bins["attest-hwsim"], "snp", "serve", "--dir", self.roots,
                                               "--socket", self.socket, "--signer", self.signer,
                                               "--measurement", LAUNCH_MEASUREMENT])
        self.demo.wait_for_line(self.root / "snp-simulator.out", r"listening on (\S+)", p)
        self.policy.write_text(
            "# The launch of the demo's guest image, pinned (the SNP variants refuse an unpinned launch).\n"
            f'measurements = ["{LAUNCH_MEASUREMENT}"]\n')
        self.log(f"SEV-SNP guest device on {self.device}, reports signed by a test "
                 f"{self.signer.upper()} (test roots in {self.roots.name}/)")
        self.log(f"launch MEASUREMENT pinned: {LAUNCH_MEASUREMENT[:24]}… ({self.policy.name})")

    def provision(self, node):
        """Azure: provisions the node's swtpm as the paravisor does (after the TPM started)."""
        if not self.machine["paravisor"]:
            return
        out = self.demo.run([self.bins["attest-hwsim"], "azure", "provision", "--tpm", node.tcti,
                             "--snp-device", self.device]).stdout.decode()
        node.hcl = json.loads(out)

    def hardware_args(self, flag):
        """The variant (`flag`: --variant or --node-variant) and hardware arguments of a node. Azure and AWS are
        detected from the (simulated) machine; GCP is named, since a VCEK-signing SNP guest without a GCE vTPM AK
        is not detectable as GCP."""
        if self.variant == "azure-sev-snp":
            return [flag, "auto", "--snp-leaf", self.leaf]
        if self.variant == "aws-sev-snp":
            return [flag, "auto", "--snp-device", self.device]
        return [flag, "gcp-sev-snp", "--snp-device", self.device]

    def node_args(self, node):
        """The bootstrapper's variant arguments, and how it verifies the join service (of its own variant by
        default): the pinned launch and the test roots, no EK CA."""
        return self.hardware_args("--variant") + ["--snp-policy", self.policy, "--dangerous-test-roots", self.roots]

    def join_service_args(self, node=None):
        """The join service's own attestation: node-1's variant and hardware (its TPM comes separately; the
        SEV-SNP device is every node's)."""
        return self.hardware_args("--node-variant")

    def verifier_args(self):
        """Arguments of `attest init` and the join service: the variant, its pinned launch, the test roots."""
        return ["--variant", self.variant, "--snp-policy", self.policy, "--dangerous-test-roots", self.roots]

    def attack_args(self, node):
        """The hardware flags of the attack client playing `node`."""
        return ["--snp-leaf", self.leaf] if self.variant == "azure-sev-snp" else ["--snp-device", self.device]

    def hardware_line(self):
        return (f"{self.variant}: SIMULATED SEV-SNP (attest-hwsim), TEST ROOT in {self.roots}; launch MEASUREMENT "
                f"pinned ({self.policy.name})")

    def join_service_trust(self):
        """How the nodes trusted the join service."""
        ek = "its vTPM has no EK certificate (as NitroTPM), none configured" if not self.ek_certificate else \
            "no EK certificate configured"
        return (f"attested as {self.variant} with node-1's SIMULATED hardware; verified with the {self.variant} "
                f"validator (TEST ROOT), PCR 15 = the cluster id; {ek}")

    def ak_trust(self):
        if self.variant == "azure-sev-snp":
            return ("every AK bound by its HCL report (runtime data) in a SIMULATED SNP report signed by the TEST "
                    "ROOT's VCEK")
        return (f"every AK and nonce bound by a FRESH SIMULATED SNP report per attestation, signed by the TEST "
                f"ROOT's {self.signer.upper()}")


TDX_VARIANTS = ("qemu-tdx", "azure-tdx")
TDX_BANNER = "SIMULATED Intel TDX hardware: every TD quote is signed through a TEST ROOT (attest-hwsim's " \
             "Intel-like PKI and collateral), which only binaries built with the cargo feature " \
             "dangerous-test-roots trust"
# The MRTD of the demo's TD image, pinned by every verifier.
TD_MRTD = hashlib.sha384(b"attest-demo TD image v1").hexdigest()
# What the simulated TD firmware measures at boot (attest-hwsim's TdConfig::new): RTMR0 its configuration and
# HOB, RTMR1 a kernel and its command line. The node's image goes into RTMR2.
TD_FIRMWARE = ((0, b"attest-hwsim TDVF configuration"), (0, b"attest-hwsim TD HOB"), (1, b"attest-hwsim kernel"),
               (1, b"attest-hwsim kernel command line"))


def td_rtmrs(image):
    """RTMR0-3 of a TD booting `image` (its blobs measured into RTMR2 in PCR order), computed here."""
    rtmrs = [bytes(48)] * 4
    events = list(TD_FIRMWARE) + [(2, blob) for _, blob in sorted(image.items())]
    for index, data in events:
        rtmrs[index] = hashlib.sha384(rtmrs[index] + hashlib.sha384(data).digest()).digest()
    return [r.hex() for r in rtmrs]


class TdxVariant(_SimulatedHardware):
    """The simulated hardware of one TDX variant (qemu-tdx, azure-tdx): a TD per node, and the arguments that
    point the demo's processes at it. Same interface as SimulatedVariant."""

    KNOWN = TDX_VARIANTS

    def __init__(self, variant, root, bins, procs, demo):
        super().__init__(variant, root, bins, procs, demo)
        self.platform = root / "tdx-platform.json"
        self.policy = root / "tdx-policy.toml"
        self.vtpm = self.machine["vtpm"]
        self.boots = 0
        # The node lock's register: PCR 15 of the vTPM, or RTMR3 of a TD without one.
        self.lock_register = "PCR 15" if self.vtpm else "RTMR3"
        self.lock_unbound = "00" * (32 if self.vtpm else 48)
        if not self.vtpm:
            demo.Node.has_vtpm = False  # qemu-tdx: no swtpm anywhere

    def start(self):
        """Writes the TDX policy (MRTD pinned); the first TD generates the platform and its test roots."""
        self.demo.log(TDX_BANNER)
        self.policy.write_text("# The demo's TD image, pinned (the TDX variants refuse an unpinned MRTD).\n"
                               f'mrtd = ["{TD_MRTD}"]\n')
        self.log(f"one simulated TDX platform ({self.platform.name}): a TD per node, each on a machine of its own "
                 f"(PCK certificate and PPID), quotes signed through the Intel-like TEST ROOT in {self.roots.name}/")
        self.log(f"MRTD pinned: {TD_MRTD[:24]}… ({self.policy.name})"
                 + ("" if self.vtpm else "; no vTPM: the image in RTMR2, the node lock in RTMR3"))

    def measurements(self, image):
        """qemu-tdx's measurements of `image` (0 = MRTD, 1-3 = RTMR0-2, 4 = RTMR3 unbound); None for a variant
        measured in PCRs."""
        if self.vtpm:
            return None
        rtmrs = td_rtmrs(image)
        return {0: TD_MRTD, 1: rtmrs[0], 2: rtmrs[1], 3: rtmrs[2], 4: self.lock_unbound}

    def image_refusal(self, register=None):
        """The join service's log line refusing another image (None: the PCR line of the vTPM variants)."""
        if self.vtpm:
            return None
        return r'attestation refused.*reason="?(TDX policy check rtmr2: expected \w+, found \w+)'

    def lock_bound(self, cluster_id_hex):
        if self.vtpm:
            return hashlib.sha256(bytes(32) + bytes.fromhex(cluster_id_hex)).hexdigest()
        return hashlib.sha384(bytes(48) + hashlib.sha384(bytes.fromhex(cluster_id_hex)).digest()).hexdigest()

    def provision(self, node):
        """Boots the node's TD (again: a reboot, RTMR3 zero), on the machine named after the node (a node with
        `td_machine = None`: the platform's own machine, whose PCK the revoking collateral revokes); for
        azure-tdx the TD's paravisor provisions the node's swtpm and its quote endpoint starts."""
        old = getattr(node, "td", None)
        if old is not None:
            old["proc"].terminate()
            try:
                old["proc"].wait(timeout=10)
            except subprocess.TimeoutExpired:
                old["proc"].kill()
        self.boots += 1
        td_root = self.root / "tds" / node.name
        argv = [self.bins["attest-hwsim"], "tdx", "serve", "--dir", self.roots, "--root", td_root,
                "--platform", self.platform, "--mrtd", TD_MRTD]
        machine = getattr(node, "td_machine", node.name)
        if machine:
            argv += ["--machine", machine]
        if not self.vtpm:
            argv += [a for _, blob in sorted(node.image.items()) for a in ("--measure", blob.decode())]
        argv += getattr(node, "td_flags", [])
        if self.vtpm:
            argv += ["--azure-tpm", node.tcti, "--quote-listen", "127.0.0.1:0"]
        name = f"{node.name}-td-{self.boots}"
        p = self.procs.start(name, argv)
        out = self.root / f"{name}.out"
        self.demo.wait_for_line(out, r"serving sim:(\S+)", p)
        endpoint = self.demo.wait_for_line(out, r"quote endpoint (\S+)", p).group(1) if self.vtpm else None
        rtmrs = self.demo.wait_for_line(out, r"^rtmrs (.*)$", p).group(1).split()
        if not self.vtpm and rtmrs != td_rtmrs(node.image):
            raise self.demo.Failure(f"{node.name}: its TD booted with RTMRs {rtmrs}, not those of its image")
        node.td = {"proc": p, "root": td_root, "endpoint": endpoint}
        if not self.vtpm:
            node.on_reboot = lambda: self.provision(node)
            node.read_lock = lambda: self.rtmrs(node)[3]

    def rtmrs(self, node):
        """The RTMRs of the node's running TD, read back through its configfs-tsm interface."""
        out = self.demo.run([self.bins["attest-hwsim"], "tdx", "registers", "--root", f"sim:{node.td['root']}"])
        return json.loads(out.stdout)["rtmrs"]

    def attack_args(self, node):
        """The hardware flags of a process attesting as `node` (attack clients; the join service adds
        --node-variant)."""
        argv = ["--tdx-root", f"sim:{node.td['root']}"]
        if node.td["endpoint"]:
            argv += ["--tdx-quote-endpoint", node.td["endpoint"]]
        return argv

    def node_args(self, node):
        """The bootstrapper's variant arguments, and how it verifies the join service (of its own variant):
        the pinned MRTD and the test roots, no EK CA."""
        return (["--variant", self.variant] + self.attack_args(node)
                + ["--tdx-policy", self.policy, "--dangerous-test-roots", self.roots])

    def join_service_args(self, node=None):
        """The join service's own attestation: `node`'s variant and TD (its TPM comes separately)."""
        return ["--node-variant", self.variant] + self.attack_args(node)

    def verifier_args(self):
        """Arguments of `attest init`, `attest verify`, `attest recover` and the join service."""
        return ["--variant", self.variant, "--tdx-policy", self.policy, "--dangerous-test-roots", self.roots]

    def hardware_line(self):
        lock = "node lock in PCR 15 of the vTPM" if self.vtpm else "no vTPM: image in RTMR2, node lock in RTMR3"
        return (f"{self.variant}: SIMULATED Intel TDX (attest-hwsim, a TD per node on a machine of its own), TEST "
                f"ROOT in {self.roots}; MRTD pinned ({self.policy.name}); {lock}")

    def join_service_trust(self):
        return (f"attested as {self.variant} with node-1's SIMULATED TD; verified with the {self.variant} validator "
                f"(TEST ROOT), {self.lock_register} = the cluster id; no EK certificate configured")

    def ak_trust(self):
        if self.vtpm:
            return ("every AK bound by its HCL report (runtime data) whose TD report a SIMULATED TD quote signed "
                    "through the TEST ROOT's PCK certificate covers")
        return "no vTPM: every nonce and key bound by a fresh SIMULATED TD quote's REPORTDATA (TEST ROOT's PCK)"


def tokens(directory):
    try:
        return sorted(p.name for p in Path(directory).iterdir())
    except FileNotFoundError:
        return []


def _issued_counter(metrics_addr):
    import urllib.request
    text = urllib.request.urlopen(f"http://{metrics_addr}/metrics", timeout=5).read().decode()
    m = re.search(r"^attest_join_tickets_issued_total\S* (\d+)", text, re.M)
    return int(m.group(1)) if m else 0


class AttackContext:
    """What an SNP attack needs of a running demo: its module, processes, simulated hardware and join service.

    join_argv: the join service's command line (a second instance is started from it with other test roots);
    join_log: its log file; tokens_dir: its dry-run token directory; metrics_addr: its /metrics address."""

    def __init__(self, demo, root, bins, procs, ca, sim, join_addr, join_argv, join_log, tokens_dir, metrics_addr):
        self.demo, self.root, self.bins, self.procs, self.ca, self.sim = demo, root, bins, procs, ca, sim
        self.join_addr, self.join_argv, self.join_log = join_addr, join_argv, join_log
        self.tokens_dir, self.metrics_addr = tokens_dir, metrics_addr

    def attacker_node(self, name, td_flags=(), td_machine=True):
        """A fresh node with a genuine image (the attack, not its PCRs, must be what is refused); TDX: a TD
        booted with `td_flags`, on a machine of its own unless `td_machine` is False (the platform's)."""
        node = self.demo.Node(name, self.root, self.demo.GOOD_IMAGE, False)
        node.td_flags = list(td_flags)
        if not td_machine:
            node.td_machine = None
        node.manufacture(self.ca)
        node.start_tpm(self.procs)
        node.measured_boot()
        self.sim.provision(node)
        return node


def _no_ticket(log_file, node_name, tokens_before, tokens_dir):
    text = Path(log_file).read_text(errors="replace")
    issued = re.search(rf'join ticket issued node="{re.escape(node_name)}"', text) is not None
    return (not issued) and tokens(tokens_dir) == tokens_before


def _refusal_reason(log_file, since, pattern):
    """The join service's refusal reason matching `pattern`, logged after byte `since`."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        text = Path(log_file).read_text(errors="replace")[since:]
        for line in text.splitlines():
            if "attestation refused" in line and re.search(pattern, line):
                m = re.search(r"reason=(.*?) outcome=", line)
                return m.group(1).strip('"') if m else line
        time.sleep(0.05)
    return None


def attack_replayed_snp_report(ctx):
    """A host holding an AWS/GCP node's vTPM replays a genuine SNP report of an earlier attestation next to a
    fresh quote by the node's AK. Returns {"attack", "applicable", "refused", "reason", "no_token",
    "no_key", "ok"}: ok = refused with the freshness reason and nothing issued."""
    name = "replayed SNP report"
    if ctx.sim is None or ctx.sim.variant not in ("aws-sev-snp", "gcp-sev-snp"):
        why = "the vTPM runs inside the TEE (Azure) or there is no SNP report (qemu-vtpm)"
        return {"attack": name, "applicable": False, "ok": True, "why": why}
    node = ctx.attacker_node("attacker-replay")
    before_tokens = tokens(ctx.tokens_dir)
    before_issued = _issued_counter(ctx.metrics_addr)
    since = len(Path(ctx.join_log).read_text(errors="replace"))
    r = ctx.demo.run([ctx.bins["attest-hwsim"], "attack", "replay-snp", "--join-service", ctx.join_addr,
                      "--variant", ctx.sim.variant, "--tpm", node.tcti, "--snp-device", ctx.sim.device,
                      "--node-name", node.name])
    client = json.loads(r.stdout.decode().strip().splitlines()[-1])
    reason = _refusal_reason(ctx.join_log, since, r"does not bind this attestation's key and nonce")
    no_token = _no_ticket(ctx.join_log, node.name, before_tokens, ctx.tokens_dir)
    no_key = _issued_counter(ctx.metrics_addr) == before_issued
    refused = client.get("outcome") == "refused"
    return {"attack": name, "applicable": True, "refused": refused, "reason": reason, "no_token": no_token,
            "no_key": no_key, "ok": refused and reason is not None and no_token and no_key}


def attack_revoked_vcek(ctx):
    """The test PKI's CRL revokes the VCEK (VLEK on AWS) that signs the simulated chip's reports; a join
    service loading it (a second instance of the demo's join service, started with a copy of the test roots
    whose CRL revokes the leaf) refuses a genuine node. Returns {"attack", "applicable", "refused", "reason",
    "no_token", "no_key", "ok"}."""
    name = "revoked VCEK" if ctx.sim is None or ctx.sim.signer == "vcek" else "revoked VLEK"
    if ctx.sim is None:
        return {"attack": name, "applicable": False, "ok": True, "why": "qemu-vtpm has no AMD certificate"}
    crl = "crl-vlek.der" if ctx.sim.signer == "vlek" else "crl-vcek.der"
    p, join_addr, metrics_addr, log, tokens_dir = _revoking_join_service(
        ctx, lambda revoked: shutil.copy(revoked / "snp" / "crl-revoking.der", revoked / "snp" / crl))
    node = ctx.attacker_node("node-revoked")
    argv = [ctx.bins["attest-hwsim"], "attack", "join", "--join-service", join_addr, "--variant", ctx.sim.variant,
            "--tpm", node.tcti, "--node-name", node.name]
    argv += ["--snp-leaf", ctx.sim.leaf] if ctx.sim.variant == "azure-sev-snp" else ["--snp-device", ctx.sim.device]
    r = ctx.demo.run(argv)
    client = json.loads(r.stdout.decode().strip().splitlines()[-1])
    reason = _refusal_reason(log, 0, r"is revoked by the ARK's CRL")
    no_token = _no_ticket(log, node.name, [], tokens_dir)
    no_key = _issued_counter(metrics_addr) == 0
    p.terminate()
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
    refused = client.get("outcome") == "refused"
    return {"attack": name, "applicable": True, "refused": refused, "reason": reason, "no_token": no_token,
            "no_key": no_key, "ok": refused and reason is not None and no_token and no_key}


def _tdx_attack(ctx, name, node, mode, pattern, join=None):
    """Runs the attack client as `node` against the join service (`join`: (address, log, tokens dir, metrics
    address), the demo's by default); ok = refused, the join service logged a refusal matching `pattern`, and
    nothing was issued."""
    join_addr, log, tokens_dir, metrics_addr = join or (ctx.join_addr, ctx.join_log, ctx.tokens_dir,
                                                       ctx.metrics_addr)
    before_tokens = tokens(tokens_dir)
    before_issued = _issued_counter(metrics_addr)
    since = len(Path(log).read_text(errors="replace"))
    args = ["join"] if mode is None else ["borrowed", "--mode", mode]
    r = ctx.demo.run([ctx.bins["attest-hwsim"], "attack", *args, "--join-service", join_addr,
                      "--variant", ctx.sim.variant, "--tpm", node.tcti, "--node-name", node.name,
                      *ctx.sim.attack_args(node)])
    client = json.loads(r.stdout.decode().strip().splitlines()[-1])
    reason = _handshake_refusal(log, since, pattern)
    no_token = _no_ticket(log, node.name, before_tokens, tokens_dir)
    no_key = _issued_counter(metrics_addr) == before_issued
    refused = client.get("outcome") == "refused"
    return {"attack": name, "applicable": True, "refused": refused, "reason": reason, "no_token": no_token,
            "no_key": no_key, "ok": refused and reason is not None and no_token and no_key}


def _handshake_refusal(log_file, since, pattern):
    """The join service's refusal matching `pattern`, logged after byte `since`: a refused attestation (its
    reason) or a handshake the aTLS layer refused after the document verified (its error: a key it does not
    bind, a nonce it does not carry)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for line in Path(log_file).read_text(errors="replace")[since:].splitlines():
            if ("attestation refused" in line or "aTLS handshake refused" in line) and re.search(pattern, line):
                m = re.search(r"reason=(.*?) (?:launch|outcome)=", line) or re.search(r"error=(.*?) suppressed=", line)
                text = m.group(1).strip('"') if m else line
                return text if len(text) <= 160 else text[:157] + "..."
        time.sleep(0.05)
    return None


def _not_tdx(ctx, name):
    if ctx is None or ctx.sim is None or ctx.sim.variant not in TDX_VARIANTS:
        return {"attack": name, "applicable": False, "ok": True, "why": "no TD quote (not a TDX variant)"}
    return None


def _td_attack(ctx, name, node_name, mode, pattern, td_flags=()):
    """One TDX attack by a fresh attacker node (`td_flags`: how its TD boots) against the demo's join service;
    not applicable without a TD quote."""
    skip = _not_tdx(ctx, name)
    return skip or _tdx_attack(ctx, name, ctx.attacker_node(node_name, td_flags=td_flags), mode, pattern)


def attack_replayed_td_quote(ctx):
    """A genuine TD's evidence recorded for an earlier nonce (bound to the attacker's key) is replayed: qemu-tdx's
    TD quote carries the old nonce in its REPORTDATA, azure-tdx's vTPM quote (which the TD quote's HCL binding
    vouches for) the old nonce."""
    pattern = r"nonce" if ctx is not None and ctx.sim is not None and getattr(ctx.sim, "vtpm", False) else \
        r"report_data"
    return _td_attack(ctx, "replayed TD quote", "attacker-replayed-quote", "replayed", pattern)


def attack_unbound_report_data(ctx):
    """A genuine TD's evidence for this handshake's nonce, but bound to another key than the attacker's TLS key
    (REPORTDATA, or the vTPM quote it vouches for, does not bind the handshake)."""
    return _td_attack(ctx, "REPORTDATA not binding the handshake", "attacker-relayed-quote", "relayed",
                      r"binds key hash")


def attack_debug_td(ctx):
    """A genuine TD of the cluster's image booted with the DEBUG attribute (the host can read its memory)."""
    return _td_attack(ctx, "TD with DEBUG", "attacker-debug-td", None, r"TDX policy check debug", ["--debug"])


def attack_outdated_tcb(ctx):
    """A genuine TD of the cluster's image on an out-of-date TDX module (TEE_TCB_SVN at the collateral's
    OutOfDate level)."""
    return _td_attack(ctx, "out-of-date TCB", "attacker-outdated-tcb", None, r"tcb_status", ["--outdated-tcb"])


def attack_revoked_pck(ctx):
    """The collateral's PCK CRL revokes the PCK certificate of the machine a genuine TD runs on; a join service
    holding that collateral (a second instance of the demo's join service, started with a copy of the test
    roots whose collateral is the revoking one) refuses it."""
    name = "revoked PCK"
    skip = _not_tdx(ctx, name)
    if skip:
        return skip
    revoking = lambda revoked: shutil.copy(revoked / "tdx" / "collateral-revoking.json",
                                           revoked / "tdx" / "collateral.json")
    p, join_addr, metrics_addr, log, tokens_dir = _revoking_join_service(ctx, revoking)
    try:
        # The platform's own machine: the one whose PCK certificate the revoking collateral's CRL lists.
        node = ctx.attacker_node("node-revoked-pck", td_machine=False)
        reason = r"PCK certificate serial \S+ is revoked by the PCK CA's CRL"
        return _tdx_attack(ctx, name, node, None, reason, join=(join_addr, log, tokens_dir, metrics_addr))
    finally:
        p.terminate()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()


TDX_ATTACKS = (attack_replayed_td_quote, attack_unbound_report_data, attack_debug_td, attack_outdated_tcb,
               attack_revoked_pck)


def _revoking_join_service(ctx, revoke):
    """A second instance of the demo's join service trusting a copy of the test roots that `revoke(dir)` made
    revoking; returns its process, join.API and /metrics addresses, log file and token directory."""
    revoked = ctx.root / "test-roots-revoked"
    shutil.rmtree(revoked, ignore_errors=True)
    shutil.copytree(ctx.sim.roots, revoked)
    revoke(revoked)
    tokens_dir = ctx.root / "tokens-revoked"
    argv = _rewrite(ctx.join_argv, {"--dangerous-test-roots": revoked, "--dry-run-dir": tokens_dir,
                                    "--listen": "127.0.0.1:0", "--metrics-listen": "127.0.0.1:0",
                                    "--ak-registry": ctx.root / "revoked-ak-registry.json"})
    if "--registration-listen" in argv:
        argv = _rewrite(argv, {"--registration-listen": "127.0.0.1:0"})
    p = ctx.procs.start("join-service-revoked", argv)
    join_addr, metrics_addr, _ = ctx.demo.join_service_addrs(ctx.root / "join-service-revoked.out", argv, p)
    return p, join_addr, metrics_addr, ctx.root / "join-service-revoked.log", tokens_dir


def _rewrite(argv, values):
    """`argv` with the value after each flag of `values` replaced (flags absent from argv are appended)."""
    out, i, seen = [], 0, set()
    while i < len(argv):
        a = argv[i]
        if a in values and i + 1 < len(argv):
            out += [a, values[a]]
            seen.add(a)
            i += 2
            continue
        out.append(a)
        i += 1
    for flag, value in values.items():
        if flag not in seen:
            out += [flag, value]
    return out


def print_attack(result):
    """One line per attack, as the demo prints them."""
    if not result.get("applicable", True):
        return f"  {result['attack']:<22} not applicable ({result['why']})"
    verdict = "REFUSED" if result["ok"] else "NOT REFUSED"
    return (f"  {result['attack']:<22} {verdict}: {result.get('reason') or 'no refusal logged'}; "
            f"token issued: {'no' if result['no_token'] else 'YES'}; key issued: {'no' if result['no_key'] else 'YES'}")
