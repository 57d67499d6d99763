"""The backend-neutral Kernel and its assembly from a group of trace nodes.

A Kernel is linear SSA code over one lane index: instruction i defines register i. Memory
is reached only through parameter slots, so the same Kernel (and the same rendered text)
serves any launch size and any buffers; this is what makes the kernel caches effective.
"""

import functools
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from . import _runtime
from .ops import ARITY, CALL_OPS, LOOP_OPS, TRACE_OPS, TYPE_NAMES
from .ops import op as op_named


class Instr(NamedTuple):
    op: str            # an entry of the op table (pbc/optable.py; compares as its name)
    type: str          # result type ('void' for stores and scatters)
    args: tuple = ()   # operand registers
    literal: int = 0   # bit pattern of a literal
    extra: int = 0     # cast/bitcast: source type code; scatter: reduction code
    slot: int = -1     # parameter slot (load, load1, store, ptr: slot+1 holds its size;
                       # print: its sink)


# Instr from all its fields at once: tuple's own constructor, without the keyword handling
# of NamedTuple's (assembly makes one per instruction).
_instr = functools.partial(tuple.__new__, Instr)


class Param(NamedTuple):
    kind: str          # 'in' (vector), 'in1' (scalar), 'out', 'ptr', 'size', 'sink' (print)
    type: str


@dataclass
class Loop:
    """A symbolic loop of a Kernel: its instructions run from `loop_start` to `loop_end`;
    the test is computed between the start and `loop_cond`."""
    phis: list = field(default_factory=list)       # registers of the state at the top
    updates: list = field(default_factory=list)    # their values at the end of an iteration
    cond: int = -1                                 # the loop_cond register
    uniform: bool = False      # the test does not vary across lanes: no masks needed


@dataclass
class Call:
    """A symbolic call of a Kernel: its targets' code lies between their call_start and
    call_end instructions, before the `call` instruction that runs them."""
    selector: int = -1          # register of each lane's target key (0: none)
    active: int = -1            # register of the lanes that call
    keys: list = field(default_factory=list)      # per target
    outputs: list = field(default_factory=list)   # per target: registers of its outputs
    results: list = field(default_factory=list)   # per output: its call_result register
    code: list = field(default_factory=list)      # per target: whose code it runs (merged)
    # Per target: the registers defined before its code that its code reads (the caller's
    # values, in register order), which become its subroutine's parameters.
    inputs: list = field(default_factory=list)
    # Instructions in the targets' code (merged targets counted once), and how many of them
    # differ in structure (the same op on the same caller values or structurally equal
    # operands counts once): targets that share most of their code (a common prefix,
    # say) can be compiled together, so that the shared part is computed once.
    size: int = 0
    distinct: int = 0

    @property
    def codes(self):
        """How many distinct codes the targets run (merged targets share one)."""
        return len(set(self.code))


@dataclass
class Kernel:
    backend: str
    # Outputs far larger than the caches are written around them (non-temporal stores):
    # that saves reading each output line before overwriting it.
    streaming: bool = False
    # Launched on few lanes: its run time is short next to its compile time, so backends
    # pick the faster compile where they have a choice.
    few_lanes: bool = False
    # Launched with subnormal floats flushed to zero (JitFlag.FlushDenormals): backends say
    # so to their optimizer, whose own constant folding must agree.
    flush_denormals: bool = False
    instrs: list = field(default_factory=list)
    params: list = field(default_factory=list)
    loops: list = field(default_factory=list)
    calls: list = field(default_factory=list)
    # Registers whose value is the same in every lane (literals, scalar parameters and what
    # is computed from them alone, including loop counters): backends may keep them scalar.
    uniform: frozenset = frozenset()
    # What the optimizations removed, for kernel_history(): loop state variables never read
    # (OptimizeLoops); call outputs never read, and call arguments (one per target) that are
    # literals or that no target code reads (OptimizeCalls).
    loop_state: int = 0
    removed_state: int = 0
    call_inputs: int = 0
    removed_inputs: int = 0
    removed_outputs: int = 0
    # Literal operands of merged call targets read from a table by key (see _merge_targets).
    tabled_literals: int = 0

    @property
    def ir_ops(self):
        return len(self.instrs)

    def read_registers(self):
        """The registers that something reads: instructions' operands, loop state and
        tests, and calls' selectors, masks, arguments and outputs."""
        read = {a for ins in self.instrs for a in ins.args}
        for loop in self.loops:
            read.update(loop.phis, loop.updates, (loop.cond,))
        for call in self.calls:
            read.update((call.selector, call.active), call.results)
            for regs in (*call.outputs, *call.inputs):
                read.update(regs)
        return read

    def uses(self, op):
        return any(i.op == op for i in self.instrs)

    def stats(self):
        """What assembly optimized, for kernel_history()."""
        return dict(loop_state=self.loop_state,
                    loop_state_removed=self.removed_state,
                    call_targets=sum(len(c.keys) for c in self.calls),
                    call_targets_merged=sum(len(c.keys) - c.codes
                                            for c in self.calls),
                    call_inputs=self.call_inputs,
                    call_inputs_removed=self.removed_inputs,
                    call_outputs=sum(len(c.results) for c in self.calls),
                    call_outputs_removed=self.removed_outputs,
                    call_literals_tabled=self.tabled_literals)


