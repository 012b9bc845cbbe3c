#!/usr/bin/env python3
"""Side by side: one table of inputs through the `attest` CLI, a C program against the C library and the
Go package, which must agree.

Every row is one verification: real evidence from $ATTEST_TESTDATA (SEV-SNP, TDX, TPM quotes in two
formats and as parts, Azure SNP vTPM evidence and parts, GCE), the same evidence refused (wrong nonce,
wrong policy, a flipped signature byte), usage errors, and malformed inputs derived from it (truncated,
random, empty). Each column reports its outcome — accepted / refused / malformed-or-misuse, i.e. the CLI's
exit 0 / 1 / 2 and the library's result code — and its result object (schema attest-result/1). The row
passes when all columns give the row's expected outcome and failed check, C and Go the same result code,
and every result object present the same schema, verifier, verdict, status, failed check, failure class
and policy key. Every result object of every column is then validated against
schemas/result-v1.schema.json with the `jsonschema` library (from .venv; scripts/setup-python.sh).

    run.py --cli target/debug/attest --c DRIVER [--go DRIVER] [--testdata DIR]

ffi/tests/side-by-side/run.sh builds the three and calls this (scripts/test.sh runs it). Without the
testdata the run prints a NOTICE and passes, except under CI=true, where it fails.
"""

import argparse
import datetime
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
POLICIES = REPO / "examples" / "policies"
TRUSTEE_TPM_NONCE = (
    "a04182b506878d4f29b91ee606a71a0d3361ccf1b22db20c98adcaa537bea393ef0e41a18b3569ab678f1497fbc5c120"
    + "00" * 16
)
TDX_MRTD = "705ee9381b8633a9fbe532b52345e8433343d2868959f57889d84ca377c395b689cac1599ccea1b7d420483a9ce5f031"
TDX_REPORT_DATA = (
    "7c71fe2c86eff65a7cf8dbc22b3275689fd0464a267baced1bf94fc1324656aeb755da3d44d098c0c87382f3a5f85b45"
    "c8a28fee1d3bdb38342bf96671501429"
)
# The verify calls' flags (ffi/src/verifier.rs).
ALLOW_EMPTY_NONCE, IGNORE_USER_DATA = 1, 2
# An SEV-SNP report's signature starts at 0x2A0; a TD quote's MRTD at 48 (header) + 136.
SNP_SIGNATURE, TD_MRTD = 0x2A0, 48 + 136
# What a malformed or misused input is, as the CLI's exit status says it.
EXIT = {"accepted": 0, "refused": 1, "malformed": 2, "misuse": 2}


def base(kind, evidence, **kw):
    """A row's verification: `kind` (the C and Go entry point), the evidence (testdata path) and its other
    inputs. Inputs named `*_file` are testdata paths."""
    return dict(kind=kind, evidence=evidence, **kw)


SNP = base(
    "snp",
    "constellation-azure-snp/attestation.bin",
    vcek_file="constellation-azure-snp/vcek.pem",
    chain_file="constellation-azure-snp/certchain.pem",
    policy=POLICIES / "snp.toml",
    report_data="constellation",
    at="2025-06-01",
)
TDX = base(
    "tdx",
    "trustee-tdx/tdx_quote_4.dat",
    collateral_file="go-tdx-guest/collateral_SPR_E4.json",
    policy={"allow_debug": True, "mrtd": [TDX_MRTD]},
    report_data=TDX_REPORT_DATA,
    at="2023-07-01",
)
TPM = base(
    "tpm-bincode", "azure-cvm-tooling/quote.bin", ak_file="azure-cvm-tooling/akpub.pem", nonce=b"challenge"
)
TRUSTEE_TPM = base("tpm-trustee", "trustee-tpm/tpm_evidence.json", nonce=bytes.fromhex(TRUSTEE_TPM_NONCE))
AZURE = base("azure-evidence", "trustee-az-snp-vtpm/evidence-v1.json", nonce=b"challenge", at="2025-06-01")
AZURE_PARTS = base(
    "azure-parts",
    "trustee-az-snp-vtpm/hcl-report.bin",
    vcek_file="trustee-az-snp-vtpm/vcek.pem",
    quote_file="trustee-az-snp-vtpm/quote.bin",
    nonce=b"challenge",
    policy=POLICIES / "azure.toml",
    at="2025-06-01",
)
GCE = base("gce", "go-tpm-tools/gce-cos-85-no-nonce.pb", nonce=None, at="2025-06-01")
DOCUMENT = base(
    "document",
    None,
    variant="gcp-shielded-vm",
    measurements={"4": {"expected": "11" * 32, "warnOnly": False}},
    nonce=None,
)


