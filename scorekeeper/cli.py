"""The `dicetray` command line."""

from __future__ import annotations

import json
import logging
import os
import secrets
import signal
import socket
import sys
from pathlib import Path

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
              help="Data directory (default: $DICETRAY_DATA_DIR or ~/.local/share/dicetray; the demo uses its demo/ folder).")
@click.option("--host-token-file", envvar="DICETRAY_HOST_TOKEN_FILE", show_envvar=True, default=None,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="File holding the token for host actions, at least 16 characters (or set $DICETRAY_HOST_TOKEN; "
                   "default: a new random one each start). Never on the command line: `ps` shows it to everyone.")
@click.option("--threads", default=16, show_default=True, type=click.IntRange(4, 256),
              help="Worker threads for pages and the API (open live pages hold none).")
@click.option("--source", envvar="DICETRAY_SOURCE", show_envvar=True, default=None,
              help="Camera: picamera2, usb:N, a stream URL, a video file or a folder of photos "
                   "(default: the Raspberry Pi camera when one is found, else manual entry only).")
@click.option("--demo", is_flag=True, help="Replay the bundled fixture videos as if they were a camera.")
@click.option("--dice", "dice_set", type=click.Choice(["tossup", "tallyup"]), default=None,
              help="Dice set the camera reads (default: the dice of the game on the table).")
