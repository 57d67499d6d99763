"""The backend the renderer builds its arrays on: `pbc.llvm` (the CPU, the default) or
`pbc.cuda` (an NVIDIA GPU), chosen at run time, as Mitsuba's variants choose theirs.

    from renderer import jit
    jit.use('cuda')                  # before building a scene's accelerator, materials, ...
    x = jit.Float(1, 2, 3)           # pbc.cuda.Float: names are looked up at each use
    with jit.using('llvm'):          # a block on another backend (restored after it)
        ...

Renderer code names its types as `jit.Float`, `jit.Array3f`, `jit.PCG32`, `jit.Ptr[...]`
where it uses them, never bound at import: the module attribute (PEP 562) is the current
backend's, so importing the renderer first and choosing the backend after works.

Arrays of two backends cannot meet in one operation (pbc raises an error). An object that
holds arrays (an intersect.Accel, a shapes.Geometry, a material, an integrator) makes them
on the backend current when it is built, and is then used on that backend only: choose the
backend first, then build and render. Rendering on the other backend in the same process
needs the first backend's objects gone too (deleted, and collected if they are in a cycle):
a call through a Ptr (the shapes', the materials', the emitters') traces every live
pbc.Object instance of the pointer's class, whatever backend its arrays are on
(pbc/dispatch.py), and one of the other backend fails there."""

import contextlib

import pbc.cuda
import pbc.llvm

BACKENDS = {'llvm': pbc.llvm, 'cuda': pbc.cuda}

_name = 'llvm'


def use(name):
    """Makes `name` ('llvm' or 'cuda') the backend of the arrays built from now on."""
    global _name
    if name not in BACKENDS:
        raise ValueError(f'renderer.jit: unknown backend {name!r}: one of '
                         f'{", ".join(map(repr, BACKENDS))}')
    _name = name


def backend_name():
    """The current backend's name: 'llvm' or 'cuda'."""
    return _name


def module():
    """The current backend's module: pbc.llvm or pbc.cuda."""
    return BACKENDS[_name]


@contextlib.contextmanager
def using(name):
    """A block on backend `name` (None: the current one, so that a function can pass its
    optional `backend=` argument on), the one before it restored after it."""
    before = _name
    if name is not None:
        use(name)
    try:
        yield module()
    finally:
        use(before)


def add_argument(parser):
    """The samples' `--backend {llvm,cuda}` option (default llvm) on an argparse parser."""
    parser.add_argument('--backend', choices=tuple(BACKENDS), default='llvm',
                        help='the arrays\' backend: llvm (the CPU, the default) or cuda (an '
                             'NVIDIA GPU)')


def __getattr__(name):
    # (private names are this module's own: copy, pickle and `import *` probe for them)
    if not name.startswith('_'):
        try:
            return getattr(BACKENDS[_name], name)
        except AttributeError:
            pass
    raise AttributeError(f'module {__name__!r} has no attribute {name!r} (nor has '
                         f'{BACKENDS[_name].__name__})')


def __dir__():
    return sorted(set(globals()) | {n for n in dir(BACKENDS[_name]) if not n.startswith('_')})
