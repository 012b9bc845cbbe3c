#!/usr/bin/env bash
# Installs what attest needs on a fresh Debian 12 machine (docs/ARCHITECTURE.md, "Set-up facts"). Idempotent: packages
# already present are not reinstalled, and apt is only consulted when something is missing.
set -euo pipefail

packages=(libssl-dev pkg-config libtss2-dev swtpm swtpm-tools tpm2-tools nghttp2-client golang-go
          golang-google-grpc-dev python3 python3-venv openssl valgrind
          cryptsetup-bin   # cryptsetup-bin: the `cryptsetup` command alone (LUKS2 state disk), no initramfs hooks
          e2fsprogs        # mkfs.ext4: the crash matrix's node disks
          umoci runc       # the container images: built with umoci (make images), run with runc (tests)
          # Reference values: UKIs assembled with objcopy from systemd-stub 252 and a busybox initrd, booted in
          # QEMU (TCG) with Debian's OVMF and swtpm from a FAT image (mtools, dosfstools).
          binutils systemd-boot-efi busybox-static qemu-system-x86 ovmf mtools dosfstools)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get -o DPkg::Lock::Timeout=300 update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends "${missing[@]}"
fi
command -v cargo >/dev/null || { echo "setup: cargo (Rust 1.88+) is required" >&2; exit 1; }
rustup component list --installed 2>/dev/null | grep -q clippy || rustup component add clippy rustfmt 2>/dev/null || true
# Debian's kernel for the UKI tests (extracted, not installed).
bash "$(dirname "$0")/fetch-boot-assets.sh"
# Python gRPC peers for the interop tests (grpcio, grpcio-tools from PyPI) in .venv.
bash "$(dirname "$0")/setup-python.sh"
echo "setup: ok"
