"""With this folder on PYTHONPATH (scripts/gpu-check --stand-in puts it there), every Python
process started runs pbc.cuda through the stand-in driver of tests/cuda_standin.py: the
samples and benchmarks a GPU check runs, in processes of their own, on a machine without
a GPU."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import cuda_standin  # noqa: E402

cuda_standin.Installed()
