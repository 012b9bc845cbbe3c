"""Verifies an EAR token with PyJWT (a standard JWT library, independent of this project) and prints its
claims as JSON: `verify_ear.py TOKEN_FILE PUBLIC_KEY_PEM ALG`. Exits 1 when the signature does not verify."""

import json
import sys

import jwt  # PyJWT, with `cryptography` for ES256/ES384

token = open(sys.argv[1]).read().strip()
key = open(sys.argv[2]).read()
alg = sys.argv[3]
header = jwt.get_unverified_header(token)
if header.get("alg") != alg or header.get("typ") != "JWT":
    print(f"unexpected header {header}", file=sys.stderr)
    sys.exit(1)
try:
    claims = jwt.decode(token, key, algorithms=[alg], options={"require": ["iat"]})
except jwt.InvalidTokenError as e:
    print(f"invalid token: {type(e).__name__}: {e}", file=sys.stderr)
    sys.exit(1)
print(json.dumps(claims))
