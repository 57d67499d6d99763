"""The array types the test suite runs on: pbc.llvm's, or pbc.cuda's where the environment
says PBC_TEST_BACKEND=cuda (on a machine without a GPU, through the stand-in driver of
tests/cuda_standin.py, which tests/conftest.py installs). Tests import their types from
here (`from suite_backend import Float, UInt32`) unless they are about one backend's code;
those are marked `llvm_only` or `cuda_only` (tests/conftest.py).

`module` is the backend's module itself; NAME its name; every public name of the module is
also a name here."""

import os

import pbc.cuda
import pbc.llvm

NAME = os.environ.get('PBC_TEST_BACKEND', 'llvm')
MODULES = {'llvm': pbc.llvm, 'cuda': pbc.cuda}
if NAME not in MODULES:
    raise ValueError(f'PBC_TEST_BACKEND={NAME!r}: the suite runs on one of {sorted(MODULES)}')
module = MODULES[NAME]
globals().update({name: getattr(module, name) for name in dir(module)
                  if not name.startswith('_')})
