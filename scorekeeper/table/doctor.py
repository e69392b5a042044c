"""`dicetray doctor`: check what usually goes wrong when setting up the table, and say how to fix it.

Each check returns a `CheckResult` (ok, warn or FAIL, what was found, and the fix); nothing
here changes the system. Probes that touch hardware are parameters, so tests replace them.
"""

from __future__ import annotations

import grp
import importlib
import importlib.metadata
import logging
import os
import platform
import shutil
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, NamedTuple

log = logging.getLogger(__name__)

DISK_FAIL_BYTES = 200 * 1024**2
DISK_WARN_BYTES = 1024**3
CAMERA_TIMEOUT_S = 8.0


@dataclass(frozen=True)
class CheckResult:
    name: str
    level: str  # "ok", "warn" or "FAIL"
    detail: str
    fix: str = ""


class DiskUsage(NamedTuple):
    total: int
    used: int
    free: int


def on_raspberry_pi(model_file: Path = Path("/proc/device-tree/model")) -> bool:
    try:
        return "raspberry pi" in model_file.read_text(errors="ignore").lower()
    except OSError:
        return False


def _version(dist: str, module: Any = None) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return str(getattr(module, "__version__", "?"))


def check_python() -> CheckResult:
    version = platform.python_version()
    if sys.version_info < (3, 11):
        return CheckResult("python", "FAIL", f"Python {version}", "dicetray needs Python 3.11 or newer")
    return CheckResult("python", "ok", f"Python {version} ({sys.executable})")


def check_libraries() -> list[CheckResult]:
    results = []
    for module_name, dist in (("numpy", "numpy"), ("cv2", "opencv-python-headless"), ("flask", "flask"),
                              ("uvicorn", "uvicorn"), ("a2wsgi", "a2wsgi"), ("pydantic", "pydantic")):
        try:
            module = importlib.import_module(module_name)
        except ImportError as error:
            results.append(CheckResult(module_name, "FAIL", f"cannot import: {error}",
                                       "pip install -e . inside the venv (see docs/raspberry-pi.md)"))
            continue
        where = Path(getattr(module, "__file__", "") or "?").parent
        results.append(CheckResult(module_name, "ok", f"{_version(dist, module)} from {where}"))
    return results


@dataclass(frozen=True)
class PiLibraries:
    """The one numpy and OpenCV that work beside a Raspberry Pi OS release's own picamera2."""

    numpy_major: int
    opencv_major: int
    what: str
    install: str


#: Per Raspberry Pi OS release (VERSION_CODENAME): the OS's picamera2 and simplejpeg are built
#: against the OS's numpy, so the venv must keep that numpy and take the OpenCV built for it.
#: OpenCV 5 needs numpy 2; opencv-python-headless 4.10 is the last wheel built against numpy 1.
PI_LIBRARIES = {
    "bookworm": PiLibraries(1, 4, "the OS's numpy 1.24 with opencv-python-headless 4.10",
                            "in a --system-site-packages venv: pip install -c deploy/pi-bookworm.txt -e ."),
    "trixie": PiLibraries(2, 5, "the OS's numpy 2 with opencv-python-headless 5.0",
                          "in a --system-site-packages venv: pip install -e ."),
}


def os_codename(os_release: Path = Path("/etc/os-release")) -> str:
    """VERSION_CODENAME of /etc/os-release ("bookworm"), or "" where it is not told."""
    try:
        lines = os_release.read_text(errors="ignore").splitlines()
    except OSError:
        return ""
    for line in lines:
        key, _, value = line.partition("=")
        if key.strip() == "VERSION_CODENAME":
            return value.strip().strip('"').lower()
    return ""


def check_pi_libraries(codename: str, numpy_version: str, opencv_version: str, pi: bool) -> CheckResult:
    """numpy and OpenCV are the pair that works with this Raspberry Pi OS release's picamera2."""
    found = f"numpy {numpy_version}, OpenCV {opencv_version}"
    wanted = PI_LIBRARIES.get(codename)
    if not pi:
        return CheckResult("pi libraries", "ok", f"{found} (not a Raspberry Pi: any numpy from 1.24 with its OpenCV)")
    if wanted is None:
        known = " or ".join(name.capitalize() for name in PI_LIBRARIES)
        return CheckResult("pi libraries", "warn", f"{found} on Raspberry Pi OS {codename or '(release unknown)'}",
                           f"dicetray is tested on Raspberry Pi OS {known}: see docs/raspberry-pi.md")
    majors = (_major(numpy_version), _major(opencv_version))
    if majors == (wanted.numpy_major, wanted.opencv_major):
        return CheckResult("pi libraries", "ok", f"{found}: {wanted.what}, as {codename.capitalize()} needs")
    return CheckResult("pi libraries", "FAIL", f"{found}; {codename.capitalize()} needs {wanted.what}",
                       wanted.install + " (see docs/raspberry-pi.md)")


