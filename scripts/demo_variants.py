"""SIMULATED-hardware variants of the local cluster demo (`make demo VARIANT=…`) and the SNP attacks.

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

Every line this module prints about attestation says that the hardware is simulated with a test root.

The two SNP attacks at the end are functions for the demo's attack section (`attack_replayed_snp_report`,
`attack_revoked_vcek`): each runs against the live join service of a running demo, returns a dict with its
outcome, and checks that no token and no key was issued.
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


class SimulatedVariant:
    """The simulated hardware of one SNP variant, and the arguments that point the demo's processes at it.

    `demo` is the demo-cluster module (its log, wait_for_line, run and Failure are used)."""

    def __init__(self, variant, root, bins, procs, demo):
        if variant not in SNP_VARIANTS:
            raise demo.Failure(f"unknown simulated variant {variant!r} (one of {', '.join(SNP_VARIANTS)})")
        self.variant = variant
        self.root = root
        self.bins = bins
        self.procs = procs
        self.demo = demo
        self.roots = root / "test-roots"
        self.socket = root / "sev-guest.sock"
        self.policy = root / "snp-policy.toml"
        # What a machine of the variant has (its vTPM's EK certificate, the SNP signer, Azure's paravisor), from
        # the variant table.
        self.machine = json.loads(demo.run([bins["attest-hwsim"], "machine", "--variant", variant]).stdout)
        self.signer = self.machine["snp_signer"]
        self.ek_certificate = self.machine["ek_certificate"]

    @property
    def device(self):
        return f"sim:{self.socket}"

    @property
    def leaf(self):
        return self.roots / "snp" / "leaf.der"

    def log(self, msg):
        self.demo.log(f"[SIMULATED, test root] {msg}")

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

    def join_service_args(self):
        """The join service's own attestation: node-1's variant and hardware (its TPM comes separately)."""
        return self.hardware_args("--node-variant")

    def verifier_args(self):
        """Arguments of `attest init` and the join service: the variant, its pinned launch, the test roots."""
        return ["--variant", self.variant, "--snp-policy", self.policy, "--dangerous-test-roots", self.roots]

    def detected(self, node):
        """What the node's bootstrapper says it detected (or was told)."""
        text = (self.root / f"{node.name}.log").read_text(errors="replace")
        m = re.search(r"attestation variant detected variant=(\S+)", text)
        return f"detected {m.group(1)}" if m else f"--variant {self.variant}"

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

    def attacker_node(self, name):
        """A fresh node with a genuine image (the attack, not its PCRs, must be what is refused)."""
        node = self.demo.Node(name, self.root, self.demo.GOOD_IMAGE, False)
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
    revoked = ctx.root / "test-roots-revoked"
    shutil.rmtree(revoked, ignore_errors=True)
    shutil.copytree(ctx.sim.roots, revoked)
    crl = "crl-vlek.der" if ctx.sim.signer == "vlek" else "crl-vcek.der"
    shutil.copy(revoked / "snp" / "crl-revoking.der", revoked / "snp" / crl)
    tokens_dir = ctx.root / "tokens-revoked"
    argv = _rewrite(ctx.join_argv, {"--dangerous-test-roots": revoked, "--dry-run-dir": tokens_dir,
                                    "--listen": "127.0.0.1:0", "--metrics-listen": "127.0.0.1:0",
                                    "--ak-registry": ctx.root / "revoked-ak-registry.json"})
    if "--registration-listen" in argv:
        argv = _rewrite(argv, {"--registration-listen": "127.0.0.1:0"})
    p = ctx.procs.start("join-service-revoked", argv)
    join_addr, metrics_addr, _ = ctx.demo.join_service_addrs(ctx.root / "join-service-revoked.out", argv, p)
    log = ctx.root / "join-service-revoked.log"
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
