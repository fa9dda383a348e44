#!/usr/bin/env bash
# Makes .devdeps/: the Debian packages the build needs (libffi, dlpack, Criterion and its
# runtime libraries, pkgconf), unpacked, with an env.sh, for the GPU machine, which has no
# package registry. Run it here, carry ".devdeps" with the device tool, and on the GPU
# machine: `source .devdeps/env.sh && cmake -S . -B build-gpu -G Ninja && cmake --build build-gpu`.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$here/.devdeps"
pkgs=(libcriterion3 libcriterion-dev libffi-dev libffi8 libgit2-1.5 libnanomsg5 libnanomsg-dev libboxfort-dev
      libdlpack-dev libhttp-parser2.9 libmbedtls14 libmbedx509-1 libmbedcrypto7 libssh2-1 libprotobuf-c1
      pkgconf-bin libpkgconf3 pkgconf)
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download "${pkgs[@]}" >/dev/null)
rm -rf "$out" && mkdir -p "$out/root"
for d in "$tmp"/*.deb; do dpkg -x "$d" "$out/root"; done
cat > "$out/env.sh" <<'ENV'
# Source on the GPU machine. The tree is copied out of the source directory first: CMake
# refuses interface include directories inside the source tree.
DEVDEPS_ROOT=/opt/cfuser-devdeps
[ -d "$DEVDEPS_ROOT" ] || cp -a "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/root" "$DEVDEPS_ROOT"
_l="$DEVDEPS_ROOT/usr/lib/x86_64-linux-gnu"
for pc in "$_l"/pkgconfig/*.pc; do
  sed -i "s#^prefix=/usr\$#prefix=$DEVDEPS_ROOT/usr#; s#^libdir=/usr/#libdir=$DEVDEPS_ROOT/usr/#; s#^includedir=/usr/#includedir=$DEVDEPS_ROOT/usr/#" "$pc"
done
command -v pkg-config >/dev/null || ln -sf "$DEVDEPS_ROOT/usr/bin/pkgconf" "$DEVDEPS_ROOT/usr/bin/pkg-config"
export PATH="$PATH:$DEVDEPS_ROOT/usr/bin"
export PKG_CONFIG_PATH="$_l/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export CMAKE_PREFIX_PATH="$DEVDEPS_ROOT/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
export CPATH="$DEVDEPS_ROOT/usr/include:$DEVDEPS_ROOT/usr/include/x86_64-linux-gnu${CPATH:+:$CPATH}"
export LIBRARY_PATH="$_l${LIBRARY_PATH:+:$LIBRARY_PATH}"
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$_l"
export CFUSER_NO_INSTALL=1
unset _l
ENV
echo "gpu_deps: $out ready ($(du -sh "$out" | cut -f1)); carry \".devdeps\" and source .devdeps/env.sh there"