def _major(version: str) -> int:
    head = version.split(".", 1)[0]
    return int(head) if head.isdigit() else -1


def check_picamera2(loader: Callable[[], Any] | None = None, pi: bool | None = None) -> CheckResult:
    """picamera2 from the OS packages, and a numpy it can live with."""
    pi = on_raspberry_pi() if pi is None else pi
    try:
        module = loader() if loader is not None else importlib.import_module("picamera2")
    except ImportError as error:
        text = str(error)
        if "numpy" in text or "multiarray" in text or "dtype size changed" in text:
            import numpy

            return CheckResult("picamera2", "FAIL", f"picamera2 is installed but fails with numpy {numpy.__version__}: {text}",
                               "the OS picamera2 is built against the OS numpy: make the venv again with "
                               "--system-site-packages and the OS release's install command (Bookworm: "
                               "`pip install -c deploy/pi-bookworm.txt -e .`; see docs/raspberry-pi.md)")
        if pi:
            return CheckResult("picamera2", "FAIL", "not importable",
                               "sudo apt install python3-picamera2, and make the venv with "
                               "`python3 -m venv --system-site-packages`")
        return CheckResult("picamera2", "warn", "not installed (only the Raspberry Pi camera needs it)",
                           "on a Pi: sudo apt install python3-picamera2; elsewhere use --source usb:N")
    except Exception as error:  # a broken libcamera raises more than ImportError
        return CheckResult("picamera2", "FAIL", f"import fails: {error}",
                           "sudo apt update && sudo apt full-upgrade (picamera2 and libcamera must match)")
    return CheckResult("picamera2", "ok", f"{_version('picamera2', module)} from {Path(module.__file__ or '?').parent}")


