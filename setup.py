"""Builds pbc's Cython runtime. Everything else is pure Python (see pyproject.toml)."""

import os
import runpy

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

# -ffp-contract=off keeps constant folding bit-exact with the kernels (no silent FMA);
# -fwrapv makes signed integer wrap-around defined, as it is in the generated code.
flags = ['-O3', '-ffp-contract=off', '-fwrapv', '-pthread', '-fno-math-errno']
if os.environ.get('PBC_NATIVE', '1') == '1':
    flags.append('-march=native')

# The runtime's op enum, names, kinds and flags come from the op table (pbc/optable.py).
_optable = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'pbc',
                                       'optable.py'))
_generated = _optable['cython_source']()
_target = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'pbc', '_rt_optable.pxi')
if not os.path.exists(_target) or open(_target).read() != _generated:
    with open(_target, 'w') as f:
        f.write(_generated)

runtime = Extension(
    'pbc._runtime',
    sources=['pbc/_runtime.pyx'],
    include_dirs=[numpy.get_include()],
    extra_compile_args=flags,
    extra_link_args=['-pthread'],
    depends=['pbc/_pool.h', 'pbc/_print_capture.h', 'pbc/_partition.h'] + [
        os.path.join(d, f) for d in ('pbc', 'pbc/ad') for f in os.listdir(d)
        if f.endswith('.pxi')],
    language='c++',
)

setup(ext_modules=cythonize([runtime], compiler_directives={'language_level': 3}))
