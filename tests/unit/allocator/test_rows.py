"""Per-node reductions (and the per-node mask) agree with numpy's plain operations for every slot width."""

from __future__ import annotations

import numpy as np
import pytest

from gpupool.core.allocator.rows import and_rows, row_any, row_count, row_sum


@pytest.mark.parametrize("width", [1, 3, 8, 16, 24])
def test_row_reductions_match_numpy(width: int) -> None:
    rng = np.random.default_rng(width)
    mask = rng.random((50, width)) > 0.6
    mask[0] = False
    values = rng.random((50, width)) * 100
    assert np.array_equal(row_any(mask), mask.any(axis=1))
    assert np.array_equal(row_count(mask), mask.sum(axis=1).astype(np.float64))
    assert np.allclose(row_sum(values, mask), np.where(mask, values, 0.0).sum(axis=1))


@pytest.mark.parametrize("width", [1, 3, 8, 16, 24])
def test_and_rows_clears_exactly_the_rows_kept_false(width: int) -> None:
    rng = np.random.default_rng(100 + width)
    mask = rng.random((40, width)) > 0.4
    keep = rng.random(40) > 0.5
    expected = mask & keep[:, None]
    and_rows(mask, keep)
    assert np.array_equal(mask, expected)
