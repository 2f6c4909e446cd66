"""The Graph view's positions, kept between runs: one JSON file per vault set in the data folder
(`graph-layouts/<key>.json`), written atomically (temp file, fsync, `os.replace`) so a crash
leaves the previous layout or the new one, never half a file.

A vault set is the sorted names of the vaults shown together: adding a vault is a new picture,
and switching back finds the old one again. Qt-free (the view calls it from its worker)."""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from dle_desktop.fileio import make_private_dir, write_private_atomic

log = logging.getLogger(__name__)

FORMAT = "dle-graph-layout/1"


def vault_set_key(vaults: Iterable[str]) -> str:
    """A short file-name-safe key for a set of vault names (order and repeats do not matter)."""
    names = sorted(set(vaults))
    return hashlib.sha256("\x00".join(names).encode("utf-8")).hexdigest()[:16]


@dataclass
class SavedLayout:
    positions: dict[str, tuple[float, float]]
    pinned: set[str] = field(default_factory=set)
    preset: str = "balanced"
    seed: int = 0
    vaults: tuple[str, ...] = ()

    def to_json(self) -> dict:
        return {
            "format": FORMAT,
            "vaults": list(self.vaults),
            "preset": self.preset,
            "seed": self.seed,
            "positions": {u: [x, y] for u, (x, y) in self.positions.items()},
            "pinned": sorted(u for u in self.pinned if u in self.positions),
        }

    @classmethod
    def from_json(cls, raw) -> SavedLayout:
        if not isinstance(raw, dict) or raw.get("format") != FORMAT:
            raise ValueError("not a graph layout file")
        positions: dict[str, tuple[float, float]] = {}
        for uid, xy in (raw.get("positions") or {}).items():
            if (
                isinstance(uid, str)
                and isinstance(xy, list)
                and len(xy) == 2
                and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in xy)
            ):
                positions[uid] = (float(xy[0]), float(xy[1]))
        pinned = {u for u in raw.get("pinned") or () if isinstance(u, str) and u in positions}
        raw_preset, raw_seed = raw.get("preset"), raw.get("seed")
        preset = raw_preset if isinstance(raw_preset, str) else "balanced"
        seed = raw_seed if isinstance(raw_seed, int) and not isinstance(raw_seed, bool) else 0
        vaults = tuple(v for v in raw.get("vaults") or () if isinstance(v, str))
        return cls(positions, pinned, preset, seed, vaults)


class LayoutStore:
    def __init__(self, folder: Path | str) -> None:
        self.folder = Path(folder)

    def path_for(self, vaults: Iterable[str]) -> Path:
        return self.folder / f"{vault_set_key(vaults)}.json"

    def load(self, vaults: Iterable[str]) -> SavedLayout | None:
        """The saved layout of this vault set, or None (missing, or unreadable: logged, and the
        view lays the graph out afresh)."""
        path = self.path_for(vaults)
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            return SavedLayout.from_json(raw)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            log.warning("graph layout %s is unreadable (%s); the graph will be laid out afresh", path, exc)
            return None

    def save(
        self,
        vaults: Iterable[str],
        positions: Mapping[str, tuple[float, float]],
        pinned: Iterable[str] = (),
        preset: str = "balanced",
        seed: int = 0,
    ) -> Path:
        names = tuple(sorted(set(vaults)))
        saved = SavedLayout(
            {u: (float(x), float(y)) for u, (x, y) in positions.items() if math.isfinite(x) and math.isfinite(y)},
            set(pinned),
            preset,
            seed,
            names,
        )
        make_private_dir(self.folder)
        path = self.path_for(names)
        write_private_atomic(path, json.dumps(saved.to_json(), ensure_ascii=False, separators=(",", ":")))
        return path
