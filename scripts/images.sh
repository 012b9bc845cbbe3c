#!/usr/bin/env bash
# Builds the OCI images of the key service and the join service, and the bootstrapper's tarball for node-image
# builders, from built binaries, without a daemon (`make images`; README.md, "Deploy to a cluster").
#
#   scripts/images.sh [--bin-dir DIR] [--out DIR]      build (default: target/release -> target/images)
#   scripts/images.sh --names                          print the image references only (nothing is built)
#
# Each image holds the service's binary (debug sections stripped into target/images/debug/), exactly the
# shared libraries it links (found with ldd; the join
# service also the TPM TCTI modules libtss2-tctildr loads at run time: device for /dev/tpmrm0, swtpm for
# tests), the CA roots where the service makes HTTPS calls (join service: AMD KDS and Intel PCS), an
# /etc/passwd naming root and the unprivileged user 65532, and nothing else: no shell, no package manager.
# The key service runs as 65532; the join service as root, because it reads kubeadm's root-owned PKI
# (/etc/kubernetes/pki, mode 0600) from the node — its Pod drops every capability.
#
# The tools are Debian's: umoci writes each image into an OCI image layout (target/images/<name>, tag
# <version>) and the same layout as an OCI archive (target/images/<name>.oci.tar) — any registry client loads
# either: `skopeo copy oci:target/images/key-service:v0.1.0 docker://REGISTRY/attest/key-service:v0.1.0`.
#
# Reproducible: every timestamp (file mtimes, the config's `created`, the history entry, the
# org.opencontainers.image.created label) is SOURCE_DATE_EPOCH (default: the commit time of HEAD), every file
# is owned by 0:0 with a normalized mode, and the layer is one tar of a sorted tree; two builds from the same
# binaries give the same manifest digest (scripts/container-test.py checks it in `make test`).
#
# Environment: IMAGE_REGISTRY (default ghcr.io/attest), IMAGE_TAG (default v<workspace version>),
# SOURCE_DATE_EPOCH. Writes target/images/images.txt: one `REFERENCE DIGEST SIZE` line per image.
set -euo pipefail
cd "$(dirname "$0")/.."

bin_dir=target/release
out=target/images
names_only=false
while (($#)); do
  case "$1" in
    --bin-dir) bin_dir="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --names) names_only=true; shift ;;
    *) echo "images.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)
registry="${IMAGE_REGISTRY:-ghcr.io/attest}"
tag="${IMAGE_TAG:-v$version}"
images=(key-service join-service)

if $names_only; then
  for name in "${images[@]}"; do echo "$registry/$name:$tag"; done
  exit 0
fi

for tool in umoci ldd tar objcopy; do
  command -v "$tool" >/dev/null || { echo "images.sh: $tool not found (make setup installs it)" >&2; exit 3; }
done
for b in key-service join-service attest-bootstrapper; do
  [ -x "$bin_dir/$b" ] || { echo "images.sh: $bin_dir/$b not found (cargo build --release --bin $b)" >&2; exit 3; }
done
rootless=()
[ "$(id -u)" -eq 0 ] || rootless=(--rootless)

epoch="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}"
created=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
# A build from a tree with uncommitted changes says so (its digest is not the commit's).
if [ "$revision" != unknown ] && ! git diff --quiet HEAD -- 2>/dev/null; then revision="$revision-dirty"; fi
libdir=usr/lib/x86_64-linux-gnu

mkdir -p "$out"
work=$(mktemp -d "${TMPDIR:-/tmp}/attest-images.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Copies one shared library (by the path ldd resolved) into the staged tree under its soname.
copy_lib() {
  local stage=$1 path=$2 soname
  soname=$(basename "$path")
  [ -e "$stage/$libdir/$soname" ] || install -m 0644 "$(readlink -f "$path")" "$stage/$libdir/$soname"
}

# Every library `file` links, transitively (ldd resolves the whole closure).
copy_needed() {
  local stage=$1 file=$2
  ldd "$file" | awk '/=> \// { print $3 } /^[ \t]*\/.*ld-linux/ { print $1 }' | while read -r lib; do
    copy_lib "$stage" "$lib"
  done
}

# The staged root file system of one image.
stage_rootfs() {
  local name=$1 stage=$2
  mkdir -p "$stage"/{usr/bin,$libdir,usr/lib64,etc,tmp}
  ln -s usr/lib "$stage/lib"
  ln -s usr/lib64 "$stage/lib64"
  # The binary without its DWARF line tables (three quarters of a release binary; the symbol table stays, so
  # a backtrace still names its functions). The line tables go to $out/debug/NAME.debug, matched by the
  # binary's build id, for symbolizing a backtrace from a running image.
  objcopy --strip-debug "$bin_dir/$name" "$stage/usr/bin/$name"
  chmod 0755 "$stage/usr/bin/$name"
  mkdir -p "$out/debug"
  objcopy --only-keep-debug "$bin_dir/$name" "$out/debug/$name.debug"
  copy_needed "$stage" "$bin_dir/$name"
  # The dynamic loader where the binaries' PT_INTERP names it (/lib64/ld-linux-x86-64.so.2); the kernel
  # opens it for execution, so it keeps its execute bits.
  chmod 0755 "$stage/$libdir/ld-linux-x86-64.so.2"
  ln -s ../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$stage/usr/lib64/ld-linux-x86-64.so.2"
  if [ "$name" = join-service ]; then
    # libtss2-tctildr dlopens the TCTI named by --tpm (device:/dev/tpmrm0 in a cluster, swtpm: in tests).
    for tcti in device swtpm; do
      copy_lib "$stage" "/$libdir/libtss2-tcti-$tcti.so.0"
      copy_needed "$stage" "/$libdir/libtss2-tcti-$tcti.so.0"
    done
    # CA roots for AMD KDS and Intel PCS (OpenSSL's default file: /usr/lib/ssl/cert.pem).
    mkdir -p "$stage/etc/ssl/certs" "$stage/usr/lib/ssl"
    install -m 0644 /etc/ssl/certs/ca-certificates.crt "$stage/etc/ssl/certs/ca-certificates.crt"
    ln -s /etc/ssl/certs/ca-certificates.crt "$stage/usr/lib/ssl/cert.pem"
  fi
  printf 'root:x:0:0:root:/:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/:/sbin/nologin\n' >"$stage/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' >"$stage/etc/group"
  chmod 0644 "$stage/etc/passwd" "$stage/etc/group"
  find "$stage" -type d -exec chmod 0755 {} +
  chmod 1777 "$stage/tmp"
  [ "$(id -u)" -ne 0 ] || chown -hR 0:0 "$stage"
  find "$stage" -exec touch -h -d "@$epoch" {} +
}

describe() {
  case "$1" in
    key-service) echo "attest key service: derives data keys from the cluster's master secret (kms.API over mutual TLS)" ;;
    join-service) echo "attest join service: verifies joining nodes' attestation over aTLS and issues join tickets" ;;
  esac
}

