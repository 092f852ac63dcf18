#!/usr/bin/env bash
# Debian packages hipscope's app and tests need: Qt's runtime libraries and fonts
# (the GUI, also offscreen), OpenSSH's server (the SSH launcher tests start a
# real sshd on 127.0.0.1) and Slurm + MUNGE (the Slurm launcher tests start a
# one-node cluster: munged, slurmctld, slurmd in a temporary folder; they skip
# without it), and a C compiler for hipscope's CSV scanner (setup.py; the install
# builds it). Qt's xcb platform plugin (a real window: `make demo`) needs the xcb
# libraries below: `ldd` on PySide6/Qt/plugins/platforms/libqxcb.so and
# lib/libQt6XcbQpa.so.6, plus libxcb-cursor0, which Qt >= 6.5 dlopens. Xvfb and xauth
# run the GUI smoke test on a virtual display (tests/gui/test_xvfb_smoke.py).
# Installs only what is missing; needs root or sudo.
set -euo pipefail
PKGS=(libegl1 libgl1 libxkbcommon0 libfontconfig1 libdbus-1-3 libglib2.0-0 fonts-dejavu-core
      libx11-6 libx11-xcb1 libxcb1 libxcb-cursor0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1
      libxcb-randr0 libxcb-render0 libxcb-render-util0 libxcb-shape0 libxcb-shm0 libxcb-sync1
      libxcb-util1 libxcb-xfixes0 libxcb-xkb1 libxkbcommon-x11-0 xvfb xauth
      openssh-server openssh-client fish tcsh slurm-wlm munge gcc libc6-dev)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "Installing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
