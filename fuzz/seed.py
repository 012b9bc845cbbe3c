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
# ---- TPM, event logs, Azure runtime data, attestation documents --------------------------------------------


def pb_fields(b):
    """Minimal protobuf reader (varint and length-delimited fields) for go-tpm-tools' attest.Attestation."""
    out, i = [], 0

    def varint():
        nonlocal i
        v = shift = 0
        while True:
            byte = b[i]
            i += 1
            v |= (byte & 0x7F) << shift
            shift += 7
            if byte & 0x80 == 0:
                return v

    while i < len(b):
        key = varint()
        if key & 7 == 0:
            out.append((key >> 3, varint()))
        elif key & 7 == 2:
            n = varint()
            out.append((key >> 3, b[i:i + n]))
            i += n
        else:
            raise ValueError(f"wire type {key & 7}")
    return out


def pb_varint(v):
    out = bytearray()
    while True:
        byte = v & 0x7F
        v >>= 7
        if v:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def pb_bytes(field, data):
    return pb_varint(field << 3 | 2) + pb_varint(len(data)) + data


def pb_uint(field, v):
    return pb_varint(field << 3) + pb_varint(v)


def tpm2b(data):
    return len(data).to_bytes(2, "big") + data


def tpmt_rsassa_sha256(sig):
    return b"\x00\x14\x00\x0b" + tpm2b(sig)


def bincode_quote(b):
    """Azure's bincode quote bundle: (signature, TPMS_ATTEST, [PCR; n])."""
    n = int.from_bytes(b[:8], "little")
    sig, b = b[8:8 + n], b[8 + n:]
    n = int.from_bytes(b[:8], "little")
    attest, b = b[8:8 + n], b[8 + n:]
    n = int.from_bytes(b[:8], "little")
    return sig, attest, [b[8 + 32 * i:8 + 32 * (i + 1)] for i in range(n)]


def hcl_var_data(hcl):
    size = int.from_bytes(hcl[0x4C0 + 16:0x4C0 + 20], "little")
    return hcl[0x4D4:0x4D4 + size]


def document(variant, ak_public=b"", attest=b"", signature=b"", pcrs=(), event_log=b"", snp=None, hcl=b"",
             instance_info=b"", user_data=b"", tdx=None, tpm=True):
    """attest.v1.AttestationDocument (proto/protos/attestation.proto), hand-encoded. tdx = (quote, ccel)."""
    t = pb_bytes(1, ak_public) + pb_bytes(2, attest) + pb_bytes(3, signature)
    for alg, index, value in pcrs:
        t += pb_bytes(4, pb_uint(1, alg) + pb_uint(2, index) + pb_bytes(3, value))
    if event_log:
        t += pb_bytes(5, event_log)
    out = pb_bytes(1, variant.encode()) + (pb_bytes(2, t) if tpm else b"")
    if snp is not None:
        out += pb_bytes(3, b"".join(pb_bytes(i + 1, part) for i, part in enumerate(snp)))
    out += pb_bytes(4, hcl) + pb_bytes(5, instance_info) + pb_bytes(6, user_data)
    if tdx is not None:
        out += pb_bytes(7, pb_bytes(1, tdx[0]) + (pb_bytes(2, tdx[1]) if tdx[1] else b""))
    return out


# trustee's swtpm-like evidence: TPMS_ATTEST and TPMT_SIGNATURE (base64).
tev = json.loads((td / "trustee-tpm/tpm_evidence.json").read_text())
put("tpm_attest", "trustee-tpm", base64.b64decode(tev["tpm_quote"]["message"]))
put("tpm_signature", "trustee-tpm-rsassa", base64.b64decode(tev["tpm_quote"]["signature"]))

# go-tpm-tools' GCE attestation: field 1 = AK TPMT_PUBLIC; field 2 = quotes {1 attest, 2 signature, 3 pcrs}.
gce = pb_fields((td / "go-tpm-tools/gce-cos-85-no-nonce.pb").read_bytes())
gce_ak = next(v for f, v in gce if f == 1)
put("tpm_public", "gce-ak-tpmt", gce_ak)
put("tpm_public", "gce-ak-tpm2b", tpm2b(gce_ak))
for i, (_, q) in enumerate((f, v) for f, v in gce if f == 2):
    q = dict(pb_fields(q))
    put("tpm_attest", f"gce-quote-{i}", q[1])
    put("tpm_signature", f"gce-quote-{i}", q[2])
    pcr_msg = pb_fields(q[3])
    alg = next(v for f, v in pcr_msg if f == 1)
    pcrs = []
    for f, e in pcr_msg:
        if f == 2:
            kv = dict(pb_fields(e))
            pcrs.append((alg, kv.get(1, 0), kv[2]))
    # The GCE quote as a gcp-sev-snp document (no SNP evidence: rejected, but parsed through the AK checks).
    put("attestation_document", f"gce-quote-{i}",
        document("gcp-sev-snp", tpm2b(gce_ak), q[1], q[2], sorted(pcrs, key=lambda p: p[1])))
    put("attestation_document", f"gce-quote-{i}-qemu",
        document("qemu-vtpm", tpm2b(gce_ak), q[1], q[2], sorted(pcrs, key=lambda p: p[1])))

