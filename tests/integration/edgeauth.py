"""Signed-URL tokens for the tests, from two signers that know nothing of musicd's code:

  python_token()   an independent implementation of the published Akamai EdgeAuth algorithm
                   (the fields in the libraries' order joined by '~', HMAC-SHA256 of them keyed
                   by the hex-decoded key, "~hmac=" and its hex digest appended);
  NpmEdgeAuth      the real akamai-edgeauth package from the npm registry, run by node: the
                   suite installs it into var/npm on first use (npm's own configuration says
                   where from), the version pinned.

And the key files musicd and the shipped VCL read (musicd's format: hex keys, one a line).
"""

import fcntl
import hashlib
import hmac
import json
import os
import secrets
import shutil
import subprocess

from support import REPO

NPM_PACKAGE = "akamai-edgeauth"
NPM_VERSION = "0.2.0"
NPM_PREFIX = REPO / "var" / "npm"
NPM_TIMEOUT = 300  # a first install downloads the package
NODE_TIMEOUT = 60

# "musicd-example-key-0123456789abc" hex-encoded: the worked example of
# docs/signed-urls-and-limits.md, and the unit tests'.
EXAMPLE_KEY = "6d75736963642d6578616d706c652d6b65792d30313233343536373839616263"


def python_token(key_hex, acl, expires, start=None, session_id=None, payload=None):
    """The token akamai-edgeauth's generateACLToken makes for these (acl a string or a list)."""
    if isinstance(acl, (list, tuple)):
        acl = "!".join(acl)
    fields = []
    if start is not None:
        fields.append(f"st={start}")
    fields.append(f"exp={expires}")
    fields.append(f"acl={acl}")
    if session_id:
        fields.append(f"id={session_id}")
    if payload:
        fields.append(f"data={payload}")
    signed = "~".join(fields)
    digest = hmac.new(bytes.fromhex(key_hex), signed.encode(), hashlib.sha256).hexdigest()
    return f"{signed}~hmac={digest}"


def track_acl(track_id):
    return f"/musicdb/{track_id}/*"


# The node side: one process signs a list of requests given as JSON on its standard input.
NODE_SIGNER = r"""
const EdgeAuth = require(process.argv[1]);
let input = '';
process.stdin.on('data', (chunk) => { input += chunk; });
process.stdin.on('end', () => {
    const tokens = JSON.parse(input).map((r) => {
        const options = {key: r.key, endTime: r.expires};
        if (r.start !== null) options.startTime = r.start;
        if (r.session_id) options.sessionId = r.session_id;
        if (r.payload) options.payload = r.payload;
        if (r.ip) options.ip = r.ip;
        return new EdgeAuth(options).generateACLToken(r.acl);
    });
    process.stdout.write(JSON.stringify(tokens));
});
"""


class NpmEdgeAuth:
    """akamai-edgeauth from npm, installed under var/npm when it is not there yet."""

    def __init__(self, prefix=NPM_PREFIX):
        self.prefix = prefix
        self.module = prefix / "node_modules" / NPM_PACKAGE
        node = shutil.which("node") or shutil.which("nodejs")
        assert node, ("node is needed for the npm package "
                      "(scripts/setup/install-deps installs nodejs)")
        self.node = node

    def installed(self):
        package_json = self.module / "package.json"
        return package_json.exists() and \
            json.loads(package_json.read_text())["version"] == NPM_VERSION

    def install(self):
        if self.installed():
            return self
        npm = shutil.which("npm")
        assert npm, ("npm is needed to install akamai-edgeauth "
                     "(scripts/setup/install-deps installs it)")
        self.prefix.mkdir(parents=True, exist_ok=True)
        # make test runs two pytest sessions at once, each with several workers: one npm at a
        # time writes the prefix (two at once left neither's package.json, both exiting 0).
        with open(self.prefix / ".install.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not self.installed():
                self._npm_install(npm)
        return self

    def _npm_install(self, npm):
        package_json = self.module / "package.json"
        p = subprocess.run([npm, "install", "--prefix", str(self.prefix), "--no-save",
                            "--no-audit", "--no-fund", "--loglevel=error",
                            f"{NPM_PACKAGE}@{NPM_VERSION}"],
                           capture_output=True, text=True, timeout=NPM_TIMEOUT,
                           stdin=subprocess.DEVNULL)
        assert p.returncode == 0 and package_json.exists(), \
            f"npm install {NPM_PACKAGE}@{NPM_VERSION} failed ({p.returncode}):\n{p.stderr}"

    def tokens(self, requests):
        """Each request (a dict: key, acl, expires, and optionally start, session_id, payload,
        ip) signed by the package's generateACLToken."""
        payload = json.dumps([{"key": r["key"], "acl": r["acl"], "expires": r["expires"],
                               "start": r.get("start"), "session_id": r.get("session_id"),
                               "payload": r.get("payload"), "ip": r.get("ip")}
                              for r in requests])
        p = subprocess.run([self.node, "-e", NODE_SIGNER, str(self.module)], input=payload,
                           capture_output=True, text=True, timeout=NODE_TIMEOUT,
                           env=dict(os.environ, NODE_NO_WARNINGS="1"))
        assert p.returncode == 0, f"node signing failed: {p.stderr}"
        return json.loads(p.stdout)

    def token(self, key_hex, acl, expires, start=None, **fields):
        return self.tokens([dict(key=key_hex, acl=acl, expires=expires, start=start,
                                 **fields)])[0]


def new_key(size=32):
    """A random key of size bytes, hex-encoded, holding no 00 byte (so the VCL can use it)."""
    while True:
        key = secrets.token_bytes(size)
        if 0 not in key:
            return key.hex()


def write_key_file(path, keys, mode=0o600, comment="# musicd URL-signing keys"):
    """musicd's key file: a comment, then each key on a line of its own."""
    path.write_text("\n".join([comment, *keys]) + "\n")
    os.chmod(path, mode)
    return path
