"""The real data tests read (../shared/datasets), its checksums, and the ids of the runs the `lab` fixture makes."""

from __future__ import annotations

import hashlib
import tomllib
from pathlib import Path

import pytest

from backend.config import settings
from backend.datasets.sources import MANIFEST

SHARED = settings().shared_datasets
CHECKOUT_DATA = settings().data_dir  # read before any test points PLAB_DATA_DIR elsewhere


def shared(name: str) -> Path:
    """A dataset folder of ../shared/datasets, or skip the test when shared/ is absent."""
    path = SHARED / name
    if not path.is_dir():
        pytest.skip(f"{path} is missing: the real-data tests need ../shared/datasets beside the checkout")
    return path


def checked_sums(name: str) -> dict[str, str]:
    """A shared dataset's SHA256SUMS as {file: sha256}, each file's bytes checked against it here."""
    root = shared(name)
    listed = {
        file.strip().removeprefix("./"): sha
        for sha, file in (line.split(None, 1) for line in (root / "SHA256SUMS").read_text().splitlines())
    }
    wrong = [file for file, sha in listed.items() if hashlib.sha256((root / file).read_bytes()).hexdigest() != sha]
    assert not wrong, f"checksums differ from SHA256SUMS: {wrong}"
    return listed


def manifest_sums(name: str) -> dict[str, str]:
    """The download manifest's {file: sha256} of a dataset (backend/datasets/manifest.toml)."""
    with MANIFEST.open("rb") as fh:
        return {f["path"]: f["sha256"] for f in tomllib.load(fh)[name]["files"]}


QA_RUN = "ifqa/tiny-gen/qa/qa-retrieve-then-read@1/bm25@3/S-dev/first6"
WRITE_RUN = "falseqa/tiny-gen/write/write-two-lines@1/test/first5"


def make_falseqa(folder: Path, rows: int = 2) -> Path:
    (folder / "dataset").mkdir(parents=True, exist_ok=True)
    body = "".join(f'"Question {i}?","[\'answer\']",{i % 2}\n' for i in range(rows))
    (folder / "dataset/test.csv").write_text("question,answer,label\n" + body)
    return folder
