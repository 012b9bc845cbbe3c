#!/usr/bin/env python3
"""Builds the fuzz seed corpora derived from the real evidence in $ATTEST_TESTDATA (default
../shared/testdata) into OUT/<target>/ (default fuzz/corpus-seeds). The real vectors are not copied into the
repository; only seeds the project makes itself (synthetic CRLs, policies) live in fuzz/corpus/.

Usage: fuzz/seed.py [OUT]
"""
import base64, json, os, pathlib, re, sys

here = pathlib.Path(__file__).resolve().parent
td = pathlib.Path(os.environ.get("ATTEST_TESTDATA", here.parent.parent / "shared" / "testdata"))
out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else here / "corpus-seeds"
if not (td / "INDEX.md").is_file():
    if os.environ.get("CI") == "true":
        sys.exit(f"seed.py: testdata not found at {td} (required under CI=true)")
    print(f"NOTICE: testdata not found at {td}; only the committed synthetic seeds will be used")
    sys.exit(0)

REPORT = 0x4A0


def put(target, name, data):
    d = out / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data)


def pem_blocks(path):
    text = (td / path).read_text()
    return [base64.b64decode("".join(m.group(2).split()))
            for m in re.finditer(r"-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \1-----", text, re.S)]


def cert(path):
    raw = (td / path).read_bytes()
    return raw if raw[:1] == b"\x30" else pem_blocks(path)[0]


hcl_files = {
    "trustee-snp": "trustee-az-snp-vtpm/hcl-report.bin",
    "trustee-tdx": "trustee-az-tdx-vtpm/hcl-report.bin",
    "azure-cvm-tooling-snp": "azure-cvm-tooling/hcl-report-snp.bin",
    "azure-cvm-tooling-tdx": "azure-cvm-tooling/hcl-report-tdx.bin",
    "constellation-tdx": "constellation-azure-tdx/hclreport.bin",
}
for name, path in hcl_files.items():
    put("hcl_report", name, (td / path).read_bytes())
for name in ["evidence-v0", "evidence-genoa"]:
    ev = json.loads((td / f"trustee-az-snp-vtpm/{name}.json").read_text())
    hcl = bytes(ev["report"])
    put("hcl_report", f"trustee-{name}", hcl)
    put("snp_report", f"trustee-{name}", hcl[32:32 + REPORT])

reports = {
    "constellation-azure-milan-v2": (td / "constellation-azure-snp/attestation.bin").read_bytes()[:REPORT],
    "constellation-aws-milan-v3-vlek": (td / "constellation-aws-snp/report.bin").read_bytes(),
    "constellation-vlek-v2": (td / "constellation-snp-vlek/vlek-report.bin").read_bytes(),
    "go-sev-guest-milan-v2": (td / "go-sev-guest/attestation.bin").read_bytes(),
    "virtee-milan-v2": bytes.fromhex((td / "virtee-sev/report_milan.hex").read_text().strip()),
    "trustee-hcl-milan-v2": (td / "trustee-az-snp-vtpm/hcl-report.bin").read_bytes()[32:32 + REPORT],
    "azure-cvm-tooling-milan-v2": (td / "azure-cvm-tooling/hcl-report-snp.bin").read_bytes()[32:32 + REPORT],
}
for name, r in reports.items():
    put("snp_report", name, r)

leaves = {
    "azure-milan": ("constellation-azure-milan-v2", "constellation-azure-snp/vcek.cert"),
    "aws-vlek": ("constellation-aws-milan-v3-vlek", "constellation-aws-snp/vlek.pem"),
    "vlek-bad-signature": ("constellation-vlek-v2", "constellation-snp-vlek/vlek.pem"),
    "go-sev-guest-milan": ("go-sev-guest-milan-v2", "go-sev-guest/vcek.testcer"),
    "virtee-milan": ("virtee-milan-v2", "virtee-sev/vcek_milan.der"),
    "azure-cvm-tooling-wrong-chip": ("azure-cvm-tooling-milan-v2", "azure-cvm-tooling/certs.pem"),
}
for name, (report, leaf) in leaves.items():
    put("snp_verify", name, reports[report] + cert(leaf))

pems = ["amd-kds-roots/ask_ark_milan.pem", "azure-cvm-tooling/certs.pem", "constellation-azure-snp/vcek.pem",
        "trustee-az-snp-vtpm/vcek-genoa.pem", "constellation-aws-snp/vlek.pem"]
for p in pems:
    put("pem", p.replace("/", "_"), (td / p).read_bytes())
    for i, der in enumerate(pem_blocks(p)):
        put("x509_cert", f"{p.replace('/', '_')}-{i}.der", der)
for p in ["virtee-sev/vcek_milan.der", "virtee-sev/vcek_turin.der", "go-sev-guest/vcek.testcer",
          "trustee-snp/test-vcek-invalid-legacy.der", "trustee-snp/test-vcek-invalid-new.der"]:
    put("x509_cert", p.replace("/", "_"), (td / p).read_bytes())
for f in sorted((td / "amd-kds-roots").glob("*.pem")):
    for i, der in enumerate(pem_blocks(f.relative_to(td))):
        put("x509_cert", f"{f.stem}-{i}.der", der)
print(f"seed.py: seeds from {td} written to {out}")
