#!/usr/bin/env bash
# Installs what graft needs to build, test and benchmark on Debian 12 / Ubuntu.
# Idempotent: calls apt-get only if a package is missing. Uses sudo only when
# not root and sudo exists. Extra Debian packages may be named as arguments, e.g.
# `./scripts/setup.sh clang-19` (what CI's clang stage adds). Open MPI is for graft::distributed's
# tests, python3-sklearn for the digits data of examples/train_cnn_digits.cpp.
set -euo pipefail

packages=(cmake g++ make libboost-dev libhwy-dev catch2 libbenchmark-dev python3 libopenmpi-dev openmpi-bin
  python3-sklearn "$@")

missing=()
for p in "${packages[@]}"; do
  if ! dpkg -s "$p" >/dev/null 2>&1; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "setup.sh: all packages present (${packages[*]})"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup.sh: missing ${missing[*]} and apt-get is not available; install them by hand" >&2
  exit 1
fi

as_root=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
  else
    echo "setup.sh: missing ${missing[*]}; run as root or install sudo" >&2
    exit 1
  fi
fi

echo "setup.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update </dev/null
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y --no-install-recommends "${missing[@]}" </dev/null
