#!/bin/sh
# guards-shim: this is not the real git
# Written by `guards install --shim`; `guards uninstall --shim DIR` removes it.
# Commands that cannot destroy uncommitted work go straight to the real git (no Python
# starts); the others go through `guards run`, which rescues other writers' work first.
# GUARDS_DISABLE=1 sends everything straight to git (a command that may destroy work
# still passes through guards, which logs what it put at risk and then runs git
# untouched, whatever happens to guards).
guards_python=@GUARDS_PYTHON@
guards_package=@GUARDS_PACKAGE@
guards_shim_dir=@GUARDS_SHIM_DIR@

# The real git: $GUARDS_REAL_GIT, else the next `git` on PATH that is not a guards shim
# (a directory holding a shim also holds a `.guards-shim` marker: a stat, cheaper than a
# read). Empty PATH entries (the current directory) are never searched for git.
guards_git=${GUARDS_REAL_GIT:-}
if [ -z "$guards_git" ]; then
  guards_ifs=$IFS
  IFS=:
  set -f
  for guards_dir in $PATH; do
    if [ -x "$guards_dir/git" ] && [ -n "$guards_dir" ] && [ "$guards_dir" != "$guards_shim_dir" ] \
       && [ ! -e "$guards_dir/.guards-shim" ] && [ -f "$guards_dir/git" ]; then
      guards_git=$guards_dir/git
      break
    fi
  done
  set +f
  IFS=$guards_ifs
  if [ -z "$guards_git" ]; then
    echo "guards-shim: no real git found on PATH after $guards_shim_dir (set GUARDS_REAL_GIT)" >&2
    exit 127
  fi
fi

# Find the subcommand behind the global options (options with a separate value are
# skipped with it; any -c/--config-env may define an alias: let guards look). For stash,
# branch, worktree, submodule, fetch, push, reflog and bisect the words after it decide:
# only their destructive forms pay for Python. Other commands stop the scan at once
# (`git add` may have 10,000 paths).
guards_sub=
guards_next=
guards_globals=
guards_skip=
guards_flag=
guards_unknown=
for guards_arg do
  if [ -n "$guards_sub" ]; then
    case $guards_sub in branch|submodule|stash|worktree|fetch|push|reflog|bisect) ;; *) break ;; esac
    [ -z "$guards_next" ] && guards_next=$guards_arg
    case $guards_sub:$guards_arg in
      branch:-[DdfMC]*|branch:-[!-]*[DdfMC]*|branch:--de*|branch:--fo*) guards_flag=1 ;;
      submodule:-[DdfMC]*|submodule:-[!-]*[DdfMC]*|submodule:--fo*) guards_flag=1 ;;
      submodule:deinit|submodule:foreach|submodule:update) guards_flag=1 ;;
      worktree:-B*|worktree:-[!-]*B*) guards_flag=1 ;;
      fetch:*:*|fetch:--stdin|push:*:*|push:-d|push:--de*|push:-[!-]*d*) guards_flag=1 ;;
    esac
    continue
  fi
  if [ -n "$guards_skip" ]; then guards_skip=; continue; fi
  case $guards_arg in
    -C|-c|--git-dir|--work-tree|--namespace|--super-prefix|--config-env|--shallow-file)
      guards_skip=1; guards_globals=1 ;;
    --exec-path=*|--git-dir=*|--work-tree=*|--namespace=*|--super-prefix=*|--config-env=*|\
    -p|--paginate|-P|--no-pager|--no-replace-objects|--bare|--literal-pathspecs|\
    --no-literal-pathspecs|--glob-pathspecs|--noglob-pathspecs|--icase-pathspecs|\
    --no-optional-locks)
      guards_globals=1 ;;
    --exec-path*|--html-path|--man-path|--info-path|--list-cmds=*|--version|-v|--help|-h) break ;;
    -*)
      # An option git 2.39 does not have: a newer git's (it may take the next word as
      # its value) or one git rejects. Only guards can tell which.
      guards_globals=1; guards_unknown=1 ;;
    *) guards_sub=$guards_arg ;;
  esac
