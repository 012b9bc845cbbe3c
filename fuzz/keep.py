#!/usr/bin/env python3
"""Folds minimized fuzz inputs into the committed corpus fuzz/corpus/<target>/, named by SHA-1, except
inputs that share a 32-byte run with a file of the real testdata ($ATTEST_TESTDATA, default
../shared/testdata) that the project's own hand-made seeds do not also contain: those are derived from real
evidence, which is never copied into the repository (the long runs regenerate them with fuzz/seed.py).
Prints how many inputs were added.

Runs the hand-made seeds (fuzz/corpus/*/ files not named by a SHA-1: synthetic-*, regression-*, … made with
generated keys by test-support's fuzz_seeds example, the shell's fuzz_documents example or openssl) share
with the testdata are what every file of a format holds — zero-filled reserved fields, padding, AMD's
certificate names and OIDs, algorithm identifiers, fixed headers and well-known digests — not real evidence.
Without excluding them no input shaped like an SNP report could be kept (its reserved zeros alone are longer
than 32 bytes), not even one mutated from a synthetic seed.

Size policy (so that the committed corpus stays small: at most 16 x 64 KiB = 1 MiB of found inputs): an
input larger than MAX_INPUT is never kept, and the found inputs of one target (files named by their SHA-1;
hand-made seeds and regression-* inputs do not count) may total at most BUDGET bytes. Within the budget the
smallest inputs are taken first: the minimized set comes from a set-cover merge, so every input in it adds
coverage, and many small inputs cover more than a few large ones. fuzz/long.sh logs the coverage of the
committed corpus next to that of the whole minimized set, so what the budget costs is measured.

Usage: fuzz/keep.py TARGET DIR
"""
import hashlib
import os
import re
import pathlib
import sys

WINDOW = 32
MAX_INPUT = 4 * 1024
BUDGET = 64 * 1024
FOUND = re.compile(r"^[0-9a-f]{40}$")

here = pathlib.Path(__file__).resolve().parent
target, src = sys.argv[1], pathlib.Path(sys.argv[2])
td = pathlib.Path(os.environ.get("ATTEST_TESTDATA", here.parent.parent / "shared" / "testdata"))


def runs(data):
    return (data[i:i + WINDOW] for i in range(0, max(len(data) - WINDOW + 1, 0)))


windows = set()
if td.is_dir():
    for f in td.rglob("*"):
        if f.is_file():
            windows.update(runs(f.read_bytes()))
for f in (here / "corpus").glob("*/*"):
    if f.is_file() and not FOUND.match(f.name):
        windows.difference_update(runs(f.read_bytes()))


def derived_from_testdata(data):
    return any(w in windows for w in runs(data))


dest = here / "corpus" / target
dest.mkdir(parents=True, exist_ok=True)
present = {hashlib.sha1(f.read_bytes()).hexdigest() for f in dest.iterdir() if f.is_file()}
used = sum(f.stat().st_size for f in dest.iterdir() if f.is_file() and FOUND.match(f.name))
added = 0
for f in sorted((f for f in src.iterdir() if f.is_file()), key=lambda f: (f.stat().st_size, f.name)):
    data = f.read_bytes()
    if len(data) > MAX_INPUT or used + len(data) > BUDGET:
        continue
    digest = hashlib.sha1(data).hexdigest()
    if digest in present or derived_from_testdata(data):
        continue
    (dest / digest).write_bytes(data)
    present.add(digest)
    used += len(data)
    added += 1
print(added)
