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

import posixpath
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
#: The home folder as a shell writes it (quoted or not).
_HOME = r"(?:~|\$HOME|\$\{HOME\}|\"\$HOME\"|/root|/home/[^/\s]+)"
_SHELL_NAMES = frozenset({"sh", "bash", "zsh", "ksh", "dash", "fish", "csh", "tcsh"})
#: Python (or Perl, Ruby, Node) one-liners that delete files.
_CODE_DELETES = re.compile(r"\b(?:rmtree|os\.remove|unlink|rmdir|removedirs|rmSync|rimraf|"
                           r"rm_rf|rm_r|remove_dir_all)\b|\.rm\(")
_ONE_LINER = re.compile(r"\b(?:python[0-9.]*|pypy[0-9.]*|perl|ruby|node)\s+(?:-\S+\s+)*?"
                        r"(?:[\"']?-[A-Za-z]*[ce]\b|-\s*<<)")
#: ``find`` tests that narrow what ``-delete`` removes (``-type f`` alone does not).
_FIND_FILTERS = frozenset({"-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename",
                           "-regex", "-iregex", "-newer", "-mtime", "-mmin", "-empty"})
#: How deep ``bash -c "…"`` wrappers are unwrapped before the command counts as dangerous.
_MAX_DEPTH = 4

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
    ("write_home_dotfile", re.compile(rf">>?\|?\s*[\"']?{_HOME}/\."),
     "writes into a settings file in your home folder (~/.…)"),
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
                    "timeout", "stdbuf", "builtin") or re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", w):
            i += 1
            # The wrapper's own options (env -i, nice -n 5, timeout -s KILL 5 …).
            while i < len(words) and words[i].startswith("-") and words[i] != "-":
                takes_value = words[i] in ("-u", "-n", "-s", "-k", "-C", "-S", "-c", "-I",
                                           "--unset", "--chdir", "--signal")
                i += 2 if takes_value else 1
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


def _inline_code(words: list[str], flags: tuple[str, ...]) -> str | None:
    """The program text of ``bash -c "…"`` / ``python -c "…"`` (None when there is none)."""
    for i, w in enumerate(words[1:], start=1):
        if w.startswith("-") and not w.startswith("--") and any(f in w[1:] for f in flags):
            return words[i + 1] if i + 1 < len(words) else None
        if not w.startswith("-"):
            return None
    return None


#: Where a command runs, as far as the check can tell: a normalised path relative to the
#: project root ("." the root), or None once it is outside the project or unknown (``cd /x``,
#: ``cd ~``, ``cd "$DIR"``, ``cd -``, or ``cd ..`` from the root).
Cwd = str | None


def _after_cd(words: list[str], cwd: Cwd) -> tuple[bool, Cwd]:
    """(is this a ``cd``/``pushd``, the folder after it)."""
    words, _ = _strip_prefixes(words)
    if not words or words[0] not in ("cd", "pushd", "chdir"):
        return False, cwd
    args = [w for w in words[1:] if w not in ("-L", "-P", "-e", "--")]
    target = args[0] if args else "~"
    return True, _resolve(target, cwd)


def _resolve(path: str, cwd: Cwd) -> Cwd:
    """``path`` seen from ``cwd``, relative to the project root; None when outside it or not
    knowable (absolute, home, a variable, a substitution)."""
    if cwd is None or not path or path.startswith(("/", "~", "$", "`", "-")):
        return None
    joined = posixpath.normpath(posixpath.join(cwd, path))
    if joined == ".." or joined.startswith("../"):
        return None
    return joined


def _outside(operand: str, cwd: Cwd) -> bool:
    """Does ``operand`` (a path a command was given) name something outside the project? A
    relative path from a folder outside (or unknown) counts: the check errs towards asking."""
    if operand in _PROTECTED_ROOTS or operand.startswith(("/", "~", "$HOME", "${HOME}")):
        return True
    return _resolve(operand, cwd) is None


