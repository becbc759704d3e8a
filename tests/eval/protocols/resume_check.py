"""The interrupt-and-resume check of ``devil evaluate --values-cache``, shared by the protocols' tests: a run
interrupted (Ctrl-C) while one item is scored, then started again."""
from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Sequence

from devil_dataset.cli import main


def interrupted_then_resumed(monkeypatch, module: ModuleType, scorer: str, command: Sequence[str], work: Path,
                             stop_at: str, resume_args: Sequence[str] = ()) -> tuple[list[str], list[str]]:
    """Run ``devil`` ``command`` whole (``work/whole.json``), then with ``--values-cache work/cache`` interrupted by a
    KeyboardInterrupt when ``module.<scorer>`` is called for the item named ``stop_at`` (exit 130, no results file),
    then again (with ``resume_args`` added): its results file must be the bytes of the whole run. Returns the names
    scored by the interrupted run and by the resumed one."""
    assert main([*command, "--out", str(work / "whole.json")]) == 0
    real = getattr(module, scorer)
    scored: list[str] = []

    def interrupted(item, *args, **kwargs):
        scored.append(item.name)
        if item.name == stop_at:
            raise KeyboardInterrupt  # Ctrl-C while this item is scored
        return real(item, *args, **kwargs)

    monkeypatch.setattr(module, scorer, interrupted)
    cached = [*command, "--values-cache", str(work / "cache"), "--out", str(work / "resumed.json")]
    assert main(cached) == 130  # "devil: interrupted; completed outputs are kept, re-run to resume"
    assert not (work / "resumed.json").exists()
    before = list(scored)
    scored.clear()
    monkeypatch.setattr(module, scorer, lambda item, *a, **k: scored.append(item.name) or real(item, *a, **k))
    assert main([*cached, *resume_args]) == 0
    assert (work / "resumed.json").read_bytes() == (work / "whole.json").read_bytes()
    return before, list(scored)
