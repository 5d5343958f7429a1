#!/usr/bin/env bash
# Runs git's own test scripts with the guards shim first on PATH (GUARDS_QUIET=1 unless
# GUARDS_SUITE_LOUD=1), against the installed git, and prints each script's summary.
# GUARDS_SUITE_PLAIN=1 runs them against plain git instead (the baseline: a test that fails
# there is not guards' doing). GUARDS_SUITE_JOBS=N runs N scripts at a time (default 1).
# Outputs: WORKDIR/out-MODE/SCRIPT.out (MODE: plain, shim-quiet, shim-loud).
# The shim runs the guards of the checkout holding this script (from a venv of the run's
# own), whatever guards the interpreter has installed.
# Not part of CI: it fetches the git source package of the installed version through apt
# (deb-src entries are derived from the machine's own apt sources) and builds git's test
# helpers and templates (~2 minutes on 2 cores). Debian/Ubuntu only; needs root for apt.
#
#   bash tests/compat/git_suite.sh [WORKDIR] [SCRIPT | FAMILY | all ...]
#
# SCRIPT is a test script's name (t7102-reset); FAMILY a prefix (t1, t2, t3, t7: every
# script of that family); "all" means t1 t2 t3 t7. Without one, the scripts of the
# commands guards intercepts.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=${1:-/tmp/guards-git-suite}
shift || true
wanted=("$@")
if [ ${#wanted[@]} -eq 0 ]; then
  wanted=(t7102-reset t7104-reset-hard t7105-reset-patch t7110-reset-merge t7111-reset-table
          t7300-clean t3903-stash t3904-stash-patch t3905-stash-include-untracked
          t3906-stash-submodule t2060-switch t2070-restore t2071-restore-patch
          t2006-checkout-index-basic t7201-co t2008-checkout-subdir t2016-checkout-patch
          t3600-rm t7001-mv t2400-worktree-add t2403-worktree-move t3200-branch
          t3420-rebase-autostash t7600-merge)
fi
mkdir -p "$work"
cd "$work"
work=$(pwd)  # absolute: the scripts run from elsewhere

version=$(dpkg-query -W -f='${Version}' git)
upstream=${version#*:}
upstream=${upstream%%-*}
src="$work/git-$upstream"
if [ ! -d "$src" ]; then
  # deb-src twins of the machine's own deb sources (deb822 and one-line format), written
  # aside first: the loop must not read the file it writes.
  list=/etc/apt/sources.list.d/guards-git-suite-src.sources
  if [ ! -f "$list" ]; then
    tmp=$(mktemp)
    for f in /etc/apt/sources.list.d/*.sources; do
      [ -f "$f" ] && [ "$f" != "$list" ] || continue
      sed -n 's/^Types: deb$/Types: deb-src/; /^Types:\|^URIs:\|^Suites:\|^Components:\|^Signed-By:\|^$/p' "$f"
      echo
    done > "$tmp"
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
      [ -f "$f" ] || continue
      sed -n 's/^deb \(.*\)$/deb-src \1/p' "$f"
    done > "$tmp.list"
    mv "$tmp" "$list"
    [ -s "$tmp.list" ] && mv "$tmp.list" /etc/apt/sources.list.d/guards-git-suite-src.list
    rm -f "$tmp.list"
  fi
  apt-get update -qq
  apt-get source -qq "git=$version"
fi
if [ ! -x "$src/t/helper/test-tool" ] || [ ! -d "$src/templates/blt" ]; then
  opts=(NO_CURL=1 NO_GETTEXT=1 NO_TCLTK=1 NO_PYTHON=1)
  make -C "$src" -j"$(nproc)" "${opts[@]}" t/helper/test-tool t/helper/test-fake-ssh \
    GIT-BUILD-OPTIONS >/dev/null
  # test-lib.sh copies templates/blt into every trash repository: build them too (the
  # top-level Makefile has no "templates" target, only the directory of that name).
  make -C "$src/templates" "${opts[@]}" >/dev/null
fi

# Families ("t1", "all") become every script of that family in this git version.
scripts=()
for w in "${wanted[@]}"; do
  case $w in
    all) families=(t1 t2 t3 t7) ;;
    t[0-9]) families=("$w") ;;
    *) scripts+=("$w"); continue ;;
  esac
  for fam in "${families[@]}"; do
    for f in "$src/t/$fam"[0-9][0-9][0-9]-*.sh; do
      [ -f "$f" ] && scripts+=("$(basename "$f" .sh)")
    done
  done
done

if [ "${GUARDS_SUITE_PLAIN:-}" = 1 ]; then
  mode=plain
  installed=$(dirname "$(command -v git)")
  [ -e "$installed/.guards-shim" ] && { echo "git on PATH is a guards shim: put the real git first" >&2; exit 2; }
  quiet=()
else
  mode=shim-quiet
  quiet=(GUARDS_QUIET=1)
  [ "${GUARDS_SUITE_LOUD:-}" = 1 ] && { mode=shim-loud; quiet=(-u GUARDS_QUIET); }
fi
# Each mode has its own outputs, shim and trash directories: runs may overlap
# (GUARDS_SUITE_OUT names another directory, e.g. to compare two versions of guards).
outdir=${GUARDS_SUITE_OUT:-out-$mode}
# A relative name is a directory of WORKDIR (the scripts run from git's t/ directory).
case $outdir in /*) ;; *) outdir=$work/$outdir ;; esac
mkdir -p "$outdir"
if [ "$mode" != plain ]; then
  installed="$outdir/shim"
  # The shim must run this checkout's guards, not whichever one the interpreter has
  # installed: a venv whose path puts the checkout first, then the packages of the
  # python3 running this script (where guards' dependencies are: the README's venv, say),
  # then the interpreter's own (the shim starts Python with -E, so PYTHONPATH cannot do it).
  deps=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  python3 -m venv --system-site-packages --without-pip "$outdir/venv"
  "$outdir/venv/bin/python" -c 'import sys, sysconfig
open(sysconfig.get_paths()["purelib"] + "/guards-checkout.pth", "w").write("\n".join(sys.argv[1:]) + "\n")' "$repo" "$deps"
  if ! "$outdir/venv/bin/python" -c 'import filelock, platformdirs' 2>/dev/null; then
    echo "guards' dependencies (filelock, platformdirs) are not installed for python3: run this in the venv the README's test command makes" >&2
    exit 2
  fi
  "$outdir/venv/bin/python" -m guards install --no-aliases --shim "$installed" >/dev/null
fi

run_one() {
  s=$1
  [ -f "$s.sh" ] || { echo "$s: not in this git version"; return 0; }
  out="$outdir/$s.out"
  # guards keeps its registry and log under the XDG directories, in $HOME by default; git's
  # scripts make HOME the trash repository itself, where they would show as untracked.
  if env "${quiet[@]}" XDG_DATA_HOME="$outdir/xdg/data" XDG_STATE_HOME="$outdir/xdg/state" \
      GIT_TEST_INSTALLED="$installed" sh "./$s.sh" --root="$outdir/trash" \
      >"$out" 2>&1 </dev/null; then
    rc=0
  else
    rc=$?
  fi
  echo "$s rc=$rc $(grep -E '^# (passed all|failed|still have)' "$out" | tr '\n' ' ')"
}

cd "$src/t"
jobs=${GUARDS_SUITE_JOBS:-1}
if [ "$jobs" -le 1 ]; then
  for s in "${scripts[@]}"; do run_one "$s"; done
else
  # One summary line per script, in the order they finish (sort the output to compare runs).
  export outdir installed
  export -f run_one
  quiet_spec="${quiet[*]}"
  export quiet_spec
  printf '%s\n' "${scripts[@]}" |
    xargs -P "$jobs" -n 1 bash -c 'read -r -a quiet <<<"$quiet_spec"; run_one "$1"' run_one
fi
