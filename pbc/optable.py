"""The op table: every operation of the trace graph and of kernels, described once.

Everything else is generated from or checked against this table: the runtime's op enum,
names, allowed operand kinds and flags (`setup.py` writes them to `_rt_optable.pxi`), the
backends' template tables (each asserts it covers every op), kernel instructions (whose `op`
is an entry of this table) and the derivative rules (`pbc/ad/rules.py`, one per
differentiable op). Adding an op means: a row here, its folding rule (`_rt_fold.pxi`), its
derivative rule if it is differentiable, and a template per backend.

This module imports nothing, so that the build can read it before pbc exists.
"""

# Operand kinds an op accepts (the runtime checks them when tracing).
B, I, F = 1, 2, 4          # Bool, integers, floats

# Op flags (bits; the runtime sees them as OPF_<NAME>).
PURE = 1 << 0         # an elementwise function of its operands: no memory, no side effects
COMMUTATIVE = 1 << 1  # the first two operands may be swapped
SIDE_EFFECT = 1 << 2  # writes memory or output: runs even if nothing reads a result
UNIQUE = 1 << 3       # never merged by value numbering (data, side effects, structure)
LOOP = 1 << 4         # structure of a symbolic loop
CALL = 1 << 5         # structure of a symbolic call
COMPARISON = 1 << 6   # a Bool result from operands of another type
SHIFT = 1 << 7        # the result has the type of the left operand
KERNEL_ONLY = 1 << 8  # made by kernel assembly; never a node of the trace graph
DIFF = 1 << 9         # differentiable: pbc/ad/rules.py has its derivative rule

FLAG_NAMES = ('PURE', 'COMMUTATIVE', 'SIDE_EFFECT', 'UNIQUE', 'LOOP', 'CALL', 'COMPARISON',
              'SHIFT', 'KERNEL_ONLY', 'DIFF')


class Op(str):
    """One op: compares and hashes as its name (so `{name: template}` tables key on it),
    and carries its description."""
    code: int          # position in the table, the runtime's op code
    arity: int         # register operands in kernels; -1: variable
    kinds: int         # allowed operand kinds (B | I | F)
    flags: int

    def __new__(cls, name, code, arity, kinds, flags):
        op = super().__new__(cls, name)
        op.code, op.arity, op.kinds, op.flags = code, arity, kinds, flags
        return op

    def has(self, flag):
        return bool(self.flags & flag)

    def __reduce__(self):             # pickles as a reference to the table's entry
        return _named, (str(self),)


