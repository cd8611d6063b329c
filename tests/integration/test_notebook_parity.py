"""Done-when of issue 19: the cells of the notebooks under
tests/fixtures/notebooks/ (written in the style of public pandas and
matplotlib tutorial notebooks, with small data shipped beside them) run
in order through `terp exec` and through a real Jupyter kernel
(jupyter_client + ipykernel) on the same Python; at least 97 % of the
cells behave the same (parity.py says what "the same" is), and every
difference is printed."""
import subprocess

import pytest

from conftest import TERP
from parity import PY, compare, report


def test_notebook_cells_behave_as_in_jupyter(env, tmp_path):
    ok = subprocess.run([PY, "-c", "import jupyter_client, ipykernel"], capture_output=True)
    if ok.returncode != 0:
        pytest.fail("python3-jupyter-client or python3-ipykernel is missing: scripts/deps.sh")
    rows = compare(TERP, tmp_path, env)
    frac, text = report(rows)
    print(text)
    assert len(rows) >= 80, text
    assert frac >= 0.97, text
