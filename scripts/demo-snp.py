#!/usr/bin/env python3
"""Runs `attest snp verify --json` (and `attest snp chain --json`) over every SEV-SNP vector in the shared
testdata and prints a fixed-width table of the verdicts next to the outcomes the READMEs state.

    cargo build -p attest-cli && python3 scripts/demo-snp.py target/debug/attest

Testdata: $ATTEST_TESTDATA, else ../shared/testdata next to the repository. Exits 1 when any verdict (or
the reason of an expected rejection) differs from the expected one, 2 on setup errors.
Python 3 standard library only.
"""

import base64
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def find_testdata():
    env = os.environ.get("ATTEST_TESTDATA")
    d = Path(env) if env else REPO.parent / "shared" / "testdata"
    if not (d / "INDEX.md").is_file():
        sys.exit(f"demo-snp: testdata not found at {d} (set ATTEST_TESTDATA)")
    return d


def tcb_text(t):
    if not t:
        return "-"
    s = f"bl{t['bootloader']} tee{t['tee']} snp{t['snp']} uc{t['microcode']}"
    return (f"fmc{t['fmc']} " + s) if "fmc" in t else s


def case(label, cmd, args, expected, reason=None, note="", product="milan"):
    """expected: ACCEPT, REJECT (exit 1) or MALFORMED (exit 2); reason: a substring the engine's error must contain; product: the
    hardware the README names (only used to decode the TCB of rejected version 2 reports)."""
    return {"label": label, "cmd": cmd, "args": args, "expected": expected, "reason": reason, "note": note,
            "product": product}


