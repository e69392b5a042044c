"""`dicetray bench scanner`: the scanner's accuracy, settle latency and speed over the labelled
fixtures (evaluation only: nothing on the Pi imports it)."""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import Sequence

import cv2
import numpy as np

from scanner.evaluate import Scorecard, failure_lines, percentile, score_perturbed
from scanner.frames import DieReading, Roll
from scanner.labels import BLOWN_OUT, LabelledPhoto, load_video_label, photo_labels
from scanner.reader import Scanner, load_scanner
from scanner.settle import SettleWatcher
from scanner.sources import open_source

#: The repository's fixture library, benched unless another is given.
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
#: The bench lists this many missed, false, unsure and wrong dice (photo by photo), then a count.
MAX_FAILURES_SHOWN = 60
#: The Tally check set's folder in the fixture library (git-ignored; see fixtures/README.md).
CHECK_SET = "tallycheck"
#: The Tally hold set's: more tables of their own, rendered once the check set's rolls had been
#: tuned on (git-ignored too).
HOLD_SET = "tallyhold"
#: The Tally play set's: the rolls a game puts in the tray (the three chosen dice, the Up Die
#: alone or beside them, one or two bonus dice), on tables of their own (git-ignored too).
PLAY_SET = "tallyplay"
#: What the bench says of each such set's tables.
CHECK_SET_TITLES = {CHECK_SET: "tables of their own, tuned on since (rolls r00-r04)",
                    HOLD_SET: "tables nothing was tuned on",
                    PLAY_SET: "a game's rolls of one to four dice, on tables nothing was tuned on"}



#: The dice of a whole set: the issues' speed targets are for frames that show them all.
FULL_SET = {"tossup": 10, "tallyup": 7}
#: Reads of each whole-set photo whose fastest the bench also reports: a single read on a busy
#: machine (another process, the renderer, a browser) takes up to a third longer at random,
#: while the fastest of a few is what the reader itself costs (timeit's reasoning).
TIMING_READS = 3