# Layout sources other than the memory of a trace node (the runtime's param_values reads them)
OUTPUT, CONSTANT = _runtime.PARAM_OUTPUT, _runtime.PARAM_CONSTANT


@dataclass
class Layout:
    """Where each parameter slot's value comes from at launch: `sources[slot]` is
    (node position, 0 = address | 1 = size) for memory the kernel reads, (OUTPUT, k) for
    the buffer of output k, or (CONSTANT, value) for what assembly made: the address and
    size of a table in `tables`, which the Layout keeps alive. Together with a group's
    leaves it gives the launch arguments."""
    sources: list
    outputs: list             # (slot, type name) per output, in the group's output order
    # NumPy arrays the kernel reads (host memory: a device backend copies them over)
    tables: list = field(default_factory=list)

    def __post_init__(self):
        self.output_types = [TYPE_NAMES.index(tname) for _, tname in self.outputs]

    def param_values(self, leaves, out_buffers):
        return _runtime.param_values(self.sources, leaves, out_buffers)


STREAMING_LANES = 1 << 23
FEW_LANES = 1 << 16

# Ops whose result is uniform when all operands are (pure and elementwise).
UNIFORM_OPS = frozenset(ARITY) - {'counter', 'load', 'ptr', 'lane_ptr', 'store', 'gather',
                                  'scatter', 'print', 'cast', 'bitcast', 'subgroup_any',
                                  *LOOP_OPS, *CALL_OPS}