@click.option("--profile", envvar="DICETRAY_PROFILE", show_envvar=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Calibration profile for the scanner.")
def serve(host: str, port: int, data_dir: Path | None, host_token_file: Path | None, threads: int,
          source: str | None, demo: bool, dice_set: str | None, profile: Path | None) -> None:
    """Serve the scoreboard (table, phones, history) with uvicorn, and score from the camera."""
    from scorekeeper.table.live import DEMO_SOURCE, ConfigError
    from scorekeeper.table.sources import demo_source, find_camera
    from scorekeeper.paths import default_data_dir
    from scorekeeper.web import create_app
    from scanner.sources import SourceUnavailable
    from scorekeeper.web.app import EXTENSION
    from scorekeeper.web.server import WebServer, lan_address

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    os.umask(0o077)  # games, roll photos and profiles: readable by this user only
    _allow_many_connections()
    if demo and source:
        raise click.UsageError("use either --demo or --source, not both")
    live_source: object = source
    camera_note = ""
    if demo:
        try:
            _, camera_note = demo_source()  # says what it replays, or why it cannot
            live_source = DEMO_SOURCE
        except SourceUnavailable as error:
            raise click.ClickException(str(error)) from error
        data_dir = data_dir or default_data_dir() / "demo"  # the demo never mixes with real games
    elif source:
        if source != "picamera2" and not source.startswith("usb:") and "://" not in source and not Path(source).exists():
            # A typo in a path never turns into a camera by waiting: say so now, not in the log later.
            raise click.ClickException(f"--source {source}: no such file or folder (or use picamera2, usb:N or a URL)")
        camera_note = f"camera: {source}"
    else:
        live_source, reason = find_camera()
        camera_note = f"camera: {live_source} (found)" if live_source else (
            f"No camera found ({reason}) and no --source given: serving the scoreboard for manual entry. "
            "Use --source usb:0 for a USB camera, --source VIDEO to replay a video, or --demo.")
    if profile is None:
        # The profile made active by the calibration wizard or `dicetray calibrate use`.
        from calibration.library import ProfileLibrary

        profile = ProfileLibrary(data_dir or default_data_dir()).active_path()
    taken = _port_taken(host, port)
    if taken is not None:  # before the app exists: no camera started, no "ready" said
        raise click.ClickException(_busy_port(host, port, taken))
    token = _host_token(host_token_file) or secrets.token_urlsafe(12)
    config = {"DATA_DIR": data_dir, "HOST_TOKEN": token, "LIVE_SOURCE": live_source,
              "LIVE_DICE": dice_set, "LIVE_PROFILE": profile}
    try:
        app = create_app(config)
    except ConfigError as error:
        raise click.ClickException(str(error)) from error
    board = app.extensions[EXTENSION]
    try:
        server = WebServer(app, host=host, port=port, threads=threads)
    except OSError as error:
        board.close()  # taken since the check above: the camera thread is running already
        raise click.ClickException(_busy_port(host, port, error)) from error
    if demo:
        _demo_game(board)
    actual_port = server.port
    shown = lan_address() if host in ("0.0.0.0", "", "::") else host
    base = f"http://{shown}:{actual_port}"
    app.config["PUBLIC_URL"] = base
    click.echo(f"dicetray scoreboard: {base}/")
    click.echo(f"Host (table) URL, keep it private: {base}/?host={token}")
    click.echo(f"Players: scan the QR code on the table page, or open {base}/play")
    click.echo(f"Data: {app.config['DATA_DIR']}")
    click.echo(camera_note[:1].upper() + camera_note[1:])
    click.echo(f"Calibration profile: {profile}" if profile else "Calibration profile: none (built-in defaults)")

    # The first SIGINT/SIGTERM ends open streams and stops; later ones, even after the server
    # has stopped and while the camera's threads finish, are only logged (exit status 0).
    signal.signal(signal.SIGTERM, server.server.handle_exit)
    signal.signal(signal.SIGINT, server.server.handle_exit)
    server.run()
    click.echo("stopping")
    board.close()


def _allow_many_connections() -> None:
    """Raise the open-file limit to its maximum: every open live page is a socket."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 65536 if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


def _host_token(path: Path | None) -> str | None:
    """The host token from --host-token-file or $DICETRAY_HOST_TOKEN (checked by create_app)."""
    from_env = os.environ.get("DICETRAY_HOST_TOKEN") or None
    if path is None:
        return from_env
    if from_env:
        raise click.UsageError("set either DICETRAY_HOST_TOKEN or --host-token-file, not both")
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except (OSError, UnicodeDecodeError) as error:
        raise click.ClickException(f"cannot read the host token from {path}: {error}") from error


def _port_taken(host: str, port: int) -> OSError | None:
    """Why `host:port` cannot be listened on now (bound as the server binds it), or None."""
    if port == 0:
        return None
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as error:
        return error
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as error:
            return error
    return None


def _busy_port(host: str, port: int, error: OSError) -> str:
    return (f"cannot listen on {host}:{port} ({error.strerror or error}): is dicetray serve already running? "
            "Stop it, or choose another --port")


def _demo_game(board: object) -> None:
    """A Toss Up game of the demo's own for its replayed rolls to land in, unless one is in
    progress. Games started by hand are left to hand entry (or put on the table on purpose)."""
    from scorekeeper.table.live import DEMO_GAME

    games = board.list_games()  # type: ignore[attr-defined]
    if not any(not record.over and record.meta.get(DEMO_GAME) for record in games):
        loaded = board.create("tossup", ["Ann", "Bob"], {"target": 100}, meta={DEMO_GAME: True})  # type: ignore[attr-defined]
        click.echo(f"Demo: a Toss Up game for Ann and Bob (/games/{loaded.record.id}) is on the table.")


@main.command()
@click.option("--data", "data_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Data directory to check (default: $DICETRAY_DATA_DIR or ~/.local/share/dicetray).")
@click.option("--source", envvar="DICETRAY_SOURCE", show_envvar=True, default=None,
              help="The camera serve will use (default: look for the Raspberry Pi camera).")
@click.option("--profile", envvar="DICETRAY_PROFILE", show_envvar=True,
              type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The calibration profile serve will use.")
def doctor(data_dir: Path | None, source: str | None, profile: Path | None) -> None:
    """Check what usually goes wrong on a Pi: camera, libraries, data directory, profile, disk."""
    from scorekeeper.table.doctor import run_checks
    from scorekeeper.paths import default_data_dir

    results = run_checks(data_dir or default_data_dir(), source=source, profile=profile)
    width = max(len(r.name) for r in results)
    for result in results:
        click.echo(f"[{result.level:4s}] {result.name:{width}s}  {result.detail}")
        if result.fix:
            click.echo(f"       {'':{width}s}  fix: {result.fix}")
    failed = [r for r in results if r.level == "FAIL"]
    warned = [r for r in results if r.level == "warn"]
    click.echo(f"{len(failed)} problem(s), {len(warned)} warning(s)" if failed or warned else "everything looks fine")
    if failed:
        raise SystemExit(1)


@main.group()
def bench() -> None:
    """Measure how fast parts of dicetray are on this machine."""


@bench.command("web")
@click.option("--streams", "clients", default=50, show_default=True, type=click.IntRange(1, 5000),
              help="Open live pages (server-sent event streams) on one game.")
@click.option("--half-open", default=0, show_default=True, type=click.IntRange(0, 5000),
              help="Connections that send half a request and stall.")
@click.option("--events", default=100, show_default=True, type=click.IntRange(1, 10000),
              help="Events to post, one after another; each is timed until every page has it.")
@click.option("--api-requests", default=200, show_default=True, type=click.IntRange(1, 100000),
              help="API requests (GET .../view) timed while the pages are open.")
@click.option("--reload-tabs", default=0, show_default=True, type=click.IntRange(0, 5000),
              help="Extra pages that all reload at once, a few rounds, while the API is timed.")
@click.option("--games", default=0, show_default=True, type=click.IntRange(0, 100000),
              help="Games to play and leave afterwards, to measure the server's memory.")
@click.option("--timeout", default=60.0, show_default=True, type=click.FloatRange(1, 600),
              help="Give up after this many seconds.")
def bench_web(clients: int, half_open: int, events: int, api_requests: int, reload_tabs: int, games: int,
              timeout: float) -> None:
    """The API with many live pages open, event fan-out, reloads and memory (loopback only)."""
    from scorekeeper.web.bench import run_web_bench

    result = run_web_bench(clients=clients, events=events, timeout=timeout, half_open=half_open,
                           api_requests=api_requests, reload_tabs=reload_tabs, games=games)
    click.echo(f"{result.clients} stream clients, {result.half_open} half-open connections, {result.events} events "
               f"on 127.0.0.1 (server on CPU {result.server_cpus})")
    click.echo(f"snapshots received: {result.snapshots} of {result.clients + reload_tabs}")
    click.echo(f"API GET with the pages open: p50 {result.api_p50_ms:.1f} ms, p95 {result.api_p95_ms:.1f} ms, "
               f"max {max(result.api_ms, default=float('nan')):.1f} ms ({len(result.api_ms)} requests)")
    click.echo(f"event posted -> every client has it: median {result.median_ms:.1f} ms, "
               f"p95 {result.p95_ms:.1f} ms, max {max(result.latencies_ms, default=float('nan')):.1f} ms")
    click.echo(f"POST round trip (commit included): median {result.post_median_ms:.1f} ms")
    if reload_tabs:
        click.echo(f"{reload_tabs} tabs reloading at once, {result.reload_rounds} rounds: API max "
                   f"{max(result.reload_api_ms, default=float('nan')):.1f} ms, p95 {_p95(result.reload_api_ms):.1f} ms "
                   f"({len(result.reload_api_ms)} requests); pages without their snapshot: {result.reload_snapshots_missed}")
    if games:
        click.echo(f"server memory: {result.rss_empty_mib:.1f} MiB empty, {result.rss_games_mib:.1f} MiB after "
                   f"{games} games played and left (+{result.rss_games_mib - result.rss_empty_mib:.1f} MiB)")
    if result.timed_out:
        raise click.ClickException(f"timed out after {timeout} s; only {result.events} events were measured")


def _p95(values: list[float]) -> float:
    from scorekeeper.web.bench import _percentile

    return _percentile(values, 95)


@bench.command("soak")
@click.option("--minutes", default=10.0, show_default=True, type=click.FloatRange(0.05, 240),
              help="How long to replay.")
@click.option("--clients", default=20, show_default=True, type=click.IntRange(1, 500),
              help="Stream clients on 127.0.0.1.")
@click.option("--fps", default=30.0, show_default=True, type=click.FloatRange(1, 60))
def bench_soak(minutes: float, clients: int, fps: float) -> None:
    """Replay drawn throws at 30 fps through the live table with stream clients; count rolls and memory."""
    from scorekeeper.table.soak import run_soak

    result = run_soak(minutes=minutes, clients=clients, fps=fps, progress=click.echo)
    for line in result.lines():
        click.echo(line)
    if not result.passed:
        raise SystemExit(1)


@bench.command("scanner")
@click.option("--split", type=click.Choice(["dev", "test", "all", "unseen"]), default="test", show_default=True,
              help="unseen: the held-out look families and the real validation photos (lab/bench_unseen.py).")
@click.option("--dice", "dice_set", type=click.Choice(["tossup", "tallyup", "all"]), default="tossup", show_default=True)
@click.option("--fixtures", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Fixture library (default: the repository's fixtures/).")
@click.option("--profile", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None)
@click.option("--perturbed", is_flag=True,
              help="Also read every photo as other cameras would take it (resampled, JPEG, brighter, blurred, grainy).")
@click.option("--json", "as_json", is_flag=True, help="With --split unseen: print one JSON object last.")
def bench_scanner_command(split: str, dice_set: str, fixtures: Path | None, profile: Path | None,
                          perturbed: bool, as_json: bool) -> None:
    """Detection and face accuracy, settle latency and speed on the labelled fixtures; for the
    Tally Dice, also on the check, hold and play sets' tables where they are rendered (the play
    set's rolls also as a game takes them), and without a profile on the differently looking set
    after teaching. With --split unseen: on looks nothing learned from, and real photos."""
    if split == "unseen":
        _bench_unseen(dice_set, fixtures, as_json)
        return
    from lab.bench_calibration import bench_taught_look
    from lab.bench_scanner import CHECK_SET_TITLES, FIXTURES, PLAY_SET, bench_check_set, bench_scanner
    from scorekeeper.table.game_bench import bench_game_rolls

    sets = ["tossup", "tallyup"] if dice_set == "all" else [dice_set]
    chosen = None if split == "all" else split
    bench_scanner(chosen, sets, fixtures or FIXTURES, profile, perturbed=perturbed)
    if "tallyup" in sets:
        for name in CHECK_SET_TITLES:
            bench_check_set(fixtures or FIXTURES, profile, perturbed=perturbed, name=name)
        bench_game_rolls((fixtures or FIXTURES) / PLAY_SET / "tallyup", profile, sys.stdout)
    if "tallyup" in sets and profile is None:
        bench_taught_look(fixtures or FIXTURES, chosen, perturbed=perturbed)


def _bench_unseen(dice_set: str, fixtures: Path | None, as_json: bool) -> None:
    import cv2

    from calibration.teach import learn_tally_model
    from lab.bench_unseen import json_figures, run_unseen_bench
    from lab.bench_scanner import FIXTURES
    from scanner.reader import Scanner

    def make_scanner(chosen: str, tally_model=None) -> Scanner:
        return Scanner(chosen, tally=tally_model) if tally_model is not None else Scanner(chosen)

    def teach(photos):
        return learn_tally_model([(p.image.name, cv2.imread(str(p.image), cv2.IMREAD_COLOR), p.dice, p.scene)
                                  for p in photos]).model

    sets = ["tossup", "tallyup"] if dice_set == "all" else [dice_set]
    result = run_unseen_bench(fixtures or FIXTURES, sets, sys.stdout, make_scanner, teach)
    if as_json:
        click.echo(json.dumps(json_figures(result)))


@bench.command("calibration")
@click.option("--fixtures", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Fixture library (default: the repository's fixtures/).")
def bench_calibration_command(fixtures: Path | None) -> None:
    """Test-split accuracy with a changed look: Toss Up uncalibrated vs calibrated, Tally Up built-in vs taught."""
    from lab.bench_calibration import run_calibration_bench
    from lab.bench_scanner import FIXTURES

    run_calibration_bench(fixtures or FIXTURES, report=click.echo)


def _register_commands() -> None:
    from calibration.cli import calibrate
    from scanner.cli import scan_command, watch_command

    main.add_command(scan_command)
    main.add_command(watch_command)
    main.add_command(calibrate)


_register_commands()


if __name__ == "__main__":  # pragma: no cover
    main()