: >"$work/images.txt"
for name in "${images[@]}"; do
  layout="$out/$name"
  rm -rf "$layout"
  user=65532:65532
  [ "$name" = join-service ] && user=0:0
  # An empty image, unpacked into a bundle whose rootfs is then filled and repacked as the one layer.
  umoci init --layout "$layout"
  umoci new --image "$layout:$tag"
  bundle="$work/$name"
  umoci unpack "${rootless[@]}" --image "$layout:$tag" "$bundle"
  stage_rootfs "$name" "$bundle/rootfs"
  umoci repack --image "$layout:$tag" --history.created "$created" \
    --history.created_by "scripts/images.sh ($name)" --history.comment "$name $version" "$bundle"
  labels=(
    "org.opencontainers.image.title=$name"
    "org.opencontainers.image.description=$(describe "$name")"
    "org.opencontainers.image.version=$version"
    "org.opencontainers.image.revision=$revision"
    "org.opencontainers.image.created=$created"
    "org.opencontainers.image.licenses=Apache-2.0"
    "org.opencontainers.image.source=https://github.com/attest/attest"
    "org.opencontainers.image.vendor=attest"
    "org.opencontainers.image.ref.name=$tag"
  )
  config=(--image "$layout:$tag" --created "$created" --history.created "$created"
          --history.created_by "scripts/images.sh (config)" --author attest --architecture amd64 --os linux
          --config.user "$user" --config.entrypoint "/usr/bin/$name" --config.workingdir /
          --config.env PATH=/usr/bin --config.stopsignal SIGTERM)
  for l in "${labels[@]}"; do config+=(--config.label "$l" --manifest.annotation "$l"); done
  umoci config "${config[@]}"
  umoci gc --layout "$layout"
  digest=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["manifests"][0]["digest"])' "$layout/index.json")
  # The OCI archive is the layout as one tar (what skopeo's oci-archive: transport reads), written with
  # GNU tar's reproducible options so that it too is the same for the same image.
  tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner --format=posix \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime -C "$layout" -cf "$out/$name.oci.tar" .
  size=$(du -sb "$layout/blobs" | cut -f1)
  echo "$registry/$name:$tag $digest $size" >>"$work/images.txt"
  echo "images: $registry/$name:$tag $digest ($((size / 1024)) KiB compressed) -> $layout, $out/$name.oci.tar"
done

# The bootstrapper runs on the node itself (systemd; TPM, cryptsetup, kubeadm from the node image): image
# builders get its binary and unit as a reproducible tarball to unpack into their root file system.
boot="$work/bootstrapper"
mkdir -p "$boot/usr/bin" "$boot/usr/lib/systemd/system"
install -m 0755 "$bin_dir/attest-bootstrapper" "$boot/usr/bin/attest-bootstrapper"
install -m 0644 deploy/systemd/attest-bootstrapper.service "$boot/usr/lib/systemd/system/attest-bootstrapper.service"
find "$boot" -type d -exec chmod 0755 {} +
tarball="$out/attest-bootstrapper-$tag.tar.gz"
tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner --format=gnu -C "$boot" -cf - usr \
  | gzip -9n >"$tarball"
echo "attest-bootstrapper-$tag.tar.gz sha256:$(sha256sum "$tarball" | cut -d' ' -f1) $(stat -c %s "$tarball")" \
  >>"$work/images.txt"
echo "images: bootstrapper tarball -> $tarball"
cp "$work/images.txt" "$out/images.txt"
