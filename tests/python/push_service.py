"""A Web Push service stand-in for tests/e2e/web_push.rs, checking tandem's pushes with
implementations no one here wrote: py_vapid verifies the VAPID token (RFC 8292) and
http_ece decrypts the body (RFC 8291, aes128gcm) with each device's private key.

Prints one JSON line first: {"port", "devices": [{"name", "p256dh", "auth"}]}, one
device per name given on the command line. Then one JSON line per push received:
{"device", "status", "payload", "headers", "aud", "exp", "k", "error"?}. A device's
name decides how it answers: "gone*" 410, "flaky*" 503 to its first push then 201,
"hang*" never answers (the connection stays open), anything else 201. Stops when its
standard input closes (the test ended).
"""

import base64
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import http_ece
import py_vapid
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


DEVICES = {}
for name in sys.argv[1:]:
    key = ec.generate_private_key(ec.SECP256R1())
    public = key.public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    )
    DEVICES[name] = {"key": key, "p256dh": b64(public), "auth": b64(__import__("os").urandom(16))}

LOCK = threading.Lock()
SEEN = {}


def emit(record):
    with LOCK:
        sys.stdout.write(json.dumps(record) + "\n")
        sys.stdout.flush()


def check_vapid(header: str, origin: str) -> dict:
    """RFC 8292: `vapid t=JWT, k=KEY`; the JWT verified with KEY by py_vapid."""
    scheme, _, params = header.partition(" ")
    assert scheme.lower() == "vapid", f"scheme {scheme!r}"
    parts = dict(p.strip().split("=", 1) for p in params.split(","))
    token, key = parts["t"], parts["k"]
    signed, signature = token.rsplit(".", 1)
    verifier = py_vapid.Vapid02.from_raw_public(key.encode())
    assert verifier.verify_token(signed.encode(), signature), "bad VAPID signature"
    header_part, claims_part = signed.split(".")
    head = json.loads(unb64(header_part))
    assert head == {"typ": "JWT", "alg": "ES256"}, head
    claims = json.loads(unb64(claims_part))
    assert claims["aud"] == origin, f"aud {claims['aud']} for {origin}"
    now = time.time()
    assert now < claims["exp"] <= now + 24 * 3600, f"exp {claims['exp']} at {now}"
    return {"aud": claims["aud"], "exp": claims["exp"], "k": key, "sub": claims.get("sub")}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        name = self.path.rsplit("/", 1)[-1]
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        record = {"device": name, "headers": {k: self.headers.get(k) for k in ("TTL", "Urgency", "Topic", "Content-Encoding")}}
        with LOCK:
            count = SEEN.get(name, 0) + 1
            SEEN[name] = count
        try:
            device = DEVICES[name]
            record.update(check_vapid(self.headers["Authorization"], f"http://127.0.0.1:{self.server.server_port}"))
            assert self.headers["Content-Encoding"] == "aes128gcm"
            plain = http_ece.decrypt(
                body,
                private_key=device["key"],
                auth_secret=unb64(device["auth"]),
                version="aes128gcm",
            )
            record["payload"] = json.loads(plain)
            record["bytes"] = len(body)
        except Exception as e:  # reported to the test, which fails on it
            record["error"] = f"{type(e).__name__}: {e}"
        if name.startswith("hang"):
            record["status"] = None
            emit(record)
            time.sleep(3600)
            return
        status = 201
        if name.startswith("gone"):
            status = 410
        elif name.startswith("flaky") and count == 1:
            status = 503
        record["status"] = status
        emit(record)
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
threading.Thread(target=server.serve_forever, daemon=True).start()
emit({
    "port": server.server_port,
    "devices": [{"name": n, "p256dh": d["p256dh"], "auth": d["auth"]} for n, d in DEVICES.items()],
})
sys.stdin.read()
