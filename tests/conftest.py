"""Shared test setup: deterministic torch, few threads (CI has 2 cores), paths to fixtures and shared data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
# one memory budget on every machine, so that size diagnostics read the same everywhere
os.environ.setdefault("OPTLANG_MEMORY_LIMIT", "8GiB")

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
SHARED_DATA = Path(os.environ.get("OPTLANG_SHARED_DATA", ROOT.parent / "shared" / "data"))


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.exists():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture
def one_torch_thread():
    """One torch thread for tiny tensors: a thread pool stalls on a loaded machine (restored after)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
