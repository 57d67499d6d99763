"""Listings of the Dr.Jit paper's section 4: a VJP written with the AD API, as the paper
shows for polymorphic calls, and a chain of evaluated steps differentiated backwards (the
last evaluation acting as checkpoint)."""
import drjit as dr
from drjit.llvm.ad import Float


def func(arg_1, arg_2):
    return arg_1 * arg_2 + dr.exp(arg_1) * dr.sqr(arg_2)


def func_vjp(grad_out, arg_1, arg_2):
    dr.enable_grad(arg_1, arg_2)
    result = func(arg_1, arg_2)
    dr.set_grad(result, grad_out)
    dr.backward(result)
    return dr.grad(arg_1), dr.grad(arg_2)


def f(data):
    return dr.sin(data) * 0.5 + data


def checkpointed(x):
    data = Float(x)
    dr.enable_grad(data)
    start = data
    for _ in range(20):
        data = f(data)  # 'f' represents a potentially complex
        dr.eval(data)   # transformation of 'data'.
    dr.backward(data)   # Now, backpropagate through all steps
    return data, dr.grad(start)


def run():
    return func_vjp(Float(1, 2), Float(0.5, 1), Float(2, 3)), checkpointed(Float(0.1, 0.2))
