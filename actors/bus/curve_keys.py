"""CURVE key files for remote access: the server's keypair, client keypairs, authorised clients.

Layout under ``config_base()/curve/`` (folder 0700, every file 0600)::

    server.key              the server's public key (give it to clients: --server-key)
    server.key_secret       the server's public + secret key
    authorized_clients/     NAME.key: one public key per client the server accepts, with the
                            client's role (observer, editor, owner: rio/protocol/roles.py) in the
                            certificate's metadata section; no role line means editor
    clients/                NAME.key + NAME.key_secret: client keypairs made on this machine

Files use pyzmq's certificate format (``zmq.auth.load_certificate`` reads them), so the ZAP
authenticator can load ``authorized_clients/`` as it is. Keys are Z85 text (40 characters).
Only key material lives here: no sockets (the listener is actors/bus/remote.py).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import zmq
import zmq.auth
from zmq.utils import z85

from rio.config.instance import config_base
from rio.protocol import roles
from rio.protocol.errors import BusError, ConfigError

SERVER = "server"
AUTHORIZED = "authorized_clients"
CLIENTS = "clients"
_NAME_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_Z85_KEY = re.compile(r"^[0-9a-zA-Z.:+=^!/*?&<>()\[\]{}@%$#-]{40}$")
_ROLE_LINE = re.compile(r'^\s*role\s*=\s*"([a-z]+)"\s*$')


@dataclass(frozen=True)
class KeyPair:
    public: bytes            # Z85, 40 bytes
    secret: bytes | None     # Z85, 40 bytes; None for a public-only file


def curve_dir(base: Path | None = None) -> Path:
    """The curve folder (``config_base()/curve`` unless ``base`` says otherwise)."""
    return base if base is not None else config_base() / "curve"


def private_folder(path: Path) -> Path:
    """Create ``path`` as 0700 (and fix a looser mode): key folders are for the user alone.
    Every folder created on the way is 0700 too (``mkdir(parents=True)`` would make the
    ``curve`` folder above ``clients/`` 0755 under the usual umask)."""
    missing: list[Path] = []
    walk = path
    while not walk.exists() and walk != walk.parent:
        missing.append(walk)
        walk = walk.parent
    for folder in reversed(missing):
        folder.mkdir(mode=0o700, exist_ok=True)
        os.chmod(folder, 0o700)      # mkdir's mode is masked by the umask
    if stat.S_IMODE(path.stat().st_mode) != 0o700:
        os.chmod(path, 0o700)
    return path


def check_client_name(name: str) -> str:
    if not _NAME_OK.match(name):
        raise ConfigError("bad_client_name", f"Client name {name!r} is not allowed.",
                          "Use letters, digits, '.', '_' or '-' (at most 64 characters).")
    return name


def check_public_key(key: str | bytes) -> bytes:
    raw = key.encode() if isinstance(key, str) else key
    raw = raw.strip()
    if not _Z85_KEY.match(raw.decode(errors="replace")) or len(z85.decode(raw)) != 32:
        raise ConfigError("bad_public_key", "That is not a CURVE public key.",
                          "Copy the 40-character key printed by `rio keys` exactly.")
    return raw


# --- files --------------------------------------------------------------------------------------

def check_role(role: str) -> str:
    try:
        return roles.check_role(role)
    except ValueError:
        raise ConfigError("bad_role", f"{role!r} is not a role.",
                          f"Use one of {', '.join(roles.ROLES)}.") from None


def write_key_file(path: Path, public: bytes, secret: bytes | None = None, *,
                   role: str | None = None) -> Path:
    """Write a pyzmq-format certificate, 0600 from the first byte, replaced atomically.
    ``role`` (authorised client keys) goes in the metadata section, which pyzmq ignores."""
    meta = ["metadata"] + ([f'    role = "{check_role(role)}"'] if role else [])
    lines = [f"#   Rio CURVE {'secret' if secret else 'public'} key, "
             f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M:%S} UTC",
             "#   ZeroMQ certificate format (zmq.auth.load_certificate reads it).",
             "" if secret is None else "#   SECRET: never share this file.",
             *meta, "curve", f'    public-key = "{public.decode()}"']
    if secret is not None:
        lines.append(f'    secret-key = "{secret.decode()}"')
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return path


def read_key_file(path: Path) -> KeyPair:
    try:
        public, secret = zmq.auth.load_certificate(path)
    except (OSError, ValueError) as exc:
        raise ConfigError("bad_key_file", f"Cannot read the key file {path}: {exc}",
                          "Create it again with `rio keys` (or `rio keys --client NAME`).") \
            from None
    return KeyPair(check_public_key(public), secret)


# --- the server ---------------------------------------------------------------------------------

def server_paths(base: Path | None = None) -> tuple[Path, Path]:
    folder = curve_dir(base)
    return folder / f"{SERVER}.key", folder / f"{SERVER}.key_secret"


def create_server_keys(base: Path | None = None, *, replace: bool = False) -> tuple[KeyPair, bool]:
    """The server keypair, created when missing (or when ``replace``); returns (keys, created)."""
    folder = private_folder(curve_dir(base))
    private_folder(folder / AUTHORIZED)
    public_file, secret_file = server_paths(base)
    if secret_file.exists() and not replace:
        return read_key_file(secret_file), False
    public, secret = zmq.curve_keypair()
    write_key_file(secret_file, public, secret)
    write_key_file(public_file, public)
    return KeyPair(public, secret), True


def load_server_keys(base: Path | None = None) -> KeyPair:
    """The server keypair for ``rio serve --listen``; missing keys are an error naming
    `rio keys`."""
    _public_file, secret_file = server_paths(base)
    if not secret_file.exists():
        raise BusError("no_server_keys",
                       f"Remote access needs the server's CURVE keys and {secret_file} does not "
                       "exist.",
                       "Run `rio keys` once to create them, authorise a client with "
                       "`rio keys --client NAME`, then start `rio serve --listen` again.")
    pair = read_key_file(secret_file)
    if pair.secret is None:
        raise ConfigError("bad_key_file", f"{secret_file} holds no secret key.",
                          "Create the server keys again with `rio keys --rotate`.")
    return pair


# --- clients ------------------------------------------------------------------------------------

def authorized_dir(base: Path | None = None) -> Path:
    return private_folder(curve_dir(base) / AUTHORIZED)


def authorize(name: str, public: str | bytes, base: Path | None = None, *,
              role: str = roles.DEFAULT_ROLE) -> Path:
    """Let the client with this public key connect with ``role`` (takes effect within a few
    seconds; authorising the same name again replaces its key and role)."""
    key = check_public_key(public)
    return write_key_file(authorized_dir(base) / f"{check_client_name(name)}.key", key,
                          role=check_role(role))


def read_role(path: Path) -> str:
    """The role in an authorised key file; a file without one (made before roles) is an
    editor, the default; an unknown role is an observer (fail closed)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "observer"
    for line in text.splitlines():
        found = _ROLE_LINE.match(line)
        if found:
            return found.group(1) if found.group(1) in roles.ROLES else "observer"
    return roles.DEFAULT_ROLE