def _check_simple(words: list[str], depth: int = 0, cwd: Cwd = ".") -> Danger | None:
    words, elevated = _strip_prefixes(words)
    if elevated:
        return Danger("sudo", "runs with administrator rights (sudo)")
    if not words:
        return None
    cmd = words[0].rsplit("/", 1)[-1]
    args = words[1:]
    if cmd in _SHELL_NAMES:
        code = _inline_code(words, ("c",))
        if code is not None:
            if depth >= _MAX_DEPTH:
                return Danger("nested_shell", "hides its command in shells within shells")
            return _classify(code, depth + 1, cwd)
    if re.fullmatch(r"(?:python[0-9.]*|pypy[0-9.]*|perl|ruby|node)", cmd):
        code = _inline_code(words, ("c", "e"))
        if code is not None and _CODE_DELETES.search(code):
            return Danger("code_delete", f"deletes files from a {cmd} one-liner")
        return None
    flags = _short_flags(args)
    operands = [a for a in args if not a.startswith("-")]
    if cmd == "rm":
        recursive = bool(flags & {"-r", "-R", "--recursive"})
        force = bool(flags & {"-f", "--force"})
        if "--no-preserve-root" in flags:
            return Danger("rm_root", "deletes everything from the file system root")
        if recursive and any(_outside(o, cwd) or o in (".", "./") for o in operands):
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
    if cmd == "dd" and any(a.startswith(("of=/", "of=~", "of=$HOME", "of=${HOME}", "of=.."))
                           and a != "of=/dev/null" for a in args):
        return Danger("dd_outside", "overwrites a file outside the project (dd of=…)")
    if cmd.startswith("mkfs") or cmd in ("mkswap", "wipefs", "fdisk", "sfdisk", "parted",
                                          "shred"):
        return Danger("disk_format", f"formats or wipes disks ({cmd})")
    if cmd in ("chmod", "chown", "chgrp"):
        recursive = bool(flags & {"-R", "--recursive"})
        if recursive and any(_outside(o, cwd) or o in (".", "./") for o in operands):
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
    if cmd in ("tee", "cp", "mv", "ln", "install", "rsync") and any(
            re.match(rf"{_HOME}/\.", o) for o in operands[-1:] if cmd != "tee") or (
            cmd == "tee" and any(re.match(rf"{_HOME}/\.", o) for o in operands)):
        return Danger("write_home_dotfile", "writes into a settings file in your home folder "
                      "(~/.…)")
    deletes = "-delete" in args or any(a in ("rm", "/bin/rm", "shred", "unlink")
                                       for a in args)
    if cmd == "find" and deletes:
        start = operands[0] if operands else "."
        if start not in (".", "./") and _outside(start, cwd) or \
                start in (".", "./") and cwd is None:
            return Danger("find_delete", "deletes files outside the project")
        if not _FIND_FILTERS.intersection(args):
            return Danger("find_delete", "deletes everything it finds (find … -delete "
                          "without -name or -path)")
    return None


def classify(command: str, cwd: str = ".") -> Danger | None:
    """The first danger found in ``command``, run in ``cwd`` (relative to the project root),
    or None when nothing matched. ``cd`` is followed from one simple command to the next (a
    subshell's too: the check errs towards asking), so ``cd .. && rm -r outside/x`` is seen
    deleting outside the project."""
    start = posixpath.normpath(cwd or ".")
    return _classify(command, 0, None if start == ".." or start.startswith(("../", "/"))
                     else start)


def _classify(command: str, depth: int, cwd: Cwd = ".") -> Danger | None:
    text = command.strip()
    if not text:
        return None
    for rule, pattern, reason in _WHOLE:
        if pattern.search(text):
            return Danger(rule, reason)
    # A one-liner's code holds ; and ( which split it below: look at the whole string.
    if _ONE_LINER.search(text) and _CODE_DELETES.search(text):
        return Danger("code_delete", "deletes files from an interpreter one-liner")
    here = cwd
    for simple in _SPLIT.split(text):
        if simple.strip():
            words = _words(simple)
            moved, here = _after_cd(words, here)
            found = None if moved else _check_simple(words, depth, here)
            if found is not None:
                return found
    # The split above ignores quotes (it errs towards looking); a quote-aware split finds
    # what quoting hides from it: ``bash -c 'cd x; rm -rf ~/y'`` keeps its argument whole.
    here = cwd
    for words in _quoted_commands(text):
        moved, here = _after_cd(words, here)
        found = None if moved else _check_simple(words, depth, here)
        if found is not None:
            return found
    return None


def _quoted_commands(text: str) -> list[list[str]]:
    """The simple commands of ``text``, split at unquoted ; & | ( ) < > only."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        tokens = list(lexer)
    except ValueError:       # unbalanced quotes: the plain split above has looked already
        return []
    commands: list[list[str]] = [[]]
    for token in tokens:
        if token and all(c in ";&|()<>" for c in token):
            commands.append([])
        else:
            commands[-1].append(token.strip("`$") if token in ("$", "`") else token)
    return [c for c in commands if c]


def classify_argv(argv: list[str]) -> Danger | None:
    """Same for an argv list (joined with shell quoting so the patterns see one string)."""
    return classify(shlex.join(argv))
