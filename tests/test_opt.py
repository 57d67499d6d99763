"""Optimizers: SGD (with and without momentum) and Adam against NumPy implementations of
their update rules, learning rates per parameter and changed between steps, structures,
masked updates, and a long Adam run that compiles only in its first step and holds its
memory (AD nodes, JIT variables) constant."""

import numpy as np
import pytest
from suite_backend import Array3f, Float, TensorXf, UInt32

import pbc
from pbc import _runtime

TARGET = np.array([0.5, -1.0, 2.0, 0.25], np.float32)


def quadratic_grad(x):
    """d/dx sum((x - T)^2 * (1 + i)): a loss whose gradient differs per lane."""
    return 2 * (x - TARGET) * (1 + np.arange(len(x)))


def run(opt, steps, key='x'):
    """`steps` steps of opt on the quadratic loss; the loss values."""
    weights = Float(1.0 + np.arange(4, dtype=np.float32))
    losses = []
    for _ in range(steps):
        x = opt[key]
        loss = pbc.sum(pbc.square(x - Float(TARGET)) * weights)
        pbc.backward(loss)
        opt.step()
        losses.append(float(loss.numpy()[0]))
    return losses


def numpy_sgd(x, steps, lr, momentum=0.0, nesterov=False):
    v = np.zeros_like(x)
    for _ in range(steps):
        g = quadratic_grad(x)
        if momentum:
            v = momentum * v + g
            x = x - lr * (g + momentum * v if nesterov else v)
        else:
            x = x - lr * g
    return x


def numpy_adam(x, steps, lr, b1=0.9, b2=0.999, eps=1e-8):
    m, v = np.zeros_like(x), np.zeros_like(x)
    for t in range(1, steps + 1):
        g = quadratic_grad(x)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        x = x - lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
    return x


X0 = np.array([1.0, 2.0, -3.0, 0.0], np.float32)


@pytest.mark.parametrize('momentum,nesterov', [(0.0, False), (0.7, False), (0.7, True)])
def test_sgd_matches_its_update_rule(momentum, nesterov):
    opt = pbc.opt.SGD(lr=0.05, momentum=momentum, nesterov=nesterov)
    opt['x'] = Float(X0)
    run(opt, 12)
    np.testing.assert_allclose(opt['x'].numpy(), numpy_sgd(X0, 12, 0.05, momentum, nesterov),
                               rtol=1e-5, atol=1e-6)


def test_adam_matches_its_update_rule_and_converges():
    opt = pbc.opt.Adam(lr=0.1, beta_1=0.8, beta_2=0.99, epsilon=1e-6)
    opt['x'] = Float(X0)
    losses = run(opt, 15)
    np.testing.assert_allclose(opt['x'].numpy(), numpy_adam(X0, 15, 0.1, 0.8, 0.99, 1e-6),
                               rtol=1e-4, atol=1e-5)
    assert losses[-1] < losses[0]


def test_learning_rates_per_parameter_and_between_steps_reuse_kernels():
    opt = pbc.opt.SGD(lr=0.1)
    opt['x'] = Float(X0)
    opt['y'] = Float(X0)
    opt.set_learning_rate({'y': 0.0})
    assert opt.learning_rate() == 0.1 and opt.learning_rate('y') == 0.0
    with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory, True):
        run(opt, 1)
        pbc.kernel_history_clear()
        x = np.array(opt['x'].numpy())
        opt.set_learning_rate(0.02)
        opt.set_learning_rate(y=0.5)
        run(opt, 1)
        compiled = [k for k in pbc.kernel_history() if k['cache_hit'] != 'memory']
    np.testing.assert_allclose(opt['x'].numpy(), x - 0.02 * quadratic_grad(x), rtol=1e-6)
    np.testing.assert_allclose(opt['y'].numpy(), X0, rtol=0)     # lr 0 before: unmoved
    assert compiled == []


