"""Benchmark: the Lambda layer's unzipped size, built exactly as SAM builds it, and what fills it.

Runs the layer's Makefile target (`make build-GpupoolLayer` with ARTIFACTS_DIR in a temporary
folder: the runtime dependencies installed for python3.12 / arm64 from PyPI, then only the gpupool
modules the functions import) and prints the unzipped total against Lambda's 250 MB limit and
the ≤ 170 MB issue 15 measured before, and the largest top-level entries. Needs `make` and PyPI.

Run: .venv/bin/python benchmarks/layer_size.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

LAYER = Path(__file__).resolve().parents[1] / "layers" / "gpupool"
MB = 1_000_000


def _size(path: Path) -> int:
    return (
        sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
        if path.is_dir()
        else path.stat().st_size
    )


def main() -> int:
    with tempfile.TemporaryDirectory() as artifacts:
        env = {**os.environ, "ARTIFACTS_DIR": artifacts}
        done = subprocess.run(
            ["make", "-s", "-C", str(LAYER), "build-GpupoolLayer", f"PYTHON={sys.executable}"],
            env=env,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            print(f"layer build FAILED (no size): {done.stderr.strip()[-2000:]}")
            return 1
        root = Path(artifacts) / "python"
        total = _size(root)
        print(
            f"layer unzipped: {total / MB:.1f} MB "
            "(Lambda limit 250 MB; issue 15 measured ≤ 170 MB before the makefile build)"
        )
        entries = sorted(((p.name, _size(p)) for p in root.iterdir()), key=lambda e: -e[1])
        for name, size in entries[:12]:
            print(f"  {size / MB:7.1f} MB  {name}")
        print(f"  {_size(root / 'gpupool') / MB:7.2f} MB  gpupool (only the modules the functions import)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