def assemble(backend, outputs, records, size, optimize_loops=True, merge_functions=True,
             optimize_calls=True, flush_denormals=False):
    """Builds a Kernel (and its parameter Layout) for `size` lanes from node records in
    topological order (see _runtime.group_records). With `optimize_loops`, loop state that
    nothing reads after the loop and that does not feed the loop test or side effects is
    dropped from the loop."""
    scalar = size == 1
    k = Kernel(backend, streaming=size >= STREAMING_LANES, few_lanes=size < FEW_LANES,
               flush_denormals=flush_denormals)
    sources, tables = [], []

    def add_param(kind, type_, source):
        k.params.append(Param(kind, type_))
        sources.append(source)
        return len(k.params) - 1

    present = {r[1] for r in records}            # op codes
    structured = LOOP_END in present or CALL in present
    order = _loop_order(records) if structured else list(range(len(records)))
    if len(order) > 1 and structured:
        live = _live(records, outputs, optimize_loops, optimize_calls)
        phis = [p for p in order if records[p][1] == LOOP_PHI]
        k.loop_state = len(phis)
        k.removed_state = sum(1 for p in phis if p not in live)
        order = [p for p in order if p in live]
        k.call_inputs = sum((records[p][5] >> 32) * (len(records[p][4]) - 2) for p in order
                            if records[p][1] == CALL)
        k.removed_inputs = k.call_inputs - sum(1 for p in order
                                               if records[p][1] == CALL_ARG)
    code_of, varying = {}, {}
    if merge_functions and CALL in present:
        order, code_of, varying = _merge_targets(records, order)
    reg_of = {}
    loop_of = {}                 # loop_start position -> loop number
    target_of = {}               # call_start / call_end position -> (call number, target)
    tabled = {}                  # call number -> its literal operands read from tables
    replaced = {}                # (position, operand) -> the register of its table's value
    for pos in order:
        r = records[pos]
        if TRACE_OPS[r[1]] == 'call':
            for t, end in enumerate(r[4][2:]):
                target_of[end] = target_of[records[end][4][0]] = (len(k.calls), t)
            starts = [records[end][4][0] for end in r[4][2:]]
            if any(p in varying for p in starts):
                tabled[len(k.calls)] = (r[4][0], r[4][1], _table_pointers(
                    k, [v for p in starts for v in varying.get(p, ())], add_param, tables))
            k.calls.append(Call(keys=[records[p][5] for p in starts],
                                outputs=[None] * len(starts),
                                results=[-1] * (r[5] & 0xFFFFFFFF),
                                code=[starts.index(code_of.get(p, p)) for p in starts]))
    for pos in order:
        nid, op_code, vt, vsize, deps, lit, extra, _ = records[pos]
        op = TRACE_OPS[op_code]
        tname = TYPE_NAMES[vt]
        reg = reg_of[pos] = len(k.instrs)
        if op not in STRUCTURE:              # (most instructions: tested first)
            assert len(deps) == ARITY[op], (op, deps)
            args = tuple([reg_of[d] for d in deps]) if pos not in replaced else tuple(
                [replaced[pos].get(i, reg_of[d]) for i, d in enumerate(deps)])
            k.instrs.append(_instr((op, tname, args, lit, extra, -1)))
        elif op == 'data':
            if scalar or vsize == 1:
                k.instrs.append(Instr(LOAD1, tname, slot=add_param('in1', tname, (pos, 0))))
            else:
                k.instrs.append(Instr(LOAD, tname, slot=add_param('in', tname, (pos, 0))))
        elif op == 'ptr':
            slot = add_param('ptr', tname, (pos, 0))
            add_param('size', 'uint64', (pos, 1))
            k.instrs.append(Instr(op, 'ptr', slot=slot))
        elif op == 'lane_ptr':
            k.instrs.append(Instr(op, 'ptr', tuple(reg_of[d] for d in deps)))
        elif op == 'print':
            args = tuple(reg_of[d] for d in deps)
            k.instrs.append(Instr(op, tname, args, slot=add_param('sink', 'void', (pos, 0))))
        elif op == 'loop_start':
            loop_of[pos] = len(k.loops)
            k.loops.append(Loop())
            k.instrs.append(Instr(op, 'void', literal=loop_of[pos]))
        elif op == 'loop_phi':
            k.instrs.append(Instr(op, tname, (reg_of[deps[1]],), literal=loop_of[deps[0]]))
        elif op == 'loop_cond':
            n = loop_of[deps[0]]
            k.loops[n].cond = reg
            k.instrs.append(Instr(op, tname, tuple(reg_of[d] for d in deps[1:]), literal=n))
        elif op == 'loop_end':
            n = loop_of[deps[0]]
            for phi, update in zip(deps[2:2 + lit], deps[2 + lit:2 + 2 * lit]):
                if phi in reg_of:
                    k.loops[n].phis.append(reg_of[phi])
                    k.loops[n].updates.append(reg_of[update])
            k.instrs.append(Instr(op, 'void', literal=n))
        elif op in ('call_start', 'call_mask'):
            n, t = target_of[pos if op == 'call_start' else deps[0]]
            if op == 'call_start' and t == 0 and n in tabled:
                selector, active, reads = tabled.pop(n)
                gathered = {}                    # table -> each lane's value, by its key
                for (pos_i, i, tname_i), ptr in reads:
                    if ptr not in gathered:
                        gathered[ptr] = len(k.instrs)
                        k.instrs.append(Instr(GATHER, tname_i, (ptr, reg_of[selector],
                                                                reg_of[active])))
                    replaced.setdefault(pos_i, {})[i] = gathered[ptr]
                reg = reg_of[pos] = len(k.instrs)
            k.instrs.append(Instr(op, tname, literal=n, extra=t))
        elif op == 'call_arg':
            k.instrs.append(Instr(op, tname, (reg_of[deps[1]],), literal=target_of[deps[0]][0]))
        elif op == 'call_end':
            n, t = target_of[pos]
            k.calls[n].outputs[t] = [reg_of.get(o, -1) for o in deps[1:1 + lit]]
            k.instrs.append(Instr(op, 'void', literal=n, extra=t))
        elif op == 'call':
            n = target_of[deps[2]][0]
            call = k.calls[n]
            call.outputs = [call.outputs[u] for u in call.code]
            k.calls[n].selector, k.calls[n].active = reg_of[deps[0]], reg_of[deps[1]]
            k.instrs.append(Instr(op, 'void', (reg_of[deps[0]], reg_of[deps[1]]), literal=n))
        elif op == 'call_result':
            n = target_of[records[deps[0]][4][2]][0]
            k.calls[n].results[lit] = reg
            k.instrs.append(Instr(op, tname, literal=lit, extra=n))
        elif op == 'loop_output':
            end = records[deps[0]]
            phi = end[4][2 + lit]
            k.instrs.append(Instr(op, tname, (reg_of[phi],), literal=loop_of[end[4][0]]))
        else:
            raise AssertionError(f'pbc: assembly has no rule for the trace op {op}')
    out_slots = []
    pos_of = {records[p][0]: p for p in order}
    for n, nid in enumerate(outputs):
        reg = reg_of[pos_of[nid]]
        tname = k.instrs[reg].type
        slot = add_param('out', tname, (OUTPUT, n))
        k.instrs.append(Instr(STORE, 'void', (reg,), slot=slot))
        out_slots.append((slot, tname))
    if optimize_calls:
        k.removed_outputs = sum(call.results.count(-1) for call in k.calls)
    _find_inputs(k)
    _find_sharing(k)
    _find_uniform(k)
    return k, Layout(sources, out_slots, tables)


