"""Check a running eventsaas the way an external gateway would.

Logs a guest in through the API, verifies the RS256 token with PyJWT against
/.well-known/jwks.json only (no eventsaas code), then calls GET /api/v1/rsvp.
Usage: python scripts/verify_live_token.py http://127.0.0.1:8000 CODE LAST_NAME
"""

import json
import sys
import urllib.request

import jwt  # PyJWT, used as a generic library: no eventsaas code imported

base, code, last_name = sys.argv[1], sys.argv[2], sys.argv[3]
req = urllib.request.Request(
    f"{base}/api/v1/auth/guest-login",
    data=json.dumps({"code": code, "last_name": last_name}).encode(),
    headers={"Content-Type": "application/json"},
)
login = json.load(urllib.request.urlopen(req))
token = login["access"]
print("header:", jwt.get_unverified_header(token))
signing_key = jwt.PyJWKClient(f"{base}/.well-known/jwks.json").get_signing_key_from_jwt(token)
claims = jwt.decode(token, signing_key.key, algorithms=["RS256"], audience="eventsaas-api", issuer="eventsaas")
print("verified claims:", {k: claims[k] for k in ("sub", "name", "role", "tenant_id", "event_id")})
rsvp = json.load(
    urllib.request.urlopen(urllib.request.Request(f"{base}/api/v1/rsvp", headers={"Authorization": f"Bearer {token}"}))
)
print(
    "GET /api/v1/rsvp:",
    rsvp["guest"]["first_name"],
    rsvp["guest"]["last_name"],
    "| members:",
    [m["first_name"] for m in rsvp["members"]],
    "| expected_total:",
    rsvp["expected_total"],
    "| rsvp_open:",
    rsvp["rsvp_open"],
)