# Azure vTPM quotes (bincode bundles and JSON): TPMS_ATTEST, and the bare RSASSA signature as a TPMT_SIGNATURE.
for name, path in [("azure-cvm-tooling", "azure-cvm-tooling/quote.bin"),
                   ("trustee-az-snp", "trustee-az-snp-vtpm/quote.bin")]:
    sig, attest, _ = bincode_quote((td / path).read_bytes())
    put("tpm_attest", name, attest)
    put("tpm_signature", f"{name}-rsassa", tpmt_rsassa_sha256(sig))
q = json.loads((td / "trustee-az-snp-vtpm/tpm-quote-v1.json").read_text())
trustee_hcl = (td / "trustee-az-snp-vtpm/hcl-report.bin").read_bytes()
trustee_vcek = cert("trustee-az-snp-vtpm/vcek.pem")
put("attestation_document", "trustee-azure-sev-snp",
    document("azure-sev-snp", b"", bytes.fromhex(q["message"]), tpmt_rsassa_sha256(bytes.fromhex(q["signature"])),
             [(0x000B, i, bytes.fromhex(v)) for i, v in enumerate(q["pcrs"])],
             snp=(b"", trustee_vcek, b"", b""), hcl=trustee_hcl))

# Event logs: every real log (crypto-agile and SHA-1 format).
for f in sorted((td / "go-tpm-tools/eventlogs").glob("*.bin")):
    put("event_log", f.stem, f.read_bytes())

# HCL runtime data (JSON with the HCLAkPub JWK), from every HCL report and azure-cvm-tooling's var-data.bin.
for name, path in hcl_files.items():
    put("azure_runtime", name, hcl_var_data((td / path).read_bytes()))
put("azure_runtime", "azure-cvm-tooling-var-data", (td / "azure-cvm-tooling/var-data.bin").read_bytes())
for name in ["evidence-v0", "evidence-genoa"]:
    ev = json.loads((td / f"trustee-az-snp-vtpm/{name}.json").read_text())
    put("azure_runtime", f"trustee-{name}", hcl_var_data(bytes(ev["report"])))

# GCE: go-tpm-tools' real attestation (protobuf) for gce_attestation.
put("gce_attestation", "gce-cos-85-no-nonce", (td / "go-tpm-tools/gce-cos-85-no-nonce.pb").read_bytes())

# JSON evidence: trustee's TPM evidence, hex quotes, and every Azure SNP/TDX vTPM layout.
for path in ["trustee-tpm/tpm_evidence.json", "trustee-az-snp-vtpm/tpm-quote-v1.json",
             "trustee-az-snp-vtpm/evidence-v0.json", "trustee-az-snp-vtpm/evidence-v1.json",
             "trustee-az-snp-vtpm/evidence-genoa.json", "trustee-az-tdx-vtpm/evidence-v0.json",
             "trustee-az-tdx-vtpm/evidence-v1.json"]:
    put("evidence_json", path.replace("/", "_"), (td / path).read_bytes())
v1 = (td / "trustee-az-snp-vtpm/evidence-v1.json").read_text()
put("evidence_json", "trustee-az-snp-vtpm_evidence-v2-relabelled", v1.replace('"version": 1', '"version": 2', 1).encode())

# Binary evidence: AKs (PEM, GCE TPMT_PUBLIC and TPM2B_PUBLIC), bincode quotes, the GCE instance-info extension.
put("evidence_binary", "azure-cvm-tooling-akpub-pem", (td / "azure-cvm-tooling/akpub.pem").read_bytes())
put("evidence_binary", "gce-ak-tpmt", gce_ak)
put("evidence_binary", "gce-ak-tpm2b", tpm2b(gce_ak))
for name, path in [("azure-cvm-tooling-quote", "azure-cvm-tooling/quote.bin"),
                   ("trustee-az-snp-quote", "trustee-az-snp-vtpm/quote.bin"),
                   ("trustee-az-tdx-quote", "trustee-az-tdx-vtpm/quote.bin")]:
    put("evidence_binary", name, (td / path).read_bytes())
