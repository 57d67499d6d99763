"""Derivatives through random control flow: hypothesis draws programs of float64 arithmetic
over two differentiable variables and a differentiable parameter, in `while` loops (with
`break` and `continue`), `if` statements, early `return`s, calls (pbc.switch over
targets that also read the parameter), scatters (outside loops) and scatter-adds (also in
loops' bodies and calls' targets, nested or not) into an array the result gathers from,
written as plain Python under @pbc.syntax. Each runs with its loops, conditionals and calls symbolic
and evaluated, in forward mode and reverse mode (symbolic loops given max_iterations), and
the derivatives must agree with each other and with central finite differences.

Branch and loop conditions read only integer inputs and loop counters, so that the
programs are smooth in the differentiated values and finite differences are exact to
their rounding."""

import importlib.util
import random
import sys

import numpy as np
import suite_backend
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st
from suite_backend import Bool, Float64, UInt32

import pbc

LANES = 7
MAX_ITERATIONS = 8
SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])


class Program:
    """A random program: the source of `def f(x0, x1, a, n, s, k, mode)`."""

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.lines, self.counters, self.depth = [], 0, 0
        self.calls = 2
        self.lines.append(f'    acc = pbc.zeros(Float64, {LANES})')
        self.block(1, loops=2, size=4)
        self.lines.append(f'    return x0 + 2.0 * x1 + pbc.gather(Float64, acc, (k * 5 + 1) % '
                          f'{LANES})')

    def target(self):
        """A call target's expression of its arguments u, v and the captured parameter a."""
        return self.value().replace('x0', 'u').replace('x1', 'v')

    def value(self):
        """An expression that reads a JIT variable (a constant alone would be a Python
        float: the type of a loop's state may not change)."""
        e = self.expr()
        return e if any(v in e for v in ('x0', 'x1', 'a')) else f'(a * {e})'

    def expr(self, depth=0):
        r = self.rng
        leaf = r.choice(['x0', 'x1', 'a', 'x0', 'x1', f'{r.uniform(-1, 1):.3f}'])
        if depth > 1 or r.random() < 0.3:
            return leaf
        e, f = self.expr(depth + 1), self.expr(depth + 1)
        return r.choice([f'({e} + {f})', f'({e} - {f})', f'({e} * {f})',
                         f'pbc.sin({e})', f'pbc.cos({e}) * {f}',
                         f'({e} / (1.0 + {e} * {e}))', f'({e} * 0.5)'])

    def condition(self, counters):
        r = self.rng
        options = ['s', '~s', '(k % 2) == 0', 'k > 3']
        options += [f'{c} == {r.randint(0, 2)}' for c in counters]
        options += [f'{c} + k > 4' for c in counters]
        return r.choice(options)

    def emit(self, indent, text):
        self.lines.append('    ' * indent + text)

    def block(self, indent, loops, size, counters=(), in_loop=False):
        for _ in range(self.rng.randint(1, size)):
            kind = self.rng.random()
            if kind < 0.45 or (kind > 0.9 and not in_loop and indent > 1):
                self.emit(indent, f'{self.rng.choice(["x0", "x1"])} = {self.value()}')
            elif kind < 0.7:
                self.emit(indent, f'if pbc.hint({self.condition(counters)}, mode=mode):')
                self.block(indent + 1, 0, 2, counters, in_loop)
                if self.rng.random() < 0.5:
                    self.emit(indent, 'else:')
                    self.block(indent + 1, 0, 2, counters, in_loop)
            elif kind < 0.78 and self.calls:
                self.calls -= 1
                targets = [f'lambda u, v, j: {self.target()}'
                           for _ in range(self.rng.randint(2, 3))]
                if self.rng.random() < 0.5:
                    # (a target that also scatter-adds into acc, at entries of the lane's k:
                    # an argument, as an evaluated call's target sees only its lanes)
                    targets[0] = (f'lambda u, v, j: pbc.scatter_add(acc, {self.target()}, '
                                  f'(j * {self.rng.randint(1, 3)} + {self.rng.randint(0, 6)})'
                                  f' % {LANES}) or {self.target()}')
                self.emit(indent, f'{self.rng.choice(["x0", "x1"])} = pbc.switch('
                                  f'(k + {self.rng.randint(0, 2)}) % 3, [{", ".join(targets)}], '
                                  'x0, x1, k, mode=mode)')
            elif kind < 0.85 and loops:
                c = f'i{self.counters}'
                self.counters += 1
                bound = self.rng.choice(['n', '2', 'n + 1', '(k % 3) + 1'])
                self.emit(indent, f'{c} = UInt32(0)')
                self.emit(indent, f'while pbc.hint({c} < {bound}, mode=mode, '
                                  f'max_iterations={MAX_ITERATIONS}):')
                self.emit(indent + 1, f'{c} += 1')
                self.block(indent + 1, loops - 1, 3, counters + (c,), True)
            elif in_loop and self.rng.random() < 0.4:
                self.scatter(indent, counters)
            elif in_loop:
                word = self.rng.choice(['break', 'continue'])
                self.emit(indent, f'if pbc.hint({self.condition(counters)}, mode=mode):')
                self.emit(indent + 1, word)
            elif self.rng.random() < 0.75:
                self.scatter(indent)
            elif indent == 1:
                self.emit(indent, f'if pbc.hint({self.condition(counters)}, mode=mode):')
                self.emit(indent + 1, f'return {self.value()}')
            else:
                self.emit(indent, f'x1 = {self.value()}')

    def scatter(self, indent, counters=()):
        """A scatter of a differentiable value into `acc` (which the result gathers from):
        scatter-adds may collide (in a loop they are the only kind, at an entry that may
        move with the iteration), plain scatters write a permutation of the lanes (so that
        no two write one entry: which would win is unspecified)."""
        r = self.rng.randint(0, LANES - 1)
        if counters or self.rng.random() < 0.6:
            step = f' + {counters[0]}' if counters and self.rng.random() < 0.5 else ''
            self.emit(indent, f'pbc.scatter_add(acc, {self.value()}, '
                              f'(k * {self.rng.randint(0, 3)}{step} + {r}) % {LANES})')
        else:
            self.emit(indent, f'pbc.scatter(acc, {self.value()}, (k * 3 + {r}) % {LANES})')

    def source(self):
        return (f'import pbc\nfrom {suite_backend.module.__name__} import Float64, UInt32\n\n\n'
                '@pbc.syntax\n'
                'def f(x0, x1, a, n, s, k, mode):\n' + '\n'.join(self.lines) + '\n')