def bench_scanner(split: str, dice_sets: list[str], fixtures: Path, profile: Path | None, out=None,
                  perturbed: bool = False, scanner: Scanner | None = None, title: str | None = None) -> dict:
    """Accuracy, settle latency and speed over the labelled fixtures; prints and returns the figures.
    `perturbed`: also the accuracy on every photo as other cameras would take it (PERTURBATIONS).
    `scanner`: read with this one (of the one dice set benched) instead of the profile's;
    `title`: what the report's heading calls the dice set."""
    out = out if out is not None else sys.stdout  # the stream of the moment (click's, under test)
    # The speed target is for one core (a Pi 5 core keeps up with 30 fps if this does).
    cv2.setNumThreads(1)
    results: dict = {}
    for dice_set in dice_sets:
        folder = fixtures / dice_set
        labels = list(photo_labels(folder, split=split))
        if not labels:
            print(f"[{dice_set}] no labelled photos in {folder} for split {split!r}", file=out)
            continue
        reader = scanner or load_scanner(dice_set, profile)
        card = Scorecard()
        visible_card = Scorecard()  # only dice at least half visible (not hidden by the wall)
        # Only dice whose print the lamp's glare left to read: not those whose top face it
        # blew out (scene.glare_fraction) where the print is light, for a print blown out to
        # white is unreadable to anyone, and "unsure" is its right reading. (A dark print on a
        # white body, the Up Die's, stays readable and counts.)
        unblown_card = Scorecard()
        surface_cards: dict[str, Scorecard] = {}  # where the tray is the hard part
        timings = []
        full_set_timings = []  # photos of the whole set: the speed targets' own condition
        full_set_fastest = []  # ...each the fastest of TIMING_READS reads
        for label in labels:
            image = cv2.imread(str(label.image), cv2.IMREAD_COLOR)
            if image is None:
                print(f"[{dice_set}] cannot read {label.image}", file=out)
                continue
            dice, took = _timed_read(reader, image)
            timings.append(took)
            if len(label.dice) == FULL_SET[dice_set]:
                full_set_timings.append(took)
                full_set_fastest.append(min([took, *(_timed_read(reader, image)[1] for _ in range(TIMING_READS - 1))]))
            card.add(label.image.name, label.dice, dice)
            fractions = label.scene.get("visible_fraction") or [1.0] * len(label.dice)
            visible_card.add(label.image.name, [d for d, f in zip(label.dice, fractions) if f >= 0.5], dice)
            glare = label.scene.get("glare_fraction") or [0.0] * len(label.dice)
            unblown_card.add(label.image.name, [d for d, g in zip(label.dice, glare)
                                                if g < BLOWN_OUT or not reader.print_lost_to_glare(d.die)], dice)
            surface = str(label.scene.get("surface", "unknown"))
            surface_cards.setdefault(surface, Scorecard()).add(label.image.name, label.dice, dice)
        summary = card.summary()
        summary["ms_median"] = percentile(timings, 0.5)
        summary["ms_p95"] = percentile(timings, 0.95)
        summary["ms_median_full_set"] = percentile(full_set_timings, 0.5) if full_set_timings else math.nan
        summary["ms_median_full_set_fastest"] = percentile(full_set_fastest, 0.5) if full_set_fastest else math.nan
        summary["photos"] = len(timings)
        print(f"[{title or dice_set}] split={split} photos={len(timings)} dice={summary['labelled_dice']}", file=out)
        for key in ("detection_recall", "detection_precision", "face_accuracy", "read_right_of_all", "identity_accuracy",
                    "unsure_rate", "wrong_confident_rate", "cocked_recall"):
            # A rate with nothing to count (identity of Toss Up dice, which are all alike) is "n/a".
            shown = f"{summary[key] * 100:8.3f} %" if not math.isnan(summary[key]) else f"{'n/a':>8s}"
            print(f"  {key:22s} {shown}", file=out)
        visible = visible_card.summary()
        summary["detection_recall_half_visible"] = visible["detection_recall"]
        print(f"  {'recall, >=50% visible':22s} {visible['detection_recall'] * 100:8.3f} %"
              f"  ({visible['labelled_dice']} dice)", file=out)
        by_surface = {name: c.summary() for name, c in sorted(surface_cards.items())}
        summary["recall_by_surface"] = {name: s["detection_recall"] for name, s in by_surface.items()}
        # The test split's tables need not lie on the floors the dev split's do: where the
        # hard part is shows per floor.
        summary["identity_by_surface"] = {name: s["identity_accuracy"] for name, s in by_surface.items()}
        summary["faces_by_surface"] = {name: s["face_accuracy"] for name, s in by_surface.items()}
        for name, s in by_surface.items():
            identity = "" if math.isnan(s["identity_accuracy"]) else f"  identity {s['identity_accuracy'] * 100:7.3f} %"
            faces = "" if math.isnan(s["face_accuracy"]) else f"  faces {s['face_accuracy'] * 100:7.3f} %"
            print(f"  {'  on ' + name:22s} {s['detection_recall'] * 100:8.3f} %  ({surface_cards[name].labelled} dice)"
                  f"{identity}{faces}", file=out)
        unblown = unblown_card.summary()
        summary["face_accuracy_unblown"] = unblown["face_accuracy"]
        print(f"  {'faces, print unblown':22s} {unblown['face_accuracy'] * 100:8.3f} %"
              f"  (of those found among the {_flat(unblown)} of {_flat(summary)} flat dice whose print glare"
              f" left to read: not a light print on a top face at least {BLOWN_OUT:.0%} blown out)", file=out)
        print(f"  {'cocked_false_alarms':22s} {summary['cocked_false_alarms']:8d}", file=out)
        print(f"  {'cocked read as flat':22s} {summary['cocked_scored']:8d}  (of {summary['cocked_labelled']} cocked dice:"
              f" scored, not sent back to be rolled again; {summary['cocked_scored_other_face']} of them as another die"
              " or face than the one on top)", file=out)
        print(f"  {'wrong, off top face':22s} {summary['wrong_off_top']:8d}  (in wrong_confident_rate)", file=out)
        print(f"  ms per frame           median {summary['ms_median']:.1f}  p95 {summary['ms_p95']:.1f}", file=out)
        if full_set_timings:
            print(f"    {'all ' + str(FULL_SET[dice_set]) + ' dice':21s}median {summary['ms_median_full_set']:.1f}"
                  f"  ({len(full_set_timings)} photos)", file=out)
            print(f"    {'fastest of ' + str(TIMING_READS) + ' reads':21s}median {summary['ms_median_full_set_fastest']:.1f}"
                  "  (each of those photos read again: what the reader costs, without the machine's other work)",
                  file=out)
        print("  confusion (rows: truth, columns: read):", file=out)
        for line in card.confusion_table().splitlines():
            print("    " + line, file=out)
        for line in failure_lines(card.failures, MAX_FAILURES_SHOWN):
            print("  " + line, file=out)
        if perturbed:
            summary["perturbed"] = bench_perturbed(labels, reader, f"[{title or dice_set}]", out)
        summary["videos"] = bench_videos(fixtures / "videos", dice_set, reader, out)
        results[dice_set] = summary
    return results