# Intel TDX: every real quote (as received, trailing bytes included), and the collateral in both shapes.
for name, path in [("spr-e4-v4", "go-tdx-guest/tdx_prod_quote_SPR_E4.dat"),
                   ("v5-sample", "go-tdx-guest/quote_v5_sample.dat"),
                   ("cos-113-v4", "go-tdx-guest/ccel/cos-113-tdx-quote.dat"),
                   ("trustee-4-debug", "trustee-tdx/tdx_quote_4.dat"),
                   ("trustee-5-v5", "trustee-tdx/tdx_quote_5.dat"),
                   ("trustee-6-v4", "trustee-tdx/tdx_quote_6.dat"),
                   ("azure-td-quote", "trustee-az-tdx-vtpm/td-quote.bin")]:
    put("tdx_quote", name, (td / path).read_bytes())
for name, path in [("bundle-spr-e4", "go-tdx-guest/collateral_SPR_E4.json"),
                   ("bundle-v5", "go-tdx-guest/collateral_v5_sample.json"),
                   ("pcs-tcbinfo", "go-tdx-guest/sample_tcbInfo_response"),
                   ("pcs-tcbinfo-v5", "go-tdx-guest/sample_tcbinfo_response_v5"),
                   ("pcs-qe-identity", "go-tdx-guest/sample_qeIdentity_response"),
                   ("trustee-tcbinfo", "trustee-tdx/tcbInfo.json"),
                   ("trustee-qe-identity", "trustee-tdx/enclaveIdentity.json")]:
    put("tdx_collateral", name, (td / path).read_bytes())

# TDX attestation documents (field 7): qemu-tdx with the COS TD's quote and the written part of its CCEL
# (18101 bytes; the rest of the log area is padding), and azure-tdx with the trustee Azure TD's quote, HCL
# report and vTPM quote.
put("attestation_document", "qemu-tdx-cos-113",
    document("qemu-tdx", tpm=False, tdx=((td / "go-tdx-guest/ccel/cos-113-tdx-quote.dat").read_bytes(),
                                         (td / "go-tdx-guest/ccel/ccel_data.dat").read_bytes()[:18101])))
azq = json.loads((td / "trustee-az-tdx-vtpm/tpm-quote-v1.json").read_text())
put("attestation_document", "trustee-azure-tdx",
    document("azure-tdx", b"", bytes.fromhex(azq["message"]), tpmt_rsassa_sha256(bytes.fromhex(azq["signature"])),
             [(0x000B, i, bytes.fromhex(v)) for i, v in enumerate(azq["pcrs"])],
             hcl=(td / "trustee-az-tdx-vtpm/hcl-report.bin").read_bytes(),
             tdx=((td / "trustee-az-tdx-vtpm/td-quote.bin").read_bytes(), b"")))

# The CC event log readers: the COS TD's ACPI table followed by its log area (and the table alone).
ccel = (td / "go-tdx-guest/ccel/ccel_table.dat").read_bytes()
put("tdx_ccel", "cos-113-table-and-area", ccel + (td / "go-tdx-guest/ccel/ccel_data.dat").read_bytes()[:20000])
put("tdx_ccel", "cos-113-table", ccel)
# The configfs-tsm output reader: a TDX entry after one write whose outblob is the COS TD's quote (report
# data zero, 3065 zero bytes after it), as the kernel leaves it; and an SNP entry with a real report.
cos = (td / "go-tdx-guest/ccel/cos-113-tdx-quote.dat").read_bytes()
put("tsm_output", "tdx-cos-113", bytes([0, 1, 2, 2]) + (0).to_bytes(2, "little") + bytes(64) + b"6\n7\n" + cos)
snp = (td / "go-sev-guest/attestation.bin").read_bytes() if (td / "go-sev-guest/attestation.bin").exists() else b""
if len(snp) >= 0x4A0:
    rd = snp[0x50:0x90]
    put("tsm_output", "snp-report", bytes([1, 2, 1, 1]) + (0).to_bytes(2, "little") + rd + b"0" + b"2" + snp[:0x4A0])

print(f"seed.py: seeds from {td} written to {out}")
