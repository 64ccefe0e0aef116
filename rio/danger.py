"""The danger classifier: shell commands that always ask, whatever the gate's mode.

An agent's ``run_command`` is a shell string. Most commands are harmless (``pytest -q``,
``git status``); a few can destroy work or the machine in one line. Those are matched here
and the gate asks the user about them even in "allow everything" mode (issue 5: "whose
matches always ask, whatever the mode").

This is a tripwire, not a sandbox: a determined command can hide from any pattern list
(``eval "$(echo cm0gLXJmIC8= | base64 -d)"``), which is why ``eval`` and decoding into a
shell are matched too, and why commands run confined to the project in their own process
group with a timeout. The patterns err towards asking: a false alarm costs one click, a
miss can cost a home folder.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass


@dataclass(frozen=True)
class Danger:
    """Why a command is dangerous: a stable ``rule`` id and words for the user."""

    rule: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"rule": self.rule, "reason": self.reason}


# Shell separators that start a new simple command: ; && || | & newline, and $( ` subshells.
_SPLIT = re.compile(r"\|\||&&|[;|&\n]|\$\(|`|\(|\)")
_SHELLS = r"(?:ba|z|k|da|fi|c|tc)?sh"
_INTERPRETERS = rf"(?:{_SHELLS}|python[0-9.]*|perl|ruby|node|php)"

#: Rules on the whole command string (pipelines span simple commands).
_WHOLE: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("download_to_shell",
     re.compile(rf"\b(?:curl|wget|fetch|http|aria2c)\b[^|]*\|\s*(?:sudo\s+)?(?:\S*/)?"
                rf"{_INTERPRETERS}\b"),
     "pipes a download straight into a shell or interpreter"),
    ("shell_of_download",
     re.compile(rf"\b{_INTERPRETERS}\s+(?:-c\s+)?[\"']?\s*(?:<\(|\$\()\s*(?:curl|wget)\b"),
     "runs a downloaded script"),
    ("decode_to_shell",
     re.compile(rf"\bbase64\s+(?:-d|--decode)\b.*\|\s*(?:sudo\s+)?{_INTERPRETERS}\b"),
     "decodes hidden text into a shell"),
    ("fork_bomb", re.compile(r":\s*\(\s*\)\s*\{[^}]*:\s*\|\s*:"), "is a fork bomb"),
    ("fork_bomb", re.compile(r"\b(\w+)\s*\(\s*\)\s*\{[^}]*\b\1\s*\|\s*\1\b"), "is a fork bomb"),
    ("write_ssh", re.compile(r">>?\s*[\"']?(?:~|\$HOME|\$\{HOME\}|/root|/home/[^/\s]+)/\.ssh/"),
     "writes into ~/.ssh (keys and authorised logins)"),
    ("write_device", re.compile(r">\s*/dev/(?:sd[a-z]|nvme|hd[a-z]|mmcblk|disk|vd[a-z]|xvd)"),
     "writes straight onto a disk device"),
    ("write_system", re.compile(r">>?\s*/(?:etc|boot|usr|bin|sbin|lib|lib64)/"),
     "writes into a system folder"),
    ("write_shell_rc",
     re.compile(r">>?\s*[\"']?(?:~|\$HOME|\$\{HOME\})/\.(?:bashrc|zshrc|profile|bash_profile)"),
     "changes your shell start-up files"),
)

_PROTECTED_ROOTS = {"/", "/*", "~", "~/", "$HOME", "${HOME}", "$HOME/", "/home", "/root",
                    "/etc", "/usr", "/var", "/boot", "/bin", "/lib", "/opt", ".", "./", "..",
                    "../", "*", ".*", "~/*"}


def _words(simple: str) -> list[str]:
    try:
        return shlex.split(simple, comments=True)
    except ValueError:  # unbalanced quotes: fall back to whitespace, still worth a look
        return simple.split()


def _strip_prefixes(words: list[str]) -> tuple[list[str], bool]:
    """Drop ``env X=1``, ``nohup``, ``time`` …; report whether ``sudo``/``doas`` was there."""
    elevated = False
    i = 0
    while i < len(words):
        w = words[i]
        base = w.rsplit("/", 1)[-1]
        if base in ("sudo", "doas", "pkexec", "su"):
            elevated = True
            i += 1
            while i < len(words) and words[i].startswith("-"):
                i += 1
            continue
        if base in ("env", "nohup", "time", "nice", "ionice", "command", "exec", "xargs",
                    "timeout", "stdbuf") or re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", w):
            i += 1
            if base == "timeout" and i < len(words):
                i += 1  # its duration
            continue
        break
    return words[i:], elevated


def _short_flags(args: list[str]) -> set[str]:
    flags: set[str] = set()
    for a in args:
        if a.startswith("--"):
            flags.add(a)
        elif a.startswith("-") and len(a) > 1:
            flags.update("-" + c for c in a[1:])
    return flags


def _check_simple(words: list[str]) -> Danger | None:
    words, elevated = _strip_prefixes(words)
    if elevated:
        return Danger("sudo", "runs with administrator rights (sudo)")
    if not words:
        return None
    cmd = words[0].rsplit("/", 1)[-1]
    args = words[1:]
    flags = _short_flags(args)
    operands = [a for a in args if not a.startswith("-")]
    if cmd == "rm":
        recursive = bool(flags & {"-r", "-R", "--recursive"})
        force = bool(flags & {"-f", "--force"})
        if "--no-preserve-root" in flags:
            return Danger("rm_root", "deletes everything from the file system root")
        if recursive and any(o in _PROTECTED_ROOTS or o.startswith(("/", "~", "$HOME", "${HOME}"))
                             for o in operands):
            return Danger("rm_rf_outside", "deletes folders outside the project or the whole "
                          "project")
        if recursive and force:
            return Danger("rm_rf", "deletes folders recursively without asking (rm -rf)")
        return None
    if cmd == "git":
        rest = list(args)
        while rest and rest[0].startswith("-"):  # global options; -C/-c take a value
            rest = rest[2:] if rest[0] in ("-C", "-c", "--git-dir", "--work-tree") else rest[1:]
        sub = rest[0] if rest else ""
        if sub == "push" and (flags & {"-f", "--force", "--force-with-lease", "--mirror",
                                       "--delete", "-d"}
                              or any(o.startswith("+") for o in operands[1:])
                              or any(a.startswith("--force") for a in args)):
            return Danger("force_push", "force-pushes, which can overwrite others' history")
        if sub == "reset" and "--hard" in args:
            return Danger("git_reset_hard", "throws away uncommitted changes (git reset --hard)")
        if sub == "clean" and flags & {"-f", "--force"}:
            return Danger("git_clean", "deletes untracked files (git clean -f)")
        if sub == "checkout" and "--" in args and "." in args:
            return Danger("git_checkout_all", "throws away uncommitted changes")
        return None
    if cmd == "dd" and any(a.startswith("of=/dev/") and not a.startswith("of=/dev/null")
                           for a in args):
        return Danger("dd_device", "writes straight onto a device (dd of=/dev/…)")
    if cmd.startswith("mkfs") or cmd in ("mkswap", "wipefs", "fdisk", "sfdisk", "parted",
                                          "shred"):
        return Danger("disk_format", f"formats or wipes disks ({cmd})")
    if cmd in ("chmod", "chown", "chgrp"):
        recursive = bool(flags & {"-R", "--recursive"})
        if recursive and any(o in _PROTECTED_ROOTS or o.startswith(("/", "~")) for o in operands):
            return Danger("chmod_system", f"changes permissions of folders outside the project "
                          f"({cmd} -R)")
        if cmd == "chmod" and "777" in operands and recursive:
            return Danger("chmod_777", "makes everything writable by everyone (chmod -R 777)")
        return None
    if cmd in ("shutdown", "reboot", "halt", "poweroff", "init", "systemctl") and (
            cmd != "systemctl" or any(o in ("poweroff", "reboot", "halt") for o in operands)):
        return Danger("power", "shuts down or restarts the machine")
    if cmd in ("kill", "pkill", "killall") and ("-1" in args or any(o == "-1" for o in args)):
        return Danger("kill_all", "signals every process you own")
    if cmd == "eval":
        return Danger("eval", "evaluates text as a command, which hides what actually runs")
    if cmd in ("crontab",) and ("-r" in flags):
        return Danger("crontab_remove", "removes your scheduled jobs")
    if cmd in ("mv", "cp", "tee", "ln") and any(
            ("/.ssh/" in o or o.endswith("/.ssh")) for o in operands):
        return Danger("write_ssh", "writes into ~/.ssh (keys and authorised logins)")
    if cmd == "find" and ("-delete" in args or "rm" in args) and operands[:1] and (
            operands[0] in _PROTECTED_ROOTS and operands[0] not in (".", "./")
            or operands[0].startswith(("/", "~"))):
        return Danger("find_delete", "deletes files outside the project")
    return None


def classify(command: str) -> Danger | None:
    """The first danger found in ``command``, or None when nothing matched."""
    text = command.strip()
    if not text:
        return None
    for rule, pattern, reason in _WHOLE:
        if pattern.search(text):
            return Danger(rule, reason)
    for simple in _SPLIT.split(text):
        if simple.strip():
            found = _check_simple(_words(simple))
            if found is not None:
                return found
    return None


def classify_argv(argv: list[str]) -> Danger | None:
    """Same for an argv list (joined with shell quoting so the patterns see one string)."""
    return classify(shlex.join(argv))
