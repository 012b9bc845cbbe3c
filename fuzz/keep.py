#!/usr/bin/env python3
"""Folds minimized fuzz inputs into the committed corpus fuzz/corpus/<target>/, named by SHA-1, except
inputs that share any 32-byte run with a file of the real testdata ($ATTEST_TESTDATA, default
../shared/testdata): those are derived from real evidence, which is never copied into the repository (the
long runs regenerate them with fuzz/seed.py). Prints how many inputs were added.

Usage: fuzz/keep.py TARGET DIR
"""
import hashlib
import os
import pathlib
import sys

WINDOW = 32
MAX_INPUT = 64 * 1024  # larger inputs are not worth committing

here = pathlib.Path(__file__).resolve().parent
target, src = sys.argv[1], pathlib.Path(sys.argv[2])
td = pathlib.Path(os.environ.get("ATTEST_TESTDATA", here.parent.parent / "shared" / "testdata"))

windows = set()
if td.is_dir():
    for f in td.rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            windows.update(data[i:i + WINDOW] for i in range(0, max(len(data) - WINDOW + 1, 0)))


def derived_from_testdata(data):
    return any(data[i:i + WINDOW] in windows for i in range(0, max(len(data) - WINDOW + 1, 0)))


dest = here / "corpus" / target
dest.mkdir(parents=True, exist_ok=True)
present = {hashlib.sha1(f.read_bytes()).hexdigest() for f in dest.iterdir() if f.is_file()}
added = 0
for f in sorted(src.iterdir()):
    data = f.read_bytes()
    if not f.is_file() or len(data) > MAX_INPUT or derived_from_testdata(data):
        continue
    digest = hashlib.sha1(data).hexdigest()
    if digest not in present:
        (dest / digest).write_bytes(data)
        present.add(digest)
        added += 1
print(added)
