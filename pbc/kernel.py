"""The backend-neutral Kernel and its assembly from a group of trace nodes.

A Kernel is linear SSA code over one lane index: instruction i defines register i. Memory
is reached only through parameter slots, so the same Kernel (and the same rendered text)
serves any launch size and any buffers; this is what makes the kernel caches effective.
"""

from dataclasses import dataclass, field
from typing import NamedTuple

from . import _runtime
from .ops import ARITY, TRACE_OPS, TYPE_NAMES


class Instr(NamedTuple):
    op: str            # a name from ops.ARITY
    type: str          # result type ('void' for stores and scatters)
    args: tuple = ()   # operand registers
    literal: int = 0   # bit pattern of a literal
    extra: int = 0     # cast/bitcast: source type code; scatter: reduction code
    slot: int = -1     # parameter slot (load, load1, store, ptr: slot+1 holds its size)
    text: str = ''     # print: the C printf format


class Param(NamedTuple):
    kind: str          # 'in' (vector), 'in1' (scalar), 'out', 'ptr', 'size'
    type: str


@dataclass
class Kernel:
    backend: str
    instrs: list = field(default_factory=list)
    params: list = field(default_factory=list)
    # Room for the control-flow issues: loop blocks and deduplicated call targets.
    loops: list = field(default_factory=list)
    subroutines: list = field(default_factory=list)

    @property
    def ir_ops(self):
        return len(self.instrs)

    def uses(self, op):
        return any(i.op == op for i in self.instrs)


@dataclass
class Launch:
    """A Kernel plus what one launch of it needs."""
    kernel: Kernel
    size: int
    param_values: list        # addresses and sizes, one per slot (outputs filled at launch)
    outputs: list             # (slot, variable id, type) of the buffers to allocate


def assemble(backend, size, outputs, records):
    """Builds a Kernel from node records (see _runtime.take_groups) in topological order."""
    k = Kernel(backend)
    values = []

    def add_param(kind, type_, value):
        k.params.append(Param(kind, type_))
        values.append(value)
        return len(k.params) - 1

    pos_of = {}
    for nid, op_code, vt, vsize, deps, lit, extra, addr, dsize in records:
        op = TRACE_OPS[op_code]
        tname = TYPE_NAMES[vt]
        pos_of[nid] = len(k.instrs)
        if op == 'data':
            if vsize == size and size != 1:
                k.instrs.append(Instr('load', tname, slot=add_param('in', tname, addr)))
            else:
                k.instrs.append(Instr('load1', tname, slot=add_param('in1', tname, addr)))
        elif op == 'ptr':
            slot = add_param('ptr', tname, addr)
            add_param('size', 'uint64', dsize)
            k.instrs.append(Instr('ptr', 'ptr', slot=slot))
        elif op == 'print':
            k.instrs.append(Instr(op, tname, tuple(deps), text=_runtime.format_string(nid)))
        else:
            assert len(deps) == ARITY[op], (op, deps)
            k.instrs.append(Instr(op, tname, tuple(deps), lit, extra))
    outs = []
    for nid in outputs:
        reg = pos_of[nid]
        tname = k.instrs[reg].type
        slot = add_param('out', tname, 0)
        k.instrs.append(Instr('store', 'void', (reg,), slot=slot))
        outs.append((slot, nid, tname))
    return Launch(k, size, values, outs)
