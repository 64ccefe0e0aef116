"""``rio keys``: the CURVE keys for remote access (``rio serve --listen``).

    rio keys                         create the server keypair once; print its public key
    rio keys --client NAME           create a client keypair here and authorise it
    rio keys --authorize NAME KEY    authorise a client key made on another machine
    rio keys --revoke NAME           refuse that client from now on
    rio keys --list                  the server key and the authorised clients
    rio keys --rotate                a new server keypair (every client needs the new key)

The key logic lives in rio/curve_keys.py; this module only parses and prints.
"""

from __future__ import annotations

import argparse

from rio import curve_keys

EPILOG = """\
Remote access, step by step (docs/deploy.md has the whole story):
  on the server:  rio keys                      # prints the server's public key
                  rio keys --client laptop      # prints the secret file to copy
                  rio serve --listen tcp://0.0.0.0:7311
  on the client:  copy laptop.key_secret into ~/.config/rio/curve/clients/
                  rio status --connect tcp://SERVER:7311 --server-key 'KEY'
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("keys", help="CURVE keys for remote access (rio serve --listen)",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    what = p.add_mutually_exclusive_group()
    what.add_argument("--client", metavar="NAME",
                      help="create a client keypair and authorise it on this server")
    what.add_argument("--authorize", nargs=2, metavar=("NAME", "PUBLIC_KEY"),
                      help="authorise a client public key made elsewhere")
    what.add_argument("--revoke", metavar="NAME", help="remove an authorised client")
    what.add_argument("--list", action="store_true", help="show the server key and the clients")
    what.add_argument("--rotate", action="store_true",
                      help="replace the server keypair (clients need the new public key)")
    p.set_defaults(func=cmd_keys)


def cmd_keys(args: argparse.Namespace) -> int:
    folder = curve_keys.curve_dir()
    if args.client:
        pair, secret_file = curve_keys.create_client_keys(args.client)
        print(f"Created client {args.client!r} and authorised it on this machine's server.")
        print(f"  secret file (copy it to the client, keep it private): {secret_file}")
        print("  on the client put it in ~/.config/rio/curve/clients/ (or a folder named by "
              "RIO_CLIENT_KEY_DIR)")
        print(f"Client public key: {pair.public.decode()}")
        _print_server_key(folder)
        return 0
    if args.authorize:
        name, key = args.authorize
        path = curve_keys.authorize(name, key)
        print(f"Authorised {name!r} ({path}); a running server accepts it within a second.")
        return 0
    if args.revoke:
        if curve_keys.revoke(args.revoke):
            print(f"Revoked {args.revoke!r}: new connections with its key are refused "
                  "(restart the server to drop one that is open).")
            return 0
        from rio.cli import print_error
        print_error("config.unknown_client", f"no authorised client named {args.revoke!r}",
                    "see `rio keys --list`")
        return 1
    if args.list:
        _print_server_key(folder)
        clients = curve_keys.authorized()
        print(f"Authorised clients ({folder / curve_keys.AUTHORIZED}):")
        for name, public in clients.items():
            print(f"  {name:<24} {public.decode()}")
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


def _print_server_key(folder) -> None:
    public_file, secret_file = curve_keys.server_paths(folder)
    if secret_file.exists():
        print(f"Server public key: {curve_keys.read_key_file(public_file).public.decode()}")
    else:
        print("No server keys here yet: run `rio keys` on the server.")
