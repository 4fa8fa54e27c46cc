"""A result records the CPU it was computed on: the same code gives other float bits on another kernel family
(issue 45's seed-1 run found 517 files differing from a reference made on another CPU), so a job that used torch
records the CPU's model, the kernels torch chose on it and the variables that forced kernels, and audit shows them."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from sentrepro.records.audit import _describe
from sentrepro.records.provenance import NUMERICS_VARIABLES, cpu_model

SCRIPT = "import json, torch; from sentrepro.records.provenance import device_info; print(json.dumps(device_info()))"


def device_of(**forced: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in NUMERICS_VARIABLES}
    out = subprocess.run([sys.executable, "-c", SCRIPT], env={**env, **forced}, capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out)


def test_a_job_records_the_cpu_and_the_kernels_torch_chose_on_it():
    import torch

    native = device_of()
    assert native["cpu_capability"] == torch.backends.cpu.get_cpu_capability() and "numerics_env" not in native
    assert native["cpu"] and native["cpu"] == cpu_model()
    forced = device_of(ATEN_CPU_CAPABILITY="default", MKL_CBWR="COMPATIBLE")
    assert forced["cpu_capability"] == "DEFAULT"
    assert forced["numerics_env"] == {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE"}


def test_audit_names_the_cpu_and_its_kernels_where_a_record_has_them():
    device = {"device": "cpu", "torch_threads": 1, "cpu": "AMD EPYC 9B14", "cpu_capability": "AVX512",
              "numerics_env": {"MKL_CBWR": "COMPATIBLE", "ATEN_CPU_CAPABILITY": "default"}}
    line = _describe({"device": device, "precision": "fp32"})
    assert "| cpu [CPU AMD EPYC 9B14, kernels AVX512, ATEN_CPU_CAPABILITY=default, MKL_CBWR=COMPATIBLE] fp32 |" in line
    assert "| cpu fp32 |" in _describe({"device": {"device": "cpu"}, "precision": "fp32"})  # a record from before