def build_cases(td, tmp):
    p = lambda rel: str(td / rel)  # noqa: E731
    cloud = str(REPO / "examples" / "policies" / "snp-cloud.toml")
    strict = str(REPO / "examples" / "policies" / "snp.toml")
    debug_policy = tmp / "allow-debug.json"
    debug_policy.write_text('{"allow_debug": true}\n')

    runtime = (td / "constellation-azure-snp/runtimedata.bin").read_bytes()
    azure_rd = hashlib.sha256(runtime).hexdigest() + "00" * 32
    aws_rd = ("87ab7caf510e1b3520dc3cceb64ee44128e10976fb0d3fc5e274699d8aaf5061"
              "54af4c1de0a026b49fdf861e9ac75551551b3534d1c61369a3b08f5baed0db2f")
    gsg_rd = "0102030405" + "00" * 59

    # trustee evidence JSON: extract the HCL reports and VCEKs (v0: byte arrays + PEM; v1: base64url).
    extracted = {}
    for name in ("evidence-v0.json", "evidence-genoa.json"):
        ev = json.loads((td / "trustee-az-snp-vtpm" / name).read_text())
        rep, cert = tmp / (name + ".hcl.bin"), tmp / (name + ".vcek.pem")
        rep.write_bytes(bytes(ev["report"]))
        cert.write_text(ev["vcek"])
        extracted[name] = (str(rep), str(cert))
    ev = json.loads((td / "trustee-az-snp-vtpm/evidence-v1.json").read_text())
    v1_rep, v1_cert = tmp / "evidence-v1.hcl.b64url", tmp / "evidence-v1.vcek.der"
    v1_rep.write_text(ev["hcl_report"] + "\n")  # the CLI reads base64url text itself
    v1_cert.write_bytes(base64.urlsafe_b64decode(ev["vcek"] + "=" * (-len(ev["vcek"]) % 4)))

    # Upstream negatives (mutations): virtee report byte 21 bit 7 (POLICY); VCEK byte 40; trustee HCL
    # variable data byte 0x6e0 (+1); constellation-aws signature[0]++.
    virtee = bytearray(bytes.fromhex((td / "virtee-sev/report_milan.hex").read_text().strip()))
    virtee[21] ^= 0x80
    m_virtee = tmp / "report_milan.policy-bit-flipped.bin"
    m_virtee.write_bytes(bytes(virtee))
    vcek = bytearray((td / "virtee-sev/vcek_milan.der").read_bytes())
    vcek[40] ^= 0xFF
    m_vcek = tmp / "vcek_milan.byte40.der"
    m_vcek.write_bytes(bytes(vcek))
    hcl = bytearray((td / "trustee-az-snp-vtpm/hcl-report.bin").read_bytes())
    hcl[0x6E0] = (hcl[0x6E0] + 1) % 256
    m_hcl = tmp / "hcl-report.vardata-changed.bin"
    m_hcl.write_bytes(bytes(hcl))
    aws = bytearray((td / "constellation-aws-snp/report.bin").read_bytes())
    aws[0x2A0] = (aws[0x2A0] + 1) % 256
    m_aws = tmp / "aws-report.sig0-incremented.bin"
    m_aws.write_bytes(bytes(aws))

    azure = ["--vcek", p("constellation-azure-snp/vcek.pem"), "--chain", p("constellation-azure-snp/certchain.pem")]
    aws_certs = ["--vcek", p("constellation-aws-snp/vlek.pem"), "--chain", p("constellation-aws-snp/certchain.pem")]
    virtee_certs = ["--vcek", p("virtee-sev/vcek_milan.der"), "--chain", p("virtee-sev/cert_chain_milan")]
    return [
        # constellation-azure-snp: Milan, VCEK, raw report + IGVM header; VCEK valid 2023-08-30..2030-08-30.
        case("constellation-azure-snp/attestation.bin", "verify",
             [p("constellation-azure-snp/attestation.bin"), *azure, "--report-data", azure_rd, "--at", "2025-06-01"],
             "ACCEPT", note="vcek.pem, nonce=sha256(runtimedata)"),
        case("constellation-azure-snp/attestation.bin", "verify",
             [p("constellation-azure-snp/attestation.bin"), "--vcek", p("constellation-azure-snp/vcek.cert"),
              "--chain", p("constellation-azure-snp/certchain.pem"), "--at", "2025-06-01"],
             "ACCEPT", note="vcek.cert (DER from KDS)"),
        case("constellation-azure-snp/attestation.bin", "verify",
             [p("constellation-azure-snp/attestation.bin"), *azure, "--report-data", azure_rd, "--policy", strict,
              "--at", "2025-06-01"], "ACCEPT", note="strict.toml"),
        case("constellation-azure-snp/attestation.bin", "verify",
             [p("constellation-azure-snp/attestation.bin"), *azure, "--report-data", "11" * 64, "--at", "2025-06-01"],
             "REJECT", "report_data", note="wrong nonce"),
        # constellation-aws-snp: VLEK valid 2024-12-10..2025-12-10; provisional firmware.
        case("constellation-aws-snp/report.bin", "verify",
             [p("constellation-aws-snp/report.bin"), *aws_certs, "--report-data", aws_rd, "--policy", cloud,
              "--at", "2025-06-01"], "ACCEPT", note="cloud.toml, AK digest"),
        case("constellation-aws-snp/report.txt", "verify",
             [p("constellation-aws-snp/report.txt"), *aws_certs, "--policy", cloud, "--at", "2025-06-01"],
             "ACCEPT", note="base64 text"),
        case("constellation-aws-snp/report.bin", "verify",
             [p("constellation-aws-snp/report.bin"), *aws_certs, "--at", "2025-06-01"],
             "REJECT", "provisional_firmware", note="default policy"),
        case("constellation-aws-snp/report.bin", "verify",
             [p("constellation-aws-snp/report.bin"), *aws_certs, "--policy", cloud, "--at", "2026-01-01"],
             "REJECT", "VLEK expired", note="after VLEK notAfter"),
        case("constellation-aws-snp (sig[0]++)", "verify",
             [str(m_aws), *aws_certs, "--policy", cloud, "--at", "2025-06-01"],
             "REJECT", "report signature", note="upstream mutation"),
        # constellation-snp-vlek: negative; VLEK valid 2023-07-19..2024-07-19.
        case("constellation-snp-vlek/vlek-report.bin", "verify",
             [p("constellation-snp-vlek/vlek-report.bin"), "--vcek", p("constellation-snp-vlek/vlek.pem"),
              "--chain", p("constellation-snp-vlek/vlekcertchain.pem"), "--policy", cloud, "--at", "2024-01-01"],
             "REJECT", "report signature", note="README: negative"),
        case("constellation-snp-vlek/vlek-report.bin", "verify",
             [p("constellation-snp-vlek/vlek-report.bin"), "--vcek", p("constellation-snp-vlek/vlek.pem"),
              "--chain", p("constellation-snp-vlek/vlekcertchain.pem"), "--policy", cloud, "--at", "2026-01-01"],
             "REJECT", "VLEK expired", note="after VLEK notAfter"),
        # go-sev-guest: debug guest; VCEK valid from 2022-09-24T00:55:28Z.
        case("go-sev-guest/attestation.bin", "verify",
             [p("go-sev-guest/attestation.bin"), "--vcek", p("go-sev-guest/vcek.testcer"),
              "--at", "2022-09-24T01:00:00Z"], "REJECT", "policy check debug", note="default policy"),
        case("go-sev-guest/attestation.bin", "verify",
             [p("go-sev-guest/attestation.bin"), "--vcek", p("go-sev-guest/vcek.testcer"), "--policy",
              str(debug_policy), "--report-data", gsg_rd, "--at", "2022-09-24T01:00:00Z"],
             "ACCEPT", note="allow_debug (JSON policy)"),
        case("go-sev-guest/attestation.bin", "verify",
             [p("go-sev-guest/attestation.bin"), "--vcek", p("go-sev-guest/vcek.testcer"), "--policy",
              str(debug_policy), "--at", "2022-09-23"], "REJECT", "VCEK not yet valid", note="before notBefore"),
        # virtee-sev: Milan hex report.
        case("virtee-sev/report_milan.hex", "verify",
             [p("virtee-sev/report_milan.hex"), *virtee_certs, "--at", "2025-01-01"], "ACCEPT", note="hex text"),
        case("virtee-sev (POLICY bit flipped)", "verify",
             [str(m_virtee), *virtee_certs, "--at", "2025-01-01"], "REJECT", "report signature",
             note="upstream mutation"),
        case("virtee-sev (VCEK byte 40)", "verify",
             [p("virtee-sev/report_milan.hex"), "--vcek", str(m_vcek), "--chain", p("virtee-sev/cert_chain_milan"),
              "--at", "2025-01-01"], "MALFORMED", "malformed DER", note="upstream mutation: exit 2"),
        # trustee-az-snp-vtpm: HCL reports; provisional firmware on hcl-report.bin.
        case("trustee-az-snp-vtpm/hcl-report.bin", "verify",
             [p("trustee-az-snp-vtpm/hcl-report.bin"), "--vcek", p("trustee-az-snp-vtpm/vcek.pem"),
              "--policy", cloud, "--at", "2025-01-01"], "ACCEPT", note="HCL, cloud.toml"),
        case("trustee-az-snp-vtpm/hcl-report.bin", "verify",
             [p("trustee-az-snp-vtpm/hcl-report.bin"), "--vcek", p("trustee-az-snp-vtpm/vcek.pem"),
              "--at", "2025-01-01"], "REJECT", "provisional_firmware", note="default policy"),
        case("trustee-az-snp-vtpm (var data +1)", "verify",
             [str(m_hcl), "--vcek", p("trustee-az-snp-vtpm/vcek.pem"), "--policy", cloud, "--at", "2025-01-01"],
             "REJECT", "does not bind", note="upstream mutation"),
        case("trustee-az-snp-vtpm/evidence-v0.json", "verify",
             [extracted["evidence-v0.json"][0], "--vcek", extracted["evidence-v0.json"][1], "--policy", cloud,
              "--at", "2025-06-01"], "ACCEPT", note="extracted HCL + PEM"),
        case("trustee-az-snp-vtpm/evidence-v1.json", "verify",
             [str(v1_rep), "--vcek", str(v1_cert), "--policy", cloud, "--at", "2025-06-01"],
             "ACCEPT", note="base64url HCL + DER"),
        case("trustee-az-snp-vtpm/evidence-genoa.json", "verify",
             [extracted["evidence-genoa.json"][0], "--vcek", p("trustee-az-snp-vtpm/vcek-genoa.pem"),
              "--policy", cloud, "--at", "2025-06-01"], "ACCEPT", note="Genoa, vcek-genoa.pem", product="genoa"),
        # azure-cvm-tooling: the VCEK is another chip's.
        case("azure-cvm-tooling/hcl-report-snp.bin", "verify",
             [p("azure-cvm-tooling/hcl-report-snp.bin"), "--vcek", p("azure-cvm-tooling/certs.pem"),
              "--policy", cloud, "--at", "2025-01-01"], "REJECT", "CHIP_ID", note="no matching VCEK"),
        # Chains without a report.
        case("virtee-sev/vcek_turin.der", "chain",
             ["--vcek", p("virtee-sev/vcek_turin.der"), "--chain", p("virtee-sev/cert_chain_turin"),
              "--at", "2025-06-01"], "ACCEPT", note="Turin VCEK"),
        case("virtee-sev/vcek_turin.der", "chain",
             ["--vcek", p("virtee-sev/vcek_turin.der"), "--product", "milan", "--at", "2025-06-01"],
             "REJECT", "product mismatch", note="claimed Milan"),
        case("azure-cvm-tooling/certs.pem", "chain",
             ["--vcek", p("azure-cvm-tooling/certs.pem"), "--at", "2025-01-01"], "ACCEPT", note="VCEK+ASK+ARK"),
        case("trustee-snp/test-vcek-invalid-legacy.der", "chain",
             ["--vcek", p("trustee-snp/test-vcek-invalid-legacy.der"), "--at", "2025-01-01"],
             "REJECT", "VCEK signature", note="README: negative"),
        case("trustee-snp/test-vcek-invalid-new.der", "chain",
             ["--vcek", p("trustee-snp/test-vcek-invalid-new.der"), "--at", "2025-01-01"],
             "REJECT", "VCEK signature", note="README: negative"),
    ]


