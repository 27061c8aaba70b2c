"""The project's packaging: environment.yml agrees with pyproject.toml."""

from __future__ import annotations

import re
import tomllib

import yaml

from conftest import REPO


def _split(spec: str) -> tuple[str, str]:
    match = re.match(r"^\s*([A-Za-z0-9_.\-]+)\s*(.*)$", spec)
    assert match, spec
    return match.group(1).lower().replace("_", "-"), match.group(2).replace(" ", "")


def test_environment_yml_names_the_same_dependencies_as_pyproject():
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    wanted = dict(_split(s) for s in pyproject["project"]["dependencies"])
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    named = dict(_split(s) for s in conda if not s.startswith(("python", "pip")))
    assert named == wanted, "environment.yml and pyproject.toml disagree on dependencies"
    python = next(s for s in conda if s.startswith("python"))
    assert _split(python)[1] == pyproject["project"]["requires-python"]
    assert pip == ["-e ."], "environment.yml should install bioxr itself with pip"


def test_templates_ship_inside_the_wheel():
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    force = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert force == {"templates": "bioxr/templates"}
    assert (REPO / "templates").is_dir()
