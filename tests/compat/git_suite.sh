#!/usr/bin/env bash
# Runs git's own test scripts for the commands guards intercepts with the guards shim
# first on PATH and GUARDS_QUIET=1 (issue 9's bar), against the installed git, and
# prints each script's summary. Not part of CI: it fetches the git source package of the
# installed version through apt (deb-src entries are derived from the machine's own
# apt sources) and builds git's test helpers (~2 minutes on 2 cores), then runs for
# ~8 minutes. Debian/Ubuntu only; needs root for apt.
#
#   bash tests/compat/git_suite.sh [WORKDIR] [SCRIPT...]
set -euo pipefail
work=${1:-/tmp/guards-git-suite}
shift || true
scripts=("$@")
if [ ${#scripts[@]} -eq 0 ]; then
  scripts=(t7102-reset t7104-reset-hard t7105-reset-patch t7110-reset-merge t7111-reset-table
           t7300-clean t3903-stash t3904-stash-patch t3905-stash-include-untracked
           t3906-stash-submodule t2060-switch t2070-restore t2071-restore-patch
           t2006-checkout-index-basic t7201-co t2008-checkout-subdir t2016-checkout-patch
           t3600-rm t7001-mv t2400-worktree-add t2403-worktree-move t3200-branch
           t3420-rebase-autostash t7600-merge)
fi
mkdir -p "$work"
cd "$work"

version=$(dpkg-query -W -f='${Version}' git)
upstream=${version#*:}
upstream=${upstream%%-*}
src="$work/git-$upstream"
if [ ! -d "$src" ]; then
  # deb-src twins of the machine's own deb sources (deb822 or one-line format).
  list=/etc/apt/sources.list.d/guards-git-suite-src.sources
  if [ ! -f "$list" ]; then
    for f in /etc/apt/sources.list.d/*.sources; do
      [ -f "$f" ] && sed -n 's/^Types: deb$/Types: deb-src/; /^Types:\|^URIs:\|^Suites:\|^Components:\|^Signed-By:\|^$/p' "$f"
    done > "$list"
  fi
  apt-get update -qq
  apt-get source -qq "git=$version"
  make -C "$src" -j"$(nproc)" NO_CURL=1 NO_GETTEXT=1 NO_TCLTK=1 NO_PYTHON=1 \
    t/helper/test-tool t/helper/test-fake-ssh templates GIT-BUILD-OPTIONS >/dev/null
fi

shim="$work/shim"
python3 -m guards install --no-aliases --shim "$shim" >/dev/null
cd "$src/t"
for s in "${scripts[@]}"; do
  [ -f "$s.sh" ] || { echo "$s: not in this git version"; continue; }
  out="$work/$s.out"
  if GIT_TEST_INSTALLED="$shim" GUARDS_QUIET=1 sh "./$s.sh" --root="$work/trash" >"$out" 2>&1; then
    rc=0
  else
    rc=$?
  fi
  echo "$s rc=$rc $(grep -E '^# (passed all|failed|still have)' "$out" | tr '\n' ' ')"
done
