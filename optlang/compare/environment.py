"""The environment a comparison ran in: versions, platform, CPU, device (for reproducibility)."""

from __future__ import annotations

import os
import platform
import sys
from importlib import metadata
from typing import Any

PACKAGES = ("optlang-dsl", "torch", "numpy", "scipy", "cvxpy", "networkx", "dwave-samplers", "pymoo", "distributed")


def _version(pkg: str) -> str | None:
    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return None


def cpu_model() -> str:
    """The CPU's marketing name from /proc/cpuinfo, else platform.processor()."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def gpu_name(device: str) -> str | None:
    """The CUDA device name when the comparison asked for (or resolved to) a GPU; torch is imported only then."""
    if device not in ("auto",) and not device.startswith("cuda"):
        return None
    try:
        import torch

        if torch.cuda.is_available():
            return torch.cuda.get_device_name(0)
    except Exception:
        return None
    return None


def environment(device: str = "auto") -> dict[str, Any]:
    """A flat, JSON-able description of this machine and the package versions."""
    env: dict[str, Any] = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "device": device,
    }
    gpu = gpu_name(device)
    if gpu:
        env["gpu"] = gpu
    for pkg in PACKAGES:
        v = _version(pkg)
        if v:
            env[pkg] = v
    return env
