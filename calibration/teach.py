"""Teaching the Tally reader the look of the user's own dice from labelled photos.

Physical setup assumed: the user's Tally Up set on their tray under their lamp, photographed
by the dicetray camera from above; each photo comes with a label file in the fixture schema
(which die lies where, which face is up). A handful of photos that together show every face of
every die a few times is enough: the look (body shades, ink, font, star) is all that is learned.

Learning is two passes. The body colours come first, from the labelled top faces; with them the
detector finds the same dice, and the body colours are measured again on the *detected* top
faces, so what is learned matches what the reader will see. Face templates are cut at the
labelled corners: sharp, while the reader tries shifts and scales around what it finds. Then every example is read back with the learned
model: a photo whose labels disagree with what is seen (a die that is not the colour it is
labelled, a face that looks like another face) is reported and left out, and the model is
learned again without it. With the face net (scanner/face_net.py), each face's mean code is
learned too, and a "no face" code from squares cut half a side off each die. A face no photo
shows is read with the built-in look's prints of it until it is taught. Nothing is written
unless learning succeeds, and then atomically.
"""

from __future__ import annotations

import logging
import math
import sys
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable, Sequence, TextIO

import cv2
import numpy as np

from scanner.profile import Profile, ProfileError, load_profile, save_profile
from scanner.evaluate import match
from scanner.face_net import NO_FACE, FaceNet, unit_rows
from scanner.frames import DieReading
from scanner.labels import LabelledDie, load_photo_label
from scanner.reader import cleaned_picture
from scanner.tally_blobs import choose_dice, find_blobs
from scanner.tally_colour import balance_gains, colour_distances, identify, lab_of
from scanner.tally_model import (
    DIE_FACES, SHIFT, TEMPLATE_SIDE, BodyColour, FaceTemplate, TallyModel, TallyParams, default_model,
)
from scanner.tally_prints import compile_model, face_patch, ink_of, match_face, normalised_rows, windows
from scanner.training import missing_folders

log = logging.getLogger(__name__)

#: Fewer examples than this of one face are reported as too few.
ENOUGH_EXAMPLES = 3
#: Single examples kept per face beside the mean.
EXEMPLARS = 6
#: Dice partly hidden or blown out by glare teach nothing reliable about their look. Only the
#: renderer knows which those are (a label's scene: visible_fraction, glare_fraction), so only
#: the built-in look's build from the project's renders leaves them out (see learn_tally_model).
MIN_VISIBLE = 0.97
MAX_GLARE = 0.05


@dataclass(frozen=True)
class Sample:
    """One labelled die cut out of a teaching photo."""

    photo: str
    die: str
    face: str
    lab: np.ndarray  # body colour, balanced 8-bit Lab
    ink: np.ndarray  # canonical ink mask, as cut (unknown right-angle turn)
    ink_lighter: bool = True  # the print is lighter than the body
    #: Ink masks of squares half a side off the top face: what a misplaced square shows.
    off_inks: tuple[np.ndarray, ...] = ()


@dataclass
class TeachResult:
    """What teaching learned, and everything it had to say about the photos."""

    model: TallyModel
    problems: list[str] = field(default_factory=list)  # "photo: what is wrong", one per problem
    counts: dict[tuple[str, str], int] = field(default_factory=dict)
    photos_used: int = 0
    #: (die, face) of the faces no photo showed, read with the built-in look's prints.
    borrowed: list[tuple[str, str]] = field(default_factory=list)

    def too_few(self) -> list[tuple[str, str, int]]:
        return [(die, face, self.counts.get((die, face), 0)) for die, faces in DIE_FACES.items()
                for face in faces if self.counts.get((die, face), 0) < ENOUGH_EXAMPLES]


def check_labels(dice: Sequence[LabelledDie]) -> list[str]:
    """Problems with a photo's labels as such: unknown dice or faces, a colour twice."""
    problems = []
    seen: set[str] = set()
    for die in dice:
        if die.die not in DIE_FACES:
            problems.append(f"unknown die {die.die!r} (expected one of {', '.join(DIE_FACES)})")
        elif die.face not in DIE_FACES[die.die]:
            problems.append(f"the {die.die} die has no face {die.face!r} (it shows {', '.join(DIE_FACES[die.die])})")
        elif die.die in seen:
            problems.append(f"the {die.die} die is labelled twice; a set has one of each")
        seen.add(die.die)
    return problems


