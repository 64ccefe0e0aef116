"""``rio keys``: the CURVE keys for remote access (``rio serve --listen``).

    rio keys                         create the server keypair once; print its public key
    rio keys --client NAME [--role R]         create a client keypair here and authorise it
    rio keys add NAME [PUBLIC_KEY] [--role R] the same as --client / --authorize
    rio keys --authorize NAME KEY [--role R]  authorise a client key made on another machine
    rio keys --set-role NAME ROLE             change what an authorised client may do
    rio keys --revoke NAME           refuse that client from now on
    rio keys --list                  the server key and the authorised clients, with roles

Roles (rio/protocol/roles.py, docs/deploy.md): observer reads; editor (the default) also edits and
saves buffers; owner also runs commands, changes the gate, uses agents and controls processes.
    rio keys --rotate                a new server keypair (every client needs the new key)

The key logic lives in actors/bus/curve_keys.py; this module only parses and prints.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from actors.bus import curve_keys
from rio.protocol import roles

EPILOG = """\
Remote access, step by step (docs/deploy.md has the whole story):
  on the server:  rio keys                      # prints the server's public key
                  rio keys --client laptop      # an editor; --role observer|editor|owner
                  rio serve --listen tcp://0.0.0.0:7311
  on the client:  copy laptop.key_secret into ~/.config/rio/curve/clients/
                  rio status --connect tcp://SERVER:7311 --server-key 'KEY'
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("keys", help="CURVE keys for remote access (rio serve --listen)",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    what = p.add_mutually_exclusive_group()
    what.add_argument("--client", metavar="NAME",
                      help="create a client keypair and authorise it on this server")
    what.add_argument("--authorize", nargs=2, metavar=("NAME", "PUBLIC_KEY"),
                      help="authorise a client public key made elsewhere")
    what.add_argument("--set-role", nargs=2, metavar=("NAME", "ROLE"),
                      help="change an authorised client's role (observer, editor, owner)")
    what.add_argument("--revoke", metavar="NAME", help="remove an authorised client")
    what.add_argument("--list", action="store_true", help="show the server key and the clients")
    what.add_argument("--rotate", action="store_true",
                      help="replace the server keypair (clients need the new public key)")
    p.add_argument("add", nargs="*", metavar="add NAME [PUBLIC_KEY]",
                   help="the same as --client NAME, or --authorize NAME PUBLIC_KEY")
    p.add_argument("--role", choices=roles.ROLES, default=roles.DEFAULT_ROLE,
                   help="with --client or --authorize: what the key may do "
                        f"(default {roles.DEFAULT_ROLE})")
    p.set_defaults(func=cmd_keys)


def cmd_keys(args: argparse.Namespace) -> int:
    folder = curve_keys.curve_dir()
    if args.add:
        words = args.add
        if words[0] != "add" or not 2 <= len(words) <= 3 or args.client or args.authorize:
            from rio.cli.main import EXIT_USAGE, print_error
            print_error("usage", f"rio keys: unexpected {' '.join(words)!r}",
                        "use `rio keys add NAME [PUBLIC_KEY] [--role ROLE]`, or see "
                        "`rio keys --help`")
            return EXIT_USAGE
        if len(words) == 2:
            args.client = words[1]
        else:
            args.authorize = words[1:]
    if args.client:
        if not curve_keys.server_paths(folder)[1].exists():
            return _client_here(args.client, args.role)
        pair, secret_file = curve_keys.create_client_keys(args.client, role=args.role)
        print(f"Created client {args.client!r} and authorised it on this machine's server "
              f"as an {args.role}.")
        print(f"  secret file (copy it to the client, keep it private): {secret_file}")
        print("  on the client put it in ~/.config/rio/curve/clients/ (or a folder named by "
              "RIO_CLIENT_KEY_DIR)")
        print(f"Client public key: {pair.public.decode()}")
        _print_server_key(folder)
        return 0
    if args.authorize:
        name, key = args.authorize
        path = curve_keys.authorize(name, key, role=args.role)
        print(f"Authorised {name!r} as an {args.role} ({path}); a running server accepts it "
              "within a second.")
        return 0
    if args.set_role:
        name, role = args.set_role
        curve_keys.set_role(name, role)
        print(f"{name!r} is now an {role}; a running server applies it to its next request.")
        return 0
    if args.revoke:
        if curve_keys.revoke(args.revoke):
            print(f"Revoked {args.revoke!r}: new connections with its key are refused "
                  "(restart the server to drop one that is open).")
            return 0
        from rio.cli.main import print_error
        print_error("config.unknown_client", f"no authorised client named {args.revoke!r}",
                    "see `rio keys --list`")
        return 1
    if args.list:
        _print_server_key(folder)
        clients = curve_keys.authorized_roles()
        print(f"Authorised clients ({folder / curve_keys.AUTHORIZED}):")
        for public, (name, role) in sorted(clients.items(), key=lambda kv: kv[1]):
            print(f"  {name:<24} {role:<9} {public}")
        if not clients:
            print("  none: add one with `rio keys --client NAME`")
        return 0
    pair, created = curve_keys.create_server_keys(replace=args.rotate)
    public_file, secret_file = curve_keys.server_paths()
    if created:
        print(f"Created the server keys: {secret_file} (secret, 0600) and {public_file}.")
    else:
        print(f"The server keys exist already ({secret_file}); `--rotate` replaces them.")
    if not curve_keys.authorized():
        print("No client is authorised yet: add one with `rio keys --client NAME`.")
    print("Start the server with: rio serve --listen tcp://0.0.0.0:7311  (events use port+1)")
    print(f"Server public key: {pair.public.decode()}")
    return 0


def _client_here(name: str, role: str) -> int:
    """``rio keys --client`` on a machine with no server keys: most likely the client itself.
    The keypair is made and listed as authorised here (for a server started here later), and
    we say plainly that no server has it yet and how to authorise it on the real one."""
    pair, secret_file = curve_keys.create_client_keys(name, role=role)
    print(f"Created the client keypair {name!r}; its secret key is {secret_file}.")
    print("This machine has no Rio server keys (`rio keys` creates them), so no server "
          "accepts this key yet. If the server is another machine, authorise it there:")
    print(f"  rio keys --authorize {name} {pair.public.decode()} --role {role}")
    print("Then connect with `rio status --connect tcp://SERVER:7311 --server-key KEY` (or "
          "RIO_SERVER_KEY), KEY being what `rio keys` prints on the server.")
    return 0


def _print_server_key(folder: Path | None) -> None:
    public_file, secret_file = curve_keys.server_paths(folder)
    if secret_file.exists():
        print(f"Server public key: {curve_keys.read_key_file(public_file).public.decode()}")
    else:
        print("No server keys here yet: run `rio keys` on the server.")
