"""The browser app."""

from __future__ import annotations

import ipaddress

from . import common
from .common import CHECKPOINT_DIR, CONFIG, RATINGS_FILE, RAY
from .parser import flag, mode

HOST = flag("--host", "web", help="--serve: the address to listen on (default 127.0.0.1, this "
                                  "machine only)")
PORT = flag("--port", "web", type=int, help="--serve: the port (default 8000)")
SERVER_NAME = flag("--server-name", "web", metavar="NAME[,NAME]",
                   help="--serve: the host names visitors reach the app by (default the "
                        "loopback names; needed with --host): requests naming any other host "
                        "are refused")
ALLOWED_ORIGINS = flag("--allowed-origins", "web", metavar="ORIGIN[,ORIGIN]",
                       help="--serve: pages of other sites allowed to open games and upload "
                            "(default: only the app's own pages), as https://host[:port]")
TRUSTED_PROXIES = flag("--trusted-proxies", "web", metavar="ADDRESS[,ADDRESS]",
                       help="--serve: the reverse proxies in front of the app, by address (or "
                            "network, such as 10.0.0.0/8); their X-Forwarded-For names the "
                            "visitor. Default none: a header a client writes itself is ignored "
                            "and its own address counts")
SHOW_LIMITS = "list"
LIMITS = flag("--limits", "web", metavar="NAME=VALUE[,...]", nargs="?", const=SHOW_LIMITS,
              help="--serve: change the server's budgets, such as games_in_all=16; alone (or "
                   "`--limits list`), print every budget with its default and exit "
                   "(docs/browser.md)")


@mode("serve", reads=(HOST, PORT, CHECKPOINT_DIR, RATINGS_FILE, SERVER_NAME, ALLOWED_ORIGINS,
                      LIMITS, TRUSTED_PROXIES, CONFIG, *RAY),
      flag_help="the browser app: play, watch, replays, tournaments, the arena (--host, "
                "--port; --backend ray plays the arena's pairings on Ray)")
def serve(parser, args) -> int:
    from ..web.app import serve as run
    from ..web.guard import Limits

    if args.limits == SHOW_LIMITS:
        print(Limits().table())
        return 0

    def names(text):
        return [n.strip() for n in text.split(",") if n.strip()] if text else []

    for proxy in names(args.trusted_proxies):
        try:
            ipaddress.ip_network(proxy, strict=False)
        except ValueError:
            parser.error(f"--trusted-proxies {proxy!r}: give the proxies' addresses, such as "
                         "127.0.0.1 or 10.0.0.0/8, comma separated")
    run(args.host or "127.0.0.1", args.port if args.port is not None else 8000, ".",
        args.checkpoint_dir or "checkpoints", args.ratings_file, names(args.server_name),
        names(args.allowed_origins), Limits.parse(args.limits), names(args.trusted_proxies),
        common.where(args), common.game_config(args))
    return 0
