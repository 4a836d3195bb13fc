"""``acpio agent``: the reference coding agent on stdin/stdout (see ``docs/agent.md``).

::

    OPENAI_API_KEY=... acpio agent
    acpio agent --model anthropic/claude-sonnet-4-5 --mode auto-edit
    acpio agent --offline                 # the scripted offline model: no key, no network
    acpio agent --login openai            # ask for a key on the terminal and keep it
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acpio.cli import Subcommands

__all__ = ["register", "run"]

_DESCRIPTION = """\
The reference coding agent: serve an editor (or acpio prompt) on stdin/stdout. It reads and edits
the project's files, runs commands in the editor's terminal (on ACP v2, --protocol 2 or both, it
runs them itself), uses the session's MCP servers, and keeps its sessions in a store (SQLite in the
user's data directory unless --store says otherwise).

Models come from the providers whose key is set (OPENAI_API_KEY, ANTHROPIC_API_KEY, or a key given
to authenticate or --login), from servers named in the settings (a local Ollama or llama.cpp), or
with --offline from a scripted offline model that needs neither key nor network. Settings:
~/.config/acpio/agent.toml, then <project>/.acpio/agent.toml, then --settings FILE.
"""


def register(subparsers: Subcommands) -> None:
    """Add the ``agent`` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "agent",
        help="the reference coding agent (OpenAI-compatible, Anthropic, or offline models)",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--model", help="the model of new sessions: provider/id (offline/coder, openai/gpt-4o...)"
    )
    parser.add_argument(
        "--mode", help="the mode of new sessions (ask, auto-edit, read-only, or the settings')"
    )
    parser.add_argument(
        "--offline", action="store_true", help="offer the scripted offline model (no key, no network)"
    )
    parser.add_argument(
        "--store",
        default="sqlite:",
        metavar="URL",
        help="where sessions are kept: sqlite:///RELATIVE/PATH, sqlite:////ABSOLUTE/PATH, postgresql://..., "
        "memory: (default: SQLite in "
        "the user's data directory)",
    )
    parser.add_argument("--settings", type=Path, metavar="FILE", help="a settings file read after the others")
    parser.add_argument(
        "--credentials", type=Path, metavar="FILE", help="the credential file (default: in ~/.config/acpio)"
    )
    parser.add_argument(
        "--unstable",
        action="store_true",
        help="turn on ACP's unstable methods: auth/status and its updates, session fork, archive, title",
    )
    parser.add_argument(
        "--protocol",
        choices=("1", "2", "both"),
        default="1",
        help="the ACP versions served: 1 (the default), 2, or both (each client gets the version it asks "
        "for); on v2 the agent edits files and runs commands itself",
    )
    parser.add_argument(
        "--login", metavar="PROVIDER", help="ask for PROVIDER's API key on the terminal, keep it, and exit"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Serve the agent on stdio, or log in."""
    from acpio.cli import CliError, note_if_terminal

    if args.login:
        return _login(args.login, args.credentials, args.settings)
    from acpio.agents.coder.agent import CoderOptions, coder_app
    from acpio.store import StoreError

    options = CoderOptions(
        store=args.store,
        settings=args.settings,
        credentials=args.credentials,
        model=args.model,
        mode=args.mode,
        offline=args.offline or bool(args.model and args.model.startswith("offline/")),
        unstable=args.unstable,
        protocols=(1, 2) if args.protocol == "both" else ((2,) if args.protocol == "2" else (1,)),
    )
    if args.settings is not None and not args.settings.is_file():
        raise CliError(f"the settings file {args.settings} does not exist")
    try:
        app = coder_app(options)
    except (StoreError, ValueError) as exc:
        raise CliError(str(exc)) from exc
    note_if_terminal("acpio agent")
    app.run()
    return 0


def _login(provider: str, credentials: Path | None, settings: Path | None) -> int:
    import getpass

    from acpio.agents.coder.catalogue import provider_classes
    from acpio.agents.coder.settings import CredentialFile, SettingsError, load_settings
    from acpio.cli import CliError

    try:
        classes = provider_classes(load_settings(Path.cwd(), settings))
    except SettingsError as exc:
        raise CliError(str(exc)) from exc
    if provider not in classes:
        known = ", ".join(sorted(name for name, cls in classes.items() if cls.spec.key_env))
        raise CliError(f"no provider {provider!r} takes a key here; these do: {known}")
    spec = classes[provider].spec
    if spec.key_env is None:
        raise CliError(f"the {spec.title} provider needs no key")
    key = getpass.getpass(f"{spec.title} API key (as in {spec.key_env}; not shown): ").strip()
    if not key:
        print("No key given; nothing stored.", file=sys.stderr)
        return 1
    store = CredentialFile(credentials)
    store.set(spec.name, key)
    print(f"Stored the {spec.title} key in {store.path} (readable by you only).", file=sys.stderr)
    return 0