def show(binary, report, product):
    """Unverified product and reported TCB of a rejected report (from `attest snp show --json`). Version 2
    reports carry no CPUID: their TCB is decoded for `product`, the hardware each README names."""
    r = subprocess.run([binary, "snp", "show", report, "--json"], capture_output=True, text=True)
    if r.returncode == 0 and json.loads(r.stdout).get("tcb_product") is None:
        r = subprocess.run([binary, "snp", "show", report, "--product", product, "--json"],
                           capture_output=True, text=True)
    if r.returncode != 0:
        return "-", "-"
    v = json.loads(r.stdout)
    tcb = v["reported_tcb"].get("decoded")
    return (v.get("tcb_product") or "?") + "*", (tcb_text(tcb) + "*") if tcb else v["reported_tcb"]["raw"] + "*"


def run_case(binary, c):
    r = subprocess.run([binary, "snp", c["cmd"], *c["args"], "--json"], capture_output=True, text=True)
    row = {"product": "-", "tcb": "-", "micros": "-", "reason": ""}
    if not r.stdout.strip():
        row.update(verdict="ERROR", reason=(r.stderr.strip().splitlines() or ["no output"])[-1])
        return row
    # `snp verify` prints the result object (schemas/result-v1.schema.json), `snp chain` its own object.
    v = json.loads(r.stdout)
    facts = v.get("claims", v)
    row["micros"] = str(v.get("input", v).get("micros", "-"))
    if v["accepted"]:
        row.update(verdict="ACCEPT", product=facts["product"], tcb=tcb_text(facts.get("reported_tcb") or v.get("tcb")))
        row["reason"] = ("signer " + facts["signer"]) + (f", {c['note']}" if c["note"] else "")
    else:
        malformed = v["failure"]["class"] != "refused"
        row["verdict"] = "MALFORMED" if malformed else "REJECT"
        row["reason"] = v["failure"]["reason"]
        if c["cmd"] == "verify" and not malformed:
            row["product"], row["tcb"] = show(binary, c["args"][0], c["product"])
    want = {"ACCEPT": 0, "REJECT": 1, "MALFORMED": 2}[row["verdict"]]
    if r.returncode != want:
        row["verdict"] += f"(exit {r.returncode}!)"
    return row


