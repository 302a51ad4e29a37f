#!/usr/bin/env bash
# Installs every Debian 12 package libsgfp4 needs to build, test and run (as root).
# Idempotent: packages already present are left alone.
set -euo pipefail
pkgs=(build-essential cmake pkg-config git python3 go-md2man
      libssl-dev libjansson-dev libzstd-dev libpng-dev libcmocka-dev
      libvulkan-dev glslang-tools spirv-tools mesa-vulkan-drivers vulkan-tools
      clang libclang-rt-14-dev clang-format
      gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
      python3-numpy python3-pytest python3-venv python3-setuptools python3-wheel)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