def _usable(index: int, die: LabelledDie, scene: dict) -> bool:
    if die.cocked:
        return False
    visible = scene.get("visible_fraction")
    glare = scene.get("glare_fraction")
    if isinstance(visible, list) and index < len(visible) and visible[index] < MIN_VISIBLE:
        return False
    if isinstance(glare, list) and index < len(glare) and glare[index] > MAX_GLARE:
        return False
    return True


def _bodies(samples: Sequence[Sample]) -> dict[str, BodyColour]:
    by_die: dict[str, list[np.ndarray]] = defaultdict(list)
    lighter: dict[str, list[bool]] = defaultdict(list)
    for sample in samples:
        by_die[sample.die].append(sample.lab)
        lighter[sample.die].append(sample.ink_lighter)
    bodies = {}
    for die, labs in by_die.items():
        values = np.stack(labs)
        centre = np.median(values, axis=0)
        # A robust spread (median absolute deviation), so one odd photo does not widen it.
        spread = 1.4826 * np.median(np.abs(values - centre), axis=0) if len(values) >= 3 else np.zeros(3)
        # Whether the print is lighter than the body: what most examples say.
        votes = lighter[die]
        bodies[die] = BodyColour(tuple(float(v) for v in centre), tuple(float(max(v, 1.0)) for v in spread), len(values),
                                 2 * sum(votes) > len(votes))
    return bodies


def _alignment_weight() -> np.ndarray:
    """Alignment looks at the middle of the face: a circle around a number is the same at
    every turn and would otherwise decide the turn instead of the number inside it."""
    grid = (np.arange(TEMPLATE_SIDE, dtype=np.float32) + 0.5) / TEMPLATE_SIDE - 0.5
    radius = np.hypot(grid[:, None], grid[None, :])
    return np.where(radius < 0.36, 1.0, 0.15).astype(np.float32).ravel()


