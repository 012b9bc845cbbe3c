#!/usr/bin/env python3
"""The container images, built and run for real (`make test`; `make images` builds the release ones).

    python3 scripts/container-test.py target/debug [--keep]

1. builds the key-service and join-service images from the binaries in the given directory twice
   (scripts/images.sh, into two directories) and checks that both builds give the same manifest digests and
   the same OCI archives (reproducible images); prints the image sizes;
2. unpacks each image (umoci) and runs it with runc as root, on the host's loopback (no network namespace,
   no user namespace), read-only root file system, every capability dropped, the files a Pod would mount
   bind-mounted at the paths of deploy/kustomize/base, with the ownership and modes the kubelet gives them:
   - the key-service container serves a mutual-TLS `kms.API/GetDataKey` call from the host, and the key
     equals HKDF-SHA256 of the master secret computed here;
   - the join-service container (attesting with node-1's swtpm) admits node-2 of the demo cluster
     (scripts/demo-cluster.py's nodes, TPMs and `attest init`), which finds it through its cloud metadata
     (`--join-endpoints-from gcp` against a metadata server stand-in);
   - a missing mount (key service: no master secret) and a wrong one (join service: its key-service TLS
     directory holding the configuration instead) stop the container at start with exit 3 and a message
     naming the missing file;
3. prints the start-up times (runc started → first served call) next to the same binary started on the host.

Skips with a notice (exit 0) where no container can run here (not root, no runc/umoci, runc cannot start a
container); under CI=true that is a failure. Every process and container it starts is stopped at the end.
"""

import base64
import hashlib
import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
spec = importlib.util.spec_from_file_location("demo_cluster", HERE / "demo-cluster.py")
dc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(dc)
log, Failure, run = dc.log, dc.Failure, dc.run

# The unprivileged user of the key-service image (scripts/images.sh) and the Pod's fsGroup.
NONROOT = 65532


def skip(reason):
    if os.environ.get("CI") == "true":
        print(f"container test: FAILED: {reason} (CI=true: the containers must run)", file=sys.stderr)
        return 1
    print(f"container test: SKIPPED: {reason}")
    return 0


def image_tag():
    out = subprocess.run([HERE / "images.sh", "--names"], capture_output=True, text=True, check=True).stdout
    return out.split()[0].rsplit(":", 1)[1]


def build_images(bindir, out):
    t = time.monotonic()
    run([HERE / "images.sh", "--bin-dir", bindir, "--out", out])
    lines = [l.split() for l in (out / "images.txt").read_text().splitlines()]
    return {l[0]: (l[1], int(l[2])) for l in lines}, time.monotonic() - t


def sha256_file(p):
    return hashlib.sha256(p.read_bytes()).hexdigest()


class Runc:
    """Containers of unpacked images, run by runc with a state directory of our own."""

    def __init__(self, root, procs):
        self.root = root
        self.state = root / "runc-state"
        self.procs = procs
        self.ids = []

    def unpack(self, layout, tag, name):
        bundle = self.root / "images" / name
        run(["umoci", "unpack", "--image", f"{layout}:{tag}", bundle])
        return bundle

    def bundle(self, image, name, args, mounts):
        """A bundle for one container of `image`: the image's own runtime config (user, entrypoint, env:
        umoci derives it from the image config) with the entrypoint's arguments, the host network (loopback),
        a read-only root, no capabilities and the given bind mounts: (host dir, container dir, writable)."""
        cfg = json.loads((image / "config.json").read_text())
        proc = cfg["process"]
        proc["terminal"] = False
        proc["args"] = proc["args"][:1] + [str(a) for a in args]
        proc["capabilities"] = {k: [] for k in ("bounding", "effective", "inheritable", "permitted", "ambient")}
        proc["noNewPrivileges"] = True
        if proc["user"]["uid"] != 0:
            proc["user"]["additionalGids"] = [NONROOT]  # the Pod's fsGroup
        cfg["root"] = {"path": str(image / "rootfs"), "readonly": True}
        linux = cfg["linux"]
        # No network namespace: the services listen on, and call, the host's 127.0.0.1. No user namespace.
        linux["namespaces"] = [n for n in linux["namespaces"] if n["type"] not in ("network", "user")]
        linux.pop("uidMappings", None)
        linux.pop("gidMappings", None)
        for src, dst, writable in mounts:
            cfg["mounts"].append({"destination": dst, "type": "bind", "source": str(src),
                                  "options": ["rbind", "rw" if writable else "ro", "nosuid", "nodev", "noexec"]})
        bundle = self.root / "bundles" / name
        bundle.mkdir(parents=True)
        (bundle / "config.json").write_text(json.dumps(cfg, indent=1))
        return bundle

    def start(self, name, bundle):
        cid = f"attest-ct-{os.getpid()}-{name}"
        self.ids.append(cid)
        return self.procs.start(name, ["runc", "--root", self.state, "run", "--bundle", bundle, cid])

    def status(self, name):
        """(uid, effective capabilities) of a running container's process, from runc's state and /proc."""
        cid = f"attest-ct-{os.getpid()}-{name}"
        st = json.loads(run(["runc", "--root", self.state, "state", cid]).stdout)
        fields = dict(l.split(":", 1) for l in Path(f"/proc/{st['pid']}/status").read_text().splitlines() if ":" in l)
        return int(fields["Uid"].split()[1]), int(fields["CapEff"].strip(), 16)

    def cleanup(self):
        for cid in self.ids:
            subprocess.run(["runc", "--root", self.state, "kill", cid, "KILL"], capture_output=True)
            subprocess.run(["runc", "--root", self.state, "delete", "--force", cid], capture_output=True)