def check_camera(source: str | None, finder: Callable[[], tuple[str | None, str]] | None = None,
                 opener: Callable[[str], Any] | None = None, timeout: float = CAMERA_TIMEOUT_S) -> CheckResult:
    """The configured source delivers a frame; without one, whether a Pi camera is attached."""
    from scanner.sources import open_source
    from scorekeeper.table.sources import find_camera

    if source is None:
        found, reason = (finder or find_camera)()
        if found is None:
            return CheckResult("camera", "warn", f"no camera found: {reason}",
                               "check the ribbon cable (contacts towards the board on a Pi 5, the lens on older "
                               "Pis), run `rpicam-hello --list-cameras`, or give --source usb:N for a USB camera; "
                               "without a camera dicetray serves manual entry")
        source = found
    result: dict[str, Any] = {}

    def grab() -> None:
        try:
            frames = (opener or (lambda spec: open_source(spec)))(source)
            frames.open()
            try:
                frame = frames.read()
                result["shape"] = None if frame is None else frame.image.shape
            finally:
                frames.close()
        except Exception as error:  # whatever the backend raises, the user needs the sentence
            result["error"] = error

    thread = threading.Thread(target=grab, name="doctor-camera", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        return CheckResult("camera", "FAIL", f"{source} gave no frame within {timeout:g} s",
                           "another program may hold the camera (stop `dicetray serve` or the service first), "
                           "or the cable is loose")
    if "error" in result:
        return CheckResult("camera", "FAIL", f"{source}: {result['error']}",
                           "check the source spec and that the camera is attached")
    if result.get("shape") is None:
        return CheckResult("camera", "FAIL", f"{source} opened but delivered no frame", "check the source")
    height, width = result["shape"][:2]
    return CheckResult("camera", "ok", f"{source} delivers {width}x{height} frames")


def check_video_group(devices: list[Path] | None = None) -> CheckResult:
    """Camera device nodes this user may open (the service user must be in the video group)."""
    devices = sorted(Path("/dev").glob("video*")) + sorted(Path("/dev").glob("media*")) if devices is None else devices
    if not devices:
        return CheckResult("video group", "ok", "no /dev/video* or /dev/media* nodes here")
    blocked = [str(d) for d in devices if not os.access(d, os.R_OK | os.W_OK)]
    if blocked:
        try:
            group = grp.getgrgid(os.stat(blocked[0]).st_gid).gr_name
        except (KeyError, OSError):
            group = "video"
        return CheckResult("video group", "FAIL", f"this user cannot open {', '.join(blocked[:3])}",
                           f"sudo usermod -aG {group} $USER, then log out and in (the service user too)")
    return CheckResult("video group", "ok", f"{len(devices)} camera device node(s) can be opened")


def check_data_dir(data_dir: Path) -> CheckResult:
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        probe = data_dir / f".doctor-{os.getpid()}"
        with open(probe, "wb") as handle:
            handle.write(b"ok")
            handle.flush()
            os.fsync(handle.fileno())
        probe.unlink()
    except OSError as error:
        return CheckResult("data directory", "FAIL", f"{data_dir} is not writable: {error.strerror or error}",
                           f"sudo chown -R $USER {data_dir}, or point --data / DICETRAY_DATA_DIR elsewhere")
    database = data_dir / "games.sqlite3"
    if database.exists():
        from scorekeeper.store import GameStore

        try:
            with GameStore(database) as store:
                games = len(store.list_games())
        except Exception as error:  # a damaged or foreign file: say which
            return CheckResult("data directory", "FAIL", f"{database} cannot be opened: {error}",
                               "restore it from a backup, or move it away to start a fresh game log")
        return CheckResult("data directory", "ok", f"{data_dir} is writable; {games} game(s) in the log")
    return CheckResult("data directory", "ok", f"{data_dir} is writable (no games yet)")


def check_profile(profile: Path | None, data_dir: Path) -> list[CheckResult]:
    """The profile serve will use: --profile, else the data directory's active one; every saved
    profile must load too (the wizard may switch to any of them)."""
    from calibration.library import ProfileLibrary
    from scanner.profile import load_profile

    results = []
    library = ProfileLibrary(data_dir)
    for path in sorted(library.folder.glob("*.json")) if library.folder.is_dir() else []:
        if profile is not None and path.resolve() == Path(profile).resolve():
            continue
        try:
            load_profile(path)
        except ValueError as error:
            results.append(CheckResult("calibration", "FAIL", str(error),
                                       f"re-calibrate, or remove {path} (dicetray calibrate list shows them all)"))
    chosen, how = (profile, "--profile") if profile is not None else (library.active_path(), "active")
    if chosen is None:
        return [CheckResult("calibration", "warn", "no calibration profile is active: the scanner uses its defaults",
                            "run the calibration wizard (the Calibrate camera button on the home page) or "
                            "dicetray calibrate use NAME")] + results
    try:
        loaded = load_profile(chosen)
    except ValueError as error:  # ProfileError names the field at fault and the fix
        return [CheckResult("calibration", "FAIL", str(error),
                            "re-calibrate, or start without --profile" if how == "--profile" else
                            "re-calibrate, or choose another with dicetray calibrate use NAME")] + results
    return [CheckResult("calibration", "ok", f"{how} profile {loaded.name!r} ({chosen}) is valid")] + results


def check_disk(data_dir: Path, usage: Callable[[Path], Any] = shutil.disk_usage) -> CheckResult:
    where = data_dir
    while not where.exists() and where != where.parent:
        where = where.parent
    free = usage(where).free
    text = f"{free / 1024**3:.1f} GiB free for {data_dir}"
    if free < DISK_FAIL_BYTES:
        return CheckResult("disk", "FAIL", text, "free some space: roll photos and the game log need room to grow")
    if free < DISK_WARN_BYTES:
        return CheckResult("disk", "warn", text, "under 1 GiB left: an evening's roll photos take tens of MiB")
    return CheckResult("disk", "ok", text)


def run_checks(data_dir: Path, source: str | None = None, profile: Path | None = None,
               camera_finder: Callable[[], tuple[str | None, str]] | None = None,
               picamera_loader: Callable[[], Any] | None = None,
               disk_usage: Callable[[Path], Any] = shutil.disk_usage,
               devices: list[Path] | None = None, pi: bool | None = None,
               os_release: Path = Path("/etc/os-release")) -> list[CheckResult]:
    """Every check, in the order a user would fix things."""
    import cv2
    import numpy

    pi = on_raspberry_pi() if pi is None else pi
    return [
        check_python(),
        *check_libraries(),
        check_pi_libraries(os_codename(os_release), numpy.__version__, cv2.__version__, pi),
        check_picamera2(picamera_loader, pi),
        check_video_group(devices),
        check_camera(source, camera_finder),
        check_data_dir(Path(data_dir)),
        *check_profile(profile, Path(data_dir)),
        check_disk(Path(data_dir), disk_usage),
    ]
