"""The cheap path to volume: labelled photos of dice drawn in numpy and OpenCV, from the look
families the scanner learns from.

A Cycles still costs about 20 s on two cores; this draws a 1280x720 photo with ten dice in a
fraction of a second, so tens of thousands of labelled dice are one command away:

    python -m lab.composite --dice 20000 --out fixtures/composite

Each photo is one draw of a learning family (`fixtures/studio/families.py`): the family's dice
finish (the studio's own face atlases, so every print is the studio's), tray, lamps and camera,
jittered per photo, plus ordinary pip dice for the die finder. The dice are rounded cubes in
perspective, lit by the family's lamps (shading, soft shadows on the floor, mirror glare on glossy
faces), inside a tray whose walls hide what they hide; the camera adds its white-balance error,
exposure, vignetting, focus and motion blur, lens distortion, sensor noise and JPEG. Labels come
from the geometry, in the fixtures' schema. Held-out families are never drawn here.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from fixtures.studio import families, textures
from fixtures.studio.label_geometry import order_corners
from fixtures.studio.looks import FACE_AXES, TALLY_COLOURS, TALLY_FACES, TOSSUP_FACES
from fixtures.studio.post import kelvin_rgb

ROOT = Path(__file__).resolve().parents[1]
#: Pip counts of an ordinary die by face axis (+Z, -Z, +X, -X, +Y, -Y): opposite faces sum to 7.
PIP_FACES = ["1", "6", "2", "5", "3", "4"]
PIP_SPOTS = {
    "1": [(0, 0)], "2": [(-1, -1), (1, 1)], "3": [(-1, -1), (0, 0), (1, 1)],
    "4": [(-1, -1), (1, -1), (-1, 1), (1, 1)], "5": [(-1, -1), (1, -1), (0, 0), (-1, 1), (1, 1)],
    "6": [(-1, -1), (1, -1), (-1, 0), (1, 0), (-1, 1), (1, 1)],
}
TILE = 96  # face texture side in pixels (a die's face is rarely larger in a photo)
COCKED_TILT_DEG = 6.0  # as the fixtures' labels: tilted more than this is "cocked"
FLOOR_MM_PER_PX = 0.6  # the floor's finest texel; a wide view of the table gets coarser ones
FLOOR_MAX_TEXELS = 1200  # per side: the floor texture's cost bounds the photo's
LIGHT_STEP = 6  # lighting and shadows are smooth: worked out on every 6th texel, then spread


def _lin(srgb: np.ndarray) -> np.ndarray:
    return np.power(np.clip(srgb, 0, 1), 2.2).astype(np.float32)


def _tiles(atlas: np.ndarray) -> list[np.ndarray]:
    """The six face tiles of a studio atlas (bottom-origin, 3 x 2), top-origin, RGB [0, 1]."""
    top = np.flipud(atlas)[..., :3]
    t = top.shape[0] // 2
    return [top[(1 - i // 3) * t:(2 - i // 3) * t, (i % 3) * t:(i % 3 + 1) * t] for i in range(6)]


def pip_tiles(body: tuple, pip: tuple, rng: np.random.Generator) -> list[np.ndarray]:
    """Faces of an ordinary die: round pips (some dice paint the one larger) on a body colour."""
    radius = rng.uniform(0.1, 0.15)
    spread = rng.uniform(0.45, 0.56)
    big_one = rng.random() < 0.4
    out = []
    for value in PIP_FACES:
        tile = np.ones((TILE, TILE, 3), np.float32) * np.array(body, np.float32)
        for sx, sy in PIP_SPOTS[value]:
            r = radius * (1.7 if value == "1" and big_one else 1.0)
            centre = (int(TILE / 2 * (1 + spread * sx)), int(TILE / 2 * (1 + spread * sy)))
            cv2.circle(tile, centre, int(TILE / 2 * r), tuple(float(c) for c in pip), -1, cv2.LINE_AA)
        out.append(tile)
    return out


@dataclass
class DieKind:
    """A die as the compositor draws it: its six face tiles (linear RGB), labels and gloss."""

    name: str  # the fixtures' die name: tossup, red ... up, or d6 for an ordinary die
    faces: list[str]
    tiles: list[np.ndarray]
    roughness: float
    edge_radius: float  # rounded edge, as a share of half the side


def family_kinds(family: dict, rng: np.random.Generator) -> dict[str, DieKind]:
    """The family's Toss Up die, its seven Tally Dice and one ordinary die."""
    toss = families.tossup_look(family)
    tally = families.tally_look(family)
    col, _ = textures.tossup_atlas(toss, TOSSUP_FACES, t=TILE)
    kinds = {"tossup": DieKind("tossup", TOSSUP_FACES, [_lin(t) for t in _tiles(col)], toss.body_roughness,
                               toss.edge_radius_mm / toss.size_mm * 2)}
    for die in TALLY_COLOURS + ["up"]:
        col, _ = textures.tally_atlas(die, TALLY_FACES[die], tally, t=TILE)
        kinds[die] = DieKind(die, TALLY_FACES[die], [_lin(t) for t in _tiles(col)], tally.body_roughness,
                             tally.edge_radius_mm / tally.size_mm * 2)
    body, pip = [((0.93, 0.92, 0.88), (0.05, 0.05, 0.05)), ((0.75, 0.08, 0.08), (0.95, 0.95, 0.95)),
                 ((0.05, 0.05, 0.06), (0.95, 0.95, 0.95)), ((0.1, 0.3, 0.75), (0.95, 0.95, 0.95)),
                 ((0.9, 0.85, 0.7), (0.1, 0.1, 0.1)), ((0.1, 0.5, 0.2), (0.95, 0.95, 0.95))][int(rng.integers(6))]
    kinds["d6"] = DieKind("d6", PIP_FACES, [_lin(t) for t in pip_tiles(body, pip, rng)], float(rng.uniform(0.1, 0.6)),
                          float(rng.uniform(0.08, 0.3)))
    return kinds


