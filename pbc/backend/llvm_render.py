"""Kernel -> LLVM IR text: explicit <W x T> vectors, one loop over the lane range, masked
gathers/scatters for the tail, getelementptr-only addressing.

A pure function of the Kernel and the vector width, driven by the table TEMPLATES
({op: {operand kind: template}}). Kinds: 'f' float, 'i' signed, 'u' unsigned, 'b' Bool.
Template lines that start with 'declare' are hoisted to the module.
"""

import struct

from .. import config
from .._runtime import MAX_LANES  # buffers are padded for vectors this wide
from ..ops import ARITY, CALL_OPS, COMPARISONS, LOOP_OPS, REDUCE_NAMES, TYPE_NAMES
from .llvm_packets import packets, render_packet

SCALAR = {'bool': 'i1', 'int32': 'i32', 'uint32': 'i32', 'int64': 'i64', 'uint64': 'i64',
          'float32': 'float', 'float64': 'double', 'ptr': 'ptr'}
MEMORY = dict(SCALAR, bool='i8')
BYTES = {'i8': 1, 'i32': 4, 'i64': 8, 'float': 4, 'double': 8}
MANGLE = {'i1': 'i1', 'i8': 'i8', 'i32': 'i32', 'i64': 'i64', 'float': 'f32', 'double': 'f64'}
KIND = {'bool': 'b', 'int32': 'i', 'uint32': 'u', 'int64': 'i', 'uint64': 'u',
        'float32': 'f', 'float64': 'f'}


def _call(name, nargs, extra=''):
    """Template for an overloaded intrinsic applied to {a}, {b}, ... of vector type {T}."""
    operands = ', '.join('{T} {%s}' % x for x in 'abc'[:nargs])
    types = ', '.join(['{T}'] * nargs)
    decl_extra = ', i1' if extra else ''
    return (f'declare {{T}} @llvm.{name}.{{V}}({types}{decl_extra})\n'
            f'{{r}} = call {{T}} @llvm.{name}.{{V}}({operands}{extra})')


_GUARD_ZERO = ('{r}.z = icmp eq {T} {b}, zeroinitializer\n'
               '{r}.d = select {M} {r}.z, {T} {one}, {T} {b}\n')
_GUARD_SIGNED = ('{r}.z = icmp eq {T} {b}, zeroinitializer\n'
                 '{r}.m = icmp eq {T} {b}, {ones}\n'
                 '{r}.zm = or {M} {r}.z, {r}.m\n'
                 '{r}.d = select {M} {r}.zm, {T} {one}, {T} {b}\n')
_FLOAT_BITS = ('{r}.a = bitcast {T} {a} to {I}\n{r}.b = bitcast {T} {b} to {I}\n'
               '{r}.c = {op} {I} {r}.a, {r}.b\n{r} = bitcast {I} {r}.c to {T}')
# A shift by the bit width or more is poison in LLVM. The select discards those lanes, but
# the optimizer may reason about the poison value first (e.g. prove `-1 >> n` non-zero and
# speculate a division by it): freeze turns it into an ordinary, arbitrary value.
_SHIFT = ('{r}.big = icmp uge {T} {b}, {nbits}\n{r}.p = {op} {T} {a}, {b}\n'
          '{r}.s = freeze {T} {r}.p\n'
          '{r} = select {M} {r}.big, {T} zeroinitializer, {T} {r}.s')
# A shift by a literal below the bit width needs none of that.
SHIFT_BY_LITERAL = {'shl': {'i': '{r} = shl {T} {a}, {b}'},
                    'shr': {'u': '{r} = lshr {T} {a}, {b}', 'i': '{r} = ashr {T} {a}, {b}'}}
_MULHI = ('{r}.a = {ext} {T} {a} to {T2}\n{r}.b = {ext} {T} {b} to {T2}\n'
          '{r}.p = mul {T2} {r}.a, {r}.b\n{r}.h = lshr {T2} {r}.p, {shift2}\n'
          '{r} = trunc {T2} {r}.h to {T}')

# a 2^n in two steps, a 2^h 2^(n - h) with h = n >> 1: each power of two is built from its
# exponent bits, so n must keep both in the normal range (see docs/semantics.md). (fptosi
# is poison out of range: freeze keeps that from reaching anything but the result.)
_LDEXP = ('{r}.n = fptosi {T} {b} to {I}\n{r}.nf = freeze {I} {r}.n\n'
          '{r}.h = ashr {I} {r}.nf, {i1}\n{r}.k = sub {I} {r}.nf, {r}.h\n'
          '{r}.he = add {I} {r}.h, {bias}\n{r}.hb = shl {I} {r}.he, {mbits}\n'
          '{r}.hf = bitcast {I} {r}.hb to {T}\n{r}.ke = add {I} {r}.k, {bias}\n'
          '{r}.kb = shl {I} {r}.ke, {mbits}\n{r}.kf = bitcast {I} {r}.kb to {T}\n'
          '{r}.m = fmul {T} {a}, {r}.hf\n{r} = fmul {T} {r}.m, {r}.kf')
# ... or in one, where the target scales by a power of two in one instruction (AVX-512's
# vscalefps/pd: LLVM lowers llvm.ldexp to it, elsewhere to a libm call per lane).
SCALEF = {'ldexp': {'f': 'declare {T} @llvm.ldexp.{V}.{VE}({T}, {E})\n'
                         '{r}.n = fptosi {T} {b} to {E}\n{r}.nf = freeze {E} {r}.n\n'
                         '{r} = call {T} @llvm.ldexp.{V}.{VE}({T} {a}, {E} {r}.nf)'}}


def _bitwise(op):
    t = f'{{r}} = {op} {{T}} {{a}}, {{b}}'
    return {'i': t, 'u': t, 'b': t, 'f': _FLOAT_BITS.replace('{op}', op)}


