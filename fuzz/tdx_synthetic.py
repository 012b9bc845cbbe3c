#!/usr/bin/env python3
"""Writes the hand-made TDX seeds of fuzz/corpus/tdx_quote/ and fuzz/corpus/tdx_collateral/ (synthetic-*):
structurally valid quotes (v4, v5 with a TDX 1.0 and a TDX 1.5 body; zero fields, a one-line PEM chain) and
collateral (a JSON bundle and two PCS bodies) with invented values whose signatures do not verify. No byte comes
from the testdata.

Usage: fuzz/tdx_synthetic.py [CORPUS_DIR]   (default fuzz/corpus)
"""
import json, pathlib, struct, sys

here = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent / "corpus"
PEM = "-----BEGIN CERTIFICATE-----\nMAA=\n-----END CERTIFICATE-----\n"


def quote(version, body_type=None):
    q = struct.pack("<HHIHH", version, 2, 0x81, 0, 0) + bytes.fromhex("939a7233f79c4ca9940a0db3957f0607") + bytes(20)
    blen = 648 if body_type == 3 else 584
    if body_type is not None:
        q += struct.pack("<HI", body_type, blen)
    q += bytes(blen)
    chain = PEM.encode()
    cert = bytes(384 + 64) + struct.pack("<H", 32) + bytes(32) + struct.pack("<HI", 5, len(chain)) + chain
    sig = bytes(128) + struct.pack("<HI", 6, len(cert)) + cert
    return q + struct.pack("<I", len(sig)) + sig


def levels(n):
    return [{"svn": n} for _ in range(16)]


tcb = {"id": "TDX", "version": 3, "issueDate": "2024-01-01T00:00:00Z", "nextUpdate": "2024-02-01T00:00:00Z",
       "fmspc": "00112233aabb", "pceId": "0000", "tcbType": 0, "tcbEvaluationDataNumber": 1,
       "tdxModule": {"mrsigner": "00" * 48, "attributes": "00" * 8, "attributesMask": "ff" * 8},
       "tdxModuleIdentities": [{"id": "TDX_01", "mrsigner": "00" * 48, "attributes": "00" * 8, "attributesMask": "ff" * 8,
                                "tcbLevels": [{"tcb": {"isvsvn": 2}, "tcbDate": "2024-01-01T00:00:00Z",
                                               "tcbStatus": "UpToDate"}]}],
       "tcbLevels": [{"tcb": {"sgxtcbcomponents": levels(2), "pcesvn": 11, "tdxtcbcomponents": levels(1)},
                      "tcbDate": "2024-01-01T00:00:00Z", "tcbStatus": "SWHardeningNeeded",
                      "advisoryIDs": ["INTEL-SA-00000"]}]}
qe = {"id": "TD_QE", "version": 2, "issueDate": "2024-01-01T00:00:00Z", "nextUpdate": "2024-02-01T00:00:00Z",
      "tcbEvaluationDataNumber": 1, "miscselect": "00000000", "miscselectMask": "FFFFFFFF",
      "attributes": "00" * 16, "attributesMask": "FF" * 16, "mrsigner": "00" * 32, "isvprodid": 2,
      "tcbLevels": [{"tcb": {"isvsvn": 4}, "tcbDate": "2024-01-01T00:00:00Z", "tcbStatus": "UpToDate"}]}
compact = {"separators": (",", ":")}
bundle = {"pck_crl_issuer_chain": PEM, "root_ca_crl": "3000", "pck_crl": "3000", "tcb_info_issuer_chain": PEM,
          "tcb_info": json.dumps(tcb, **compact), "tcb_info_signature": "00" * 64,
          "qe_identity_issuer_chain": PEM, "qe_identity": json.dumps(qe, **compact), "qe_identity_signature": "00" * 64}

for target, name, data in [
    ("tdx_quote", "synthetic-v4", quote(4)),
    ("tdx_quote", "synthetic-v5-tdx15", quote(5, 3)),
    ("tdx_quote", "synthetic-v5-tdx10-padded", quote(5, 2) + bytes(16)),
    ("tdx_collateral", "synthetic-bundle", json.dumps(bundle).encode()),
    ("tdx_collateral", "synthetic-pcs-tcbinfo", json.dumps({"tcbInfo": tcb, "signature": "00" * 64}, **compact).encode()),
    ("tdx_collateral", "synthetic-pcs-qe-identity",
     json.dumps({"enclaveIdentity": qe, "signature": "00" * 64}, **compact).encode()),
]:
    d = here / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data)