def _aligned_mean(inks: Sequence[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
    """The mean of masks cut at unknown right-angle turns and small shifts, each turned and
    shifted to agree with the rest, and the examples that agree with it (aligned).

    It starts from the example most like all the others (a glare-spotted or badly cut first
    example would otherwise decide), and leaves out examples that agree with nobody.
    """
    weight = _alignment_weight()
    middle = slice(SHIFT, SHIFT + TEMPLATE_SIDE)
    centres = [normalised_rows((ink[middle, middle].ravel() * weight)[None])[0] for ink in inks]
    candidates = [np.concatenate([windows(np.rot90(ink, k)) for k in range(4)]) for ink in inks]
    weighted = [normalised_rows(rows * weight) for rows in candidates]
    agreement = [sum(float((w @ c).max()) for w in weighted) for c in centres]
    mean = inks[int(np.argmax(agreement))][middle, middle].ravel()
    keep: list[np.ndarray] = []
    for _ in range(3):
        reference = normalised_rows((mean * weight)[None])[0]
        chosen, scores = [], []
        for rows, rows_weighted in zip(candidates, weighted):
            correlation = rows_weighted @ reference
            best = int(np.argmax(correlation))
            chosen.append(rows[best])
            scores.append(float(correlation[best]))
        keep = [c for c, score in zip(chosen, scores) if score >= 0.5] or chosen
        mean = np.mean(keep, axis=0)
    side = (TEMPLATE_SIDE, TEMPLATE_SIDE)
    return mean.reshape(side), [k.reshape(side) for k in keep]


def _templates(samples: Sequence[Sample]) -> tuple[FaceTemplate, ...]:
    """Per (die, face): the mean ink, then up to EXEMPLARS single examples that agree with it.

    Matching against the examples as well as the mean copes with a look that varies between
    photos (perspective, a lamp's highlight) better than one blurred average.
    """
    groups: dict[tuple[str, str], list[np.ndarray]] = defaultdict(list)
    for sample in samples:
        groups[(sample.die, sample.face)].append(sample.ink)
    templates = []
    for (die, face), inks in sorted(groups.items()):
        mean, examples = _aligned_mean(inks)
        for index, ink in enumerate([mean, *examples[:EXEMPLARS]]):
            quantised = np.clip(np.round(ink * 255), 0, 255).astype(np.uint8)
            templates.append(FaceTemplate(die, face, quantised.tobytes(), len(inks) if index == 0 else 1))
    return tuple(templates)


def _cut(photo: str, image: np.ndarray, quad: np.ndarray, die: str, face: str, gains: np.ndarray,
         lab: np.ndarray | None = None, off: bool = False) -> Sample:
    """One labelled die as a Sample; `off`: with the squares cut half a side off it."""
    ink, body, colour = ink_of(face_patch(image, quad, gains))
    lighter = bool(lab_of(colour)[0] > lab_of(body)[0])
    edges = (quad[1] - quad[0], quad[3] - quad[0])
    off_inks = tuple(ink_of(face_patch(image, quad + sign * edge / 2, gains))[0]
                     for edge in edges for sign in (1, -1)) if off else ()
    return Sample(photo, die, face, lab if lab is not None else lab_of(body), ink, lighter, off_inks)


def _photo_samples(photo: str, image: np.ndarray, dice: Sequence[LabelledDie], scene: dict,
                   model: TallyModel | None, params: TallyParams) -> list[Sample]:
    """The usable dice of one photo, cut at their labelled corners; with a model, each one's body
    colour as measured on the top face the reader finds, and the squares cut off each die (the
    face codes are learned from these samples; the first pass, without a model, only finds
    the bodies and templates that the second one measures with)."""
    gains = balance_gains(image)
    usable = [(i, d) for i, d in enumerate(dice) if _usable(i, d, scene)]
    colours: dict[int, np.ndarray] = {}
    if model is not None:
        compiled = compile_model(model, params)
        blobs = choose_dice(find_blobs(image, compiled, model, params, gains), model)
        readings = [DieReading(center=b.center, corners=tuple(map(tuple, b.quad)), size=b.side) for b in blobs]
        labels = [d for _, d in usable]
        for li, ri in match(labels, readings):
            # Of the squares that may be the top face, the labels say which one it is.
            quads = blobs[ri].candidates or [blobs[ri].quad]
            pick = min(range(len(quads)), key=lambda i: math.dist(labels[li].center, tuple(quads[i].mean(axis=0))))
            if math.dist(labels[li].center, tuple(quads[pick].mean(axis=0))) < 0.25 * labels[li].size:
                colours[li] = blobs[ri].colours[pick] if blobs[ri].colours else blobs[ri].lab
    # The print is always cut at the labelled corners, so templates are sharp (the reader
    # tries shifts and scales around the face it finds); the body colour is measured as the
    # reader measures it, on the found top face, where the die was found.
    return [_cut(photo, image, np.float32(die.corners), die.die, die.face, gains, colours.get(li), off=model is not None)
            for li, (_, die) in enumerate(usable)]


def _codes(samples: Sequence[Sample], face_net: FaceNet) -> dict[str, tuple[float, ...]]:
    """Per face label, the mean code of its examples (a star is a star on every die, so all
    dice's examples of a label count together), and NO_FACE's, of the squares cut off them."""
    inks, faces = [], []
    for sample in samples:
        inks += [sample.ink, *sample.off_inks]
        faces += [sample.face] + [NO_FACE] * len(sample.off_inks)
    codes, labels = face_net.codes(inks), np.array(faces)
    return {face: tuple(float(v) for v in unit_rows(codes[labels == face].mean(axis=0, keepdims=True))[0])
            for face in sorted(set(faces))}


def _learn(photos: Sequence[tuple[str, np.ndarray, Sequence[LabelledDie], dict]], params: TallyParams,
           source: str, face_net: FaceNet) -> tuple[TallyModel, list[Sample]]:
    first = [s for name, image, dice, scene in photos for s in _photo_samples(name, image, dice, scene, None, params)]
    if not first:
        raise ValueError("no usable labelled dice in the teaching photos")
    rough = TallyModel(_bodies(first), _templates(first), source=source)
    samples = [s for name, image, dice, scene in photos for s in _photo_samples(name, image, dice, scene, rough, params)]
    sizes = [d.size for _, _, dice, _ in photos for d in dice if not d.cocked]
    widths = [image.shape[1] for _, image, _, _ in photos]
    die_size = None
    if sizes and max(sizes) / max(min(sizes), 1.0) < 1.3:  # one camera distance: remember the size
        die_size = float(np.median(sizes)) * 1280.0 / float(np.median(widths))
    return TallyModel(_bodies(samples), _templates(samples), die_size=die_size, source=source,
                      codes=_codes(samples, face_net), code_net=face_net.fingerprint), samples


def _disagreements(model: TallyModel, samples: Sequence[Sample], params: TallyParams) -> dict[str, dict[str, str]]:
    """Per photo, the labelled dice the learned model confidently sees as something else: per
    die (its label), what it is seen as."""
    compiled = compile_model(model, params)
    found: dict[str, dict[str, str]] = defaultdict(dict)
    for sample in samples:
        die, confidence = identify(sample.lab, model, params)
        distances = colour_distances(sample.lab, model, params)
        # Only a die far outside its own learned colour is a labelling mistake; two similar
        # bodies (blue and purple under a warm lamp) are merely hard to tell apart.
        if die not in (sample.die, "unsure") and distances[sample.die] > params.identity_max_distance:
            found[sample.photo][sample.die] = (f"the die labelled {sample.die} has the colour of the {die} die "
                                               f"(distance {distances[sample.die]:.1f} vs {distances[die]:.1f})")
            continue
        face, confidence, _ = match_face(sample.ink, sample.die, compiled, params)
        if face not in (sample.face, "unsure") and confidence >= 0.5:
            found[sample.photo][sample.die] = f"the {sample.die} die labelled {sample.face} shows {face}"
    return found


def learn_tally_model(photos: Iterable[tuple[str, np.ndarray, Sequence[LabelledDie]]] |
                      Iterable[tuple[str, np.ndarray, Sequence[LabelledDie], dict]],
                      params: TallyParams | None = None, source: str = "", face_net: FaceNet | None = None,
                      from_renders: bool = False) -> TeachResult:
    """Learn body colours, face templates and face codes from (name, BGR image, labelled
    dice[, scene]); the codes with `face_net` (None: the shipped one).

    Labelled dice that disagree with what the learned model sees are reported, photo by photo,
    and left out (the photo's other dice still teach).
    A face no photo shows is read with the built-in look's prints of it (`TeachResult.borrowed`).
    `from_renders`: the built-in look's own build, from the project's renders, whose scenes
    mark the dice partly hidden or washed out by glare: those are left out, and no face is
    borrowed. Raises ValueError when nothing usable remains.
    """
    params = params or TallyParams()
    face_net = face_net or FaceNet()
    problems: list[str] = []
    kept = []
    for entry in photos:
        name, image, dice = entry[0], entry[1], entry[2]
        scene = entry[3] if len(entry) > 3 else {}
        bad = check_labels(dice)
        if bad:
            problems.extend(f"{name}: {b}" for b in bad)
            continue
        # A user's labels (the wizard's confirmed rolls, `calibrate teach`) hold no such marks;
        # teaching the look from fixture labels as from theirs, from every die, the look taught on
        # 20 teach photos read the Tally test split's other tables with 2 confident mistakes
        # instead of 6 (of 308 dice), and taught on 20 dev photos of two or three tables (8 draws),
        # with 2.3 % instead of 3.8 %: the dice under the lamp's sheen are dice it will meet.
        kept.append((name, image, tuple(dice), scene if from_renders else {}))
    model, samples = _learn(kept, params, source, face_net)
    disagreements = _disagreements(model, samples, params)
    if disagreements:
        for name, what in sorted(disagreements.items()):
            problems.extend(f"{name}: labels do not match what is seen: {w}; that die left out" for w in what.values())
        # Only the dice seen otherwise: a roll's one die washed out by the lamp's reflection
        # (taken for the Up Die) leaves six that teach. Taught on the 20 teach photos, 15 photos
        # kept whole -> 20 in part; read on the Tally test split (other tables), confident
        # mistakes .0068 -> .0102 in unchanged light, .0176 -> .0138 and .0217 -> .0144 under the
        # calibration bench's warm and bluish lamps; taught on 20 dev photos of two or three tables
        # (8 draws), .0082 -> .0056 and none more in any draw.
        kept = [(name, image, tuple(die for die in dice if die.die not in disagreements.get(name, {})), scene)
                for name, image, dice, scene in kept]
        kept = [photo for photo in kept if photo[2]]
        model, samples = _learn(kept, params, source, face_net)
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for sample in samples:  # (the samples, not the templates: a face has several templates)
        counts[(sample.die, sample.face)] += 1
    borrowed: list[tuple[str, str]] = []
    if not from_renders:
        model, borrowed = _with_untaught_faces(model, default_model())
    return TeachResult(model, problems, dict(counts), photos_used=len(kept), borrowed=borrowed)


def _with_untaught_faces(model: TallyModel, built_in: TallyModel) -> tuple[TallyModel, list[tuple[str, str]]]:
    """`model` with the faces of its dice that it has no template of taken from `built_in`
    (templates, and the face net's code of a face label no die was taught, where both models'
    codes come from the same net), and which (die, face) those are.

    A die shows faces the photos may not: without a print of the face, the reader reads it as the
    taught face it looks most like, and is sure of it (a green 30 as its 40, an Up Die's +100 as
    its -100). Taught from 20 dev photos of two or three tables (8 draws), the test split's
    confident mistakes came to 2.3 % of its dice (in the draw looked into, all 8 on faces never
    taught); with the built-in prints of those, 0.8 %. On the differently looking set
    (fixtures/alt), taught from 3 to 10 of its photos, faces 0.77-0.89 -> 0.85-0.93 and
    confident mistakes the same or fewer: another font's print of a face still reads it better
    than none."""
    taught = {(template.die, template.face) for template in model.templates}
    extra = tuple(t for t in built_in.templates if t.die in model.bodies and (t.die, t.face) not in taught)
    codes = dict(model.codes)
    if built_in.code_net == model.code_net:
        for face, code in built_in.codes.items():
            codes.setdefault(face, code)
    lent = {(t.die, t.face) for t in extra}
    borrowed = [(die, face) for die, faces in DIE_FACES.items() for face in faces if (die, face) in lent]
    return replace(model, templates=model.templates + extra, codes=codes), borrowed


def _load_folder(folder: Path, problems: list[str]) -> list[tuple[str, np.ndarray, tuple[LabelledDie, ...], dict]]:
    photos = []
    for path in sorted(Path(folder).glob("*.json")):
        try:
            label = load_photo_label(path)
        except (ValueError, KeyError, TypeError, IndexError) as error:
            problems.append(f"{path.name}: not a photo label in the fixture schema ({type(error).__name__}: {error}); skipped")
            continue
        if label.dice_set != "tallyup":
            problems.append(f"{path.name}: dice_set is {label.dice_set!r}, not 'tallyup'; skipped")
            continue
        image = cv2.imread(str(label.image), cv2.IMREAD_COLOR) if label.image.is_file() else None
        if image is None:
            problems.append(f"{path.name}: image {label.image.name} is missing or unreadable; skipped")
            continue
        if not label.dice:
            continue  # an empty tray teaches nothing about the dice
        photos.append((path.name, image, label.dice, label.scene))
    return photos


def teach_folders(folders: Sequence[Path], out: Path, split: str | None = None, params: TallyParams | None = None,
                  report: TextIO | None = None) -> TeachResult | None:
    """Learn from every labelled photo in `folders` (optionally one split) and save into `out`.

    An existing profile at `out` keeps all its other fields; it is only replaced, atomically,
    when learning succeeded. Returns None (and writes nothing) when it did not. The photos are
    taken to be of that profile's table: with its black level or light gains they are cleaned
    as its scanner will clean them before reading (the wizard teaches the same way).
    """
    report = report or sys.stdout
    problems: list[str] = []
    photos = []
    for folder in folders:
        if not Path(folder).is_dir():
            problems.append(f"{folder}: no such folder")
            continue
        found = _load_folder(Path(folder), problems)
        photos.extend(p for p in found if split is None or p[3].get("split") in (split, "teach"))
    base: Profile | None = None
    if Path(out).exists():
        try:
            base = load_profile(out)
        except ProfileError as error:
            problems.append(f"{out}: existing profile not readable ({error}); it is left as it is")
            _print_problems(problems, report)
            return None
    if base is not None and (base.black_level or base.light_gains):
        photos = [(name, cleaned_picture(image, base.black_level, base.light_gains), dice, scene)
                  for name, image, dice, scene in photos]
        print(f"photos read as {out}'s scanner reads them (stray light off, a dim lamp brightened back)", file=report)
    try:
        result = learn_tally_model(photos, params, source=", ".join(str(f) for f in folders))
    except ValueError as error:
        _print_problems(problems + [f"nothing learned: {error}"], report)
        return None
    result.problems[:0] = problems
    print_result(result, report)
    profile = replace(base, tallyup=result.model) if base else Profile(name=Path(out).stem, tallyup=result.model)
    save_profile(profile, out)
    print(f"saved {out}", file=report)
    return result


def _print_problems(problems: Sequence[str], report: TextIO) -> None:
    for problem in problems:
        print(f"problem: {problem}", file=report)


def print_result(result: TeachResult, report: TextIO | None = None) -> None:
    """What was learned per die and face, and which faces need more photos."""
    report = report or sys.stdout
    _print_problems(result.problems, report)
    print(f"learned from {result.photos_used} photo(s)", file=report)
    for die, faces in DIE_FACES.items():
        body = result.model.bodies.get(die)
        colour = f"body Lab {tuple(round(v) for v in body.lab)} from {body.examples} view(s)" if body else "body colour NOT learned"
        taught = ", ".join(f"{face} x{result.counts.get((die, face), 0)}" for face in faces)
        print(f"  {die:<7} {colour}; faces: {taught}", file=report)
    faces = sorted(face for face in result.model.codes if face != NO_FACE)
    if faces:
        print(f"  face net {result.model.code_net}: a code for each of {len(faces)} faces", file=report)
    if result.borrowed:
        print("faces no photo showed, read with the built-in look's prints until taught: "
              + ", ".join(f"{die} {face}" for die, face in result.borrowed), file=report)
    few = result.too_few()
    if few:
        print("too few examples (want >= %d): %s" % (ENOUGH_EXAMPLES, ", ".join(f"{d} {f} ({n})" for d, f, n in few)),
              file=report)
    else:
        print(f"every face of every die seen >= {ENOUGH_EXAMPLES} times", file=report)


def build_default(fixtures: Path, out: Path, report: TextIO | None = None) -> TeachResult | None:
    """The built-in look, learned from the project's own renders: the body colours and the
    templates from the dev split and the teach set, the face codes from those and the facemore
    set too (git-ignored, fixtures/README.md renders it), whose prints, the Up Die's above all
    (in every roll there, in few elsewhere), place the codes of faces seen only a few times
    elsewhere. Its many tables would widen the bodies' colour spreads until orange passes for
    yellow, and its templates leave more faces to the slower reads (7-dice test frames: median
    about 34 -> 42 ms)."""
    import json

    report = report or sys.stdout
    problems: list[str] = []
    missing = missing_folders(fixtures, ["facemore/tallyup"])
    if missing:
        _print_problems([missing], report)
        return None
    photos = [p for p in _load_folder(fixtures / "tallyup", problems) if p[3].get("split") == "dev"]
    photos += _load_folder(fixtures / "tallyup-teach", problems)
    extra = _load_folder(fixtures / "facemore" / "tallyup", problems)
    try:
        result = learn_tally_model(photos, source="dicetray fixtures (tallyup dev split + tallyup-teach; face "
                                                  "codes also from facemore)", from_renders=True)
        prints = learn_tally_model(photos + extra, from_renders=True)  # (its codes only)
    except ValueError as error:
        _print_problems(problems + [f"nothing learned: {error}"], report)
        return None
    result = replace(result, model=replace(result.model, codes=prints.model.codes, code_net=prints.model.code_net))
    result.problems[:0] = problems
    print_result(result, report)
    out.parent.mkdir(parents=True, exist_ok=True)
    temporary = out.with_name(f".{out.name}.tmp")
    temporary.write_text(json.dumps(result.model.to_json(), indent=None, separators=(",", ":")) + "\n")
    temporary.replace(out)
    print(f"saved {out} ({out.stat().st_size // 1024} KB)", file=report)
    return result


__all__ = ["TEMPLATE_SIDE", "TeachResult", "build_default", "learn_tally_model", "print_result", "teach_folders"]
