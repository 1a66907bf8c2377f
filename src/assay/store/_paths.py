"""Where the run store lives: ``$ASSAY_STORE``, else the user data dir, else ~/.local/share/assay."""

from __future__ import annotations

import os
from pathlib import Path

ENV = "ASSAY_STORE"
OFF = "off"
"""``ASSAY_STORE=off`` turns the store off (as ``--no-store`` does), e.g. in CI."""
FILENAME = "runs.sqlite3"


def default_store_path() -> Path | None:
    """The store file ``assay run`` uses by default; None when ``ASSAY_STORE=off``."""
    env = os.environ.get(ENV)
    if env:
        if env.strip().lower() == OFF:
            return None
        return Path(env).expanduser()
    try:
        import platformdirs  # optional: the platform's conventional data dir when installed
    except ImportError:
        return Path.home() / ".local" / "share" / "assay" / FILENAME
    return Path(platformdirs.user_data_dir("assay", appauthor=False)) / FILENAME
