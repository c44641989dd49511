"""Where a dataset's files come from: command line, environment, shared/, data/raw, or a download.

Order (first folder that holds the dataset's marker file wins):
1. `--source NAME=DIR` on the command line;
2. the environment variable `PLAB_SOURCE_<NAME>`;
3. `../shared/datasets/<name>` (or `PLAB_SHARED_DATASETS/<name>`);
4. `data/raw/<name>`;
5. for public datasets, when the machine is online: the official files from GitHub, pinned to a
   commit, each checked against its SHA-256 in `manifest.toml`, saved to `data/raw/<name>`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import socket
import tomllib
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from backend.config import Settings, source_env_var
from backend.datasets.base import DataError, Source
from backend.datasets.description import Description

log = logging.getLogger(__name__)
MANIFEST = Path(__file__).with_name("manifest.toml")
DEFAULT_DOWNLOAD_BASE = "https://raw.githubusercontent.com"


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    title: str
    markers: tuple[str, ...]  # glob patterns; a folder matching any of them holds the dataset
    license: str
    citation: str
    how_to_add: str
    needs: tuple[str, ...] = ()  # other datasets' folders the loader also reads
    description: Description | None = None  # task, labels, splits, baselines (None: no examples, e.g. the corpus)
    shared: str = ""  # its folder under ../shared/datasets when not its name (e.g. nli_train/imppres)


def candidates(spec: DatasetSpec, cli: dict[str, Path], cfg: Settings) -> list[tuple[str, Path]]:
    """Every place to look, in order, with a word for how it was named."""
    places = []
    if spec.name in cli:
        places.append(("command line", Path(cli[spec.name])))
    env = os.environ.get(source_env_var(spec.name))
    if env:
        places.append(("environment", Path(env)))
    places.append(("shared", cfg.shared_datasets / (spec.shared or spec.name)))
    places.append(("data/raw", cfg.raw_dir / spec.name))
    return places


def holds(spec: DatasetSpec, folder: Path) -> bool:
    return folder.is_dir() and any(next(folder.glob(marker), None) is not None for marker in spec.markers)


def resolve(spec: DatasetSpec, cli: dict[str, Path], cfg: Settings) -> tuple[Source | None, list[Path]]:
    """The first folder that holds the dataset, and every folder looked at."""
    looked = []
    for how, folder in candidates(spec, cli, cfg):
        looked.append(folder)
        if holds(spec, folder):
            return Source(spec.name, folder, how), looked
        if how == "command line":
            raise DataError(folder, f"--source {spec.name}=... names a folder without any of {list(spec.markers)}")
    return None, looked


def manifest(name: str) -> dict | None:
    with MANIFEST.open("rb") as fh:
        return tomllib.load(fh).get(name)


def download_base() -> str:
    return os.environ.get("PLAB_DOWNLOAD_BASE", DEFAULT_DOWNLOAD_BASE).rstrip("/")


def online(timeout: float = 3.0) -> bool:
    """True when the download host answers a TCP connect within `timeout` seconds."""
    url = urlparse(download_base())
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((url.hostname, port), timeout=timeout):
            return True
    except OSError:
        return False


def download(spec: DatasetSpec, cfg: Settings, timeout: float = 60.0) -> Source | None:
    """Fetch the official files into data/raw/<name>, verifying each SHA-256; None if not possible.

    Files land in a temporary folder that is renamed only when every file verified, so an
    interrupted or corrupted download never looks like a dataset.
    """
    entry = manifest(spec.name)
    if entry is None or cfg.offline or not online():
        return None
    final = cfg.raw_dir / spec.name
    partial = cfg.raw_dir / f".{spec.name}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    for item in entry["files"]:
        url = f"{download_base()}/{entry['repo']}/{entry['commit']}/{item['upstream']}"
        target = partial / item["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        log.info("downloading %s", url)
        with urllib.request.urlopen(url, timeout=timeout) as response:
            data = response.read()
        actual = hashlib.sha256(data).hexdigest()
        if actual != item["sha256"]:
            shutil.rmtree(partial, ignore_errors=True)
            raise DataError(url, f"SHA-256 mismatch: expected {item['sha256']}, got {actual}; nothing was saved")
        target.write_bytes(data)
    shutil.rmtree(final, ignore_errors=True)
    partial.rename(final)
    return Source(spec.name, final, "download")
