"""Paths and settings, each overridable by an environment variable.

| setting            | environment variable   | default                         |
|--------------------|------------------------|---------------------------------|
| store file         | PLAB_STORE             | data/presupposition_lab.duckdb  |
| data folder        | PLAB_DATA_DIR          | data/                           |
| shared datasets    | PLAB_SHARED_DATASETS   | ../shared/datasets              |
| one dataset folder | PLAB_SOURCE_<NAME>     | (none; e.g. PLAB_SOURCE_CREPE)  |
| allow downloads    | PLAB_OFFLINE=1 forbids | downloads allowed when online   |
| lab server mode    | PLAB_MODE=server       | local (no sign-in, one owner)   |
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Settings:
    data_dir: Path
    store_path: Path
    shared_datasets: Path
    offline: bool
    mode: str = "local"  # local: no sign-in, the local user is the owner; server: sign-in for every page

    @property
    def raw_dir(self) -> Path:
        return self.data_dir / "raw"


def settings() -> Settings:
    """Read the settings from the environment (cheap; call when needed)."""
    data_dir = Path(os.environ.get("PLAB_DATA_DIR", REPO_ROOT / "data"))
    return Settings(
        data_dir=data_dir,
        store_path=Path(os.environ.get("PLAB_STORE", data_dir / "presupposition_lab.duckdb")),
        shared_datasets=Path(os.environ.get("PLAB_SHARED_DATASETS", REPO_ROOT.parent / "shared" / "datasets")),
        offline=os.environ.get("PLAB_OFFLINE", "") not in ("", "0"),
        mode="server" if os.environ.get("PLAB_MODE", "").strip().lower() == "server" else "local",
    )


def source_env_var(dataset: str) -> str:
    """The environment variable that points at one dataset's folder, e.g. PLAB_SOURCE_NOPE."""
    return f"PLAB_SOURCE_{dataset.upper()}"