TEMPLATES = {
    'neg': {'f': '{r} = fneg {T} {a}', 'i': '{r} = sub {T} zeroinitializer, {a}'},
    'not': {'i': '{r} = xor {T} {a}, {ones}', 'b': '{r} = xor {T} {a}, {ones}'},
    'abs': {'f': _call('fabs', 1), 'i': _call('abs', 1, ', i1 false')},
    'sqrt': {'f': _call('sqrt', 1)},
    'floor': {'f': _call('floor', 1)},
    'ceil': {'f': _call('ceil', 1)},
    'round': {'f': _call('roundeven', 1)},
    'trunc': {'f': _call('trunc', 1)},
    'popc': {'i': _call('ctpop', 1)},
    'clz': {'i': _call('ctlz', 1, ', i1 false')},
    'ctz': {'i': _call('cttz', 1, ', i1 false')},
    'add': {'f': '{r} = fadd {T} {a}, {b}', 'i': '{r} = add {T} {a}, {b}'},
    'sub': {'f': '{r} = fsub {T} {a}, {b}', 'i': '{r} = sub {T} {a}, {b}'},
    'mul': {'f': '{r} = fmul {T} {a}, {b}', 'i': '{r} = mul {T} {a}, {b}'},
    # Integer division by zero gives 0 and INT_MIN / -1 wraps: no trap, no poison.
    'div': {'f': '{r} = fdiv {T} {a}, {b}',
            'u': _GUARD_ZERO + '{r}.q = udiv {T} {a}, {r}.d\n'
                 '{r} = select {M} {r}.z, {T} zeroinitializer, {T} {r}.q',
            'i': _GUARD_SIGNED + '{r}.q = sdiv {T} {a}, {r}.d\n'
                 '{r}.n = sub {T} zeroinitializer, {a}\n'
                 '{r}.q2 = select {M} {r}.m, {T} {r}.n, {T} {r}.q\n'
                 '{r} = select {M} {r}.z, {T} zeroinitializer, {T} {r}.q2'},
    'mod': {'f': '{r} = frem {T} {a}, {b}',
            'u': _GUARD_ZERO + '{r}.q = urem {T} {a}, {r}.d\n'
                 '{r} = select {M} {r}.z, {T} zeroinitializer, {T} {r}.q',
            'i': _GUARD_SIGNED + '{r}.q = srem {T} {a}, {r}.d\n'
                 '{r} = select {M} {r}.zm, {T} zeroinitializer, {T} {r}.q'},
    'min': {'f': _call('minnum', 2), 'i': _call('smin', 2), 'u': _call('umin', 2)},
    'max': {'f': _call('maxnum', 2), 'i': _call('smax', 2), 'u': _call('umax', 2)},
    'minimum': {'f': _call('minimum', 2)},
    'maximum': {'f': _call('maximum', 2)},
    'and': _bitwise('and'),
    'or': _bitwise('or'),
    'xor': _bitwise('xor'),
    # Shifts by the bit width or more give 0 (arithmetic right shifts: the sign), as NumPy.
    'shl': {'i': _SHIFT.replace('{op}', 'shl')},
    'shr': {'u': _SHIFT.replace('{op}', 'lshr'),
            'i': '{r}.big = icmp uge {T} {b}, {nbits}\n'
                 '{r}.b2 = select {M} {r}.big, {T} {nbits1}, {T} {b}\n'
                 '{r} = ashr {T} {a}, {r}.b2'},
    'mulhi': {'i': _MULHI.replace('{ext}', 'sext'), 'u': _MULHI.replace('{ext}', 'zext')},
    'ldexp': {'f': _LDEXP},
    'fma': {'f': _call('fma', 3), 'i': '{r}.p = mul {T} {a}, {b}\n{r} = add {T} {r}.p, {c}'},
    'select': {k: '{r} = select {M} {a}, {T} {b}, {T} {c}' for k in 'fiub'},
}
for _op, (_f, _s, _u) in {'eq': ('oeq', 'eq', 'eq'), 'ne': ('une', 'ne', 'ne'),
                          'lt': ('olt', 'slt', 'ult'), 'le': ('ole', 'sle', 'ule'),
                          'gt': ('ogt', 'sgt', 'ugt'), 'ge': ('oge', 'sge', 'uge')}.items():
    TEMPLATES[_op] = {'f': f'{{r}} = fcmp {_f} {{T}} {{a}}, {{b}}',
                      'i': f'{{r}} = icmp {_s} {{T}} {{a}}, {{b}}',
                      'u': f'{{r}} = icmp {_u} {{T}} {{a}}, {{b}}',
                      'b': f'{{r}} = icmp {_u} {{T}} {{a}}, {{b}}'}

# Ops rendered by methods below rather than by a one-line template.
SPECIAL = frozenset(('literal', 'counter', 'load', 'load1', 'ptr', 'lane_ptr', 'store', 'cast',
                     'bitcast', 'gather', 'scatter', 'print', 'subgroup_any', *LOOP_OPS,
                     *CALL_OPS))
assert set(TEMPLATES) | set(SPECIAL) == set(ARITY), 'LLVM renderer misses ops'

_COMPARE = frozenset(COMPARISONS)
ATOMIC = {('add', 'f'): 'fadd', ('add', 'i'): 'add', ('add', 'u'): 'add',
          ('min', 'f'): 'fmin', ('min', 'i'): 'min', ('min', 'u'): 'umin',
          ('max', 'f'): 'fmax', ('max', 'i'): 'max', ('max', 'u'): 'umax',
          ('and', 'i'): 'and', ('and', 'u'): 'and', ('and', 'b'): 'and',
          ('or', 'i'): 'or', ('or', 'u'): 'or', ('or', 'b'): 'or'}
CODE_TABLE_KEYS = 1 << 16      # call keys below this: a table maps them to shared code
ORDERED_CODES = range(4, 17)   # calls of this many codes run a vector's in order
# Targets of at most this many instructions are inlined: the call (spilling the caller's
# vectors, which no vector register survives) would cost more than their code.
INLINE_SIZE = 32
SHARED_CODE = 256              # instructions (see inline_all)


def inline_all(kernel):
    """Whether every call target of the kernel is inlined into it (and the kernel gets
    LLVM's O2, see llvm_jit): on request (PBC_INLINE_CALLS=1), or where the targets of a
    call repeat most of each other's code (over half of it, and SHARED_CODE instructions
    at least, as assembly measured: Call.distinct), which O2 then computes once. The
    series benchmark's 64 targets share their prefixes: 14 instead of 32 ms warm. O2 costs
    compile time that a little shared code does not pay back: its 8 targets (84 shared
    instructions) ran 0.5 ms faster per call of 10^6 lanes for 5 ms more compile time."""
    return config.INLINE_CALLS or any(
        call.size - call.distinct >= SHARED_CODE and 2 * call.distinct <= call.size
        for call in kernel.calls)


def scalar_constant(tname, bits):
    s = SCALAR[tname]
    if s == 'float':
        return '0x%016X' % struct.unpack('<Q', struct.pack('<d', struct.unpack(
            '<f', struct.pack('<I', bits & 0xFFFFFFFF))[0]))[0]
    if s == 'double':
        return '0x%016X' % bits
    if s == 'i1':
        return 'true' if bits else 'false'
    width = 32 if s == 'i32' else 64
    bits &= (1 << width) - 1
    return str(bits - (1 << width) if bits >> (width - 1) else bits)


def _exponent_fields(s):
    """{i1} {bias} {mbits}: integers for building a float of scalar type s from its
    exponent (empty for other types)."""
    if s not in ('float', 'double'):
        return {}
    return dict(i1='1', bias='127' if s == 'float' else '1023',
                mbits='23' if s == 'float' else '52')