def _timed_read(reader: Scanner, image: np.ndarray) -> tuple[Sequence[DieReading], float]:
    """(the dice `reader` reads in `image`, the milliseconds the read took)."""
    start = time.perf_counter()
    dice = reader.read(image)
    return dice, (time.perf_counter() - start) * 1000


def bench_check_set(fixtures: Path, profile: Path | None, out=None, perturbed: bool = False,
                    name: str = CHECK_SET) -> dict | None:
    """The Tally reader on the check, hold or play set (`name`, see CHECK_SET_TITLES: tables
    of their own, which nothing learns from), printed like the test split's figures, all its
    photos; None (and a line saying so) where it is not rendered: it is left out of the
    repository."""
    out = out if out is not None else sys.stdout
    folder = fixtures / name
    if not (folder / "tallyup").is_dir():
        print(f"[tallyup, {name}/] not rendered here ({folder}; see fixtures/README.md)", file=out)
        return None
    title = f"tallyup, {name}/ {CHECK_SET_TITLES[name]}"
    return bench_scanner(None, ["tallyup"], folder, profile, out, perturbed=perturbed, title=title).get("tallyup")


def _flat(summary: dict) -> int:
    """How many labelled dice of a Scorecard summary lie flat."""
    return int(summary["labelled_dice"]) - int(summary["cocked_labelled"])


def bench_perturbed(labels: list[LabelledPhoto], scanner: Scanner, name: str, out) -> dict[str, dict]:
    """Accuracy on the photos changed as another camera would (see PERTURBATIONS), per change and
    over all of them; printed as one line each."""
    cards = score_perturbed(scanner.read, labels)
    print(f"  {name} the same photos as other cameras would take them:", file=out)
    results = {}
    for change, card in [*cards.items(), ("all changes", Scorecard.merged(cards.values()))]:
        s = results[change] = card.summary()
        identity = "" if math.isnan(s["identity_accuracy"]) else f"  identity {s['identity_accuracy'] * 100:6.2f}"
        print(f"    {change:12s} recall {s['detection_recall'] * 100:6.2f}  precision {s['detection_precision'] * 100:6.2f}"
              f"{identity}  faces {s['face_accuracy'] * 100:6.2f}  unsure {s['unsure_rate'] * 100:5.2f} %"
              f"  wrong {card.wrong_confident} ({s['wrong_confident_rate'] * 100:.2f} %)", file=out)
    return results


def bench_videos(folder: Path, dice_set: str, scanner: Scanner, out) -> list[dict]:
    """Settle latency and correctness per fixture video of one dice set."""
    rows = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        label = load_video_label(path)
        if label.dice_set != dice_set:
            continue
        source = open_source(str(label.video), fps=label.fps)
        watcher = SettleWatcher(scanner.read, fps=label.fps)
        rolls = [e for frame in source for e in watcher.feed(frame) if isinstance(e, Roll)]
        source.close()
        matched = []
        for truth, roll in zip(label.rolls, rolls):
            card = Scorecard()
            card.add(path.stem, truth.dice, roll.dice)
            s = card.summary()
            matched.append({
                "latency_s": (roll.frame - truth.settled_frame) / label.fps,
                "faces_right": s["face_accuracy"] == 1.0 and s["detection_recall"] == 1.0
                and s["detection_precision"] == 1.0,
                "wrong_confident": card.wrong_confident,
            })
        row = {"video": path.stem, "rolls_labelled": len(label.rolls), "rolls_read": len(rolls), "rolls": matched}
        rows.append(row)
        latencies = ", ".join(f"{m['latency_s']:+.2f}s{'' if m['faces_right'] else ' WRONG'}" for m in matched)
        print(f"  video {path.stem}: {len(rolls)} readings for {len(label.rolls)} rolls; latency {latencies}", file=out)
    return rows