def row(name, verification, expect, check=None, **change):
    """One row: `verification` with `change` applied; the expected outcome and failed check. A change
    `derive` makes the evidence from the original: ("flip", offset), ("replace", old, new),
    ("json", key, value), "truncated", "random", "empty", or ("noise", length)."""
    r = dict(verification, **change)
    r.update(name=name, expect=expect, check=check)
    return r


def malformed(name, verification, check):
    """Truncated, random and empty versions of a verification's evidence: malformed, `check` failed."""
    return [row(f"{name}, {d}", verification, "malformed", check, derive=d) for d in ("truncated", "random", "empty")]


TABLE = [
    row("SEV-SNP report (Azure, Milan), pinned policy", SNP, "accepted"),
    row("SEV-SNP report, other REPORT_DATA", SNP, "refused", "report_data", report_data="11" * 64),
    row("SEV-SNP report, a signature byte flipped", SNP, "refused", "report_signature", derive=("flip", SNP_SIGNATURE + 1)),
    *malformed("SEV-SNP report", SNP, "report_structure"),
    row("TDX quote v4 (debug TD), policy allowing debug", TDX, "accepted"),
    row("TDX quote v4, the default policy (no debug TDs)", TDX, "refused", "debug", policy=None, report_data=None),
    row("TDX quote v4, MRTD flipped", TDX, "refused", "quote_signature", derive=("flip", TD_MRTD)),
    *malformed("TDX quote", TDX, "quote_structure"),
    row("TPM quote (Azure vTPM, bincode) by its AK", TPM, "accepted"),
    row("TPM quote, the same as parts", TPM, "accepted", kind="tpm-parts"),
    row("TPM quote, another nonce", TPM, "refused", "nonce", nonce=bytes.fromhex("0102030405060708")),
    row("TPM quote as parts, another nonce", TPM, "refused", "nonce", kind="tpm-parts", nonce=b"egnellahc"),
    row("TPM quote, a quoted byte flipped", TPM, "refused", "quote_signature", derive=("flip", 40)),
    *malformed("TPM quote", TPM, "quote_structure"),
    row("TPM evidence (trustee JSON)", TRUSTEE_TPM, "accepted"),
    row("TPM evidence (trustee JSON), another nonce", TRUSTEE_TPM, "refused", "nonce", nonce=b"0123456789abcdef"),
    *malformed("TPM evidence (trustee JSON)", TRUSTEE_TPM, "quote_structure"),
    row("Azure SNP vTPM evidence v1", AZURE, "accepted"),
    row("Azure SNP vTPM evidence v1, another nonce", AZURE, "refused", "nonce", nonce=b"egnellahc"),
    row(
        "Azure SNP vTPM evidence v1, PCR 0 changed",
        AZURE,
        "refused",
        "pcr_digest",
        derive=("replace", b"e15c44796beabf46", b"f15c44796beabf46"),
    ),
    row("Azure evidence v2 without user-data", AZURE, "misuse", derive=("json", "version", 2)),
    row(
        "Azure evidence v2, user-data check waived",
        AZURE,
        "accepted",
        derive=("json", "version", 2),
        flags=IGNORE_USER_DATA,
    ),
    row("Azure evidence v2, other user-data", AZURE, "refused", "user_data", derive=("json", "version", 2), user_data="11" * 64),
    *malformed("Azure SNP vTPM evidence", AZURE, "evidence_structure"),
    row("Azure SNP vTPM parts, provisional firmware allowed", AZURE_PARTS, "accepted"),
    row(
        "Azure SNP vTPM parts, the default policy",
        AZURE_PARTS,
        "refused",
        "provisional_firmware",
        policy=None,
    ),
    row("GCE attestation (no nonce, waived)", GCE, "accepted"),
    row("GCE attestation, a nonce it does not carry", GCE, "refused", "nonce", nonce=b"9009"),
    row("GCE attestation, no nonce and no waiver", GCE, "misuse", flags=0, nonce=None, waive_nonce=False),
    row("GCE attestation, a quote byte flipped", GCE, "refused", "quote_signature", derive=("flip", 288 + 50)),
    *malformed("GCE attestation", GCE, "attestation_structure"),
    row("attestation document, random bytes", DOCUMENT, "malformed", "document_structure", derive=("noise", 300)),
    row("attestation document, empty", DOCUMENT, "malformed", "document_structure", derive="empty"),
]


