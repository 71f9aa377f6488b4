"""median is right for odd and even lengths and leaves its argument alone."""

import sys

sys.path.insert(0, "/app")
import stats  # noqa: E402

cases = [([3, 1, 2], 2), ([4, 1, 3, 2], 2.5), ([5], 5), ([1, 1, 2, 10], 1.5), ([-3, 7], 2)]
for values, expected in cases:
    given = list(values)
    got = stats.median(given)
    if got != expected:
        sys.exit(f"median({values}) = {got!r}, expected {expected!r}")
    if given != values:
        sys.exit(f"median changed its argument: {values} became {given}")
if stats.mean([1, 2, 3, 4]) != 2.5:
    sys.exit("mean no longer works")
