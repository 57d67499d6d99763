"""paper_ad_drjit.py, written for pbc."""
import pbc
from pbc.llvm import Float


def func(arg_1, arg_2):
    return arg_1 * arg_2 + pbc.exp(arg_1) * pbc.square(arg_2)


def func_vjp(grad_out, arg_1, arg_2):
    pbc.enable_grad(arg_1, arg_2)
    result = func(arg_1, arg_2)
    pbc.set_grad(result, grad_out)
    pbc.backward(result)
    return pbc.grad(arg_1), pbc.grad(arg_2)


def f(data):
    return pbc.sin(data) * 0.5 + data


def checkpointed(x):
    data = Float(x)
    pbc.enable_grad(data)
    start = data
    for _ in range(20):
        data = f(data)
        pbc.eval(data)
    pbc.backward(data)
    return data, pbc.grad(start)


def run():
    return func_vjp(Float(1, 2), Float(0.5, 1), Float(2, 3)), checkpointed(Float(0.1, 0.2))
