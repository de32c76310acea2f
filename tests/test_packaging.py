"""The wheel a user installs: what it declares (license, Python versions, classifiers) and what
it carries (the license text, the typing marker, the shipped models and pages)."""

import subprocess
import sys
import zipfile

import pytest

from tests.helpers import ROOT


@pytest.mark.slow
def test_the_wheel_declares_its_license_and_carries_what_it_needs(tmp_path):
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps",
                          "--no-build-isolation", "-q", "-w", str(tmp_path)],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    wheel = zipfile.ZipFile(next(tmp_path.glob("spacewar_ai-*.whl")))
    names = set(wheel.namelist())
    meta = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    fields = [line.split(": ", 1) for line in meta.splitlines() if ": " in line]
    assert ["License-Expression", "MIT"] in fields  # an SPDX expression, not the old table
    assert ["Requires-Python", ">=3.11"] in fields
    classifiers = [v for k, v in fields if k == "Classifier"]
    assert "Programming Language :: Python :: 3.11" in classifiers
    assert "Typing :: Typed" in classifiers
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    for shipped in ("spacewar_ai/py.typed", "spacewar_ai/pretrained/ppo_spacewar.pt",
                    "spacewar_ai/pretrained/hard_model.pt", "spacewar_ai/web/static/index.html"):
        assert shipped in names, shipped
    # Every module of every layer, every page and every shipped pilot and adapter file.
    package = ROOT / "spacewar_ai"
    files = {str(p.relative_to(ROOT)) for p in package.rglob("*")
             if p.is_file() and "__pycache__" not in p.parts}
    assert files - names == set()