def clip(s, n):
    return s if len(s) <= n else s[: n - 1] + "…"


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: demo-snp.py PATH/TO/attest")
    binary = sys.argv[1]
    if not os.access(binary, os.X_OK):
        sys.exit(f"demo-snp: {binary} is not an executable (cargo build -p attest-cli)")
    td = find_testdata()
    print(f"testdata: {td}")
    print(f"binary:   {binary}\n")
    widths = (40, 7, 7, 22, 8, 8, 5, 70, 6)
    head = ("file", "command", "product", "TCB", "verdict", "expected", "ok", "reason", "µs")
    fmt = "  ".join(f"{{:<{w}}}" for w in widths[:-1]) + "  {:>6}"
    print(fmt.format(*head))
    print("  ".join("-" * w for w in widths))
    failures = 0
    with tempfile.TemporaryDirectory(prefix="attest-demo-") as tmp:
        cases = build_cases(td, Path(tmp))
        for c in cases:
            row = run_case(binary, c)
            ok = row["verdict"] == c["expected"] and (
                c["reason"] is None or c["expected"] == "ACCEPT" or c["reason"] in row["reason"])
            failures += not ok
            print(fmt.format(clip(c["label"], widths[0]), c["cmd"], clip(row["product"], widths[2]),
                             clip(row["tcb"], widths[3]), row["verdict"], c["expected"], "ok" if ok else "FAIL",
                             clip(row["reason"], widths[7]), row["micros"]))
    total = len(cases)
    print("\n* rejected report: product/TCB as shown UNVERIFIED by `attest snp show` (version 2 reports carry no")
    print("  CPUID; their TCB is decoded for the product the README names).")
    print(f"{total - failures}/{total} verdicts as expected.")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
