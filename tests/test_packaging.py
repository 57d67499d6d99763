"""What `pip install .` (not editable) copies: every package of pbc and the sources the
Cython runtime is built from. (An editable install reads the tree and hides omissions.)"""

import fnmatch
import pathlib

import pytest

tomllib = pytest.importorskip('tomllib')         # (Python 3.11+)

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _setuptools_config():
    with open(ROOT / 'pyproject.toml', 'rb') as f:
        return tomllib.load(f)['tool']['setuptools']


def _packages():
    """Every package in the tree under pbc/, dotted."""
    return sorted('.'.join(p.parent.relative_to(ROOT).parts)
                  for p in (ROOT / 'pbc').rglob('__init__.py'))


def test_every_package_is_installed():
    include = _setuptools_config()['packages']['find']['include']
    missed = [p for p in _packages() if not any(fnmatch.fnmatch(p, pat) for pat in include)]
    assert _packages() and not missed


def test_the_runtime_sources_beside_the_python_are_installed():
    data = _setuptools_config()['package-data']
    for package in _packages():
        folder = ROOT.joinpath(*package.split('.'))
        sources = [f.name for f in folder.iterdir() if f.suffix in ('.pyx', '.pxi', '.h')]
        missed = [s for s in sources
                  if not any(fnmatch.fnmatch(s, pat) for pat in data.get(package, []))]
        assert not missed, (package, missed)
