"""The README's commands and examples are the ones that work."""

from __future__ import annotations

import contextlib
import io
import os
import re

import pytest

from conftest import REPO

README = (REPO / "README.md").read_text()


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def test_quickstart_is_two_commands_and_ci_runs_the_test_command():
    quick = README.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.*?)```", quick, flags=re.S)
    assert len(commands) == 2 and all(c.strip().count("\n") == 0 for c in commands)
    assert "bioxr report verification" in commands[0]
    assert "pytest" in commands[1]
    assert commands[1].strip() in (REPO / ".ci" / "run").read_text()


def test_tour_runs_and_prints_what_it_says(face_csv, finger_csv, monkeypatch):
    monkeypatch.chdir(REPO)
    if not (REPO.parent / "shared" / "data" / "bssr1" / "face-C.csv").exists():
        pytest.skip("the tour reads ../shared/data/bssr1 relative to the checkout")
    namespace: dict = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for block in _blocks("python"):
            exec(compile(block, "README.md", "exec"), namespace)
    printed = out.getvalue()
    assert "517" in printed.splitlines()[0]
    for line in re.findall(r"^#( +\w+: EER .*| EER .*)$", README, flags=re.M):
        assert line.strip() in printed, f"README claims {line.strip()!r}; the code printed:\n{printed}"
    assert os.path.basename(str(face_csv)) == "face-C.csv"
