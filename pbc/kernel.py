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
    # Outputs far larger than the caches are written around them (non-temporal stores):
    # that saves reading each output line before overwriting it.
    streaming: bool = False
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
class Layout:
    """Where each parameter slot's value comes from at launch: `sources[slot]` is
    (node position, 0 = address | 1 = size) for memory the kernel reads, or (-1, k) for
    the buffer of output k. Together with a group's leaves it gives the launch arguments."""
    sources: list
    outputs: list             # (slot, type name) per output, in the group's output order

    def param_values(self, leaves, out_buffers):
        memory = {pos: (addr, size) for pos, addr, size in leaves}
        return [out_buffers[field] if pos < 0 else memory[pos][field]
                for pos, field in self.sources]


STREAMING_LANES = 1 << 23


def assemble(backend, outputs, records, size):
    """Builds a Kernel (and its parameter Layout) for `size` lanes from node records in
    topological order (see _runtime.group_records)."""
    scalar = size == 1
    k = Kernel(backend, streaming=size >= STREAMING_LANES)
    sources = []

    def add_param(kind, type_, source):
        k.params.append(Param(kind, type_))
        sources.append(source)
        return len(k.params) - 1

    pos_of = {}
    for pos, (nid, op_code, vt, vsize, deps, lit, extra) in enumerate(records):
        op = TRACE_OPS[op_code]
        tname = TYPE_NAMES[vt]
        pos_of[nid] = pos
        if op == 'data':
            if scalar or vsize == 1:
                k.instrs.append(Instr('load1', tname, slot=add_param('in1', tname, (pos, 0))))
            else:
                k.instrs.append(Instr('load', tname, slot=add_param('in', tname, (pos, 0))))
        elif op == 'ptr':
            slot = add_param('ptr', tname, (pos, 0))
            add_param('size', 'uint64', (pos, 1))
            k.instrs.append(Instr('ptr', 'ptr', slot=slot))
        elif op == 'print':
            k.instrs.append(Instr(op, tname, tuple(deps), text=_runtime.format_string(nid)))
        else:
            assert len(deps) == ARITY[op], (op, deps)
            k.instrs.append(Instr(op, tname, tuple(deps), lit, extra))
    out_slots = []
    for n, nid in enumerate(outputs):
        reg = pos_of[nid]
        tname = k.instrs[reg].type
        slot = add_param('out', tname, (-1, n))
        k.instrs.append(Instr('store', 'void', (reg,), slot=slot))
        out_slots.append((slot, tname))
    return k, Layout(sources, out_slots)