# ----------------------------------------------------------------------------- camera


@dataclass
class Camera:
    """A pinhole camera over the tray: world x right, y away, z up, metres; image y down."""

    position: np.ndarray
    rotation: np.ndarray  # rows: right, down, forward
    focal: float
    width: int
    height: int

    def project(self, points: np.ndarray) -> np.ndarray:
        cam = (np.asarray(points, float).reshape(-1, 3) - self.position) @ self.rotation.T
        z = np.maximum(cam[:, 2], 1e-6)
        return np.stack([self.focal * cam[:, 0] / z + self.width / 2, self.focal * cam[:, 1] / z + self.height / 2], 1)

    def depth(self, points: np.ndarray) -> np.ndarray:
        return (np.asarray(points, float).reshape(-1, 3) - self.position) @ self.rotation[2]

    def ray_to_floor(self, pixels: np.ndarray, z: float = 0.0) -> np.ndarray:
        d = np.stack([(pixels[:, 0] - self.width / 2) / self.focal, (pixels[:, 1] - self.height / 2) / self.focal,
                      np.ones(len(pixels))], 1) @ self.rotation
        t = (z - self.position[2]) / np.minimum(d[:, 2], -1e-6)
        return self.position + d * t[:, None]


def make_camera(cam: dict, tray: dict, rng: np.random.Generator) -> Camera:
    """As the studio's camera_pose and build_camera: tilted from vertical towards -y, turned by
    yaw, rolled, with the focal length that frames the tray's inside plus the margin."""
    height, tilt = cam["height_m"] * rng.uniform(0.95, 1.05), math.radians(cam["tilt_deg"] + rng.uniform(-2, 2))
    yaw = math.radians(cam["yaw_deg"] + rng.uniform(-4, 4))
    aim = np.array([rng.uniform(-0.015, 0.015), rng.uniform(-0.015, 0.015), 0.0])
    position = aim + np.array([math.sin(yaw) * height * math.tan(tilt), -math.cos(yaw) * height * math.tan(tilt), height])
    forward = (aim - position) / np.linalg.norm(aim - position)
    up_hint = np.array([-math.sin(yaw), math.cos(yaw), 0.0])
    right = np.cross(forward, up_hint)
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    roll = math.radians(cam["roll_deg"] + rng.uniform(-2, 2))
    right, up = right * math.cos(roll) + up * math.sin(roll), up * math.cos(roll) - right * math.sin(roll)
    rotation = np.stack([right, -up, forward])
    width, height_px = cam["width"], cam["height"]
    w, d, h = tray["inner_w"] / 2, tray["inner_d"] / 2, tray["wall_h"]
    corners = np.array([[sx * w, sy * d, z] for sx in (-1, 1) for sy in (-1, 1) for z in (0.0, h)])
    local = (corners - position) @ rotation.T
    need = max(np.max(np.abs(local[:, 0] / local[:, 2])) / (width / 2),
               np.max(np.abs(local[:, 1] / local[:, 2])) / (height_px / 2))
    focal = 1.0 / (need * (1 + cam["margin"] + rng.uniform(-0.03, 0.05)))
    return Camera(position, rotation, focal, width, height_px)


# ----------------------------------------------------------------------------- surfaces


def _noise(shape: tuple[int, int], cells: float, rng: np.random.Generator) -> np.ndarray:
    """Smooth noise in [0, 1] with features `cells` pixels apart."""
    small = rng.random((max(2, int(shape[0] / cells) + 2), max(2, int(shape[1] / cells) + 2))).astype(np.float32)
    return cv2.resize(small, (shape[1], shape[0]), interpolation=cv2.INTER_CUBIC).clip(0, 1)