class _Renderer:
    def __init__(self, kernel, width, scalef, use_packets):
        self.k = kernel
        self.W = width
        self.scalef = scalef
        # gathers of neighbouring elements loaded together (see llvm_packets.py)
        self.packets = packets(kernel, TEMPLATES) if use_packets and width >= 8 else {}
        self.names = []          # register -> operand text
        self.snames = {}         # uniform register -> its scalar operand text
        self.loop_phis = {}      # loop number -> (preheader block, [(line, phi register)])
        self.call_state = {}     # call number -> (preheader, phi lines, [(block, outputs)])
        self.prologue = []       # loads of the parameter slots (repeated in every function)
        self.tables = []         # the lane_ptr tables (built once, passed to every function)
        self.functions = []      # call targets' functions
        self.outer = []          # (body, block) of the code that a target's function interrupts
        self.allocas = []        # the current function's stack slots (its entry block's)
        self.decls = {}
        self.typed = {}
        self.specialized = {}
        self.globals = []
        self.entry = []
        self.body = []
        self.block = 'body'      # current basic block (for phi nodes of lane loops)
        self.masks = f'<{width} x i1>'
        self.inline_all = inline_all(kernel)

    def vec(self, s):
        return f'<{self.W} x {s}>'

    def splat(self, s, text):
        return f'splat ({s} {text})'

    def const(self, tname, bits):
        return 'zeroinitializer' if bits == 0 else self.splat(SCALAR[tname],
                                                              scalar_constant(tname, bits))

    def specialize(self, op, kind_type, scalar=False, templates=TEMPLATES):
        """The template of `op` for one operand type (vector, or scalar for uniform values),
        with everything type-dependent filled in (once per kernel and type): what is left
        are the fields {r} {a} {b} {c}."""
        key = (op, kind_type, scalar, templates is TEMPLATES)
        body = self.specialized.get(key)
        if body is None:
            kind = KIND[kind_type]
            table = templates[op]
            tmpl = table.get(kind) or (table.get('i') if kind == 'u' else None)
            if tmpl is None:
                raise TypeError(f"LLVM backend: no '{op}' for {kind_type}")
            fields = self.scalar_fields(kind_type) if scalar else self.type_fields(kind_type)
            text = tmpl.format(r='{r}', a='{a}', b='{b}', c='{c}', **fields)
            lines = []
            for line in text.split('\n'):
                if line.startswith('declare'):
                    self.decls[line] = None
                else:
                    lines.append('  ' + line)
            body = self.specialized[key] = '\n'.join(lines)
        return body

    def entry_splat(self, name, s, scalar):
        self.entry.append(f'  {name}.0 = insertelement {self.vec(s)} poison, {s} {scalar}, i64 0')
        self.entry.append(f'  {name} = shufflevector {self.vec(s)} {name}.0, {self.vec(s)} '
                          f'poison, <{self.W} x i32> zeroinitializer')

    def literal_below_width(self, reg, type_):
        """Whether instruction `reg` is a literal smaller than the bit width of type_."""
        ins = self.k.instrs[reg]
        return ins.op == 'literal' and ins.literal < BYTES[SCALAR[type_]] * 8

    def type_fields(self, kind_type):
        """Template fields that depend only on the operand type (computed once per type)."""
        f = self.typed.get(kind_type)
        if f is None:
            s = SCALAR[kind_type]
            bits = BYTES.get(s, 1) * 8
            one = 1 if KIND[kind_type] != 'f' else (0x3F800000 if s == 'float'
                                                   else 0x3FF0000000000000)
            f = self.typed[kind_type] = dict(
                T=self.vec(s), V=f'v{self.W}{MANGLE[s]}', M=self.masks,
                one=self.const(kind_type, one), ones=self.splat(s, 'true' if s == 'i1' else '-1'),
                nbits=self.splat(s, str(bits)), nbits1=self.splat(s, str(bits - 1)),
                I=self.vec(f'i{bits}'), T2=self.vec(f'i{2 * bits}'),
                shift2=self.splat(f'i{2 * bits}', str(bits)), E=self.vec('i32'),
                VE=f'v{self.W}i32', **{key: self.splat(f'i{bits}', value)
                                       for key, value in _exponent_fields(s).items()})
        return f

    def scalar_fields(self, kind_type):
        """type_fields for one lane: the same templates then compute uniform values once."""
        s = SCALAR[kind_type]
        bits = BYTES.get(s, 1) * 8
        one = 1 if KIND[kind_type] != 'f' else (0x3F800000 if s == 'float'
                                               else 0x3FF0000000000000)
        return dict(T=s, V=MANGLE[s], M='i1', one=scalar_constant(kind_type, one),
                    ones='true' if s == 'i1' else '-1', nbits=str(bits), nbits1=str(bits - 1),
                    I=f'i{bits}', T2=f'i{2 * bits}', shift2=str(bits), E='i32', VE='i32',
                    **_exponent_fields(s))

    def splat_to(self, name, s, scalar):
        """Defines vector `name` as `scalar` in every lane, in the current block."""
        self.body.append(f'  {name}.0 = insertelement {self.vec(s)} poison, {s} {scalar}, '
                         'i64 0')
        self.body.append(f'  {name} = shufflevector {self.vec(s)} {name}.0, {self.vec(s)} '
                         f'poison, <{self.W} x i32> zeroinitializer')

    def render(self):
        k = self.k
        for slot, p in enumerate(k.params):
            s = 'i64' if p.kind == 'size' else 'ptr'
            self.entry.append(f'  %p{slot}.a = getelementptr inbounds i64, ptr %params, '
                              f'i64 {slot}')
            self.entry.append(f'  %p{slot} = load {s}, ptr %p{slot}.a, align 8')
            if p.kind == 'size':
                self.entry.append(f'  %p{slot}.t = trunc i64 %p{slot} to i32')
                self.entry_splat(f'%sz{slot - 1}', 'i32', f'%p{slot}.t')
        if any(ins.op == 'scatter' and REDUCE_NAMES[ins.extra] == 'add_local'
               for ins in k.instrs):
            # (the thread's own copy of a scatter_add_local's target: see _pool.h). The
            # thread running a kernel's function stays the same until it returns: a value
            # that inlined call targets' prologues then share, as if it read no memory.
            self.decls['declare i32 @pbc_thread_index() nounwind willreturn memory(none)'] = None
            self.entry.append('  %thread = call i32 @pbc_thread_index()')
        self.prologue = list(self.entry)
        for reg, ins in enumerate(k.instrs):
            if ins.op == 'lane_ptr':
                self.pointer_tables(reg, ins)
        self.entry_splat('%end.v', 'i64', '%end')
        iota = ', '.join(f'i64 {i}' for i in range(self.W))
        self.body += ['  %index.v0 = insertelement ' + self.vec('i64') + ' poison, i64 %index, '
                      'i64 0',
                      f'  %index.v = shufflevector {self.vec("i64")} %index.v0, '
                      f'{self.vec("i64")} poison, <{self.W} x i32> zeroinitializer',
                      f'  %lanes = add {self.vec("i64")} %index.v, <{iota}>',
                      f'  %active = icmp slt {self.vec("i64")} %lanes, %end.v']
        self.names = [None] * len(k.instrs)
        for reg, ins in enumerate(k.instrs):
            r = f'%r{reg}'
            if self.names[reg] is None:
                self.names[reg] = r
            if ins.op in SPECIAL:
                getattr(self, 'op_' + ins.op)(ins, r, reg)
                continue
            kt = k.instrs[ins.args[0]].type if ins.op in _COMPARE else ins.type
            uniform = reg in k.uniform
            names = self.snames if uniform else self.names
            args = ins.args
            templates = TEMPLATES
            if ins.op in SHIFT_BY_LITERAL and self.literal_below_width(args[1], ins.type):
                templates = SHIFT_BY_LITERAL
            elif ins.op in SCALEF and self.scalef:
                templates = SCALEF
            self.body.append(self.specialize(ins.op, kt, uniform, templates).format(
                r=r + '.s' if uniform else r, a=names[args[0]],
                b=names[args[1]] if len(args) > 1 else '',
                c=names[args[2]] if len(args) > 2 else ''))
            if uniform:
                self.snames[reg] = r + '.s'
                self.splat_to(r, SCALAR[ins.type], r + '.s')
        W = self.W
        # Subnormals flushed at run time (MXCSR's FTZ and DAZ, see _pool.h): LLVM's own
        # constant folding must flush them too.
        fp = ' "denormal-fp-math"="preserve-sign,preserve-sign"' if self.k.flush_denormals \
            else ''
        return '\n'.join([
            *self.decls,
            *self.globals,
            '',
            *self.functions,
            'define void @kernel(i64 %start, i64 %end, ptr noalias %params) #0 {',
            'entry:', *self.allocas, *self.entry, '  br label %body',
            'body:',
            f'  %index = phi i64 [ %start, %entry ], [ %index.next, %{self.block} ]',
            *self.body,
            f'  %index.next = add i64 %index, {W}',
            '  %more = icmp slt i64 %index.next, %end',
            '  br i1 %more, label %body, label %exit',
            'exit:', '  ret void', '}',
            *(f'attributes #{k} = {{ nounwind{extra}{fp} }}'
              for k, extra in enumerate(('', ' noinline', ' alwaysinline'))),
            '!0 = !{i32 1}', ''])

    # ---- special ops ----
    def op_literal(self, ins, r, reg):
        self.names[reg] = self.const(ins.type, ins.literal)
        self.snames[reg] = scalar_constant(ins.type, ins.literal)

    def op_counter(self, ins, r, reg):
        self.body.append(f'  {r} = trunc {self.vec("i64")} %lanes to {self.vec("i32")}')

    def op_load(self, ins, r, reg):
        m = MEMORY[ins.type]
        align = min(64, BYTES[m] * self.W)
        self.body.append(f'  {r}.p = getelementptr inbounds {m}, ptr %p{ins.slot}, i64 %index')
        self.body.append(f'  {r}{".m" if m == "i8" else ""} = load {self.vec(m)}, ptr {r}.p, '
                         f'align {align}')
        if m == 'i8':
            self.body.append(f'  {r} = icmp ne {self.vec("i8")} {r}.m, zeroinitializer')

    def op_load1(self, ins, r, reg):
        m, s = MEMORY[ins.type], SCALAR[ins.type]
        name = f'%s{reg}'
        self.entry.append(f'  {name}.m = load {m}, ptr %p{ins.slot}, align {BYTES[m]}')
        if m == 'i8':
            self.entry.append(f'  {name}.s = icmp ne i8 {name}.m, 0')
        self.entry_splat(name, s, f'{name}.m' if m != 'i8' else f'{name}.s')
        self.names[reg] = name
        self.snames[reg] = f'{name}.m' if m != 'i8' else f'{name}.s'

    def op_ptr(self, ins, r, reg):
        self.names[reg] = f'%p{ins.slot}'

    def pointer_tables(self, reg, ins):
        """The addresses and sizes of a lane_ptr's buffers as two stack arrays, built once
        in the kernel's entry and passed to the call targets' functions (built in each, the
        tables of 18 material instances made a third of a 4-bounce kernel's IR, and its
        instruction selection time)."""
        slots = [self.k.instrs[p].slot for p in ins.args[1:]]
        n, t = len(slots), f'%lp{reg}'
        self.tables += [f'{t}.tab', f'{t}.sizes']
        self.entry += [f'  {t}.tab = alloca [{n} x ptr], align 8',
                       f'  {t}.sizes = alloca [{n} x i64], align 8']
        for j, slot in enumerate(slots):
            self.entry += [f'  {t}.a{j} = getelementptr [{n} x ptr], ptr {t}.tab, i64 0, i64 {j}',
                           f'  store ptr %p{slot}, ptr {t}.a{j}, align 8',
                           f'  {t}.s{j} = getelementptr [{n} x i64], ptr {t}.sizes, i64 0, '
                           f'i64 {j}',
                           f'  store i64 %p{slot + 1}, ptr {t}.s{j}, align 8']

    def op_lane_ptr(self, ins, r, reg):
        """Each lane's buffer address (`r`) and size (`r`.sz): two gathers from the tables."""
        t, M, P, V64 = f'%lp{reg}', self.masks, self.vec('ptr'), self.vec('i64')
        ones = self.const('bool', 1)
        gp = f'masked.gather.v{self.W}p0.v{self.W}p0'
        gi = f'masked.gather.v{self.W}i64.v{self.W}p0'
        self.decls[f'declare {P} @llvm.{gp}({P}, i32, {M}, {P})'] = None
        self.decls[f'declare {V64} @llvm.{gi}({P}, i32, {M}, {V64})'] = None
        self.body += [
            f'  {r}.i = zext {self.vec("i32")} {self.names[ins.args[0]]} to {V64}',
            f'  {r}.pa = getelementptr ptr, ptr {t}.tab, {V64} {r}.i',
            f'  {r} = call {P} @llvm.{gp}({P} {r}.pa, i32 8, {M} {ones}, {P} poison)',
            f'  {r}.sa = getelementptr i64, ptr {t}.sizes, {V64} {r}.i',
            f'  {r}.sz = call {V64} @llvm.{gi}({P} {r}.sa, i32 8, {M} {ones}, {V64} poison)']

    def op_store(self, ins, r, reg):
        src = self.k.instrs[ins.args[0]]
        m = MEMORY[src.type]
        value = self.names[ins.args[0]]
        if m == 'i8':
            self.body.append(f'  {r}.z = zext {self.masks} {value} to {self.vec("i8")}')
            value = f'{r}.z'
        align = min(64, BYTES[m] * self.W)
        self.body.append(f'  {r}.p = getelementptr inbounds {m}, ptr %p{ins.slot}, i64 %index')
        nt = ', !nontemporal !0' if self.k.streaming else ''
        self.body.append(f'  store {self.vec(m)} {value}, ptr {r}.p, align {align}{nt}')

    def op_cast(self, ins, r, reg):
        src_t = TYPE_NAMES[ins.extra]
        a = self.names[ins.args[0]]
        s, d = SCALAR[src_t], SCALAR[ins.type]
        ks, kd = KIND[src_t], KIND[ins.type]
        S, D = self.vec(s), self.vec(d)
        if s == d:
            self.names[reg] = a
            return
        if kd == 'b':
            cmp = 'fcmp une' if ks == 'f' else 'icmp ne'
            line = f'{r} = {cmp} {S} {a}, zeroinitializer'
        elif ks == 'b':
            line = f'{r} = {"uitofp" if kd == "f" else "zext"} {S} {a} to {D}'
        elif ks != 'f' and kd != 'f':
            op = 'trunc' if BYTES[s] > BYTES[d] else ('sext' if ks == 'i' else 'zext')
            line = f'{r} = {op} {S} {a} to {D}'
        elif kd == 'f' and ks != 'f':
            line = f'{r} = {"sitofp" if ks == "i" else "uitofp"} {S} {a} to {D}'
        elif ks == 'f' and kd != 'f':
            self.saturating_cast(r, a, s, d, kd == 'i')
            return
        else:
            line = f'{r} = {"fpext" if BYTES[d] > BYTES[s] else "fptrunc"} {S} {a} to {D}'
        self.body.append('  ' + line)

    def saturating_cast(self, r, a, s, d, signed):
        """Float -> int that truncates, saturates and maps NaN to 0. Written out rather than
        as llvm.fpto*i.sat, which x86 lowers one lane at a time."""
        S, D = self.vec(s), self.vec(d)
        bits = BYTES[d] * 8
        top = 2.0 ** (bits - 1 if signed else bits)        # first value out of range
        hi = (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1
        lo = -(1 << (bits - 1)) if signed else 0
        c = lambda v: self.splat(s, '0x%016X' % struct.unpack('<Q', struct.pack('<d', v))[0])  # noqa: E731
        ci = lambda v: self.splat(d, str(v - (1 << bits) if v >= (1 << (bits - 1)) else v))  # noqa: E731
        self.body += [
            f'  {r}.p = {"fptosi" if signed else "fptoui"} {S} {a} to {D}',
            f'  {r}.t = freeze {D} {r}.p',          # poison out of range: see _SHIFT
            f'  {r}.hi = fcmp oge {S} {a}, {c(top)}',
            f'  {r}.lo = fcmp olt {S} {a}, {c(-top if signed else 0.0)}',
            f'  {r}.nan = fcmp uno {S} {a}, zeroinitializer',
            f'  {r}.a = select {self.masks} {r}.hi, {D} {ci(hi)}, {D} {r}.t',
            f'  {r}.b = select {self.masks} {r}.lo, {D} {ci(lo) if lo else "zeroinitializer"}, '
            f'{D} {r}.a',
            f'  {r} = select {self.masks} {r}.nan, {D} zeroinitializer, {D} {r}.b']

    def op_bitcast(self, ins, r, reg):
        s, d = SCALAR[TYPE_NAMES[ins.extra]], SCALAR[ins.type]
        a = self.names[ins.args[0]]
        if s == d:
            self.names[reg] = a
        else:
            self.body.append(f'  {r} = bitcast {self.vec(s)} {a} to {self.vec(d)}')

    def _addresses(self, r, ptr_reg, index_reg, mask_reg, m, index=None, mask=None,
                   read=False):
        """The lanes' element pointers (`r`.p, of memory type m) and effective mask (`r`.m):
        active, requested and in bounds. A buffer holds fewer than 2^32 elements, so one
        buffer's index is 32-bit throughout: bounds checked as i32, and the address taken from
        a signed 32-bit index (which x86 gathers and scatters read with one instruction) as
        base + 2^31 elements, index - 2^31 (the index with its top bit flipped).

        A read of one buffer (`read`) leaves out %active, the lanes before the kernel's end:
        the lanes after it read in bounds too, and what they read goes nowhere. %active is
        defined once, outside the loops where gathers run hottest, and a mask defined in
        another basic block is kept as one byte per lane where AVX-512 is missing: each use
        would widen it again, for each group of four 64-bit lanes of a gather (ambient
        occlusion, whose BVH traversal gathers two words per step: 5-10 % of its time)."""
        b = self.body
        index = index or self.names[index_reg]
        if self.k.instrs[ptr_reg].op == 'lane_ptr':      # a buffer per lane
            read = False              # (a lane's buffer after the end: not known to exist)
            base = self.names[ptr_reg]
            V64 = self.vec('i64')
            b += [f'  {r}.i = zext {self.vec("i32")} {index} to {V64}',
                  f'  {r}.in = icmp ult {V64} {r}.i, {base}.sz',
                  f'  {r}.p = getelementptr {m}, {self.vec("ptr")} {base}, {V64} {r}.i']
        else:
            slot = self.k.instrs[ptr_reg].slot
            V32 = self.vec('i32')
            b += [f'  {r}.in = icmp ult {V32} {index}, %sz{slot}',
                  f'  {r}.b = getelementptr {m}, ptr %p{slot}, i64 2147483648',
                  f'  {r}.i = xor {V32} {index}, {self.splat("i32", "-2147483648")}',
                  f'  {r}.p = getelementptr {m}, ptr {r}.b, {V32} {r}.i']
        b += [f'  {r}.m0 = and {self.masks} {mask or self.names[mask_reg]}, {r}.in',
              f'  {r}.m = and {self.masks} {r}.m0, {self.const("bool", 1) if read else "%active"}']

    def op_gather(self, ins, r, reg):
        ptr_reg, index_reg, mask_reg = ins.args
        m = MEMORY[ins.type]
        if reg in self.packets:
            packet = self.packets[reg]
            if packet is not None:        # (the others are loaded with their packet's first)
                code = render_packet(f'{r}.pk', packet, self.names[packet.base],
                                     self.names[mask_reg], self.k.instrs[ptr_reg].slot, m,
                                     self.W)
                self.decls.update(dict.fromkeys(code.decls))
                self.body += code.lines
                if code.block:
                    self.block = code.block
            return
        self._addresses(r, ptr_reg, index_reg, mask_reg, m, read=True)
        V, P = self.vec(m), self.vec('ptr')
        name = f'masked.gather.v{self.W}{MANGLE[m]}.v{self.W}p0'
        self.decls[f'declare {V} @llvm.{name}({P}, i32, {self.masks}, {V})'] = None
        out = f'{r}.g' if m == 'i8' else r
        self.body.append(f'  {out} = call {V} @llvm.{name}({P} {r}.p, i32 {BYTES[m]}, '
                         f'{self.masks} {r}.m, {V} zeroinitializer)')
        if m == 'i8':
            self.body.append(f'  {r} = icmp ne {V} {r}.g, zeroinitializer')

    def op_scatter(self, ins, r, reg):
        ptr_reg, value_reg, index_reg, mask_reg = ins.args
        vt = self.k.instrs[value_reg].type
        m = MEMORY[vt]
        reduce = REDUCE_NAMES[ins.extra]
        if reduce == 'add_local':
            self._add_local(ins, r, vt, m)
            return
        self._addresses(r, ptr_reg, index_reg, mask_reg, m)
        V, P = self.vec(m), self.vec('ptr')
        value = self.names[value_reg]
        b = self.body
        if m == 'i8':
            b.append(f'  {r}.z = zext {self.masks} {value} to {V}')
            value = f'{r}.z'
        if reduce == 'none':
            name = f'masked.scatter.v{self.W}{MANGLE[m]}.v{self.W}p0'
            self.decls[f'declare void @llvm.{name}({V}, {P}, i32, {self.masks})'] = None
            b.append(f'  call void @llvm.{name}({V} {value}, {P} {r}.p, i32 {BYTES[m]}, '
                     f'{self.masks} {r}.m)')
            return
        if reduce == 'add' and self.k.instrs[index_reg].op == 'literal' and m != 'i8' and \
                self.k.instrs[ptr_reg].op != 'lane_ptr':          # (one address for all)
            self._add_into_one(r, m, vt, value)
            return
        # Atomic reduction: one atomicrmw per active lane, correct under any contention.
        if reduce == 'mul':             # no atomicrmw for it: a compare-and-swap loop
            lane = self._cas_multiply(r, m)
        else:
            lane = [f'  {r}.old = atomicrmw {ATOMIC[(reduce, KIND[vt])]} ptr {r}.pj, '
                    f'{m} {r}.vj monotonic']
        self._per_lane(r, f'{r}.m', lane, read=[('pj', 'ptr', f'{r}.p'), ('vj', m, value)])

    def _add_into_one(self, r, m, vt, value, atomic=True):
        """Every lane adds into one entry (a literal index: the gradient of a parameter of
        width 1, say): the active lanes' sum, then one addition per vector (an atomic one
        unless the entry is the thread's own), instead of one per lane on one address.
        (The order of a scatter-add's additions is unspecified: docs/semantics.md.)"""
        V, P, W = self.vec(m), self.vec('ptr'), self.W
        float_ = KIND[vt] == 'f'
        name = f'vector.reduce.{"fadd" if float_ else "add"}.v{W}{MANGLE[m]}'
        self.decls[f'declare {m} @llvm.{name}({m + ", " if float_ else ""}{V})'] = None
        lbl = r[1:]
        if atomic:
            add = [f'  {r}.old = atomicrmw {ATOMIC[("add", KIND[vt])]} ptr {r}.p0, {m} {r}.t '
                   'monotonic']
        else:
            add = [f'  {r}.o = load {m}, ptr {r}.p0, align {BYTES[m]}',
                   f'  {r}.n = {"fadd" if float_ else "add"} {m} {r}.o, {r}.t',
                   f'  store {m} {r}.n, ptr {r}.p0, align {BYTES[m]}']
        self.body += [
            f'  {r}.s = select {self.masks} {r}.m, {V} {value}, {V} zeroinitializer',
            f'  {r}.t = call {"reassoc " if float_ else ""}{m} @llvm.{name}('
            f'{m + " -0.0, " if float_ else ""}{V} {r}.s)',
            f'  {r}.bits = bitcast {self.masks} {r}.m to i{W}',
            f'  {r}.any = icmp ne i{W} {r}.bits, 0',
            f'  br i1 {r}.any, label %{lbl}.add, label %{lbl}.added', f'{lbl}.add:',
            f'  {r}.p0 = extractelement {P} {r}.p, i32 0', *add,
            f'  br label %{lbl}.added', f'{lbl}.added:']
        self.block = f'{lbl}.added'

    def _add_local(self, ins, r, vt, m):
        """scatter_add_local: adds into the entries of this thread's copy of the target
        (copy `%thread`, of `size` entries: the literal's low half), which no other thread
        writes: a load and a store per lane, in lane order (lanes of a vector may add into
        one entry), or where every lane adds into one entry, the active lanes' sum once."""
        ptr_reg, value_reg, index_reg, mask_reg = ins.args
        size = ins.literal & 0xFFFFFFFF
        V, P, V32 = self.vec(m), self.vec('ptr'), self.vec('i32')
        value = self.names[value_reg]
        add = 'fadd' if KIND[vt] == 'f' else 'add'
        index = self.names[index_reg]
        self.body += [f'  {r}.off = mul i32 %thread, {size}',
                      f'  {r}.in1 = icmp ult {V32} {index}, {self.splat("i32", size)}',
                      f'  {r}.m1 = and {self.masks} {self.names[mask_reg]}, {r}.in1']
        self.splat_to(f'{r}.offv', 'i32', f'{r}.off')
        self.body.append(f'  {r}.li = add {V32} {index}, {r}.offv')
        self._addresses(r, ptr_reg, index_reg, mask_reg, m, index=f'{r}.li', mask=f'{r}.m1')
        if self.k.instrs[index_reg].op == 'literal':         # (one entry for all lanes)
            self._add_into_one(r, m, vt, value, atomic=False)
            return
        # A whole vector (most, outside calls and branches): unrolled, so that lane j's
        # pointer and value are read at a constant position. Fewer lanes (a call target's
        # share of a vector): a pass per lane on, from one copy of them in memory (a
        # loop that extracts at a variable position would store them again each pass).
        lbl, I, W = r[1:], f'i{self.W}', self.W
        b = self.body
        b += [f'  {r}.all = bitcast {self.masks} {r}.m to {I}',
              f'  {r}.full = icmp eq {I} {r}.all, -1',
              f'  br i1 {r}.full, label %{lbl}.whole, label %{lbl}.some', f'{lbl}.whole:']
        for j in range(W):
            b += [f'  {r}.at{j} = extractelement {P} {r}.p, i32 {j}',
                  f'  {r}.v{j} = extractelement {V} {value}, i32 {j}',
                  f'  {r}.o{j} = load {m}, ptr {r}.at{j}, align {BYTES[m]}',
                  f'  {r}.n{j} = {add} {m} {r}.o{j}, {r}.v{j}',
                  f'  store {m} {r}.n{j}, ptr {r}.at{j}, align {BYTES[m]}']
        b += [f'  br label %{lbl}.added', f'{lbl}.some:']
        self.block = f'{lbl}.some'
        self._per_lane(r, f'{r}.m', [
            f'  {r}.o = load {m}, ptr {r}.at, align {BYTES[m]}',
            f'  {r}.n = {add} {m} {r}.o, {r}.v',
            f'  store {m} {r}.n, ptr {r}.at, align {BYTES[m]}'],
            read=[('at', 'ptr', f'{r}.p'), ('v', m, value)])
        b.append(f'  br label %{lbl}.added')
        self.label(f'{lbl}.added')

    @staticmethod
    def _cas_multiply(r, m):
        """*p *= v for one lane ({r}.pj, {r}.vj) by compare-and-swap on the bits."""
        i = {'float': 'i32', 'double': 'i64'}.get(m, m)
        lbl = r[1:]
        mul = (f'  {r}.of = bitcast {i} {r}.o to {m}\n  {r}.nf = fmul {m} {r}.of, {r}.vj\n'
               f'  {r}.n = bitcast {m} {r}.nf to {i}') if m != i else \
            f'  {r}.n = mul {i} {r}.o, {r}.vj'
        return [f'  {r}.o0 = load atomic {i}, ptr {r}.pj monotonic, align {BYTES[i]}',
                f'  br label %{lbl}.cas', f'{lbl}.cas:',
                f'  {r}.o = phi {i} [ {r}.o0, %{lbl}.do ], [ {r}.seen, %{lbl}.cas ]', mul,
                f'  {r}.pair = cmpxchg ptr {r}.pj, {i} {r}.o, {i} {r}.n monotonic monotonic',
                f'  {r}.seen = extractvalue {{ {i}, i1 }} {r}.pair, 0',
                f'  {r}.ok = extractvalue {{ {i}, i1 }} {r}.pair, 1',
                f'  br i1 {r}.ok, label %{lbl}.swapped, label %{lbl}.cas', f'{lbl}.swapped:']

    def _per_lane(self, r, mask, lines, read=()):
        """Runs `lines` for each lane set in `mask`, in lane order: a pass per set bit, so
        that a vector with few lanes on (a call target's, a branch's) costs as few. The
        lines may use the lane's number {r}.j (i32) and, for each (name, element type,
        vector) of `read`, that vector's element {r}.name: read from a copy of the vector
        in memory made once (a loop that extracts at a variable position would store the
        vector again in each pass)."""
        lbl, I, W = r[1:], f'i{self.W}', self.W
        self.decls[f'declare {I} @llvm.cttz.{I}({I}, i1)'] = None
        loads = []
        for name, s, vector in read:
            self.allocas.append(f'  {r}.{name}s = alloca [{W} x {s}], align 64')
            self.body.append(f'  store {self.vec(s)} {vector}, ptr {r}.{name}s, align 64')
            loads += [f'  {r}.{name}a = getelementptr [{W} x {s}], ptr {r}.{name}s, i32 0, '
                      f'i32 {r}.j',
                      f'  {r}.{name} = load {s}, ptr {r}.{name}a, align {BYTES.get(s, 8)}']
        lane = [f'  {r}.j = call i32 @llvm.cttz.i32(i32 {r}.bits, i1 true)'] if W == 32 else \
            [f'  {r}.jw = call {I} @llvm.cttz.{I}({I} {r}.bits, i1 true)',
             f'  {r}.j = {"zext" if W < 32 else "trunc"} {I} {r}.jw to i32']
        self.body += [
            f'  {r}.bits0 = bitcast {self.masks} {mask} to {I}',
            f'  br label %{lbl}.head', f'{lbl}.head:',
            f'  {r}.bits = phi {I} [ {r}.bits0, %{self.block} ], [ {r}.rest, %{lbl}.next ]',
            f'  {r}.any = icmp ne {I} {r}.bits, 0',
            f'  br i1 {r}.any, label %{lbl}.do, label %{lbl}.done',
            f'{lbl}.do:', *lane, *loads, *lines,
            f'  br label %{lbl}.next', f'{lbl}.next:',
            f'  {r}.low = sub {I} {r}.bits, 1',
            f'  {r}.rest = and {I} {r}.bits, {r}.low',
            f'  br label %{lbl}.head',
            f'{lbl}.done:']
        self.block = f'{lbl}.done'

    # ---- symbolic loops: header (phis, test), body, latch (updates), exit ----
    def label(self, name):
        self.body.append(f'{name}:')
        self.block = name

    def phi_type(self, reg):
        s = SCALAR[self.k.instrs[reg].type]
        return s if reg in self.k.uniform else self.vec(s)

    def op_loop_start(self, ins, r, reg):
        n = ins.literal
        loop = self.k.loops[n]
        pre = self.block
        self.body.append(f'  br label %L{n}.head')
        self.label(f'L{n}.head')
        slots = []
        for phi in loop.phis:            # filled in at loop_end, when the updates are known
            slots.append((len(self.body), phi))
            self.body.append(None)
            if phi in self.k.uniform:
                self.snames[phi] = f'%r{phi}.s'
            self.names[phi] = f'%r{phi}'
        for phi in loop.phis:
            if phi in self.k.uniform:
                self.splat_to(f'%r{phi}', SCALAR[self.k.instrs[phi].type], f'%r{phi}.s')
        self.loop_phis[n] = (pre, slots)

    def op_subgroup_any(self, ins, r, reg):
        """The vector's vote: whether any of its lanes before the kernel's end is set."""
        M, name = self.masks, f'vector.reduce.or.v{self.W}i1'
        self.decls[f'declare i1 @llvm.{name}({M})'] = None
        self.body += [f'  {r}.m = and {M} {self.names[ins.args[0]]}, %active',
                      f'  {r}.s = call i1 @llvm.{name}({M} {r}.m)']
        self.splat_to(r, 'i1', f'{r}.s')

    def op_loop_phi(self, ins, r, reg):
        pass                             # defined at the loop header

    def op_loop_cond(self, ins, r, reg):
        n = ins.literal
        cond = ins.args[0]
        outer = self.names[ins.args[1]] if len(ins.args) > 1 else None
        M = self.masks
        if self.k.loops[n].uniform:
            # Every lane takes the same path: one scalar test, and inside the body the
            # lanes are those of the enclosing mask.
            self.body.append(f'  br i1 {self.snames[cond]}, label %L{n}.body, label %L{n}.exit')
            self.names[reg] = outer or self.const('bool', 1)
        else:
            self.body.append(f'  {r}.a = and {M} {self.names[cond]}, %active')
            if outer:
                self.body.append(f'  {r} = and {M} {r}.a, {outer}')
            else:
                self.names[reg] = f'{r}.a'
            name = f'vector.reduce.or.v{self.W}i1'
            self.decls[f'declare i1 @llvm.{name}({M})'] = None
            self.body.append(f'  {r}.any = call i1 @llvm.{name}({M} {self.names[reg]})')
            self.body.append(f'  br i1 {r}.any, label %L{n}.body, label %L{n}.exit')
        self.label(f'L{n}.body')

    def op_loop_end(self, ins, r, reg):
        n = ins.literal
        loop = self.k.loops[n]
        uniform = self.k.uniform
        new = []
        for j, (phi, update) in enumerate(zip(loop.phis, loop.updates)):
            if phi in uniform:
                new.append(self.snames[update])
            elif loop.uniform:
                new.append(self.names[update])
            else:                        # lanes that left the loop keep their values
                t = self.phi_type(phi)
                self.body.append(f'  {r}.u{j} = select {self.masks} {self.names[loop.cond]}, '
                                 f'{t} {self.names[update]}, {t} {self.names[phi]}')
                new.append(f'{r}.u{j}')
        self.body.append(f'  br label %L{n}.head')
        pre, slots = self.loop_phis.pop(n)
        for (line, phi), value in zip(slots, new):
            init = self.k.instrs[phi].args[0]
            names = self.snames if phi in uniform else self.names
            self.body[line] = (f'  {names[phi]} = phi {self.phi_type(phi)} '
                               f'[ {names[init]}, %{pre} ], [ {value}, %{self.block} ]')
        self.label(f'L{n}.exit')

    def op_loop_output(self, ins, r, reg):
        self.names[reg] = self.names[ins.args[0]]

    # ---- symbolic calls: while lanes are left, take the first one's target (a switch),
    # run that target for all lanes that select it, merge its outputs ----
    def op_call_start(self, ins, r, reg):
        n, t = ins.literal, ins.extra
        if t == 0:
            self.call_head(n, self.k.calls[n])
        self.label(f'C{n}.t{t}')
        if self.k.calls[n].codes == 1:
            return          # one code: rendered in place (see call_head), names as they are
        # The target's code becomes a function of its own: render it into a fresh body.
        self.outer.append((self.body, self.block, reg, self.allocas))
        self.body, self.block, self.allocas = [], f'C{n}.t{t}.entry', []

    def call_head(self, n, call):
        M, W, c = self.masks, self.W, f'%C{n}'
        I = f'i{W}'
        # (Lanes past the end may run a target: its memory accesses, loops and prints
        # leave them out on their own, as everywhere, and the stores after it are of whole
        # vectors anyway. Testing %active here would cost each vector its computation.)
        self.body.append(f'  {c}.rem0 = and {M} {self.names[call.active]}, '
                         f'{self.const("bool", 1)}')
        sel, cases = self.call_codes(n, call)
        if call.codes == 1:
            # One code: the lanes that run it are known at once, no loop picks them. Only
            # inside a loop, where lanes finish at different iterations, is it skipped for
            # vectors without such a lane: elsewhere most vectors have one, and the branch
            # cost 5% of a call of sin + exp.
            (value, t), = cases
            self.splat_to(f'{c}.keys', 'i32', value)
            self.body += [f'  {c}.same = icmp eq {self.vec("i32")} {sel}, {c}.keys',
                          f'  {c}.m = and {M} {c}.same, {c}.rem0']
            skip = bool(self.loop_phis)
            if skip:
                self.body += [f'  {c}.bits = bitcast {M} {c}.m to {I}',
                              f'  {c}.any = icmp ne {I} {c}.bits, 0',
                              f'  br i1 {c}.any, label %C{n}.t{t}, label {c}.merge']
            else:
                self.body.append(f'  br label %C{n}.t{t}')
            self.call_state[n] = (self.block if skip else None, None, [])
            return
        pre = self.block
        self.body.append(f'  br label {c}.head')
        self.label(f'C{n}.head')
        lines = [len(self.body)]
        self.body.append(None)                        # the lanes left (filled at `call`)
        for res in call.results:
            lines.append(len(self.body))
            self.body.append(None if res >= 0 else '')    # an output so far (if used)
        V = self.vec('i32')
        self.body += [f'  {c}.bits = bitcast {M} {c}.rem to {I}',
                      f'  {c}.any = icmp ne {I} {c}.bits, 0',
                      f'  br i1 {c}.any, label {c}.pick, label {c}.exit']
        self.label(f'C{n}.pick')
        if call.codes in ORDERED_CODES:
            # The smallest code left, rather than the first lane's: a vector then runs its
            # codes in increasing order, a sequence of switch targets that the branch
            # predictor learns where vectors hold the same few codes (10^6 lanes, random
            # targets: 4 series targets 1.06 -> 0.65 ms, 8 of them 3.2 -> 1.6 ms, i mod 5
            # of 8 targets 1.7 -> 1.1 ms, of 64 2.2 -> 1.8 ms). Among many codes the
            # sequence is a random subset anyway; the few orders of two or three codes the
            # predictor learns as they come (2 series targets 0.31 vs 0.24 ms, the callopt
            # benchmark's 3 materials 3.2 vs 3.1 ms), and the first lane is cheaper to find
            # (and to compile: 1-2 ms less there).
            umin = f'vector.reduce.umin.v{W}i32'
            self.decls[f'declare i32 @llvm.{umin}({V})'] = None
            none = self.const('uint32', 0xFFFFFFFF)
            self.body += [f'  {c}.left = select {M} {c}.rem, {V} {sel}, {V} {none}',
                          f'  {c}.key = call i32 @llvm.{umin}({V} {c}.left)']
        else:
            self.decls[f'declare {I} @llvm.cttz.{I}({I}, i1)'] = None
            self.body += [f'  {c}.lane = call {I} @llvm.cttz.{I}({I} {c}.bits, i1 true)',
                          f'  {c}.key = extractelement {V} {sel}, {I} {c}.lane']
        self.splat_to(f'{c}.keys', 'i32', f'{c}.key')
        self.body += [f'  {c}.same = icmp eq {V} {sel}, {c}.keys',
                      f'  {c}.m = and {M} {c}.same, {c}.rem',
                      f'  switch i32 {c}.key, label {c}.merge [ ' + ' '.join(
                          f'i32 {value}, label %C{n}.t{t}' for value, t in cases) + ' ]']
        self.call_state[n] = (pre, lines, [])

    def call_codes(self, n, call):
        """What the lanes' targets are told apart by, and the cases, (value, target) with
        the value as text: their keys, or, where merged targets share code, the number of
        that code (1 + its target), so that one pass runs a shared code for all the lanes
        of all its keys."""
        keys, codes = call.keys, call.code
        if len(set(codes)) == len(codes):
            return self.names[call.selector], [(scalar_constant('uint32', key), t)
                                               for key, t in zip(keys, codes)]
        c, V = f'%C{n}', self.vec('i32')
        sel = self.names[call.selector]
        if max(keys) < CODE_TABLE_KEYS:  # a table from key to code, read with one gather
            table = [0] * (max(keys) + 1)
            for key, t in zip(keys, codes):
                table[key] = t + 1
            values = ', '.join(f'i32 {v}' for v in table)
            self.globals.append(f'@C{n}.codes = private unnamed_addr constant '
                                f'[{len(table)} x i32] [{values}]')
            V64, P, M = self.vec('i64'), self.vec('ptr'), self.masks
            name = f'masked.gather.v{self.W}i32.v{self.W}p0'
            self.decls[f'declare {V} @llvm.{name}({P}, i32, {M}, {V})'] = None
            self.splat_to(f'{c}.top', 'i32', str(len(table) - 1))
            self.body += [f'  {c}.in = icmp ule {V} {sel}, {c}.top',
                          f'  {c}.gm = and {M} {c}.in, {c}.rem0',
                          # (sext: the lanes read are below the table size, and a
                          # 32-bit signed index lets x86 gather with one instruction)
                          f'  {c}.i = sext {V} {sel} to {V64}',
                          f'  {c}.pa = getelementptr i32, ptr @C{n}.codes, {V64} {c}.i',
                          f'  {c}.code = call {V} @llvm.{name}({P} {c}.pa, i32 4, {M} {c}.gm, '
                          f'{V} zeroinitializer)']
        else:                            # keys too far apart for a table: compare each
            prev = 'zeroinitializer'
            for j, (key, t) in enumerate(zip(keys, codes)):
                self.splat_to(f'{c}.kk{j}', 'i32', scalar_constant('uint32', key))
                self.body += [f'  {c}.ke{j} = icmp eq {V} {sel}, {c}.kk{j}',
                              f'  {c}.kc{j} = select {self.masks} {c}.ke{j}, {V} '
                              f'{self.const("uint32", t + 1)}, {V} {prev}']
                prev = f'{c}.kc{j}'
            self.body.append(f'  {c}.code = add {V} {prev}, zeroinitializer')
        return f'{c}.code', [(str(t + 1), t) for t in sorted(set(codes))]

    def op_call_arg(self, ins, r, reg):
        self.names[reg] = self.names[ins.args[0]]

    def op_call_mask(self, ins, r, reg):
        self.names[reg] = f'%C{ins.literal}.m'

    def op_call_end(self, ins, r, reg):
        n, t = ins.literal, ins.extra
        if self.k.calls[n].codes == 1:        # (rendered in place)
            merged = [self.names[o] if o >= 0 else None for o in self.k.calls[n].outputs[t]]
            self.call_state[n][2].append((self.block, merged))
            self.body.append(f'  br label %C{n}.merge')
            return
        outs = [(self.names[o], self.vec(SCALAR[self.k.instrs[o].type]))
                for o in self.k.calls[n].outputs[t] if o >= 0]
        body, allocas = self.body, self.allocas
        self.body, self.block, start, self.allocas = self.outer.pop()
        f, c = f'@C{n}.f{t}', f'%C{n}.c{t}'
        attrs = '#2' if self.inlined(reg - start) else '#1'
        rtype = '{ ' + ', '.join(T for _, T in outs) + ' }' if outs else 'void'
        ret = []
        for k, (v, T) in enumerate(outs):
            prev = f'%ret.{k - 1}' if k else 'poison'
            ret.append(f'  %ret.{k} = insertvalue {rtype} {prev}, {T} {v}, {k}')
        ret.append(f'  ret {rtype} %ret.{len(outs) - 1}' if outs else '  ret void')
        free = self.target_params(self.k.calls[n].inputs[t])
        params = ', '.join(f'{T} {v}' for v, T in free)
        tables = ''.join(f', ptr {table}' for table in self.tables)
        fixed = f'ptr noalias %params, {self.masks} %active, {self.masks} %C{n}.m{tables}'
        self.functions += [f'define internal fastcc {rtype} {f}({fixed}{", " if free else ""}'
                           f'{params}) {attrs} {{', f'C{n}.t{t}.entry:', *allocas,
                           *self.prologue,
                           *body, *ret, '}', '']
        call = (f'call fastcc {rtype} {f}(ptr %params, {self.masks} %active, '
                f'{self.masks} %C{n}.m{tables}{", " if free else ""}{params})')
        self.body.append(f'  {c} = {call}' if outs else f'  {call}')
        values = iter(range(len(outs)))
        merged = []
        for o in self.k.calls[n].outputs[t]:
            if o < 0:
                merged.append(None)
                continue
            k = next(values)
            self.body.append(f'  {c}.{k} = extractvalue {rtype} {c}, {k}')
            merged.append(f'{c}.{k}')
        self.call_state[n][2].append((self.block, merged))
        self.body.append(f'  br label %C{n}.merge')

    def inlined(self, size):
        """Whether a target of `size` instructions is inlined into the kernel (alwaysinline)
        rather than called (noinline). Targets stay subroutines: inlined, many large
        targets make one huge function that LLVM optimizes slowly (mostly InstCombine) and
        into slower code. Only targets too small to pay for a call are inlined, or all of
        them where inline_all() says so. (The code of a call that has only one code is
        rendered in place.)"""
        return self.inline_all or size <= INLINE_SIZE

    def target_params(self, inputs):
        """(name, type) of the parameters of a target's function: the names of the caller's
        values that it reads (`inputs`, found by assembly), less those that are constants or
        that every function's prologue defines (buffer pointers). A uniform value comes as
        a vector and as a scalar, a lane pointer with its sizes."""
        params = {}
        for reg in inputs:
            ins, name = self.k.instrs[reg], self.names[reg]
            if ins.op == 'ptr' or not name.startswith('%'):
                continue
            params.setdefault(name, self.vec(SCALAR[ins.type]))
            scalar = self.snames.get(reg, '')
            if scalar.startswith('%'):
                params.setdefault(scalar, SCALAR[ins.type])
            if ins.op == 'lane_ptr':
                params.setdefault(f'{name}.sz', self.vec('i64'))
        return list(params.items())

    def op_call(self, ins, r, reg):
        n, call, c, M = ins.literal, self.k.calls[ins.literal], f'%C{ins.literal}', self.masks
        pre, lines, preds = self.call_state.pop(n)
        self.label(f'C{n}.merge')
        types = {k: self.vec(SCALAR[self.k.instrs[res].type])
                 for k, res in enumerate(call.results) if res >= 0}
        if lines is None:                             # one code, no loop (see call_head)
            (block, outs), = preds
            for k, T in types.items():                # (phis first: a block starts with them)
                skipped = f', [ zeroinitializer, %{pre} ]' if pre else ''
                self.body.append(f'  {c}.v{k} = phi {T} [ {outs[k]}, %{block} ]{skipped}')
            for k, T in types.items():
                self.body.append(f'  {c}.o{k} = select {M} {c}.m, {T} {c}.v{k}, {T} '
                                 'zeroinitializer')
            return
        for k, T in types.items():                    # phis first: a block starts with them
            incoming = ', '.join(f'[ {outs[k]}, %{block} ]' for block, outs in preds)
            self.body.append(f'  {c}.v{k} = phi {T} {incoming}, [ zeroinitializer, {c}.pick ]')
        for k, T in types.items():
            self.body.append(f'  {c}.n{k} = select {M} {c}.m, {T} {c}.v{k}, {T} {c}.o{k}')
            self.body[lines[k + 1]] = (f'  {c}.o{k} = phi {T} [ zeroinitializer, %{pre} ], '
                                       f'[ {c}.n{k}, {c}.merge ]')
        self.body += [f'  {c}.done = xor {M} {c}.m, {self.const("bool", 1)}',
                      f'  {c}.rem1 = and {M} {c}.rem, {c}.done',
                      f'  br label {c}.head']
        self.body[lines[0]] = (f'  {c}.rem = phi {M} [ {c}.rem0, %{pre} ], '
                               f'[ {c}.rem1, {c}.merge ]')
        self.label(f'C{n}.exit')

    def op_call_result(self, ins, r, reg):
        self.names[reg] = f'%C{ins.extra}.o{ins.literal}'

    def op_print(self, ins, r, reg):
        """Hands each active lane's values (bits widened to i64) to the host's capture
        function with the print's sink, in lane order (the launch keeps blocks serial)."""
        self.decls['declare void @pbc_print_capture(ptr, ...)'] = None
        self.body.append(f'  {r}.m = and {self.masks} {self.names[ins.args[0]]}, %active')
        lines, args = [], [f'ptr %p{ins.slot}']
        for k, reg_k in enumerate(ins.args[1:]):
            s = SCALAR[self.k.instrs[reg_k].type]
            x = f'{r}.a{k}'
            lines.append(f'  {x} = extractelement {self.vec(s)} {self.names[reg_k]}, i32 {r}.j')
            if s == 'float':
                lines += [f'  {x}.b = bitcast float {x} to i32', f'  {x}.w = zext i32 {x}.b to i64']
            elif s == 'double':
                lines.append(f'  {x}.w = bitcast double {x} to i64')
            elif s != 'i64':
                lines.append(f'  {x}.w = zext {s} {x} to i64')
            args.append(f'i64 {x}.w' if s != 'i64' else f'i64 {x}')
        lines.append(f'  call void (ptr, ...) @pbc_print_capture({", ".join(args)})')
        self._per_lane(r, f'{r}.m', lines)


def render(kernel, width, scalef=False, packets=False):
    """LLVM IR text of `kernel` with `width` lanes per vector (scalef: the target scales
    by powers of two in one instruction, see SCALEF; packets: gathers of neighbouring
    elements become loads of 16 bytes per lane, see llvm_packets.py)."""
    if width > MAX_LANES:
        raise ValueError(f'pbc: {width} lanes per vector; buffers are padded for '
                         f'{MAX_LANES} at most')
    return _Renderer(kernel, width, scalef, packets).render()
