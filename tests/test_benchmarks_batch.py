"""benchmarks/batch_kinematics.py and benchmarks/gpu_batch.py run end to end at small sizes (their numbers are
measurements, not asserted; what is asserted: the tables are whole, the peers and the JAX path agree with physai)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _table_rows(text: str, first: str) -> list[list[str]]:
    lines = (line for line in text.splitlines() if line.startswith(f"| {first}"))
    return [[c.strip() for c in line.strip("|").split("|")] for line in lines]


@pytest.mark.slow
def test_batch_kinematics_writes_the_scaling_table_with_memory_and_the_floor(tmp_path):
    out = tmp_path / "batch.md"
    run = subprocess.run([sys.executable, str(BENCH / "batch_kinematics.py"), "--sizes", "1000", "--rounds", "1",
                          "--stream-size", "20000", "--torch-max", "0", "--pinocchio-max", "1000", "--out", str(out)],
                         capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    text = out.read_text()
    row, cpu = _table_rows(text, "1,000")  # the scaling table's row, then the processor times'
    assert len(row) == 12 and row[5] == "-"  # pytorch_kinematics not run at this size
    assert all(float(row[k].replace(",", "")) > 0 for k in (1, 2, 3, 4, 6))  # physai, out=, CPU, floor, Pinocchio
    assert len(cpu) == 4 and all(float(c.replace(",", "")) > 0 for c in cpu[1:])
    assert re.search(r"\*\*[\d,]+ MB above the output array\*\*", text)


@pytest.mark.slow
def test_gpu_batch_cpu_smoke_agrees_with_the_compiled_engine(tmp_path):
    out = tmp_path / "gpu.md"
    run = subprocess.run([sys.executable, str(BENCH / "gpu_batch.py"), "--cpu-smoke", "--repeats", "1",
                          "--out", str(out)], capture_output=True, text=True, timeout=900, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    text = out.read_text()
    (jac,) = _table_rows(text, "Jacobians")
    assert float(jac[7]) <= 1e-13  # jaxkin against physai.jacobian, both pinned to MuJoCo elsewhere
    (ik,) = _table_rows(text, "DLS IK")
    assert ik[7] == "100.00 %"  # the same targets converge on both paths