def surface_texture(spec: dict, shape: tuple[int, int], mm: float, rng: np.random.Generator) -> np.ndarray:
    """A floor or table material (the studio's kinds) as an sRGB image [0, 1], `mm` per texel."""
    h, w = shape
    kind = spec["kind"]
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32) * mm / 1000.0
    if kind == "felt" or kind == "cork":
        base = np.array(spec["colour"], np.float32)
        fibre = rng.normal(0, 0.06 if kind == "felt" else 0.12, (h, w)).astype(np.float32)
        blot = _noise(shape, 60, rng) - 0.5
        img = base * (1 + fibre + 0.12 * blot)[..., None]
        if kind == "cork":
            specks = _noise(shape, 3, rng) > 1 - 0.3 * spec.get("speck", 0.5)
            img[specks] *= 0.4
        return img.clip(0, 1)
    if kind == "wood":
        angle = spec.get("angle", 0.0)
        u = xx * math.cos(angle) + yy * math.sin(angle)
        warp = (_noise(shape, 120, rng) - 0.5) * 0.02
        bands = 0.5 + 0.5 * np.sin((u + warp) * spec.get("scale", 25.0) * 6.0)
        light, dark = np.array(spec["light"], np.float32), np.array(spec["dark"], np.float32)
        img = light * (1 - bands[..., None]) + dark * bands[..., None]
        return (img * (1 + rng.normal(0, 0.03, (h, w, 1)).astype(np.float32))).clip(0, 1)
    if kind in ("plain", "board"):
        base = np.array(spec["colour"], np.float32)
        return (base * (1 + 0.04 * (_noise(shape, 40, rng)[..., None] - 0.5))
                + rng.normal(0, 0.01, (h, w, 1)).astype(np.float32)).clip(0, 1)
    if kind == "cloth":
        period = spec.get("period_m", 0.02)
        a = (np.sin(xx / period * 2 * math.pi) > 0.4)[..., None]
        b = (np.sin(yy / period * 2 * math.pi) > 0.4)[..., None]
        img = np.where(a, np.array(spec["stripe_a"], np.float32), np.array(spec["base"], np.float32))
        img = np.where(b, 0.5 * img + 0.5 * np.array(spec["stripe_b"], np.float32), img)
        return (img * (1 + rng.normal(0, 0.05, (h, w, 1)).astype(np.float32))).clip(0, 1)
    if kind in ("checks", "gingham"):
        period = spec["period_m"]
        a, b = np.array(spec["a"], np.float32), np.array(spec["b"], np.float32)
        cx = (np.floor(xx / period) % 2).astype(bool)[..., None]
        cy = (np.floor(yy / period) % 2).astype(bool)[..., None]
        if kind == "checks":
            img = np.where(cx ^ cy, a, b)
        else:
            half = 0.5 * (a + b)
            img = np.where(cx & cy, a, np.where(cx | cy, half, b))
        return (img * (1 + rng.normal(0, 0.04, (h, w, 1)).astype(np.float32))).clip(0, 1)
    # board_art: flat patches of bright colour with dark outlines on a printed card
    img = np.ones((h, w, 3), np.float32) * np.array(spec["base"], np.float32)
    cell = max(8, int(spec["cells_m"] * 1000 / mm))
    for _ in range(int(h * w / cell ** 2 * 1.5)):
        colour = tuple(float(c) for c in rng.uniform(0, 1, 3) * spec.get("saturation", 0.8))
        x, y = int(rng.integers(w)), int(rng.integers(h))
        size = int(rng.integers(cell // 3, cell))
        if rng.random() < 0.5:
            cv2.rectangle(img, (x, y), (x + size, y + size), colour, -1)
            cv2.rectangle(img, (x, y), (x + size, y + size), (0.03, 0.03, 0.03), 2)
        else:
            cv2.circle(img, (x, y), size // 2, colour, -1, cv2.LINE_AA)
            cv2.circle(img, (x, y), size // 2, (0.03, 0.03, 0.03), 2, cv2.LINE_AA)
    return img


# ----------------------------------------------------------------------------- dice poses


def _rotation_z(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def _rotation_axis(axis: np.ndarray, angle: float) -> np.ndarray:
    axis = axis / np.linalg.norm(axis)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + math.sin(angle) * k + (1 - math.cos(angle)) * k @ k


def face_up_rotation(face: int, yaw: float) -> np.ndarray:
    """The rotation that turns face `face` of FACE_AXES straight up, then turns the die by yaw."""
    n = np.array(FACE_AXES[face][0], float)
    up = np.array([0.0, 0.0, 1.0])
    axis = np.cross(n, up)
    if np.linalg.norm(axis) < 1e-9:
        base = np.eye(3) if n[2] > 0 else _rotation_axis(np.array([1.0, 0, 0]), math.pi)
    else:
        base = _rotation_axis(axis, math.acos(float(np.clip(n @ up, -1, 1))))
    return _rotation_z(yaw) @ base


@dataclass
class PlacedDie:
    kind: DieKind
    rotation: np.ndarray
    centre: np.ndarray  # world position of the cube's centre
    size: float
    leaning: bool

    def corners(self) -> np.ndarray:
        h = self.size / 2
        signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float)
        return self.centre + (signs * h) @ self.rotation.T

    def face_quad(self, face: int) -> np.ndarray:
        """World corners of a face, in tile order: top-left, top-right, bottom-right, bottom-left."""
        n, a = (np.array(v, float) for v in FACE_AXES[face])
        b = np.cross(n, a)
        h = self.size / 2
        local = [h * (n - a + b), h * (n + a + b), h * (n + a - b), h * (n - a - b)]
        return np.array([self.centre + self.rotation @ p for p in local])

    def up_face(self) -> tuple[int, float]:
        zs = [float((self.rotation @ np.array(FACE_AXES[i][0], float))[2]) for i in range(6)]
        best = int(np.argmax(zs))
        return best, math.degrees(math.acos(min(1.0, zs[best])))


def place_dice(kinds: list[DieKind], tray: dict, size: float, rng: np.random.Generator, lean_share: float
               ) -> list[PlacedDie]:
    """Dice at rest in the tray, apart or in touching clusters; some lean on a wall or a die."""
    w, d = tray["inner_w"] / 2 - size * 0.75, tray["inner_d"] / 2 - size * 0.75
    placed: list[PlacedDie] = []
    cluster = rng.random() < 0.3
    for kind in kinds:
        for _ in range(200):
            if cluster and placed:
                anchor = placed[int(rng.integers(len(placed)))].centre[:2]
                xy = anchor + rng.normal(0, size * 1.1, 2)
            else:
                xy = rng.uniform([-w, -d], [w, d])
            if abs(xy[0]) > w or abs(xy[1]) > d:
                continue
            if all(np.linalg.norm(xy - p.centre[:2]) > size * (1.5 if p.leaning else 1.45) for p in placed):
                break
        else:
            continue
        face = int(rng.integers(6))
        rotation = face_up_rotation(face, float(rng.uniform(0, 2 * math.pi)))
        leaning = rng.random() < lean_share
        if leaning:
            tilt = math.radians(rng.uniform(12, 35))
            axis_angle = rng.uniform(0, 2 * math.pi)
            rotation = _rotation_axis(np.array([math.cos(axis_angle), math.sin(axis_angle), 0.0]), tilt) @ rotation
        else:  # dice at rest lie within a degree or two of flat
            rotation = _rotation_axis(rng.normal(0, 1, 3) * [1, 1, 0] + [1e-9, 0, 0], math.radians(rng.uniform(0, 1.5))) @ rotation
        die = PlacedDie(kind, rotation, np.array([xy[0], xy[1], 0.0]), size, leaning)
        die.centre[2] = -float(np.min(die.corners()[:, 2] - die.centre[2]))
        placed.append(die)
    return placed


# ----------------------------------------------------------------------------- drawing


@dataclass
class Lamp:
    position: np.ndarray
    colour: np.ndarray  # linear RGB, scaled by its share of the light
    size: float


def _shade(normal: np.ndarray, point: np.ndarray, lamps: list[Lamp], ambient: np.ndarray) -> np.ndarray:
    light = ambient.copy()
    for lamp in lamps:
        to_lamp = lamp.position - point
        light += lamp.colour * max(0.0, float(normal @ to_lamp / np.linalg.norm(to_lamp)))
    return light


def _rounded_mask(radius: float) -> np.ndarray:
    """A face tile's coverage: a square whose corners are rounded by radius (share of half side),
    its rim darker where the rounded edge turns away."""
    c = (np.arange(TILE) + 0.5) / TILE * 2 - 1
    u, v = np.meshgrid(c, c)
    inner = 1 - radius
    du, dv = np.maximum(np.abs(u) - inner, 0), np.maximum(np.abs(v) - inner, 0)
    dist = np.sqrt(du ** 2 + dv ** 2)
    alpha = np.clip((radius - dist) / 0.04 + 0.5, 0, 1).astype(np.float32)
    edge = np.clip(np.maximum(np.abs(u), np.abs(v)) - (1 - radius), 0, None) / max(radius, 1e-3)
    return np.dstack([alpha, (1 - 0.35 * np.clip(edge, 0, 1)).astype(np.float32)])


def _paste(canvas: np.ndarray, ids: np.ndarray, tile: np.ndarray, alpha: np.ndarray, quad_px: np.ndarray, ident: int
           ) -> None:
    """Warp a tile (with alpha) onto the quad's pixels of canvas, marking ids where it covers."""
    x0, y0 = np.floor(quad_px.min(0)).astype(int) - 1
    x1, y1 = np.ceil(quad_px.max(0)).astype(int) + 2
    h, w = canvas.shape[:2]
    x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, w), min(y1, h)
    if x1 <= x0 or y1 <= y0:
        return
    src = np.float32([[0, 0], [TILE, 0], [TILE, TILE], [0, TILE]])
    m = cv2.getPerspectiveTransform(src, np.float32(quad_px - [x0, y0]))
    size = (x1 - x0, y1 - y0)
    warped = cv2.warpPerspective(tile, m, size, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)
    a = cv2.warpPerspective(alpha, m, size, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)[..., None]
    region = canvas[y0:y1, x0:x1]
    region[:] = region * (1 - a) + warped * a
    if ident:
        ids[y0:y1, x0:x1][a[..., 0] > 0.5] = ident


def draw_die(canvas: np.ndarray, ids: np.ndarray, die: PlacedDie, ident: int, camera: Camera, lamps: list[Lamp],
             ambient: np.ndarray, mask: np.ndarray) -> None:
    """The die's faces that look at the camera, far first, shaded, with mirror glare when glossy."""
    faces = []
    for i in range(6):
        normal = die.rotation @ np.array(FACE_AXES[i][0], float)
        centre = die.centre + normal * die.size / 2
        if normal @ (camera.position - centre) > 0:
            faces.append((float(camera.depth(centre)[0]), i, normal, centre))
    # the mirror image of a lamp in the face: a sharp small spot on a glossy die, a wide dim
    # sheen on a matte one (lobe width from the roughness, peak falling as the lobe widens)
    lobe = max(0.02, 0.6 * die.kind.roughness ** 2)
    peak = 0.08 * min(40.0, (0.05 / lobe) ** 2)
    for _, i, normal, centre in sorted(faces, reverse=True):
        quad = die.face_quad(i)
        light = _shade(normal, centre, lamps, ambient)
        tile = die.kind.tiles[i] * light[None, None, :] * mask[..., 1:2]
        # mirror glare on a coarse grid over the face, spread to the tile
        g = 24
        s = (np.arange(g) + 0.5) / g
        uu, vv = np.meshgrid(s, s)
        pts = (quad[0][None, None] + (quad[1] - quad[0])[None, None] * uu[..., None]
               + (quad[3] - quad[0])[None, None] * vv[..., None])
        spec = np.zeros((g, g, 3), np.float32)
        view = camera.position - pts
        view /= np.linalg.norm(view, axis=-1, keepdims=True)
        for lamp in lamps:
            to_lamp = lamp.position - pts
            to_lamp /= np.linalg.norm(to_lamp, axis=-1, keepdims=True)
            half = view + to_lamp
            half /= np.linalg.norm(half, axis=-1, keepdims=True)
            angle = np.arccos(np.clip(half @ normal, -1, 1))
            spec += (peak * np.exp(-0.5 * (angle / lobe) ** 2))[..., None] * lamp.colour
        tile = tile + cv2.resize(spec, (TILE, TILE), interpolation=cv2.INTER_CUBIC).clip(0, None)
        _paste(canvas, ids, tile.astype(np.float32), mask[..., 0], camera.project(quad), ident)


def draw_box(canvas: np.ndarray, ids: np.ndarray, lo: np.ndarray, hi: np.ndarray, colour: np.ndarray, camera: Camera,
             lamps: list[Lamp], ambient: np.ndarray) -> None:
    """A flat-coloured axis-aligned box (a tray wall, a thing on the table): its faces that look
    at the camera, far first."""
    centre = (lo + hi) / 2
    faces = []
    for axis in range(3):
        for sign in (-1, 1):
            normal = np.zeros(3)
            normal[axis] = sign
            fc = centre.copy()
            fc[axis] = hi[axis] if sign > 0 else lo[axis]
            if normal @ (camera.position - fc) <= 0:
                continue
            others = [k for k in range(3) if k != axis]
            quad = []
            for a, b in ((0, 0), (1, 0), (1, 1), (0, 1)):
                p = fc.copy()
                p[others[0]] = (lo, hi)[a][others[0]]
                p[others[1]] = (lo, hi)[b][others[1]]
                quad.append(p)
            faces.append((float(camera.depth(fc)[0]), normal, np.array(quad)))
    for _, normal, quad in sorted(faces, key=lambda f: -f[0]):
        px = camera.project(quad)
        if np.any(camera.depth(quad) <= 0.01):
            continue
        shade = colour * _shade(normal, quad.mean(0), lamps, ambient)
        cv2.fillConvexPoly(canvas, np.round(px * 16).astype(np.int32), tuple(float(c) for c in shade),
                           cv2.LINE_AA, shift=4)
        cv2.fillConvexPoly(ids, np.round(px * 16).astype(np.int32), 0, shift=4)


def floor_shadows(floor_shape: tuple[int, int], origin: np.ndarray, scale: float, lamp: Lamp,
                  solids: list[np.ndarray]) -> np.ndarray:
    """The share of `lamp`'s light that reaches each floor texel (`scale` texels a metre): each
    solid (its corners) casts the hull of its corners projected from the lamp onto the floor,
    softened by the lamp's size."""
    lit = np.ones(floor_shape, np.float32)
    for corners in solids:
        direction = corners - lamp.position
        down = np.minimum(direction[:, 2], -1e-6)
        t = -lamp.position[2] / down
        hit = lamp.position[:2] + direction[:, :2] * t[:, None]
        texels = (hit - origin) * scale
        hull = cv2.convexHull(np.float32(texels))
        cv2.fillConvexPoly(lit, np.round(hull * 4).astype(np.int32), 0.0, cv2.LINE_AA, shift=2)
    soft = max(1, int(lamp.size * 40 * scale / 1000))
    return cv2.GaussianBlur(lit, (0, 0), soft)


def render_scene(family: dict, kinds: dict[str, DieKind], dice_names: list[str], rng: np.random.Generator,
                 lean_share: float = 0.08) -> tuple[np.ndarray, list[dict], dict]:
    """One photo of the family's tray with the named dice: (linear RGB float image, labels, scene)."""
    tray = dict(family["tray"])
    for key in ("inner_w", "inner_d"):
        tray[key] *= rng.uniform(0.92, 1.08)
    camera = make_camera(family["camera"], tray, rng)
    light = family["light"]
    lamps = []
    for lamp in light["lamps"]:
        pos = np.array(families.lamp_position(lamp)) + rng.normal(0, 0.03, 3)
        pos[2] = max(pos[2], 0.06)
        share = lamp["share"] * light["brightness"] * (0.6 / np.linalg.norm(pos)) ** 2 * 0.6
        lamps.append(Lamp(pos, np.array(kelvin_rgb(lamp["kelvin"]), np.float32) * share, lamp["size_m"]))
    if light["window"]:
        az = math.radians(light["window_azimuth_deg"])
        lamps.append(Lamp(np.array([1.6 * math.cos(az), 1.6 * math.sin(az), 0.9]),
                          np.array(kelvin_rgb(6200), np.float32) * 0.5 * light["brightness"], 1.2))
    if light["glare"]:
        lamps.append(Lamp(np.array([rng.uniform(-0.05, 0.05), rng.uniform(-0.05, 0.05), camera.position[2] * 1.1]),
                          np.array(kelvin_rgb(light["lamps"][0]["kelvin"]), np.float32) * 0.25, 0.03))
    ambient = np.array(kelvin_rgb(light["lamps"][0]["kelvin"]), np.float32) * light["ambient"] * 2.0
    size = float(rng.uniform(0.014, 0.019))
    dice = place_dice([kinds[n] for n in dice_names], tray, size, rng, lean_share)

    # the floor: what the camera sees of the plane z = 0, as a texture at FLOOR_MM_PER_PX
    image_corners = np.array([[0, 0], [camera.width, 0], [camera.width, camera.height], [0, camera.height]], float)
    ground = camera.ray_to_floor(image_corners)[:, :2]
    lo = np.maximum(ground.min(0), -0.7) - 0.02
    hi = np.minimum(ground.max(0), 0.7) + 0.02
    mm = max(FLOOR_MM_PER_PX, float(np.max(hi - lo)) * 1000 / FLOOR_MAX_TEXELS)
    scale = 1000.0 / mm
    shape = (int((hi[1] - lo[1]) * scale), int((hi[0] - lo[0]) * scale))
    table = surface_texture(family_table(family), shape, mm, rng)
    floor = surface_texture(family["surface"], shape, mm, rng)
    in_tray = np.zeros(shape, np.float32)
    tw, td = tray["inner_w"] / 2, tray["inner_d"] / 2
    t0 = ((np.array([-tw, -td]) - lo) * scale).astype(int)
    t1 = ((np.array([tw, td]) - lo) * scale).astype(int)
    cv2.rectangle(in_tray, tuple(int(v) for v in t0), tuple(int(v) for v in t1), 1.0, -1)
    ground_rgb = _lin(table * (1 - in_tray[..., None]) + floor * in_tray[..., None])

    wall_t, wall_h = tray["wall_t"], tray["wall_h"]
    walls = [(np.array([-tw - wall_t, td, 0]), np.array([tw + wall_t, td + wall_t, wall_h])),
             (np.array([-tw - wall_t, -td - wall_t, 0]), np.array([tw + wall_t, -td, wall_h])),
             (np.array([tw, -td, 0]), np.array([tw + wall_t, td, wall_h])),
             (np.array([-tw - wall_t, -td, 0]), np.array([-tw, td, wall_h]))]
    clutter = []
    for _ in range(family["tray"]["clutter"]):
        side = rng.choice([-1, 1])
        extent = rng.uniform(0.03, 0.12, 2)
        z = rng.uniform(0.005, 0.1)
        gap = wall_t + rng.uniform(0.01, 0.08)
        if rng.random() < 0.5:
            centre = np.array([rng.uniform(-tw, tw), side * (td + gap + extent[1] / 2)])
        else:
            centre = np.array([side * (tw + gap + extent[0] / 2), rng.uniform(-td, td)])
        clutter.append((np.array([*(centre - extent / 2), 0.0]), np.array([*(centre + extent / 2), z]),
                        _lin(rng.uniform(0.05, 0.95, 3).astype(np.float32))))
    solids = [d.corners() for d in dice] + [_box_corners(a, b) for a, b in walls] + [_box_corners(a, b) for a, b, _ in clutter]
    coarse = (max(2, shape[0] // LIGHT_STEP), max(2, shape[1] // LIGHT_STEP))
    gx, gy = np.meshgrid(np.linspace(lo[0], hi[0], coarse[1], dtype=np.float32),
                         np.linspace(lo[1], hi[1], coarse[0], dtype=np.float32))
    irradiance = np.zeros((*coarse, 3), np.float32) + ambient
    shadow_shape = (max(2, shape[0] // 2), max(2, shape[1] // 2))
    for lamp in lamps:
        dx, dy, dz = lamp.position[0] - gx, lamp.position[1] - gy, np.float32(lamp.position[2])
        cosine = dz / np.sqrt(dx * dx + dy * dy + dz * dz)
        irradiance += cosine[..., None] * lamp.colour
        lit = floor_shadows(shadow_shape, lo, scale / 2, lamp, solids)
        lamps_share = cv2.resize(lit, (coarse[1], coarse[0]), interpolation=cv2.INTER_AREA)
        irradiance -= ((1 - lamps_share) * cosine)[..., None] * lamp.colour
    irradiance = cv2.resize(irradiance, (shape[1], shape[0]), interpolation=cv2.INTER_LINEAR)
    contact = np.zeros(shape, np.float32)  # the dark seam where a die meets the floor
    for die in dice:
        c = ((die.centre[:2] - lo) * scale).astype(int)
        cv2.circle(contact, (int(c[0]), int(c[1])), int(die.size * scale * 0.62), 1.0, -1)
    contact = cv2.GaussianBlur(contact, (0, 0), size * scale * 0.15 + 1) * 0.45
    lit_ground = ground_rgb * irradiance * (1 - contact[..., None])

    # warp the floor into the photo, then draw far walls, dice, near walls and the rest
    texel = np.float32([[0, 0], [shape[1], 0], [shape[1], shape[0]], [0, shape[0]]])
    world = np.array([[lo[0], lo[1], 0], [hi[0], lo[1], 0], [hi[0], hi[1], 0], [lo[0], hi[1], 0]])
    homography = cv2.getPerspectiveTransform(texel, np.float32(camera.project(world)))
    canvas = cv2.warpPerspective(lit_ground, homography, (camera.width, camera.height), flags=cv2.INTER_LINEAR,
                                 borderMode=cv2.BORDER_REPLICATE)
    ids = np.zeros((camera.height, camera.width), np.int32)
    wall_colour = _lin(np.array(family_wall_colour(family), np.float32))
    near, far = [], []
    for a, b in walls:
        (near if _faces_away(a, b, camera) else far).append((a, b))
    for a, b, colour in clutter:
        draw_box(canvas, ids, a, b, colour, camera, lamps, ambient)
    for a, b in far:
        draw_box(canvas, ids, a, b, wall_colour, camera, lamps, ambient)
    mask_cache: dict[float, np.ndarray] = {}
    order = sorted(range(len(dice)), key=lambda k: -float(camera.depth(dice[k].centre)[0]))
    for k in order:
        radius = round(min(0.45, max(0.05, dice[k].kind.edge_radius)), 2)
        mask = mask_cache.setdefault(radius, _rounded_mask(radius))
        draw_die(canvas, ids, dice[k], k + 1, camera, lamps, ambient, mask)
    for a, b in near:
        draw_box(canvas, ids, a, b, wall_colour, camera, lamps, ambient)

    labels, visible, tilts = [], [], []
    for k, die in enumerate(dice):
        face, tilt = die.up_face()
        quad = camera.project(die.face_quad(face))
        centre = camera.project(die.centre + die.rotation @ np.array(FACE_AXES[face][0], float) * die.size / 2)[0]
        labels.append({"die": die.kind.name, "face": die.kind.faces[face],
                       "center": [round(float(centre[0]), 2), round(float(centre[1]), 2)],
                       "corners": order_corners([(float(x), float(y)) for x, y in quad]),
                       "cocked": bool(tilt > COCKED_TILT_DEG)})
        top = np.zeros(ids.shape, np.uint8)  # the studio samples the central 80 % of the face too
        middle = quad.mean(0) + 0.8 * (quad - quad.mean(0))
        cv2.fillConvexPoly(top, np.round(middle).astype(np.int32), 1)
        inside = top.astype(bool)
        visible.append(round(float((ids[inside] == k + 1).mean()) if inside.any() else 0.0, 3))
        tilts.append(round(tilt, 2))
    scene = {"family": family["family"], "split": family["split"], "surface": family["surface"]["kind"],
             "visible_fraction": visible, "tilt_deg": tilts,
             "camera": {"height_cm": round(float(camera.position[2] * 100), 2), "focal_px": round(camera.focal, 1)},
             "lamps": len(lamps)}
    return canvas, labels, scene


def _box_corners(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])


def _faces_away(lo: np.ndarray, hi: np.ndarray, camera: Camera) -> bool:
    """Whether a wall's inner face (towards the tray's centre) looks away from the camera: such
    a wall stands between the camera and the dice beside it, and is drawn over them."""
    centre = (lo + hi) / 2
    extent = hi - lo
    thin = int(np.argmin(extent[:2]))
    normal = np.zeros(3)
    normal[thin] = -np.sign(centre[thin])
    face = centre.copy()
    face[thin] = lo[thin] if normal[thin] < 0 else hi[thin]
    return bool(normal @ (camera.position - face) <= 0)


def family_table(family: dict) -> dict:
    tray = family["tray"]
    if tray["table"] == "wood":
        return {"kind": "wood", "light": [0.86, 0.75, 0.59], "dark": [0.63, 0.47, 0.31], "scale": 30.0, "angle": 0.3}
    return {"kind": "plain", "colour": tray["table_colour"]}


def family_wall_colour(family: dict) -> list[float]:
    tray, surface = family["tray"], family["surface"]
    if tray["wall"] == "same":
        for key in ("colour", "light", "base", "a"):
            if key in surface:
                return surface[key]
    if tray["wall"] == "wood":
        return [0.59, 0.39, 0.24]
    return tray["wall_colour"]


# ----------------------------------------------------------------------------- the camera's side


def develop(linear: np.ndarray, labels: list[dict], family: dict, rng: np.random.Generator) -> tuple[np.ndarray, list[dict], dict]:
    """The camera's processing of the light: white balance (imperfect), exposure, vignetting,
    focus and motion blur, lens distortion, sensor noise; BGR uint8 and labels moved by the lens."""
    cam = family["camera"]
    h, w = linear.shape[:2]
    lamp = np.array(kelvin_rgb(family["light"]["lamps"][0]["kelvin"]), np.float32)
    awb = float(np.clip(cam["awb_strength"] + rng.uniform(-0.1, 0.1), 0, 1))
    gains = (1.0 / np.maximum(lamp, 1e-3)) ** awb
    gains = gains / gains[1] * np.array(cam["cast"], np.float32) * rng.uniform(0.97, 1.03, 3)
    image = linear * gains[None, None, :].astype(np.float32)
    lum = image.mean(axis=2)
    exposure = 0.85 / max(float(np.percentile(lum[::4, ::4], 99.0)), 1e-6) * 2.0 ** (cam["ev"] + rng.uniform(-0.2, 0.2))
    image *= np.float32(exposure)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    r2 = ((xx - w / 2) ** 2 + (yy - h / 2) ** 2) / ((w / 2) ** 2 + (h / 2) ** 2)
    image *= (1.0 - rng.uniform(0.05, 0.4) * r2 ** 1.2)[..., None]
    sigma = cam["focus_sigma_px"] * rng.uniform(0.7, 1.3) * max(w, 640) / 1280
    if sigma > 0.3:
        image = cv2.GaussianBlur(image, (0, 0), sigma)
    if cam["motion_px"] > 0.5:
        length = int(round(cam["motion_px"] * rng.uniform(0.5, 1.5))) + 1
        kernel = np.zeros((length, length), np.float32)
        kernel[length // 2, :] = 1.0 / length
        rot = cv2.getRotationMatrix2D((length / 2 - 0.5, length / 2 - 0.5), float(rng.uniform(0, 180)), 1.0)
        kernel = cv2.warpAffine(kernel, rot, (length, length))
        image = cv2.filter2D(image, -1, kernel / max(kernel.sum(), 1e-6))
    k1 = cam["distortion_k1"]
    if abs(k1) > 1e-4:
        image, labels = _distort(image, labels, k1)
    image = np.clip(image, 0, None)
    gain = cam["noise_gain"]
    sd = np.sqrt(0.001 * gain * image + (0.003 * gain ** 0.5) ** 2)
    image = image + sd * rng.standard_normal(image.shape).astype(np.float32)
    srgb = np.power(np.clip(image, 0, 1), 1 / 2.2)
    bgr = (srgb[..., ::-1] * 255 + 0.5).astype(np.uint8)
    return bgr, labels, {"wb_gains": [round(float(g), 3) for g in gains], "exposure": round(float(exposure), 3),
                         "blur_sigma_px": round(float(sigma), 2), "distortion_k1": k1}


def _distort(image: np.ndarray, labels: list[dict], k1: float) -> tuple[np.ndarray, list[dict]]:
    """The lens model of the studio (fixtures/studio/post.py), through cv2.remap."""
    from fixtures.studio.post import _zoom, distort_points

    h, w = image.shape[:2]
    half = 0.5 * math.hypot(w, h)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    nx, ny = (xx - w / 2) / half, (yy - h / 2) / half
    f = (1 + k1 * (nx * nx + ny * ny)) / _zoom(k1)
    image = cv2.remap(image, (nx * f * half + w / 2).astype(np.float32), (ny * f * half + h / 2).astype(np.float32),
                      cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    moved = []
    for d in labels:
        pts = distort_points([d["center"], *d["corners"]], k1, w, h)
        moved.append({**d, "center": [round(float(pts[0][0]), 2), round(float(pts[0][1]), 2)],
                      "corners": order_corners([(float(x), float(y)) for x, y in pts[1:]])})
    return image, moved


# ----------------------------------------------------------------------------- a batch


def roll_names(dice_set: str, rng: np.random.Generator) -> list[str]:
    if dice_set == "tossup":
        return ["tossup"] * int(rng.integers(1, 11))
    if dice_set == "tallyup":
        names = [TALLY_COLOURS[i] for i in sorted(rng.choice(6, int(rng.integers(1, 7)), replace=False))]
        return names + ["up"] if rng.random() < 0.5 else names
    return ["d6"] * int(rng.integers(1, 13))


def make_photo(family_index: int, dice_set: str, seed: int, kinds: dict[str, DieKind] | None = None
               ) -> tuple[np.ndarray, dict]:
    """One composited photo: (BGR image, label in the fixtures' schema). `kinds`: the family's
    dice, when the caller keeps them between photos (drawing their faces costs most of a photo)."""
    family = families.draw_family(family_index)
    if family["split"] != "learn":
        raise ValueError(f"{family['family']} is held out: nothing is made from it to learn from")
    rng = np.random.default_rng([families.FAMILY_SEED, family_index, seed])
    kinds = kinds or family_kinds(family, np.random.default_rng([families.FAMILY_SEED, family_index]))
    linear, labels, scene = render_scene(family, kinds, roll_names(dice_set, rng), rng)
    bgr, labels, post = develop(linear, labels, family, rng)
    scene["post"] = post
    scene["seed"] = seed
    return bgr, {"dice_set": "any" if dice_set == "d6" else dice_set, "dice": labels, "scene": scene}


def _stem(n: int) -> tuple[str, int, str]:
    """Photo number n: its file stem, learning family and dice set (families and sets take turns)."""
    learn = families.families("learn")
    sets = ("tossup", "tallyup", "d6")
    family_index = learn[n % len(learn)]
    dice_set = sets[(n // len(learn)) % len(sets)]
    return f"comp-{families.family_name(family_index)}-{dice_set}-{n:06d}", family_index, dice_set


class PhotoWriter:
    """Makes and writes photo number n (a worker process keeps one, and its families' dice)."""

    def __init__(self, out: Path):
        self.out = out
        self.kinds: dict[int, dict[str, DieKind]] = {}

    def __call__(self, n: int) -> int:
        stem, family_index, dice_set = _stem(n)
        folder = self.out / dice_set
        label_path = folder / f"{stem}.json"
        if label_path.exists():  # resumed: the photo is there already
            return len(json.loads(label_path.read_text())["dice"])
        if family_index not in self.kinds:
            self.kinds[family_index] = family_kinds(families.draw_family(family_index),
                                                    np.random.default_rng([families.FAMILY_SEED, family_index]))
        bgr, label = make_photo(family_index, dice_set, n, self.kinds[family_index])
        quality = int(family_quality(family_index, n))
        ok, data = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, quality])
        if not ok:
            raise RuntimeError(f"cannot encode {stem}")
        label["image"] = f"{stem}.jpg"
        label["scene"]["jpeg_quality"] = quality
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f".{stem}.jpg.tmp").write_bytes(data.tobytes())
        (folder / f".{stem}.jpg.tmp").replace(folder / f"{stem}.jpg")
        (folder / f".{stem}.json.tmp").write_text(json.dumps(label) + "\n")
        (folder / f".{stem}.json.tmp").replace(label_path)
        return len(label["dice"])


_writer: PhotoWriter | None = None


def _work(job: tuple[Path, int]) -> int:
    global _writer  # one per worker process: it keeps the families' dice between photos
    out, n = job
    if _writer is None or _writer.out != out:
        _writer = PhotoWriter(out)
    cv2.setNumThreads(1)
    return _writer(n)


def generate(out: Path, dice_wanted: int, workers: int = 1, log=print) -> int:
    """Photos numbered from 0 until `dice_wanted` dice are labelled, each photo's JPEG and JSON
    written whole; photo n is the same on every run, so a stopped run resumes where it was.
    Returns the dice written."""
    from multiprocessing import get_context

    total, n, started = 0, 0, time.time()
    batch = max(8, 16 * workers)
    with get_context("spawn").Pool(workers) as pool:
        while total < dice_wanted:
            for count in pool.imap(_work, [(out, k) for k in range(n, n + batch)]):
                total += count
                n += 1
                if total >= dice_wanted:
                    break
            log(f"{n} photos, {total} dice, {time.time() - started:.0f} s")
    return total


def family_quality(family_index: int, n: int) -> float:
    base = families.draw_family(family_index)["camera"]["jpeg_quality"]
    return float(np.clip(base + np.random.default_rng([family_index, n, 7]).uniform(-10, 10), 35, 97))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.composite", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dice", type=int, default=20000, help="labelled dice to make (default 20000)")
    parser.add_argument("--out", type=Path, default=ROOT / "fixtures" / "composite")
    parser.add_argument("--workers", type=int, default=2, help="processes (default 2)")
    args = parser.parse_args(argv)
    start = time.time()
    total = generate(args.out, args.dice, args.workers)
    print(f"{total} labelled dice in {args.out} ({time.time() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
