"""Validates result objects against schemas/result-v1.schema.json with the `jsonschema` library (independent
of this project): `validate_result.py SCHEMA FILE...`, each FILE one JSON result object. Prints every
violation and exits 1 when any file does not conform."""

import json
import sys

import jsonschema

schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)
bad = 0
for path in sys.argv[2:]:
    doc = json.load(open(path))
    for error in validator.iter_errors(doc):
        bad += 1
        print(f"{path}: {'/'.join(map(str, error.absolute_path))}: {error.message}", file=sys.stderr)
sys.exit(1 if bad else 0)
