"""Gradient-based optimizers (the interface of Dr.Jit 1.x's drjit.opt): an optimizer owns
the parameters it optimizes, held by name like a dict; `step()` moves each along its
gradient and enables derivatives on the result.

Every value that changes between steps (parameters, optimizer state, learning rates, Adam's
bias corrections) lives in memory, never in the code as a constant, so each step after the
first runs the kernels the first one compiled.
"""

from collections.abc import MutableMapping

from . import _runtime, tree
from .ad import detach, enable_grad, grad
from .evaluate import eval as _eval
from .routines import opaque, select, sqrt


def _float(x):
    return isinstance(x, _runtime.ArrayBase) and x.Type in ('float32', 'float64')


class _Param:
    """One parameter: its value (a structure of flat arrays), the flat float arrays inside
    it, its own learning rate (None: the optimizer's) and per-array optimizer state."""

    def __init__(self, value, lr):
        self.value, self.lr = value, lr
        self.leaves = [a for a in tree.leaves(value) if _float(a)]
        self.extra = None         # per flat array: a tuple of state arrays (None: fresh)
        self.t = 0                # steps taken since the state was fresh


class Optimizer(MutableMapping):
    """Base class: parameters by name, learning rates, and the step loop; subclasses say how
    one flat array moves (`_step`) and what state it starts with (`_start`)."""

    def __init__(self, lr, params=None, mask_updates=False):
        _check_lr(lr)
        self.lr = lr
        self.mask_updates = mask_updates
        self.state = {}
        if params is not None:
            self.update(params)

    # ---- the mapping of parameters ----
    def __getitem__(self, key):
        return self.state[key].value

    def __setitem__(self, key, value):
        """Registers (or replaces) parameter `key`: the optimizer holds a copy of value in
        memory that carries derivatives. A replacement of the same widths keeps the
        optimizer's state (e.g. after projecting the parameter onto a valid range)."""
        if not isinstance(key, str):
            raise TypeError(f'pbc.opt: parameter names are strings, not {type(key).__name__}')
        value = detach(value)
        arrays = [a for a in tree.leaves(value) if _float(a)]
        if not arrays:
            raise TypeError(f'pbc.opt: parameter {key!r} holds no float array (only float '
                            'arrays can be optimized)')
        _eval(arrays)
        for a in arrays:
            _runtime.make_opaque(a)           # (literals get memory of their own)
        enable_grad(value)
        old = self.state.get(key)
        p = _Param(value, old.lr if old is not None else None)
        if old is not None and [len(a) for a in old.leaves] == [len(a) for a in p.leaves]:
            p.extra, p.t = old.extra, old.t
        self.state[key] = p

    def __delitem__(self, key):
        del self.state[key]

    def __iter__(self):
        return iter(self.state)

    def __len__(self):
        return len(self.state)

    def __contains__(self, key):
        return key in self.state

    # ---- learning rates ----
    def learning_rate(self, key=None):
        """The learning rate of parameter `key` (None: the optimizer's)."""
        if key is None:
            return self.lr
        lr = self.state[key].lr
        return self.lr if lr is None else lr

    def set_learning_rate(self, value=None, /, **kwargs):
        """Sets the optimizer's learning rate (a number), or those of given parameters (a
        dict, or keyword arguments, by name). Changing them does not recompile."""
        if isinstance(value, dict):
            kwargs = {**value, **kwargs}
        elif value is not None:
            _check_lr(value)
            self.lr = value
        for key, lr in kwargs.items():
            if key not in self.state:
                raise KeyError(f'pbc.opt.set_learning_rate(): no parameter named {key!r}')
            _check_lr(lr)
            self.state[key].lr = lr

    # ---- stepping ----
    def reset(self, key=None):
        """Forgets the optimizer state of parameter `key` (all: None)."""
        for p in (self.state.values() if key is None else [self.state[key]]):
            p.extra = None

    def step(self, eval=True):
        """Moves every parameter one step along its gradient and enables derivatives on the
        new values. With `eval`, the parameters and state are evaluated at once (one
        kernel for all); without, the step fuses with whatever is computed next."""
        touched = []
        for p in self.state.values():
            lr = self.lr if p.lr is None else p.lr
            if p.extra is None:
                p.extra, p.t = [self._start(a) for a in p.leaves], 0
            p.t += 1
            new_leaves, new_extra = [], []
            for a, extra in zip(p.leaves, p.extra):
                g = grad(a)
                x = detach(a)
                nx, ne = self._step(x, g, lr, extra, p.t)
                if self.mask_updates:
                    keep = g == 0
                    nx = select(keep, x, nx)
                    ne = tuple(select(keep, o, n) for o, n in zip(extra, ne))
                new_leaves.append(nx)
                new_extra.append(ne)
            p.extra = new_extra
            p.value = _rebuild(p.value, new_leaves)
            p.leaves = new_leaves
            touched += new_leaves + [s for e in new_extra for s in e]
        if eval:
            _eval(touched)
        for p in self.state.values():
            enable_grad(p.value)

    def _start(self, a):
        """The initial optimizer state for flat array a (a tuple of arrays)."""
        return ()

    def _step(self, x, g, lr, extra, t):
        """Flat array x's new value and state, from its gradient g, learning rate lr, state
        `extra` and the number t of this step (1 for the first)."""
        raise NotImplementedError


