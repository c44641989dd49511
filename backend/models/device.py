"""Device choice: 'auto' is CUDA when present, else CPU; bf16 only on a GPU that supports it."""

from __future__ import annotations

import torch


def pick(device: str = "auto") -> torch.device:
    """The torch device for a setting ('auto' | 'cpu' | 'cuda' | 'cuda:N')."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError(f"device {device!r} was asked for, but torch sees no CUDA GPU (use 'auto' or 'cpu')")
    return torch.device(device)


def dtype_for(device: torch.device) -> torch.dtype:
    """bf16 on a CUDA GPU that supports it, float32 otherwise."""
    if device.type == "cuda" and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return torch.float32