# Bits of each type as a table stores them (what a gather of that type reads).
TABLE_DTYPES = {'bool': np.uint8, 'int32': np.uint32, 'uint32': np.uint32,
                'float32': np.uint32, 'int64': np.uint64, 'uint64': np.uint64,
                'float64': np.uint64}


def _table_pointers(k, operands, add_param, tables):
    """A table by key of each literal operand that merged targets read with different values
    (operands with the same values share one), as a parameter of the kernel: its `ptr`
    instruction comes first, so that it is a value from outside every call (PTX passes it
    to functions as such). Returns [((position, operand, type name), ptr register)]."""
    pointer_of = {}                              # (type, values) -> its table's ptr register
    reads = []
    for pos, i, vt, values in operands:
        tname = TYPE_NAMES[vt]
        entry = (vt, tuple(sorted(values.items())))
        if entry not in pointer_of:
            table = np.zeros(max(values) + 1, TABLE_DTYPES[tname])
            for key, bits in values.items():
                table[key] = bits
            tables.append(table)
            slot = add_param('ptr', tname, (CONSTANT, table.ctypes.data))
            add_param('size', 'uint64', (CONSTANT, len(table)))
            pointer_of[entry] = len(k.instrs)
            k.instrs.append(Instr('ptr', 'ptr', slot=slot))
        reads.append(((pos, i, tname), pointer_of[entry]))
        k.tabled_literals += 1
    return reads


# The trace ops that assembly turns into something other than one instruction of the same
# op on the same operands.
STRUCTURE = frozenset({'data', 'ptr', 'lane_ptr', 'print', *LOOP_OPS, *CALL_OPS})
LOOP_START, LOOP_END, LOOP_PHI = (TRACE_OPS.index(name)
                                  for name in ('loop_start', 'loop_end', 'loop_phi'))
CALL, CALL_ARG = TRACE_OPS.index('call'), TRACE_OPS.index('call_arg')
LOOP_OUTPUT, CALL_RESULT = TRACE_OPS.index('loop_output'), TRACE_OPS.index('call_result')
SCOPE_MARKS = frozenset(TRACE_OPS.index(name) for name in ('loop_start', 'call_start',
                                                            'call_end'))
SCOPE_OPS = SCOPE_MARKS | {LOOP_END, CALL}
# The ops whose operands _live follows selectively (with OptimizeLoops / OptimizeCalls).
LIVENESS_LOOPS = frozenset({LOOP_END, LOOP_OUTPUT, LOOP_PHI})
LIVENESS_CALLS = frozenset({CALL, CALL_RESULT})
LOAD, LOAD1, STORE = op_named('load'), op_named('load1'), op_named('store')
GATHER, LITERAL = op_named('gather'), TRACE_OPS.index('literal')
# Ops whose literal operands merged targets keep: structure, and divisors, which LLVM turns
# into multiplications (integers) or exact reciprocals that a value from a table cannot be.
KEEP_LITERALS = STRUCTURE | {'div', 'mod'}
KEEP_LITERAL_CODES = frozenset(TRACE_OPS.index(op) for op in KEEP_LITERALS)
# Call keys below this are small enough to index tables of the literals that merged targets
# read with different values (see _merge_targets).
KEY_TABLE_LIMIT = 1 << 16


