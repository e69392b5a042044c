"""The `dicetray` command line."""

from __future__ import annotations

import logging
import secrets
import signal
from pathlib import Path
from types import FrameType

import click

from scorekeeper import __version__

log = logging.getLogger(__name__)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="dicetray")
def main() -> None:
    """dicetray: a camera reads the dice in the tray, a tablet shows the scores."""


@main.command()
@click.option("--host", "host", default="0.0.0.0", show_default=True,
              help="Address to listen on (0.0.0.0: every interface, so phones can connect).")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on (0 picks a free one).")
@click.option("--data", "data_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Data directory (default: $DICETRAY_DATA_DIR or ~/.local/share/dicetray).")
@click.option("--host-token", envvar="DICETRAY_HOST_TOKEN", default=None, show_envvar=True,
              help="Token for host actions (default: a new random one each start).")
@click.option("--threads", default=64, show_default=True, type=click.IntRange(64, 1024),
              help="Worker threads; every open live page holds one.")
def serve(host: str, port: int, data_dir: Path | None, host_token: str | None, threads: int) -> None:
    """Serve the scoreboard (table, phones, history) with waitress."""
    from scorekeeper.web import create_app
    from scorekeeper.web.app import EXTENSION
    from scorekeeper.web.server import lan_address
    from waitress import create_server

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    token = host_token or secrets.token_urlsafe(12)
    app = create_app({"DATA_DIR": data_dir, "HOST_TOKEN": token})
    server = create_server(app, host=host, port=port, threads=threads, ident="dicetray")
    actual_port = server.effective_port  # type: ignore[union-attr]
    shown = lan_address() if host in ("0.0.0.0", "", "::") else host
    base = f"http://{shown}:{actual_port}"
    app.config["PUBLIC_URL"] = base
    click.echo(f"dicetray scoreboard: {base}/")
    click.echo(f"Host (table) URL, keep it private: {base}/?host={token}")
    click.echo(f"Players: scan the QR code on the table page, or open {base}/play")
    click.echo(f"Data: {app.config['DATA_DIR']}")

    board = app.extensions[EXTENSION]

    def _stop(signum: int, frame: FrameType | None) -> None:
        # Open streams would keep their threads busy; end them so waitress can shut down.
        board.broker.close()
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    server.run()  # returns after SIGINT/SIGTERM (waitress swallows the KeyboardInterrupt)
    click.echo("stopping")
    board.close()


@main.group()
def bench() -> None:
    """Measure how fast parts of dicetray are on this machine."""


@bench.command("web")
@click.option("--clients", default=50, show_default=True, type=click.IntRange(1, 500),
              help="Concurrent stream clients.")
@click.option("--events", default=100, show_default=True, type=click.IntRange(1, 10000),
              help="Events to post, one after another.")
@click.option("--timeout", default=60.0, show_default=True, type=click.FloatRange(1, 600),
              help="Give up after this many seconds.")
def bench_web(clients: int, events: int, timeout: float) -> None:
    """Time from an accepted event to every open stream having it (loopback only)."""
    from scorekeeper.web.bench import run_web_bench

    result = run_web_bench(clients=clients, events=events, timeout=timeout)
    click.echo(f"{result.clients} stream clients, {result.events} events on 127.0.0.1")
    click.echo(f"event posted -> every client has it: median {result.median_ms:.1f} ms, "
               f"p95 {result.p95_ms:.1f} ms, max {max(result.latencies_ms, default=float('nan')):.1f} ms")
    click.echo(f"POST round trip (commit included): median {result.post_median_ms:.1f} ms")
    if result.timed_out:
        raise click.ClickException(f"timed out after {timeout} s; only {result.events} events were measured")


@bench.command("scanner")
@click.option("--split", type=click.Choice(["dev", "test", "all"]), default="test", show_default=True)
@click.option("--dice", "dice_set", type=click.Choice(["tossup", "tallyup", "all"]), default="tossup", show_default=True)
@click.option("--fixtures", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Fixture library (default: the repository's fixtures/).")
@click.option("--profile", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None)
def bench_scanner_command(split: str, dice_set: str, fixtures: Path | None, profile: Path | None) -> None:
    """Detection and face accuracy, settle latency and speed on the labelled fixtures."""
    from scanner.cli import FIXTURES, bench_scanner

    sets = ["tossup", "tallyup"] if dice_set == "all" else [dice_set]
    bench_scanner(None if split == "all" else split, sets, fixtures or FIXTURES, profile)


def _register_scanner_commands() -> None:
    from scanner.cli import scan_command, watch_command

    main.add_command(scan_command)
    main.add_command(watch_command)


_register_scanner_commands()


if __name__ == "__main__":  # pragma: no cover
    main()
