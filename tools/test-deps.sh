#!/usr/bin/env bash
# What the test suite needs from the system, installed when it is missing (Debian, Ubuntu).
# README.md's test command runs this first, and .ci/run runs exactly that command, so a fresh
# machine and CI install the same things: nothing when everything is there.
#
#   bash tools/test-deps.sh           install what is missing (apt-get; sudo when not root)
#   bash tools/test-deps.sh --check   only say what is missing; exit 1 if something needed is
#
# Without apt-get it names the packages and exits 1 when a needed one is missing (the GUI
# tests fail without Xvfb: a skipped GUI suite would look green while testing nothing).
set -euo pipefail

# kind|what|Debian package|needed or optional|what for. tests/house/test_fresh_machine.py holds this
# table to the commands the tests run.
NEEDS='command|Xvfb|xvfb|needed|the GUI tests: a private X display (tests/conftest.py)
command|xdotool|xdotool|needed|finding and driving real windows
command|xdpyinfo|x11-utils|optional|asking a display whether it answers (else Tk is asked)
command|xwininfo|x11-utils|optional|where the X server has a window (tests/desktop/app/test_gui_restart_place.py)
command|import|imagemagick|optional|screenshots of real windows for a person to look at
command|systemd-analyze|systemd|optional|tests/runtime/test_deploy.py: the unit file verified and rated
command|unshare|util-linux|optional|tests/runtime/test_deploy.py: the image entrypoint as PID 1
command|git|git|optional|tests/files/test_owner_only.py: a real repository
command|bwrap|bubblewrap|optional|agents in a box (tests/agent/test_agent_sandbox.py; Rio uses it where present, ADR-0038)
command|fc-list|fontconfig|needed|listing the installed fonts (this script)
font|DejaVu Sans Mono|fonts-dejavu-core|needed|the editor font the tests use
font|DejaVu Sans|fonts-dejavu-core|needed|the desktop font the tests use
font|DejaVu Math TeX Gyre|fonts-dejavu-extra|needed|a family spaced otherwise (tests/desktop/editor/test_gui_editor_view.py)
font|Terminus|fonts-terminus-otb|optional|the first editor font of the desktop (ui/tk/widgets/fonts.py): what its users see'

check_only=0
case "${1:-}" in
  --check) check_only=1 ;;
  "") ;;
  *) echo "usage: bash tools/test-deps.sh [--check]" >&2; exit 2 ;;
esac

fonts=""
if command -v fc-list >/dev/null 2>&1; then
  fonts=$(fc-list : family 2>/dev/null | tr ',' '\n' || true)
fi

missing=()       # packages to install
needed_gone=()   # what is needed and missing, for the message
while IFS='|' read -r kind what package level why; do
  case "$kind" in
    command) command -v "$what" >/dev/null 2>&1 && continue ;;
    font) printf '%s\n' "$fonts" | grep -Fxq -- "$what" && continue ;;
  esac
  case " ${missing[*]-} " in *" $package "*) ;; *) missing+=("$package") ;; esac
  if [ "$level" = needed ]; then needed_gone+=("$what ($package: $why)"); fi
  echo "tools/test-deps.sh: missing $kind '$what' — Debian package $package ($level: $why)"
done <<< "$NEEDS"

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$check_only" -eq 1 ]; then
  [ ${#needed_gone[@]} -eq 0 ] && exit 0 || exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "tools/test-deps.sh: no apt-get here: install the equivalents of: ${missing[*]}" >&2
  [ ${#needed_gone[@]} -eq 0 ] && exit 0 || exit 1
fi
SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "tools/test-deps.sh: not root and no sudo: as root, run" \
         "apt-get install ${missing[*]}" >&2
    [ ${#needed_gone[@]} -eq 0 ] && exit 0 || exit 1
  fi
  SUDO=(sudo)
  [ -t 0 ] || SUDO=(sudo -n)   # no terminal to ask a password on: fail instead of hanging
fi
echo "+ apt-get install ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
${SUDO[@]+"${SUDO[@]}"} apt-get update -qq
${SUDO[@]+"${SUDO[@]}"} apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