def test_structures_keep_their_types_and_shapes():
    opt = pbc.opt.Adam(lr=0.05, params={'v': Array3f(1, 2, 3),
                                        't': TensorXf(np.ones((2, 3), np.float32))})
    for _ in range(150):
        v, t = opt['v'], opt['t']
        loss = pbc.squared_norm(v - Array3f(3, 2, 1)) + pbc.sum(pbc.square(t.array - 2))
        pbc.backward(loss)
        opt.step()
    assert isinstance(opt['v'], Array3f) and isinstance(opt['t'], TensorXf)
    assert opt['t'].shape == (2, 3)
    np.testing.assert_allclose([c.numpy()[0] for c in opt['v']], [3, 2, 1], atol=2e-2)
    np.testing.assert_allclose(opt['t'].numpy(), np.full((2, 3), 2.0), atol=2e-2)
    assert pbc.grad_enabled(opt['v']) and sorted(opt) == ['t', 'v'] and len(opt) == 2


def test_replacing_a_parameter_keeps_state_of_the_same_width():
    opt = pbc.opt.Adam(lr=0.1)
    opt['x'] = Float(X0)
    run(opt, 3)
    state = opt.state['x'].extra
    opt['x'] = pbc.clip(opt['x'], -1, 1)            # a projection: same widths
    assert opt.state['x'].extra is state and opt.state['x'].t == 3
    opt['x'] = Float(1.0, 2.0)                       # another width: fresh state
    assert opt.state['x'].extra is None
    opt.reset()
    del opt['x']
    assert 'x' not in opt


def test_masked_updates_leave_parameters_without_gradient_alone():
    opt = pbc.opt.Adam(lr=0.1, mask_updates=True)
    opt['x'] = Float(1.0, 2.0, 3.0)
    for _ in range(3):
        x = opt['x']
        pbc.backward(pbc.gather(Float, x, UInt32(0, 2)) * 2)   # lane 1 gets no gradient
        opt.step()
    out = opt['x'].numpy()
    assert out[1] == 2.0 and out[0] < 1.0 and out[2] < 3.0


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ValueError, match='learning rate'):
        pbc.opt.SGD(lr=-1)
    with pytest.raises(ValueError, match='momentum'):
        pbc.opt.SGD(lr=0.1, momentum=1.5)
    with pytest.raises(ValueError, match='beta_1'):
        pbc.opt.Adam(lr=0.1, beta_1=1.0)
    opt = pbc.opt.SGD(lr=0.1)
    with pytest.raises(TypeError, match='no float array'):
        opt['i'] = UInt32(1, 2)
    with pytest.raises(KeyError, match='no parameter named'):
        opt.set_learning_rate(z=0.1)


def test_thousand_adam_steps_compile_once_and_hold_memory_constant():
    n = 256
    target = Float(np.sin(np.arange(n, dtype=np.float32)))
    opt = pbc.opt.Adam(lr=0.02)
    opt['x'] = pbc.zeros(Float, n)
    opt['scale'] = Float(0.5)
    compiled, counts = [], []
    with pbc.scoped_set_flag(pbc.JitFlag.KernelHistory, True):
        for i in range(1000):
            pbc.kernel_history_clear()
            x, scale = opt['x'], opt['scale']
            loss = pbc.mean(pbc.square(x * scale - target))
            pbc.backward(loss)
            opt.step()
            # (a kernel of the first step may come from the disk cache of an earlier run)
            compiled.append(sum(k['cache_hit'] != 'memory' for k in pbc.kernel_history()))
            if i in (10, 999):
                del x, scale, loss
                counts.append((_runtime.ad_live_count(),
                               pbc.whos(print_table=False)['variables']))
    assert compiled[0] > 0 and sum(compiled[1:]) == 0      # step 1 alone compiles or loads
    assert counts[0] == counts[1]
    np.testing.assert_allclose(opt['x'].numpy() * opt['scale'].numpy(), target.numpy(),
                               atol=1e-3)
