"""The Tally reader's quicker paths give the very values of the plain ones they stand for.

A face read takes an ink's products with the templates once, cuts the squares a placement
tries together, and scales a patch by cv2.multiply: each must equal, bit for bit, what the
plain per-ink, per-patch numpy code gives, or a reading could change on some frame.
"""

from __future__ import annotations

import numpy as np
import pytest

from scanner import tally_prints
from scanner.tally import TallyReader
from scanner.tally_model import PATCH_SIDE, default_model
from scanner.tally_prints import (
    Compiled, best_over_shifts, face_scores, face_scores_of, ink_as, ink_of, ink_rows_of, inks_as, print_scores, shifted,
    times_gains,
)


@pytest.fixture(scope="module")
def compiled() -> Compiled:
    return TallyReader(default_model()).compiled


def _patches(seed: int, count: int) -> list[np.ndarray]:
    """Drawn face patches (balanced float BGR): a body colour, a blob of ink, noise."""
    rng = np.random.default_rng(seed)
    patches = []
    for _ in range(count):
        body, ink = rng.uniform(20, 230, 3), rng.uniform(20, 230, 3)
        yy, xx = np.mgrid[:PATCH_SIDE, :PATCH_SIDE]
        centre = rng.uniform(10, 22, 2)
        inked = np.hypot(yy - centre[0], xx - centre[1]) < rng.uniform(3, 9)
        patch = np.where(inked[..., None], ink, body) + rng.normal(0, 6, (PATCH_SIDE, PATCH_SIDE, 3))
        patches.append(np.clip(patch, 0, 255).astype(np.uint8))
    return patches


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def test_gains_by_cv2_are_numpys_products():
    rng = np.random.default_rng(1)
    for patch in _patches(1, 20):
        gains = (235.0 / rng.uniform(30, 255, 3)).astype(np.float32)
        assert _same(times_gains(patch, gains), patch.astype(np.float32) * gains)
        as_float = patch.astype(np.float32) * 1.7
        assert _same(times_gains(as_float, gains), as_float * gains)
    # Gains of another dtype keep numpy's promotion.
    assert times_gains(patch, np.float64([1.0, 2.0, 3.0])).dtype == np.float64


def test_shifted_rows_of_many_inks_are_each_inks_rows():
    inks = [ink_of(patch.astype(np.float32))[0] for patch in _patches(2, 5)]
    inks.append(np.rot90(inks[0]))  # a view, as the face net's turns are
    assert _same(tally_prints._shifted_rows(inks), np.concatenate([shifted(i) for i in inks]))


def test_a_face_reads_scores_are_face_scores(compiled: Compiled):
    inks = [ink_of(patch.astype(np.float32))[0] for patch in _patches(3, 9)]
    for die in compiled.templates:
        rows = ink_rows_of(inks)
        by_mean = best_over_shifts(rows, compiled.means[die][1])
        best = [max(score, -1.0) for score in by_mean.max(axis=1).tolist()]
        assert best == print_scores(inks, die, compiled)
        for index, ink in enumerate(inks):
            expected = face_scores(ink, die, compiled)
            reused = face_scores_of(rows.of(index), die, compiled, by_mean[index])
            alone = face_scores_of(ink_rows_of([ink]), die, compiled)
            # Equal values in the same order (ties are settled by the order).
            assert list(reused.items()) == list(expected.items()) == list(alone.items())


def test_inks_of_squares_cut_together_are_each_squares_ink():
    rng = np.random.default_rng(4)
    warps = _patches(4, 12)
    gains = (235.0 / rng.uniform(30, 255, 3)).astype(np.float32)
    _, body, ink = ink_of(times_gains(warps[0], gains))
    together = inks_as(warps, gains, body, ink)
    for warp, mask in zip(warps, together):
        assert _same(mask, ink_as(warp.astype(np.float32) * gains, body, ink))