def _check_lr(lr):
    if not isinstance(lr, (int, float)) or isinstance(lr, bool) or not lr >= 0:
        raise ValueError(f'pbc.opt: a learning rate is a number >= 0, not {lr!r}')


def _rebuild(value, new_leaves):
    """value's structure with its float arrays replaced by new_leaves, in order."""
    arrays, build = tree.flatten(value)
    it = iter(new_leaves)
    return build([next(it) if _float(a) else a for a in arrays])


def _in_memory(T, value):
    """Number `value` (a learning rate, a bias correction) as a 1-lane array of type T in
    memory: a new value each step reuses the kernels compiled for the first."""
    return opaque(T, value)


def _zeros_in_memory(a):
    z = _runtime.literal(type(a), 0, len(a))
    _runtime.make_opaque(z)
    return z


class SGD(Optimizer):
    """Stochastic gradient descent, optionally with (Nesterov) momentum:
    v = momentum * v + g;  x -= lr * (g + momentum * v if nesterov else v)."""

    def __init__(self, lr, params=None, momentum=0.0, nesterov=False, mask_updates=False):
        if not 0 <= momentum < 1:
            raise ValueError(f'pbc.opt.SGD(): momentum must be in [0, 1), not {momentum!r}')
        if nesterov and momentum == 0:
            raise ValueError('pbc.opt.SGD(): Nesterov momentum needs momentum > 0')
        self.momentum, self.nesterov = momentum, nesterov
        super().__init__(lr, params, mask_updates)

    def _start(self, a):
        return (_zeros_in_memory(a),) if self.momentum else ()

    def _step(self, x, g, lr, extra, t):
        rate = _in_memory(type(x), lr)
        if not self.momentum:
            return x - rate * g, ()
        v = self.momentum * extra[0] + g
        d = g + self.momentum * v if self.nesterov else v
        return x - rate * d, (v,)

    def __repr__(self):
        return (f'SGD[lr={self.lr}, momentum={self.momentum}, nesterov={self.nesterov}, '
                f'params={list(self.state)}]')


class Adam(Optimizer):
    """Adam (Kingma and Ba, 2014): moving averages m and v of the gradient and its square,
    with bias correction; x -= lr * m_hat / (sqrt(v_hat) + epsilon). Each parameter counts
    its own steps, so one registered later starts with the correction of step 1."""

    def __init__(self, lr, params=None, beta_1=0.9, beta_2=0.999, epsilon=1e-8,
                 mask_updates=False):
        for name, b in (('beta_1', beta_1), ('beta_2', beta_2)):
            if not 0 <= b < 1:
                raise ValueError(f'pbc.opt.Adam(): {name} must be in [0, 1), not {b!r}')
        if not epsilon > 0:
            raise ValueError(f'pbc.opt.Adam(): epsilon must be > 0, not {epsilon!r}')
        self.beta_1, self.beta_2, self.epsilon = beta_1, beta_2, epsilon
        super().__init__(lr, params, mask_updates)

    def _start(self, a):
        return (_zeros_in_memory(a), _zeros_in_memory(a))

    def _step(self, x, g, lr, extra, t):
        m, v = extra
        m = self.beta_1 * m + (1 - self.beta_1) * g
        v = self.beta_2 * v + (1 - self.beta_2) * (g * g)
        T = type(x)
        # The bias corrections change every step: they are read from memory.
        rate = _in_memory(T, lr / (1 - self.beta_1 ** t))
        v_scale = _in_memory(T, 1 / (1 - self.beta_2 ** t))
        return x - rate * m / (sqrt(v * v_scale) + self.epsilon), (m, v)

    def __repr__(self):
        return (f'Adam[lr={self.lr}, beta_1={self.beta_1}, beta_2={self.beta_2}, '
                f'epsilon={self.epsilon}, params={list(self.state)}]')


__all__ = ['SGD', 'Adam', 'Optimizer']