def _merge_targets(records, order):
    """Targets of a call whose code is the same (the same instructions on the same values
    from outside; outputs that assembly dropped do not count) run one copy of it. So do
    targets whose code differs only in the literals its instructions read from outside
    (constants of closures, say), where the call's keys are small: the copy then reads
    those operands from a table, by each lane's key (see _table_pointers). Returns the order
    without the copies; for each dropped target's call_start, the call_start whose code it
    runs; and for each kept call_start whose copies read other literals, its operands that
    vary: [(position, operand, type code, {key: literal bits})]."""
    index = {p: i for i, p in enumerate(order)}
    drop, code_of, varying = set(), {}, {}
    for pos, r in enumerate(records):
        if r[1] != CALL or pos not in index:          # (a call nothing needs)
            continue
        blocks = []                             # (call_start, its target's code)
        for end in r[4][2:]:
            start = records[end][4][0]
            blocks.append((start, order[index[start]:index[end] + 1]))
        # (nested calls keep their literals: a table is read by the keys of one call)
        loose = max(records[start][5] for start, _ in blocks) < KEY_TABLE_LIMIT and not any(
            records[p][1] == CALL for _, block in blocks for p in block)
        groups = {}                             # signature -> [call_start]
        for start, block in blocks:
            # (literals count, but not a target's key nor a loop's serial number)
            sig, _ = _runtime.block_signature(records, block, index, loose,
                                              KEEP_LITERAL_CODES, LITERAL, LOOP_START, False)
            groups.setdefault(sig, []).append(start)
        block_of = dict(blocks)
        for starts in groups.values():
            if len(starts) == 1:
                continue
            # (the literals each reads, in the same order)
            members = [(start, _runtime.block_signature(
                records, block_of[start], index, loose, KEEP_LITERAL_CODES, LITERAL,
                LOOP_START, True)[1]) for start in starts]
            (first, literals), copies = members[0], members[1:]
            for start, _ in copies:
                code_of[start] = first
                drop.update(block_of[start])
            operands = []
            for k, (p, i, vt, _) in enumerate(literals):
                values = {records[s][5]: m[k][3] for s, m in members}
                if len(set(values.values())) > 1:
                    operands.append((p, i, vt, values))
            if copies and operands:
                varying[first] = operands
    kept = [p for p in order if p not in drop]
    if varying:            # (the literals that only the copies read are read by nothing now)
        read = {d for p in kept for d in records[p][4]}
        kept = [p for p in kept if records[p][1] != LITERAL or p in read]
    return kept, code_of, varying


def _loop_order(records):
    """Record positions with each loop's body gathered between its loop_start and loop_end,
    the test first (and each call target's code between its call_start and call_end). The
    topological order already has every operand of a loop (inside or outside) before its
    loop_end, so the body moves there as a block, nested loops inside."""
    members = {}
    for pos, r in enumerate(records):
        members.setdefault(r[7], []).append(pos)
    out = []

    def block(end):
        start = records[end][4][0]
        out.append(start)
        emit(start)
        out.append(end)

    def emit(scope):
        for pos in members.get(scope, ()):
            code = records[pos][1]
            if code not in SCOPE_OPS:         # (most records)
                out.append(pos)
            elif code == LOOP_END:
                block(pos)
            elif code == CALL:
                for end in records[pos][4][2:]:
                    block(end)
                out.append(pos)
            # (loop_start, call_start and call_end come with their loop_end / call)

    emit(-1)
    return out