def unix(day):
    return int(datetime.datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=datetime.timezone.utc).timestamp())


class Inputs:
    """Turns a row into files in a scratch directory: the evidence (derived), the policy as TOML (CLI) and
    JSON (C, Go), the measurements."""

    def __init__(self, testdata, scratch):
        self.testdata, self.scratch = testdata, scratch

    def td(self, rel):
        return str(self.testdata / rel) if rel else None

    def write(self, name, data):
        p = self.scratch / name
        p.write_bytes(data if isinstance(data, bytes) else data.encode())
        return str(p)

    def evidence(self, r):
        original = (self.testdata / r["evidence"]).read_bytes() if r["evidence"] else b""
        d = r.get("derive")
        if d is None:
            return self.td(r["evidence"])
        rng = random.Random(r["name"])
        if d == "truncated":
            data = original.rstrip()[: len(original.rstrip()) // 2]
        elif d == "random":
            data = rng.randbytes(len(original))
        elif d == "empty":
            data = b""
        elif d[0] == "noise":
            data = rng.randbytes(d[1])
        elif d[0] == "flip":
            data = bytearray(original)
            data[d[1]] ^= 0x01
            data = bytes(data)
        elif d[0] == "replace":
            assert original.count(d[1]) >= 1, (r["name"], d)
            data = original.replace(d[1], d[2], 1)
        elif d[0] == "json":
            doc = json.loads(original)
            doc[d[1]] = d[2]
            data = json.dumps(doc).encode()
        else:
            raise ValueError(d)
        return self.write("evidence.bin", data)

    def policy(self, r):
        """(TOML file for the CLI, JSON file for C and Go), or (None, None)."""
        p = r.get("policy")
        if p is None:
            return None, None
        if isinstance(p, Path):
            toml_file, table = str(p), tomllib.loads(p.read_text())
        else:
            table = p
            toml_file = self.write("policy.toml", "".join(f"{k} = {toml_value(v)}\n" for k, v in p.items()))
        return toml_file, self.write("policy.json", json.dumps(table))

    def report_data(self, r):
        rd = r.get("report_data")
        if rd == "constellation":
            runtime = (self.testdata / "constellation-azure-snp/runtimedata.bin").read_bytes()
            return hashlib.sha256(runtime).hexdigest() + "00" * 32
        return rd


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return json.dumps(v)


def flags_of(r):
    """The verify calls' flags: an absent nonce is waived (ALLOW_EMPTY_NONCE) unless the row says not."""
    flags = r.get("flags", 0)
    if r.get("nonce") is None and r.get("waive_nonce", True) and r["kind"] not in ("snp", "tdx"):
        flags |= ALLOW_EMPTY_NONCE
    return flags


def cli_args(r, inp, evidence, policy_toml):
    k = r["kind"]
    nonce = r.get("nonce")
    if k in ("snp", "tdx"):
        nonce_args = []
    elif nonce is not None:
        nonce_args = ["--nonce", nonce.hex()]
    else:
        nonce_args = ["--dangerous-no-nonce"] if r.get("waive_nonce", True) else []
    at = ["--at", r["at"]] if r.get("at") else []
    policy = ["--policy", policy_toml] if policy_toml else []
    rd = inp.report_data(r)
    rd = ["--report-data", rd] if rd else []
    if k == "snp":
        return ["snp", "verify", evidence, "--vcek", inp.td(r["vcek_file"]), "--chain", inp.td(r["chain_file"])] + at + policy + rd
    if k == "tdx":
        return ["tdx", "verify", evidence, "--collateral", inp.td(r["collateral_file"])] + at + policy + rd
    if k in ("tpm-bincode", "tpm-parts"):
        return ["tpm", "verify", "--ak", inp.td(r["ak_file"]), "--quote", evidence] + nonce_args
    if k == "tpm-trustee":
        return ["tpm", "verify", "--evidence", evidence] + nonce_args
    if k == "azure-evidence":
        user = ["--user-data", r["user_data"]] if r.get("user_data") else []
        ignore = ["--dangerous-ignore-user-data"] if r.get("flags", 0) & IGNORE_USER_DATA else []
        return ["azure", "verify", "--evidence", evidence] + nonce_args + at + policy + user + ignore
    if k == "azure-parts":
        parts = ["--hcl-report", evidence, "--vcek", inp.td(r["vcek_file"]), "--quote", inp.td(r["quote_file"])]
        return ["azure", "verify"] + parts + nonce_args + at + policy
    if k == "gce":
        return ["gce", "verify", evidence] + nonce_args + at + policy
    if k == "document":
        m = inp.write("measurements.json", json.dumps(r["measurements"]))
        return ["document", "verify", evidence, "--variant", r["variant"], "--measurements", m] + nonce_args + at
    raise ValueError(k)


def driver_args(r, inp, evidence, policy_json):
    k = r["kind"]
    aux1 = {
        "snp": "vcek_file",
        "tdx": "collateral_file",
        "tpm-bincode": "ak_file",
        "tpm-parts": "ak_file",
        "azure-parts": "vcek_file",
    }.get(k)
    aux1 = inp.td(r[aux1]) if aux1 else None
    if k == "document":
        aux1 = inp.write("measurements.json", json.dumps(r["measurements"]))
    aux2 = {"snp": r.get("chain_file"), "azure-parts": r.get("quote_file")}.get(k)
    data = r.get("user_data") if k == "azure-evidence" else inp.report_data(r)
    nonce = r.get("nonce")
    return [
        k,
        evidence or "-",
        aux1 or "-",
        inp.td(aux2) if aux2 else "-",
        nonce.hex() if nonce else "-",
        data or "-",
        str(unix(r["at"])) if r.get("at") else "0",
        policy_json or "-",
        str(flags_of(r)),
        r.get("variant") or "-",
    ]


def outcome_of_library(rc, result):
    """A library column's outcome from its result code and result object."""
    if rc == 0:
        return "accepted"
    if result is None:
        # No evidence judged: a parameter was wrong (API errors 1000–1999).
        return "misuse" if 1000 <= rc < 2000 else f"rc {rc} without a result object"
    return result["failure"]["class"]


KEYS = ("schema", "verifier", "accepted", "status")
FAILURE_KEYS = ("check", "class", "policy_key")


def key_fields(result):
    if result is None:
        return None
    f = result.get("failure") or {}
    return {k: result.get(k) for k in KEYS} | {f"failure.{k}": f.get(k) for k in FAILURE_KEYS}


def validate(results, scratch):
    """Validates every result object against the schema with `jsonschema` (.venv): a NOTICE without it,
    a failure under CI=true."""
    py = REPO / ".venv" / "bin" / "python"
    ok = py.is_file() and subprocess.run([py, "-c", "import jsonschema"], capture_output=True).returncode == 0
    if not ok:
        if os.environ.get("CI") == "true":
            sys.exit("side-by-side: no .venv with jsonschema (scripts/setup-python.sh); required under CI=true")
        print("NOTICE: side-by-side: result objects not validated: no .venv with jsonschema (scripts/setup-python.sh)")
        return []
    files = []
    for i, result in enumerate(results):
        f = scratch / f"result-{i}.json"
        f.write_text(json.dumps(result))
        files.append(str(f))
    p = subprocess.run(
        [py, REPO / "schemas" / "validate_result.py", REPO / "schemas" / "result-v1.schema.json", *files],
        capture_output=True,
        text=True,
    )
    return [] if p.returncode == 0 else [f"result objects do not conform to the schema:\n{p.stderr}"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", required=True)
    ap.add_argument("--c", required=True)
    ap.add_argument("--go")
    ap.add_argument("--testdata", default=os.environ.get("ATTEST_TESTDATA", str(REPO.parent / "shared" / "testdata")))
    a = ap.parse_args()
    testdata = Path(a.testdata)
    if not (testdata / "INDEX.md").is_file():
        if os.environ.get("CI") == "true":
            sys.exit(f"side-by-side: testdata not found at {testdata} (set ATTEST_TESTDATA); required under CI=true")
        print(f"NOTICE: side-by-side: skipped, testdata not found at {testdata} (set ATTEST_TESTDATA)")
        return
    columns = [("cli", None), ("c", a.c)] + ([("go", a.go)] if a.go else [])
    wrong, results = [], []
    with tempfile.TemporaryDirectory(prefix="attest-side-by-side-") as scratch:
        inp = Inputs(testdata, Path(scratch))
        print(f"{'row':<60} {'expect':<10} " + " ".join(f"{c:<22}" for c, _ in columns))
        for r in TABLE:
            evidence = inp.evidence(r)
            policy_toml, policy_json = inp.policy(r)
            got = {}
            cli = subprocess.run(
                [a.cli, *cli_args(r, inp, evidence, policy_toml), "--json"], capture_output=True, text=True
            )
            result = json.loads(cli.stdout) if cli.stdout.strip() else None
            outcome = {0: "accepted", 1: "refused"}.get(cli.returncode)
            if cli.returncode == 2:
                outcome = result["failure"]["class"] if result else "misuse"
            if "panicked" in cli.stderr or outcome is None:
                outcome = f"exit {cli.returncode}: {cli.stderr.strip()[:200]}"
            got["cli"] = (outcome, None, result, cli.stderr.strip())
            for name, exe in columns[1:]:
                p = subprocess.run([exe, *driver_args(r, inp, evidence, policy_json)], capture_output=True, text=True)
                if p.returncode != 0:
                    got[name] = (f"driver exit {p.returncode}: {p.stderr.strip()[:200]}", None, None, p.stderr)
                    continue
                line = json.loads(p.stdout)
                got[name] = (outcome_of_library(line["rc"], line["result"]), line["rc"], line["result"], "")
            cells = []
            for name, _ in columns:
                outcome, rc, result, _ = got[name]
                check = (result or {}).get("failure") or {}
                cell = outcome + (f"/{check.get('check')}" if check.get("check") else "")
                cells.append(f"{cell:<22}" + (f" rc {rc}" if rc else ""))
            print(f"{r['name'][:60]:<60} {r['expect']:<10} " + " ".join(cells))
            problems = []
            for name, _ in columns:
                outcome, rc, result, stderr = got[name]
                if outcome != r["expect"]:
                    problems.append(f"{name}: {outcome}, expected {r['expect']} ({stderr[:300]})")
                fields = key_fields(result)
                if r["check"] and fields and fields["failure.check"] != r["check"]:
                    problems.append(f"{name}: failed check {fields['failure.check']}, expected {r['check']}")
                if r["expect"] != "misuse" and result is None and name != "cli" and outcome == r["expect"]:
                    problems.append(f"{name}: no result object")
            if "go" in got and got["c"][1] != got["go"][1]:
                problems.append(f"result codes differ: C {got['c'][1]}, Go {got['go'][1]}")
            present = {n: key_fields(v[2]) for n, v in got.items() if v[2] is not None}
            if len({json.dumps(f, sort_keys=True) for f in present.values()}) > 1:
                problems.append("result objects differ: " + json.dumps(present, sort_keys=True))
            if EXIT.get(r["expect"]) is not None and r["expect"] != "misuse" and got["cli"][2] is None:
                problems.append("cli: --json printed no result object")
            wrong += [f"{r['name']}: {p}" for p in problems]
            results += [v[2] for v in got.values() if v[2] is not None]
        wrong += validate(results, Path(scratch))
    if wrong:
        print("\nside-by-side: the CLI, C and Go disagree (or not as the table expects):", file=sys.stderr)
        for w in wrong:
            print("  " + w, file=sys.stderr)
        sys.exit(1)
    print(f"side-by-side: {len(TABLE)} rows, {len(columns)} columns agree ({len(results)} result objects)")


if __name__ == "__main__":
    main()
