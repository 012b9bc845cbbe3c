#!/usr/bin/env bash
# Puts Debian's own kernel where the UKI tests find it ($ATTEST_BOOT_ASSETS, default target/boot-assets):
# `apt-get download` of the package linux-image-amd64 depends on, then its /boot/vmlinuz-* extracted with
# dpkg-deb (nothing installed, no initramfs hooks run). Idempotent: does nothing when the kernel is there.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${ATTEST_BOOT_ASSETS:-target/boot-assets}"
[ -s "$dir/vmlinuz" ] && exit 0
mkdir -p "$dir"
pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
if [ -z "$pkg" ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get -o DPkg::Lock::Timeout=300 update -q
  pkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download -q "$pkg" >/dev/null 2>&1)
dpkg-deb --fsys-tarfile "$tmp"/*.deb | tar -x -C "$tmp" --wildcards './boot/vmlinuz-*'
cp "$tmp"/boot/vmlinuz-* "$dir/vmlinuz"
echo "fetch-boot-assets: $pkg -> $dir/vmlinuz"