def secret_dir(root, name, files, group=NONROOT):
    """A directory as the kubelet makes a Secret volume with defaultMode 0400 and fsGroup: each file
    root-owned, group `group`, mode 0440 (the kubelet adds group read for fsGroup)."""
    d = root / "mounts" / name
    d.mkdir(parents=True)
    for dest, src in files.items():
        shutil.copyfile(src, d / dest)
        os.chown(d / dest, 0, group)
        os.chmod(d / dest, 0o440)
    return d


def first_data_key(addr, pki, deadline):
    """Polls until the key service at `addr` answers a GetDataKey over mutual TLS; returns the key."""
    c = dc.Cluster(kms_addr=addr, pki=pki)
    last = None
    while time.monotonic() < deadline:
        try:
            with dc.kms_connect(c, pki / "join-service.crt", pki / "join-service.key") as s:
                key, what = dc.h2_get_data_key(s, "container-test")
            if key is not None:
                return key
            last = what
        except OSError as e:
            last = e
        time.sleep(0.01)
    raise Failure(f"the key service at {addr} served no call: {last}")


def first_http(url, deadline):
    last = None
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return r.read()
        except OSError as e:
            last = e
        time.sleep(0.01)
    raise Failure(f"{url} was not served: {last}")


def gcp_metadata(endpoints):
    """A GCP metadata server stand-in on 127.0.0.1 answering the join endpoints attribute; returns the server,
    its URL and the list of paths asked."""
    import http.server
    import threading
    asked = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            asked.append(self.path)
            ok = self.headers.get("Metadata-Flavor") == "Google"
            found = self.path == "/computeMetadata/v1/instance/attributes/attest-join-endpoints"
            body = endpoints.encode() if ok and found else b""
            self.send_response(200 if ok and found else 403 if not ok else 404)
            self.send_header("Metadata-Flavor", "Google")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}", asked


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def expect_start_failure(p, log_path, needle, what):
    try:
        code = p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        raise Failure(f"{what}: the container kept running")
    text = log_path.read_text(errors="replace")
    if code != 3 or needle not in text:
        raise Failure(f"{what}: expected exit 3 naming {needle}, got {code}: {text.strip()[-400:]}")
    line = next(l for l in text.splitlines() if needle in l)
    log(f"{what}: exit {code}: {dc.strip_log(line)}")


def main():
    args = [a for a in sys.argv[1:] if a != "--keep"]
    keep = "--keep" in sys.argv[1:]
    bindir = Path(args[0] if args else "target/debug").resolve()
    if os.geteuid() != 0:
        return skip("runc runs containers as root only here (no user namespaces), and this is not root")
    for tool in ("runc", "umoci", "swtpm", "swtpm_setup", "tpm2_pcrextend"):
        if shutil.which(tool) is None:
            return skip(f"{tool} not found (make setup installs it)")
    bins = {n: bindir / n for n in ("attest", "attest-bootstrapper", "join-service", "key-service")}
    for p in bins.values():
        if not p.is_file():
            raise SystemExit(f"error: {p} not found")

    root = Path(tempfile.mkdtemp(prefix="attest-containers-"))
    procs = dc.Processes(root)
    runc = Runc(root, procs)
    ok = False
    passed = []
    skipped = None
    try:
        ok = containers(root, bins, procs, runc, passed)
    except Failure as e:
        log(f"FAILED: {e}")
    except SkipTest as e:
        skipped = str(e)
    finally:
        runc.cleanup()
        stopped = procs.stop_all()
        log(f"stopped {len(stopped)} processes by PID: {', '.join(stopped)}")
        if (ok or skipped) and not keep:
            shutil.rmtree(root, ignore_errors=True)
        else:
            log(f"logs and state kept in {root}")
    if skipped:
        return skip(skipped)
    print(f"container test: {len(passed)} passed, {0 if ok else 1} failed")
    return 0 if ok else 1