def load(program, tmp_path, name):
    path = tmp_path / f'{name}.py'
    path.write_text(program.source())
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules.pop(name, None)
    return module.f


def inputs(seed):
    rng = np.random.default_rng(seed)
    return dict(x0=rng.uniform(-1, 1, LANES), x1=rng.uniform(-1, 1, LANES),
                a=rng.uniform(0.2, 0.9, 1), n=rng.integers(0, 4, LANES),
                s=rng.random(LANES) < 0.5, k=np.arange(LANES))


def call(f, v, mode, x0=None, x1=None, a=None):
    x0 = Float64(v['x0']) if x0 is None else x0
    x1 = Float64(v['x1']) if x1 is None else x1
    a = Float64(v['a']) if a is None else a
    return f(x0, x1, a, UInt32(v['n']), Bool(v['s']), UInt32(v['k']), mode)


def directions(v):
    """Per differentiated input, a direction to differentiate along (random lane by lane)."""
    rng = np.random.default_rng(len(v['x0']) + int(v['n'].sum()))
    return {name: rng.uniform(0.5, 1.5, len(v[name])) for name in ('x0', 'x1', 'a')}


def finite_differences(f, v, d, h=1e-6):
    """The derivatives of f along directions d of (x0, x1, a), each alone."""
    out = []
    with pbc.suspend_grad():
        for name in ('x0', 'x1', 'a'):
            up, down = dict(v), dict(v)
            up[name], down[name] = v[name] + h * d[name], v[name] - h * d[name]
            out.append((call(f, up, 'evaluated').numpy() - call(f, down, 'evaluated').numpy())
                       / (2 * h))
    return out


def forward(f, v, mode, wrt, d):
    x0, x1, a = Float64(v['x0']), Float64(v['x1']), Float64(v['a'])
    pbc.enable_grad(x0, x1, a)
    pbc.set_grad({'x0': x0, 'x1': x1, 'a': a}[wrt], Float64(d[wrt]))
    return pbc.forward_to(call(f, v, mode, x0, x1, a)).numpy()


def reverse(f, v, mode, weights):
    x0, x1, a = Float64(v['x0']), Float64(v['x1']), Float64(v['a'])
    pbc.enable_grad(x0, x1, a)
    pbc.backward(call(f, v, mode, x0, x1, a) * Float64(weights))
    return [pbc.grad(x).numpy() for x in (x0, x1, a)]


@SETTINGS
@given(st.integers(0, 2**31 - 1), st.integers(0, 2**31 - 1))
def test_derivatives_through_random_control_flow(tmp_path, seed, data_seed):
    program = Program(seed)
    note(program.source())
    f = load(program, tmp_path, f'ad_fuzz_{seed}')
    v = inputs(data_seed)
    d = directions(v)
    fd = finite_differences(f, v, d)
    assume(all(np.isfinite(x).all() for x in fd))      # (a program whose values overflow)
    for k, wrt in enumerate(('x0', 'x1', 'a')):
        got = {mode: forward(f, v, mode, wrt, d) for mode in ('symbolic', 'evaluated')}
        np.testing.assert_allclose(got['symbolic'], got['evaluated'], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(got['evaluated'], fd[k], rtol=1e-5, atol=1e-7)
    weights = np.linspace(-1, 2, LANES)
    evaluated = reverse(f, v, 'evaluated', weights)
    for k, (g, name) in enumerate(zip(evaluated, ('x0', 'x1', 'a'))):
        # <J^T w, d> = <w, J d>; lane by lane where lanes do not mix (no scatters: the
        # Jacobian of x0 and x1 is diagonal)
        np.testing.assert_allclose(np.dot(g, d[name]), np.dot(fd[k], weights), rtol=1e-5,
                                   atol=1e-7)
        if k < 2 and 'scatter' not in program.source():
            np.testing.assert_allclose(g * d[name], fd[k] * weights, rtol=1e-5, atol=1e-7)
    symbolic = reverse(f, v, 'symbolic', weights)
    for g, e in zip(symbolic, evaluated):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)