def _live(records, outputs, optimize_loops, optimize_calls):
    """Positions that the outputs and side effects need. With optimize_loops, a loop's state
    variable counts as needed only if the loop test, the loop's side effects, a needed state
    variable or the code after the loop reads it; with optimize_calls, a call's output only
    if the code after the call reads it."""
    ends = {}
    for r in records:
        if r[1] == LOOP_END:
            n, deps = r[5], r[4]
            for j in range(n):
                ends[deps[2 + j]] = deps[2 + n + j]          # phi -> its update
    ids = set(outputs)
    stack = [p for p, r in enumerate(records)                # outputs, top-level effects
             if r[0] in ids or (r[2] == 0 and r[7] < 0 and r[1] not in SCOPE_MARKS)]
    live = set()
    special = (LIVENESS_LOOPS if optimize_loops else set()) | (
        LIVENESS_CALLS if optimize_calls else set())
    while stack:
        p = stack.pop()
        if p in live:
            continue
        live.add(p)
        r = records[p]
        code, deps = r[1], r[4]
        if code not in special:                              # (most records)
            stack += deps
        elif code == LOOP_END:
            stack += [deps[0], deps[1], *deps[2 + 2 * r[5]:]]
        elif code == LOOP_OUTPUT:
            stack += [deps[0], records[deps[0]][4][2 + r[5]]]
        elif code == LOOP_PHI:
            stack += [*deps, ends[p]]
        elif code == CALL:
            stack += deps[:2]
            for end in deps[2:]:                             # targets: side effects only
                live.add(end)
                e = records[end][4]
                stack += [e[0], *e[1 + records[end][5]:]]
        else:                                                # call_result
            stack.append(deps[0])
            stack += [records[end][4][1 + r[5]] for end in records[deps[0]][4][2:]]
    return live


def _find_inputs(k):
    """Fills each call's `inputs`: what the code of each target reads from before its
    call_start (its operands, the updates of its loops and its outputs), nested targets
    included; targets that run another's code (merged) share its inputs."""
    open_ = []                                   # (start register, inputs) of the open targets
    found = {}                                   # (call, target) -> its inputs
    for reg, (op, _, refs, literal, extra, *_) in enumerate(k.instrs):
        if op == 'call_start':
            open_.append((reg, set()))
            continue
        if not open_:
            continue
        if op == 'loop_end':
            refs = k.loops[literal].updates
        elif op == 'call_end':
            refs = [o for o in k.calls[literal].outputs[extra] if o >= 0]
        if len(open_) == 1:                      # (mostly: no nested call)
            start, inputs = open_[0]
            for a in refs:
                if a < start:
                    inputs.add(a)
        else:
            for a in refs:
                for start, inputs in reversed(open_):       # innermost first
                    if a >= start:
                        break
                    inputs.add(a)
        if op == 'call_end':
            found[literal, extra] = sorted(open_.pop()[1])
    for n, call in enumerate(k.calls):
        call.inputs = [found[n, t] for t in call.code]


def _find_sharing(k):
    """Fills each call's `size` and `distinct` (see Call): instructions are equal in
    structure when they apply the same op (type, literal, extra) to the same caller values
    or to operands equal in structure. Code of nested calls counts for the outer call."""
    open_ = []                                   # (call, start register) of open targets
    # register -> what it stands for as an operand: outside every target, ~register (the
    # caller's value itself, negative); inside, its structure's number
    shape = {}
    numbers = {}                                 # structure -> number
    seen = [set() for _ in k.calls]
    size = [0] * len(k.calls)
    operand = shape.__getitem__
    for reg, (op, tname, args, literal, extra, _) in enumerate(k.instrs):
        if op == 'call_start':
            open_.append((literal, reg))
            # (a nested call_start's register as an operand: a value of its own)
            shape[reg] = ('r', reg)
            continue
        if op == 'call_end':
            open_.pop()
            continue
        if not open_:
            shape[reg] = ~reg
            continue
        key = (op, tname, literal, extra, tuple(map(operand, args)))
        number = shape[reg] = numbers.setdefault(key, len(numbers))
        for n, _ in open_:
            size[n] += 1
            seen[n].add(number)
    for call, numbers_seen, n in zip(k.calls, seen, size):
        call.size, call.distinct = n, len(numbers_seen)


def _find_uniform(k):
    """Marks registers that hold one value for all lanes: literals and scalar parameters, pure
    ops of uniform operands, and phis of loops with a uniform test whose initial value and
    update are uniform (the largest such set: start from all phis and drop until stable)."""
    ops = k.instrs
    candidates = {reg for loop in k.loops for reg in loop.phis}
    while True:
        uniform = set()
        for reg, (op, _, args, *_) in enumerate(ops):
            # (literals and scalar loads: ops of no operands)
            if op in UNIFORM_OPS and uniform.issuperset(args) or (
                    op == 'loop_phi' and reg in candidates):
                uniform.add(reg)
        for loop in k.loops:
            loop.uniform = ops[loop.cond].args[0] in uniform
        kept = {phi for loop in k.loops if loop.uniform
                for phi, update in zip(loop.phis, loop.updates)
                if ops[phi].args[0] in uniform and update in uniform}
        if kept == candidates:
            k.uniform = frozenset(uniform)
            return
        candidates = kept
