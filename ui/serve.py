"""`streamlit run`, with app.py's st.navigation in charge of routing from the very first request
(`ui.streamlit_private`). Usage: `python -m ui.serve run app.py [streamlit options]`; `python -m ui.serve check
[--server.address A]` only says whether it would refuse (exit 2) or serve (exit 0).

It refuses to serve the lab on a network address without sign-in: unless the address is the machine's own
(localhost), PLAB_MODE=server (sign-in for every page, README *On a lab server*) or the loudly named opt-out
PLAB_UNSAFE_NO_SIGN_IN=1 must be set. Streamlit listens on every interface when no address is given."""

import os
import sys

from streamlit.web import cli

from ui import streamlit_private

LOCAL = {"localhost", "127.0.0.1", "::1", "[::1]"}
OPT_OUT = "PLAB_UNSAFE_NO_SIGN_IN"


def address(argv: list[str], env: dict) -> str:
    """The address Streamlit will listen on ('' = every interface), from the command line or the environment."""
    found = env.get("STREAMLIT_SERVER_ADDRESS", "")
    for i, arg in enumerate(argv):
        if arg == "--server.address" and i + 1 < len(argv):
            found = argv[i + 1]
        elif arg.startswith("--server.address="):
            found = arg.partition("=")[2]
    return found.strip()


def refusal(argv: list[str], env: dict) -> str | None:
    """Why the lab must not start as asked, with the ways out; None when it may."""
    mode = env.get("PLAB_MODE", "").strip().lower()
    if mode not in ("", "local", "server"):
        return f"PLAB_MODE={env['PLAB_MODE']!r}: expected 'local' (the default) or 'server' (sign-in required)."
    where = address(argv, env)
    if where in LOCAL or mode == "server" or env.get(OPT_OUT) == "1":
        return None
    return (
        f"Refusing to serve Presupposition Lab on {where or 'every network interface'} without sign-in: anyone who "
        "reaches it could delete runs, replace datasets, start trainings, spend endpoint budgets and rate as "
        "anyone. Either\n"
        "  - serve it on localhost only (the default of scripts/run.sh: leave PLAB_ADDRESS unset), or\n"
        "  - turn sign-in on: PLAB_MODE=server with [auth] in .streamlit/secrets.toml and roles given with "
        "`python -m backend users add` (README: On a lab server), or\n"
        f"  - on a network you trust completely, set {OPT_OUT}=1 (everyone who reaches it is the owner)."
    )


if __name__ == "__main__":
    refused = refusal(sys.argv[1:], dict(os.environ))
    if refused:
        print(refused, file=sys.stderr)
        sys.exit(2)
    if sys.argv[1:2] == ["check"]:  # scripts/run.sh asks before it builds anything
        sys.exit(0)
    streamlit_private.off_for_the_server()
    sys.exit(cli.main(prog_name="streamlit"))
