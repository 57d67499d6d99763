"""The op table: every operation a Kernel can contain, with its arity.

The trace runtime (`_runtime.pyx`) owns the op codes; this table names them for the
backends. Kernel-level ops that never appear in the trace graph (`load`, `load1`, `store`)
come from kernel assembly. Every renderer must handle every op listed here; a test checks
this for each backend.
"""

from . import _runtime

# op name -> number of register operands
ARITY = {
    'literal': 0, 'counter': 0, 'load': 0, 'load1': 0, 'ptr': 0,
    'neg': 1, 'not': 1, 'abs': 1, 'sqrt': 1, 'floor': 1, 'ceil': 1, 'round': 1, 'trunc': 1,
    'popc': 1, 'clz': 1, 'ctz': 1, 'cast': 1, 'bitcast': 1, 'store': 1,
    'add': 2, 'sub': 2, 'mul': 2, 'div': 2, 'mod': 2, 'min': 2, 'max': 2,
    'minimum': 2, 'maximum': 2,      # float min/max that propagate NaN ('min': minNum)
    'and': 2, 'or': 2, 'xor': 2, 'shl': 2, 'shr': 2, 'mulhi': 2,
    'eq': 2, 'ne': 2, 'lt': 2, 'le': 2, 'gt': 2, 'ge': 2,
    'fma': 3, 'select': 3, 'gather': 3, 'scatter': 4,
    'print': -1,      # mask, then any number of values; the format is Instr.text
    # A pointer (and size) per lane, for gathers: lane i uses ptr operand 1 + slot[i]
    # (operands: slot, then `ptr` registers). Closure data of calls: one array per instance.
    'lane_ptr': -1,
    # Symbolic loops (Kernel.loops[literal] describes loop number `literal`):
    'loop_start': 0,  # the loop begins: its phis take their initial values
    'loop_phi': 1,    # a state variable at the top of an iteration (operand: initial value)
    'loop_cond': -1,  # the iteration's lanes: the condition, then the enclosing mask if any
    'loop_end': 0,    # the iteration ends: phis take their updates, back to the test
    'loop_output': 1,  # a state variable after the loop (operand: its phi)
}
LOOP_OPS = ('loop_start', 'loop_phi', 'loop_cond', 'loop_end', 'loop_output')
ARITY.update({
    # Symbolic calls (Kernel.calls[literal] describes call number `literal`; extra: target):
    'call_start': 0,   # the code of one target begins
    'call_arg': 1,     # an argument inside the target (operand: the caller's value)
    'call_mask': 0,    # the lanes that run the target
    'call_end': 0,     # the target's code ends (its outputs: Kernel.calls)
    'call': 2,         # the call site: selector (target keys, 0 = none) and active lanes
    'call_result': 0,  # output `literal` of call `extra`
})
CALL_OPS = ('call_start', 'call_arg', 'call_mask', 'call_end', 'call', 'call_result')

# Trace-graph ops that become something else during assembly.
ASSEMBLY_ONLY = {'data'}
TRACE_OPS = _runtime.OP_NAMES
KERNEL_OPS = tuple(sorted(ARITY))

TYPE_NAMES = _runtime.TYPE_NAMES
REDUCE_NAMES = _runtime.REDUCE_NAMES
COMPARISONS = ('eq', 'ne', 'lt', 'le', 'gt', 'ge')

assert set(TRACE_OPS) - ASSEMBLY_ONLY <= set(ARITY), 'op table misses a trace op'
