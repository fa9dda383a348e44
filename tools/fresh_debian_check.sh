#!/usr/bin/env bash
# tools/fresh_debian_check.sh: a new user's first hour on a fresh Debian 12, checked.
#
# Makes a minimal Debian 12 system (debootstrap --variant=minbase: no compiler, no make, no
# cmake), clones this repository into it and, as root inside a chroot:
#   1. `./cfuser test` must install what it needs, build, and pass (tests that need NVRTC
#      or a GPU report themselves skipped, with the reason: the chroot has no CUDA toolkit);
#   2. `./cfuser demo` must run;
#   3. with /usr/bin/make deleted, `./cfuser demo` must recover (reinstall it) or fail
#      loudly (exit status != 0);
#   4. with build/CMakeCache.txt corrupted, likewise;
#   5. with the cache's generator changed under it (CMAKE_GENERATOR=Ninja on a Makefiles
#      build directory, then a fresh one), likewise.
# Prints one line per step with its wall time, the time of the README's two commands
# (`./cfuser test` and `./cfuser demo` on the fresh clone; the goal: 15 minutes on 2 cores)
# and "fresh-debian: N passed, N failed" at the end; exits 1 if a step failed. Needs root,
# debootstrap and git on this machine, and a Debian mirror (default: the first one in this
# machine's apt sources). Takes ~15 minutes on 2 cores.
#
#   tools/fresh_debian_check.sh [chroot-dir] [mirror]
# CFUSER_FRESH_REUSE=1 reuses an existing chroot-dir (faster; no longer a fresh system).
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
root="${1:-/var/tmp/cfuser-fresh-debian}"
# The first active Debian archive of this machine's apt sources (deb822 or one-line form).
first_mirror() {
  { grep -hE '^[[:space:]]*URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}'
    grep -hE '^[[:space:]]*deb[[:space:]]' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
      sed 's/\[[^]]*\]//' | awk '{print $2}'; } | grep -m1 -E '/debian/?$'
}
mirror="${2:-$(first_mirror)}"
mirror="${mirror:-http://deb.debian.org/debian}"
log="$root.log"
passed=0 failed=0 last_seconds=0 readme_seconds=0

say() { printf 'fresh-debian: %s\n' "$*"; }
# step NAME EXPECT COMMAND...: runs COMMAND in the chroot's clone. EXPECT: pass (exit 0),
# fail (exit != 0 with a "cfuser:" line at the end), loud (either).
step() {
  local name="$1" expect="$2"; shift 2
  local rc loud_failure=false start
  start=$(date +%s)
  printf '\n===== %s: %s\n' "$name" "$*" >>"$log"
  chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin TERM=dumb \
    /bin/bash -c "cd /root/cfuser && $*" >>"$log" 2>&1
  rc=$?
  last_seconds=$(( $(date +%s) - start ))
  [ "$rc" != 0 ] && tail -5 "$log" | grep -q 'cfuser:' && loud_failure=true
  if { [ "$rc" = 0 ] && [ "$expect" != fail ]; } || { $loud_failure && [ "$expect" != pass ]; }; then
    say "ok   $name (exit $rc, ${last_seconds} s)"; passed=$((passed + 1))
  else
    say "FAIL $name (exit $rc, ${last_seconds} s; see $log)"; failed=$((failed + 1))
  fi
}

cleanup() {
  umount "$root/proc" 2>/dev/null || true
  umount "$root/dev/pts" 2>/dev/null || true
}

[ "$(id -u)" = 0 ] || { say "needs root (debootstrap, chroot)"; exit 2; }
command -v debootstrap >/dev/null || { say "needs debootstrap: apt-get install debootstrap"; exit 2; }
: >"$log"
if [ -z "${CFUSER_FRESH_REUSE:-}" ] || [ ! -x "$root/bin/bash" ]; then
  rm -rf "$root"
  say "debootstrap --variant=minbase bookworm $root $mirror"
  debootstrap --variant=minbase bookworm "$root" "$mirror" >>"$log" 2>&1 ||
    { say "debootstrap failed (see $log)"; exit 2; }
fi
trap cleanup EXIT
# The chroot reaches the archive the way this machine does.
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
cp -r /etc/apt/sources.list.d/. "$root/etc/apt/sources.list.d/" 2>/dev/null && rm -f "$root/etc/apt/sources.list"
cp /etc/apt/apt.conf.d/* "$root/etc/apt/apt.conf.d/" 2>/dev/null || true
mount -t proc proc "$root/proc"
mkdir -p "$root/dev/pts" && mount -t devpts devpts "$root/dev/pts" 2>/dev/null || true
rm -rf "$root/root/cfuser"
git clone -q "$repo" "$root/root/cfuser" || { say "git clone $repo failed"; exit 2; }
say "cloned $(git -C "$repo" rev-parse --short HEAD) into $root/root/cfuser; log: $log"

step "CFUSER_NO_INSTALL=1 on a fresh system says what is missing" fail 'CFUSER_NO_INSTALL=1 ./cfuser test'
grep -m1 'missing Debian packages' "$log" | sed 's/^/  /'
step "./cfuser test on a fresh system" pass 'CFUSER_JOBS=2 ./cfuser test'
readme_seconds=$last_seconds
grep -E 'tests passed|Skipped|skipped:|Total Test time' "$log" | sed 's/^/  /' | head -20
step "./cfuser demo" pass './cfuser demo'
readme_seconds=$((readme_seconds + last_seconds))
say "the README's two commands on a fresh system: ${readme_seconds} s ($((readme_seconds / 60)) min $((readme_seconds % 60)) s; goal: 15 min on 2 cores)"
step "make deleted" loud 'rm -f /usr/bin/make && ./cfuser demo'
step "CMakeCache.txt corrupted" loud 'head -c 2000 build/CMakeCache.txt >c && { cat c; echo "CMAKE_HOME_DIRECTORY:INTERNAL=/nowhere"; echo "((garbage"; } >build/CMakeCache.txt && ./cfuser demo'
step "generator changed to Ninja (existing Makefiles build kept)" loud 'CMAKE_GENERATOR=Ninja ./cfuser demo'
step "generator Ninja on a new build directory" loud 'CFUSER_BUILD_DIR=/root/build-ninja CMAKE_GENERATOR=Ninja ./cfuser demo'
echo "fresh-debian: $passed passed, $failed failed"
[ "$failed" = 0 ]