def set_role(name: str, role: str, base: Path | None = None) -> Path:
    """Change an authorised client's role, keeping its key."""
    path = authorized_dir(base) / f"{check_client_name(name)}.key"
    if not path.exists():
        raise ConfigError("unknown_client", f"No authorised client named {name!r}.",
                          "See `rio keys --list`.")
    return write_key_file(path, read_key_file(path).public, role=check_role(role))


def authorized_roles(base: Path | None = None,
                     folder: Path | None = None) -> dict[str, tuple[str, str]]:
    """Z85 public key (text, as ZAP's User-Id) → (client name, role), for every authorised
    client. Unreadable files are left out (ZAP refuses their keys too)."""
    where = folder if folder is not None else curve_dir(base) / AUTHORIZED
    found: dict[str, tuple[str, str]] = {}
    if not where.is_dir():
        return found
    for path in sorted(where.glob("*.key")):
        try:
            public = read_key_file(path).public.decode()
        except ConfigError:
            continue
        found[public] = (path.stem, read_role(path))
    return found


def revoke(name: str, base: Path | None = None) -> bool:
    """Refuse new connections with this client's key; open connections stay until they close."""
    try:
        (authorized_dir(base) / f"{check_client_name(name)}.key").unlink()
    except FileNotFoundError:
        return False
    return True


def authorized(base: Path | None = None) -> dict[str, bytes]:
    """Name → public key of every authorised client."""
    folder = curve_dir(base) / AUTHORIZED
    if not folder.is_dir():
        return {}
    return {p.stem: read_key_file(p).public for p in sorted(folder.glob("*.key"))}


def create_client_keys(name: str, base: Path | None = None, *, authorise: bool = True,
                       role: str = roles.DEFAULT_ROLE) -> tuple[KeyPair, Path]:
    """A new client keypair in ``clients/`` (its public key authorised unless told not to);
    returns the keys and the secret file to copy to the client."""
    check_client_name(name)
    folder = private_folder(curve_dir(base) / CLIENTS)
    public, secret = zmq.curve_keypair()
    secret_file = write_key_file(folder / f"{name}.key_secret", public, secret)
    write_key_file(folder / f"{name}.key", public)
    if authorise:
        authorize(name, public, base, role=role)
    return KeyPair(public, secret), secret_file


def client_key_dir(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    override = env.get("RIO_CLIENT_KEY_DIR")
    return Path(override) if override else curve_dir() / CLIENTS


def load_client_keys(environ: Mapping[str, str] | None = None) -> KeyPair:
    """The keypair a remote client presents: RIO_CLIENT_KEY_DIR (or config/curve/clients/),
    the file named by RIO_CLIENT_KEY, else the only ``*.key_secret`` there."""
    env = os.environ if environ is None else environ
    folder = client_key_dir(env)
    wanted = env.get("RIO_CLIENT_KEY")
    if wanted:
        candidates = [folder / f"{check_client_name(wanted)}.key_secret"]
        candidates = [p for p in candidates if p.exists()]
    else:
        candidates = sorted(folder.glob("*.key_secret")) if folder.is_dir() else []
    if not candidates:
        raise BusError("no_client_key", f"No client key in {folder}"
                       + (f" named {wanted!r}." if wanted else "."),
                       "Run `rio keys --client NAME` on the server and copy the .key_secret "
                       "file it names into that folder (or set RIO_CLIENT_KEY_DIR).")
    if len(candidates) > 1:
        names = ", ".join(p.stem for p in candidates)
        raise BusError("ambiguous_client_key", f"Several client keys in {folder} ({names}).",
                       "Pick one with RIO_CLIENT_KEY=NAME.")
    pair = read_key_file(candidates[0])
    if pair.secret is None:
        raise ConfigError("bad_key_file", f"{candidates[0]} holds no secret key.",
                          "Copy the .key_secret file, not the .key file.")
    return pair