_ROWS = [
    # name            arity kinds      flags
    ('literal',        0, B | I | F, 0),
    ('data',           0, B | I | F, UNIQUE),
    ('counter',        0, I,         0),
    ('ptr',            0, B | I | F, 0),
    ('neg',            1, I | F,     PURE | DIFF),
    ('not',            1, B | I,     PURE),
    ('abs',            1, I | F,     PURE | DIFF),
    ('sqrt',           1, F,         PURE | DIFF),
    ('floor',          1, I | F,     PURE | DIFF),
    ('ceil',           1, I | F,     PURE | DIFF),
    ('round',          1, I | F,     PURE | DIFF),
    ('trunc',          1, I | F,     PURE | DIFF),
    ('popc',           1, I,         PURE),
    ('clz',            1, I,         PURE),
    ('ctz',            1, I,         PURE),
    # True where the operand is in some lane of the lane's subgroup (the lanes that run
    # together: a vector, a warp); not elementwise (see pbc.subgroup_any)
    ('subgroup_any',   1, B,         0),
    ('cast',           1, B | I | F, PURE | DIFF),
    ('bitcast',        1, B | I | F, PURE),
    ('add',            2, I | F,     PURE | COMMUTATIVE | DIFF),
    ('sub',            2, I | F,     PURE | DIFF),
    ('mul',            2, I | F,     PURE | COMMUTATIVE | DIFF),
    ('div',            2, I | F,     PURE | DIFF),
    ('mod',            2, I | F,     PURE | DIFF),     # (float: C fmod)
    # (min/max are not commutative: which of -0 and +0, or of a NaN and a number, they
    # return may depend on the order)
    ('min',            2, I | F,     PURE | DIFF),
    ('max',            2, I | F,     PURE | DIFF),
    ('minimum',        2, F,         PURE | DIFF),     # NaN-propagating float min/max
    ('maximum',        2, F,         PURE | DIFF),
    ('and',            2, B | I | F, PURE | COMMUTATIVE),
    ('or',             2, B | I | F, PURE | COMMUTATIVE),
    ('xor',            2, B | I | F, PURE | COMMUTATIVE),
    ('shl',            2, I,         PURE | SHIFT),
    ('shr',            2, I,         PURE | SHIFT),
    ('mulhi',          2, I,         PURE | COMMUTATIVE),
    # a 2^n for an integer-valued float n, in two exact steps (see docs/semantics.md)
    ('ldexp',          2, F,         PURE),
    ('eq',             2, B | I | F, PURE | COMMUTATIVE | COMPARISON),
    ('ne',             2, B | I | F, PURE | COMMUTATIVE | COMPARISON),
    ('lt',             2, I | F,     PURE | COMPARISON),
    ('le',             2, I | F,     PURE | COMPARISON),
    ('gt',             2, I | F,     PURE | COMPARISON),
    ('ge',             2, I | F,     PURE | COMPARISON),
    ('fma',            3, I | F,     PURE | COMMUTATIVE | DIFF),
    ('select',         3, B | I | F, PURE | DIFF),
    ('gather',         3, B | I | F, DIFF),
    ('scatter',        4, B | I | F, SIDE_EFFECT | UNIQUE),
    ('print',         -1, B | I | F, SIDE_EFFECT | UNIQUE),   # mask, values; format: Instr.text
    # A pointer (and size) per lane, for gathers: lane i uses ptr operand 1 + slot[i]
    # (operands: slot, then `ptr` registers). Closure data of calls: one array per instance.
    ('lane_ptr',      -1, B | I | F, UNIQUE),
    # Symbolic loops (Kernel.loops[literal] describes loop number `literal`):
    ('loop_start',     0, B | I | F, LOOP | UNIQUE),  # its phis take their initial values
    ('loop_phi',       1, B | I | F, LOOP | UNIQUE),  # state at the top of an iteration
    ('loop_cond',     -1, B | I | F, LOOP | UNIQUE),  # the condition, then the enclosing mask
    ('loop_end',       0, B | I | F, LOOP | UNIQUE),  # phis take their updates; back to test
    ('loop_output',    1, B | I | F, LOOP | UNIQUE),  # a state variable after the loop
    # Symbolic calls (Kernel.calls[literal] describes call number `literal`; extra: target):
    ('call_start',     0, B | I | F, CALL | UNIQUE),  # the code of one target begins
    ('call_arg',       1, B | I | F, CALL | UNIQUE),  # an argument inside the target
    ('call_mask',      0, B | I | F, CALL | UNIQUE),  # the lanes that run the target
    ('call_end',       0, B | I | F, CALL | UNIQUE),  # the target's code ends
    ('call',           2, B | I | F, CALL | UNIQUE),  # selector (0 = none) and active lanes
    ('call_result',    0, B | I | F, CALL | UNIQUE),  # output `literal` of call `extra`
    # Made by kernel assembly:
    ('load',           0, B | I | F, KERNEL_ONLY),    # a lane of an input parameter
    ('load1',          0, B | I | F, KERNEL_ONLY),    # a scalar input parameter
    ('store',          1, B | I | F, KERNEL_ONLY | SIDE_EFFECT),
]

OPS = tuple(Op(name, code, arity, kinds, flags)
            for code, (name, arity, kinds, flags) in enumerate(_ROWS))
BY_NAME = {op: op for op in OPS}


def _named(name):
    return BY_NAME[name]


TRACE_OPS = tuple(op for op in OPS if not op.has(KERNEL_ONLY))
assert [op.code for op in TRACE_OPS] == list(range(len(TRACE_OPS))), \
    'kernel-only ops come after every trace op (trace op codes are dense)'


def cython_source():
    """The runtime's view of this table, as Cython (`setup.py` writes it to
    `pbc/_rt_optable.pxi`)."""
    names = [op.upper() for op in TRACE_OPS]
    lines = ['# Generated by setup.py from pbc/optable.py: edit that table, not this file.',
             '', 'cdef enum Op:']
    lines += [f'    OP_{n},' for n in names] + ['    OP_COUNT', '', 'cdef enum OpFlag:']
    lines += [f'    OPF_{n} = {1 << k}' for k, n in enumerate(FLAG_NAMES)]
    lines += ['', 'OP_NAMES = (' + ', '.join(repr(str(op)) for op in TRACE_OPS) + ')',
              '', 'cdef uint8_t OP_ALLOW[OP_COUNT]',
              'OP_ALLOW[:] = [' + ', '.join(str(op.kinds) for op in TRACE_OPS) + ']',
              'cdef uint16_t OP_FLAGS[OP_COUNT]',
              'OP_FLAGS[:] = [' + ', '.join(str(op.flags) for op in TRACE_OPS) + ']', '']
    return '\n'.join(lines)