done

# After an option the shim does not know, the next word may be its value, not the
# subcommand: guards reads the whole line.
[ -n "$guards_unknown" ] && guards_sub=guards-unknown-option
case $guards_sub in
  "")
    exec "$guards_git" "$@" ;;
  add|status|log|diff|show|commit|rev-parse|rev-list|ls-files|ls-tree|ls-remote|\
  cat-file|config|tag|remote|init|clone|describe|blame|grep|shortlog|for-each-ref|show-ref|\
  symbolic-ref|update-ref|hash-object|write-tree|commit-tree|diff-index|diff-files|diff-tree|\
  merge-base|name-rev|var|version|help|check-ignore|check-attr|notes|format-patch|\
  archive|bundle|count-objects|fsck|maintenance|repack|prune|pack-refs|range-diff|\
  whatchanged|annotate|difftool|mergetool|credential|send-email|request-pull|replace|rerere|\
  interpret-trailers|column|stripspace|mktree|mktag|verify-commit|verify-tag|show-branch|\
  cherry|fast-export|fast-import|upload-pack|receive-pack|send-pack|fetch-pack|\
  index-pack|pack-objects|unpack-objects|update-index|hook|\
  check-ref-format|check-mailmap|citool|gui|instaweb|get-tar-commit-id|bugreport|diagnose)
    exec "$guards_git" "$@" ;;
esac

# Only commands that may destroy work (or may be aliases) get this far: the shell never
# even parses what follows for the everyday commands above.
# guards itself: the interpreter recorded at install while the guards package it ran from
# is still there, else `guards` on PATH (a venv recreated, pipx reinstalled), else refuse.
guards_run() {
  if [ -x "$guards_python" ] && [ -f "$guards_package" ]; then
    GUARDS_REAL_GIT=$guards_git exec "$guards_python" @GUARDS_LAUNCH@ "$@"
  fi
  # Under the override, git runs untouched (the bypass is logged only by the guards
  # recorded at install: another one might not start at all).
  [ "${GUARDS_DISABLE:-}" = 1 ] && exec "$guards_git" "$@"
  guards_cmd=$(command -v guards 2>/dev/null) || guards_cmd=
  case $guards_cmd in
    /*) GUARDS_REAL_GIT=$guards_git exec "$guards_cmd" run -- "$@" ;;
  esac
  echo "guards-shim: refusing \`git $guards_sub\`: guards cannot run ($guards_python is gone or no longer has guards, and no guards is on PATH); reinstall git-guards and run guards install --shim $guards_shim_dir again; to run git without guards: GUARDS_DISABLE=1 git ..." >&2
  exit 20
}

case $guards_sub in
  reset|checkout|switch|restore|clean|rm|mv|rebase|pull|merge|cherry-pick|am|revert|\
  sparse-checkout|gc|apply|read-tree|checkout-index|filter-branch)
    guards_run "$@" ;;
  stash)
    case $guards_next in list|show) ;; *) guards_run "$@" ;; esac ;;
  worktree)
    case $guards_next in remove) guards_run "$@" ;; add) [ -n "$guards_flag" ] && guards_run "$@" ;; esac ;;
  reflog)
    case $guards_next in expire|delete) guards_run "$@" ;; esac ;;
  bisect)
    case $guards_next in run) guards_run "$@" ;; esac ;;
  branch|submodule|fetch|push)
    [ -n "$guards_flag" ] && guards_run "$@" ;;
  *)
    # Not a built-in this shim knows: maybe an alias (which may expand to anything), or
    # a typo that help.autocorrect turns into another command.
    if [ -n "$guards_globals" ] || [ -n "${GIT_CONFIG_COUNT:-}" ] \
       || "$guards_git" config --get "alias.$guards_sub" >/dev/null 2>&1 \
       || "$guards_git" config --get help.autocorrect >/dev/null 2>&1; then
      guards_run "$@"
    fi ;;
esac
exec "$guards_git" "$@"