class SkipTest(Exception):
    pass


def containers(root, bins, procs, runc, passed):
    tag = image_tag()
    # 1. Reproducible images.
    a, ta = build_images(bins["attest"].parent, root / "images-a")
    b, tb = build_images(bins["attest"].parent, root / "images-b")
    if a != b:
        raise Failure(f"two builds from the same binaries differ: {a} vs {b}")
    for name in ("key-service", "join-service"):
        if sha256_file(root / "images-a" / f"{name}.oci.tar") != sha256_file(root / "images-b" / f"{name}.oci.tar"):
            raise Failure(f"the OCI archives of {name} differ between two builds")
    for ref, (digest, size) in a.items():
        log(f"image {ref}: {digest} ({size / 1e6:.1f} MB compressed), the same in both builds")
    log(f"image builds: {ta:.1f}s and {tb:.1f}s")
    passed.append("reproducible images")

    layouts = root / "images-a"
    images = {n: runc.unpack(layouts / n, tag, n) for n in ("key-service", "join-service")}
    for n, bundle in images.items():
        size = sum(f.stat().st_size for f in (bundle / "rootfs").rglob("*") if f.is_file() and not f.is_symlink())
        log(f"image {n}: {size / 1e6:.1f} MB unpacked")

    # Can a container run here at all? (--version: no files, no network.)
    probe = runc.bundle(images["key-service"], "probe", ["--version"], [])
    p = runc.start("probe", probe)
    try:
        code = p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        code = None
    out = (root / "probe.out").read_text(errors="replace")
    if code != 0 or "key-service" not in out:
        raise SkipTest(f"runc cannot run a container here (exit {code}): "
                       f"{(root / 'probe.log').read_text(errors='replace').strip()[-300:]}")

    # 2. The cluster around the services, as the demo makes it: EK CA, signed measurements, node-1 initialized.
    ca = dc.EkCa(root)
    measurements, pub, sig, master_secret, init_secret, init_secret_hash = dc.operator_inputs(root, bins)
    nodes = [dc.Node("node-1", root, dc.GOOD_IMAGE, True), dc.Node("node-2", root, dc.GOOD_IMAGE, False)]
    for n in nodes:
        n.manufacture(ca)
        n.start_tpm(procs)
        n.measured_boot()
    first = nodes[0]
    p1 = procs.start(first.name, dc.bootstrapper_args(bins, first, init_secret_hash, verify=False))
    first.init_addr = dc.wait_for_line(root / f"{first.name}.out", r"listening on (\S+)", p1).group(1)
    out = root / "cluster"
    r = subprocess.run([bins["attest"], "init", "--endpoint", first.init_addr,
                        *dc.signature_args(measurements, sig, pub), "--ak-registry", root / "cli-ak-registry.json",
                        "--ek-ca", ca.dir, "--master-secret", master_secret, "--init-secret", init_secret,
                        "--out", out, "--cluster-name", "attest-containers", "--json"], capture_output=True)
    if r.returncode != 0:
        raise Failure(f"attest init failed: {r.stderr.decode(errors='replace')}")
    init = json.loads(r.stdout)
    p1.wait(timeout=30)
    log(f"node-1 initialized cluster {init['clusterId'][:16]}…")
    pki = out / "key-service-pki"

    # 3. The key service in its container, called from the host over mutual TLS.
    master_dir = secret_dir(root, "master-secret", {"mastersecret.json": master_secret})
    tls_dir = secret_dir(root, "key-service-tls", {"ca.crt": pki / "ca.crt", "tls.crt": pki / "key-service.crt",
                                                    "tls.key": pki / "key-service.key"})
    kms_port = free_port()
    kms_args = [f"--listen=127.0.0.1:{kms_port}",
                "--master-secret=/var/run/attest/master-secret/mastersecret.json",
                "--tls-ca=/var/run/attest/tls/ca.crt", "--tls-cert=/var/run/attest/tls/tls.crt",
                "--tls-key=/var/run/attest/tls/tls.key", "--allowed-client=attest-join-service",
                f"--health-listen=127.0.0.1:{free_port()}"]
    kms_mounts = [(master_dir, "/var/run/attest/master-secret", False), (tls_dir, "/var/run/attest/tls", False)]
    bundle = runc.bundle(images["key-service"], "key-service", kms_args, kms_mounts)
    t0 = time.monotonic()
    kms = runc.start("key-service", bundle)
    key = first_data_key(f"127.0.0.1:{kms_port}", pki, t0 + 30)
    kms_container_start = time.monotonic() - t0
    ms = json.loads(master_secret.read_text())
    want = dc.hkdf_sha256(base64.b64decode(ms["key"]), base64.b64decode(ms["salt"]), b"key-container-test")
    if key != want:
        raise Failure("the key service's key is not HKDF(master secret, salt, 'key-container-test')")
    if kms.poll() is not None:
        raise Failure("the key-service container exited")
    uid, caps = runc.status("key-service")
    if uid != NONROOT or caps != 0:
        raise Failure(f"the key-service container runs as uid {uid} with capabilities {caps:#x}")
    log(f"key-service container (uid {uid}, read-only root, no capabilities): mutual-TLS GetDataKey from the "
        f"host answered with HKDF(master secret) — first call {kms_container_start * 1000:.0f} ms after runc started")
    passed.append("key-service container serves mutual TLS")

    # 4. The join service in its container admits node-2.
    salt = root / "measurementSalt"
    salt.write_bytes(bytes.fromhex(init["measurementSalt"]))
    kube_config = root / "kubernetes.json"
    kube_config.write_text(json.dumps({"kubernetesVersion": "v1.31.1", "components": []}))
    config_dir = secret_dir(root, "join-config", {"measurements.json": measurements, "measurements.json.sig": sig,
                                                  "measurements.pub": pub, "kubernetes.json": kube_config}, 0)
    salt_dir = secret_dir(root, "join-salt", {"measurementSalt": salt}, 0)
    kms_tls = secret_dir(root, "join-kms-tls", {"ca.crt": pki / "ca.crt", "tls.crt": pki / "join-service.crt",
                                                "tls.key": pki / "join-service.key"}, 0)
    ek_ca = secret_dir(root, "ek-ca", {"ek-root.pem": ca.dir / "swtpm-localca-rootca-cert.pem",
                                       "ek-intermediate.pem": ca.dir / "issuercert.pem"}, 0)
    state = root / "mounts" / "join-state"
    state.mkdir(mode=0o700)
    join_ports = [free_port() for _ in range(3)]
    join_args = [f"--listen=127.0.0.1:{join_ports[0]}", f"--registration-listen=127.0.0.1:{join_ports[1]}",
                 f"--metrics-listen=127.0.0.1:{join_ports[2]}", f"--tpm={first.tcti}", "--node-variant=qemu-vtpm",
                 f"--key-service=127.0.0.1:{kms_port}",
                 "--key-service-ca=/var/run/attest/kms-tls/ca.crt",
                 "--key-service-cert=/var/run/attest/kms-tls/tls.crt",
                 "--key-service-key=/var/run/attest/kms-tls/tls.key",
                 "--measurements=/var/run/attest/config/measurements.json",
                 "--measurements-signature=/var/run/attest/config/measurements.json.sig",
                 "--measurements-public-key=/var/run/attest/config/measurements.pub",
                 "--kds-store=/var/lib/attest/kds", "--kds-url=offline", "--pcs-store=/var/lib/attest/pcs",
                 "--measurement-salt=/var/run/attest/salt/measurementSalt",
                 "--kubernetes-config=/var/run/attest/config/kubernetes.json",
                 "--ak-registry=/var/lib/attest/ak-registry.json",
                 "--ek-ca=/var/run/attest/ek-ca/ek-root.pem", "--ek-ca=/var/run/attest/ek-ca/ek-intermediate.pem",
                 "--pki-dir=/etc/kubernetes/pki", "--api-server-endpoint=127.0.0.1:6443",
                 # No Kubernetes API here: the tokens are written (announced) into the state mount.
                 "--token-issuer=dry-run", "--dry-run-dir=/var/lib/attest/tokens"]
    join_mounts = [(kms_tls, "/var/run/attest/kms-tls", False), (config_dir, "/var/run/attest/config", False),
                   (salt_dir, "/var/run/attest/salt", False), (ek_ca, "/var/run/attest/ek-ca", False),
                   (first.state_dir / "pki", "/etc/kubernetes/pki", False), (state, "/var/lib/attest", True)]
    bundle = runc.bundle(images["join-service"], "join-service", join_args, join_mounts)
    t0 = time.monotonic()
    join = runc.start("join-service", bundle)
    first_http(f"http://127.0.0.1:{join_ports[2]}/healthz", t0 + 60)
    join_container_start = time.monotonic() - t0
    second = nodes[1]
    t1 = time.monotonic()
    argv = (dc.bootstrapper_args(bins, second, init_secret_hash)
            + dc.joining_args(f"127.0.0.1:{join_ports[0]}", f"127.0.0.1:{join_ports[1]}", measurements, sig, pub, ca))
    # node-2 finds the join service the way a cloud node does: in its instance metadata (a GCP metadata
    # server stand-in: the attribute attest-join-endpoints, `Metadata-Flavor: Google` both ways).
    i = argv.index("--join-service")
    meta, meta_url, asked = gcp_metadata(f"127.0.0.1:{join_ports[0]}")
    argv[i:i + 2] = ["--join-endpoints-from", "gcp", "--metadata-url", meta_url]
    p2 = procs.start(second.name, argv)
    event = json.loads(dc.wait_for_line(root / f"{second.name}.out", r'^\{.*"event":"bootstrapped".*\}$', p2,
                                        timeout=dc.JOIN_TIMEOUT).group(0))
    if event.get("path") != "join" or event.get("cluster_id") != init["clusterId"]:
        raise Failure(f"node-2: unexpected bootstrap event {event}")
    meta.shutdown()
    if not asked:
        raise Failure("node-2 never asked the metadata stand-in for its join endpoints")
    tokens = list((state / "tokens").glob("*"))
    if not tokens:
        raise Failure("the join-service container wrote no bootstrap token into its state mount")
    if join.poll() is not None:
        raise Failure("the join-service container exited")
    log(f"join-service container: node-2 verified it and joined cluster {event['cluster_id'][:16]}… in "
        f"{time.monotonic() - t1:.1f}s (endpoint from GCP metadata after {len(asked)} request(s); token written to the state mount); /healthz served "
        f"{join_container_start * 1000:.0f} ms after runc started")
    passed.append("join-service container admits a node")
    p2.terminate()
    p2.wait(timeout=30)
    dc.stop(join, "join-service container")
    dc.stop(kms, "key-service container")

    # 5. A missing and a wrong mount: exit 3 at start, naming the file.
    bundle = runc.bundle(images["key-service"], "key-service-no-secret", kms_args, kms_mounts[1:])
    expect_start_failure(runc.start("key-service-no-secret", bundle), root / "key-service-no-secret.log",
                         "/var/run/attest/master-secret/mastersecret.json", "key service without its master-secret mount")
    wrong = [(config_dir, "/var/run/attest/kms-tls", False)] + join_mounts[1:]
    bundle = runc.bundle(images["join-service"], "join-service-wrong-mount", join_args, wrong)
    expect_start_failure(runc.start("join-service-wrong-mount", bundle), root / "join-service-wrong-mount.log",
                         "/var/run/attest/kms-tls/", "join service with the config where its key-service TLS belongs")
    passed.append("missing and wrong mounts stop the containers at start")

    # 6. The same key service on the host, for the start-up comparison.
    host_port = free_port()
    t0 = time.monotonic()
    procs.start("key-service-host", [bins["key-service"], f"--listen=127.0.0.1:{host_port}",
                                     f"--master-secret={master_secret}", f"--tls-ca={pki / 'ca.crt'}",
                                     f"--tls-cert={pki / 'key-service.crt'}", f"--tls-key={pki / 'key-service.key'}"])
    first_data_key(f"127.0.0.1:{host_port}", pki, t0 + 30)
    kms_host_start = time.monotonic() - t0
    # And the join service on the host: the same flags, the mounts' host directories in place of their paths.
    def on_host(arg):
        for src, dst, _ in join_mounts:
            arg = arg.replace(dst, str(src))
        return arg
    host_ports = [free_port() for _ in range(3)]
    host_args = [on_host(a) for a in join_args]
    for i, flag in enumerate(("--listen=", "--registration-listen=", "--metrics-listen=")):
        host_args = [f"{flag}127.0.0.1:{host_ports[i]}" if a.startswith(flag) else a for a in host_args]
    t0 = time.monotonic()
    procs.start("join-service-host", [bins["join-service"], *host_args])
    first_http(f"http://127.0.0.1:{host_ports[2]}/healthz", t0 + 60)
    join_host_start = time.monotonic() - t0
    print()
    print("start-up, process start → first served call (this run)")
    print(f"  key service  (mutual-TLS GetDataKey): container {kms_container_start * 1000:6.0f} ms   "
          f"host {kms_host_start * 1000:6.0f} ms")
    print(f"  join service (GET /healthz)         : container {join_container_start * 1000:6.0f} ms   "
          f"host {join_host_start * 1000:6.0f} ms")
    print()
    return True


if __name__ == "__main__":
    sys.exit(main())
