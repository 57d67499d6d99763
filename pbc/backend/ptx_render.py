"""Kernel -> PTX text (for sm_70 and newer): one thread per lane, a grid-stride loop over
[0, size).

A pure function of the Kernel, driven by the table TEMPLATES ({op: {operand kind:
template}}), mirroring llvm_render.py op for op and bit for bit. Kinds: 'f' float, 'i'
signed, 'u' unsigned (falls back to 'i'), 'b' Bool. A template is PTX lines without the
trailing ';'. Lines that start with '.reg' declare temporaries and are hoisted to the top
of the entry; PTX identifiers cannot contain '.', so temporaries are '{r}_name' and labels
'{L}_name'. Registers are declared by size only (.b32/.b64, Bools .pred): bit-size
registers are valid operands of the typed (.f32, .s64, ...) instructions, so bitcasts and
same-size casts are free renames. Bools are one byte (0/1) in memory. Float32 arithmetic
gets .ftz only in kernels that flush subnormals (JitFlag.FlushDenormals; elsewhere they
are kept, as on the CPU), and float add/sub/mul an explicit .rn, which keeps
ptxas from contracting them into fma (LLVM does not contract either).

Entry ABI: kernel(.param .u64 params, .param .u64 size); params points to the array of
64-bit slots (buffer addresses and element counts) that the CPU backend also uses.
"""

import re

from ..ops import ARITY, CALL_OPS, COMPARISONS, LOOP_OPS, REDUCE_NAMES, TYPE_NAMES

# The oldest GPUs the text is for: Volta (sm_70) brought the warp-synchronous instructions
# (activemask, vote.sync) that subgroup ops use; a driver compiles sm_70 PTX for every newer
# GPU. PTX ISA 7.0 knows sm_70 to sm_80.
TARGET, ISA = 'sm_70', '7.0'
HEADER = f'.version {ISA}\n.target {TARGET}\n.address_size 64\n'

BITS = {'bool': 1, 'int32': 32, 'uint32': 32, 'int64': 64, 'uint64': 64,
        'float32': 32, 'float64': 64}
KIND = {'bool': 'b', 'int32': 'i', 'uint32': 'u', 'int64': 'i', 'uint64': 'u',
        'float32': 'f', 'float64': 'f'}
SUFFIX = {'bool': 'pred', 'int32': 's32', 'uint32': 'u32', 'int64': 's64', 'uint64': 'u64',
          'float32': 'f32', 'float64': 'f64'}
MEMORY = {'bool': 'u8', 'int32': 'b32', 'uint32': 'b32', 'int64': 'b64', 'uint64': 'b64',
          'float32': 'b32', 'float64': 'b64'}
BYTES = {'u8': 1, 'b32': 4, 'b64': 8}


# Register i is %p<i>, %r<i> or %rd<i> by its type (declared in bulk: .reg .b32 %r<n>),
# %v<i> (never declared, only a prefix for temporaries) for void results.
PREFIX = {'bool': '%p', 'int32': '%r', 'uint32': '%r', 'int64': '%rd', 'uint64': '%rd',
          'float32': '%r', 'float64': '%rd'}


# Integer division by zero gives 0 and INT_MIN / -1 wraps (as the LLVM backend): the
# divisor is replaced by 1 on those lanes and the result patched afterwards.
_GUARD_ZERO = ('.reg .pred {r}_z\n.reg .{x} {r}_d, {r}_q\n'
               'setp.eq.{u} {r}_z, {b}, 0\nselp.{x} {r}_d, 1, {b}, {r}_z\n')
_GUARD_SIGNED = ('.reg .pred {r}_z, {r}_m, {r}_zm\n.reg .{x} {r}_d, {r}_q\n'
                 'setp.eq.{s} {r}_z, {b}, 0\nsetp.eq.{s} {r}_m, {b}, -1\n'
                 'or.pred {r}_zm, {r}_z, {r}_m\nselp.{x} {r}_d, 1, {b}, {r}_zm\n')
# PTX shifts take a .u32 amount and clamp amounts >= the width themselves (giving 0, or
# the sign for shr.s): only 64-bit amounts >= 2^32 need the explicit clamp.
_SHIFT = ('.reg .{x} {r}_w\n.reg .b32 {r}_s\nmin.{u} {r}_w, {b}, {n}\n'
          'cvt.u32.{u} {r}_s, {r}_w\n{op} {r}, {a}, {r}_s')
# popc/clz give a .u32 count for both widths.
_COUNT = '.reg .b32 {r}_c\n{op}.{x} {r}_c, {a}\ncvt.{u}.u32 {r}, {r}_c'

# fmod, exact (PTX has no frem, and a - trunc(a/b)*b is not exact): with |a| = ma*2^ea
# and |b| = mb*2^eb (integer significands, ea >= eb), |a| mod |b| = ((ma*2^(ea-eb)) mod mb)
# * 2^eb. The integer remainder is taken in u64 steps of at most 64-sig bits (40 for f32,
# 11 for f64: at most 7 or 186 steps); the result is exactly representable, so the
# final int->float conversion and power-of-two scaling are exact. It takes a's sign (a
# zero result too). Specials as C fmod: |a| < |b| gives a; b = 0, a = inf or NaN operands
# give NaN via (a*b)/(a*b).
_FMOD = '''.reg .pred {r}_p0, {r}_p1, {r}_p2, {r}_sp, {r}_sm, {r}_skip, {r}_q
.reg .{x} {r}_ua, {r}_ub, {r}_t, {r}_pe, {r}_pn, {r}_ps, {r}_p, {r}_fm, {r}_v, {r}_sg, {r}_nn
.reg .b32 {r}_ea, {r}_eb, {r}_d, {r}_s, {r}_k, {r}_e, {r}_z
.reg .b64 {r}_ma, {r}_mb, {r}_m
and.{x} {r}_ua, {a}, {absmask}
and.{x} {r}_ub, {b}, {absmask}
setp.eq.{u} {r}_p0, {r}_ub, 0
setp.ge.{u} {r}_p1, {r}_ua, {inf}
setp.gt.{u} {r}_p2, {r}_ub, {inf}
or.pred {r}_sp, {r}_p0, {r}_p1
or.pred {r}_sp, {r}_sp, {r}_p2
setp.lt.{u} {r}_sm, {r}_ua, {r}_ub
or.pred {r}_skip, {r}_sp, {r}_sm
shr.{u} {r}_t, {r}_ua, {mbits}
cvt.u32.{u} {r}_ea, {r}_t
shr.{u} {r}_t, {r}_ub, {mbits}
cvt.u32.{u} {r}_eb, {r}_t
and.{x} {r}_t, {r}_ua, {mmask}
cvt.u64.{u} {r}_ma, {r}_t
and.{x} {r}_t, {r}_ub, {mmask}
cvt.u64.{u} {r}_mb, {r}_t
setp.ne.u32 {r}_q, {r}_ea, 0
@{r}_q or.b64 {r}_ma, {r}_ma, {implicit}
setp.ne.u32 {r}_q, {r}_eb, 0
@{r}_q or.b64 {r}_mb, {r}_mb, {implicit}
max.u32 {r}_ea, {r}_ea, 1
max.u32 {r}_eb, {r}_eb, 1
sub.u32 {r}_d, {r}_ea, {r}_eb
selp.b32 {r}_d, 0, {r}_d, {r}_skip
selp.b64 {r}_mb, 1, {r}_mb, {r}_skip
rem.u64 {r}_m, {r}_ma, {r}_mb
{L}_loop:
setp.eq.u32 {r}_q, {r}_d, 0
@{r}_q bra {L}_done
min.u32 {r}_s, {r}_d, {chunk}
shl.b64 {r}_m, {r}_m, {r}_s
rem.u64 {r}_m, {r}_m, {r}_mb
sub.u32 {r}_d, {r}_d, {r}_s
bra {L}_loop
{L}_done:
sub.s32 {r}_k, {r}_eb, {offset}
setp.ge.s32 {r}_q, {r}_k, {emin}
add.s32 {r}_e, {r}_k, {bias}
add.s32 {r}_z, {r}_k, {suboffset}
cvt.{u}.u32 {r}_pe, {r}_e
shl.{x} {r}_pn, {r}_pe, {mbits}
shl.{x} {r}_ps, 1, {r}_z
selp.{x} {r}_p, {r}_pn, {r}_ps, {r}_q
cvt.rn.{f}.u64 {r}_fm, {r}_m
mul.rn.{f} {r}_v, {r}_fm, {r}_p
and.{x} {r}_sg, {a}, {sign}
or.{x} {r}_v, {r}_v, {r}_sg
selp.{x} {r}_v, {a}, {r}_v, {r}_sm
mul.rn.{f} {r}_nn, {a}, {b}
div.rn.{f} {r}_nn, {r}_nn, {r}_nn
selp.{x} {r}, {r}_nn, {r}_v, {r}_sp'''


def _bitwise(op):
    t = f'{op}.{{x}} {{r}}, {{a}}, {{b}}'
    return {'i': t, 'f': t, 'b': f'{op}.pred {{r}}, {{a}}, {{b}}'}


_NAN_MINMAX = ('.reg .pred {r}_n\n.reg .{x} {r}_m, {r}_s\n{op}{ftz}.{f} {r}_m, {a}, {b}\n'
               'setp.nan.{f} {r}_n, {a}, {b}\nadd{ftz}.{f} {r}_s, {a}, {b}\n'
               'selp.{x} {r}, {r}_s, {r}_m, {r}_n')
TEMPLATES = {
    # Float sign manipulation by bit ops: exact on NaN payloads, as LLVM's fneg/fabs.
    'neg': {'f': 'xor.{x} {r}, {a}, {sign}', 'i': 'sub.{s} {r}, 0, {a}'},
    'not': {'i': 'not.{x} {r}, {a}', 'b': 'not.pred {r}, {a}'},
    # max(a, 0 - a): abs(INT_MIN) = INT_MIN, as llvm.abs(.., false).
    'abs': {'f': 'and.{x} {r}, {a}, {absmask}',
            'i': '.reg .{x} {r}_n\nsub.{s} {r}_n, 0, {a}\nmax.{s} {r}, {a}, {r}_n'},
    'sqrt': {'f': 'sqrt.rn{ftz}.{f} {r}, {a}'},
    'floor': {'f': 'cvt.rmi{ftz}.{f}.{f} {r}, {a}'},
    'ceil': {'f': 'cvt.rpi{ftz}.{f}.{f} {r}, {a}'},
    'round': {'f': 'cvt.rni{ftz}.{f}.{f} {r}, {a}'},    # half to even
    'trunc': {'f': 'cvt.rzi{ftz}.{f}.{f} {r}, {a}'},
    'popc': {'i': _COUNT.replace('{op}', 'popc')},
    'clz': {'i': _COUNT.replace('{op}', 'clz')},
    # ctz(x) = clz(bitreverse(x)); both give the width for 0, as cttz(.., false).
    'ctz': {'i': '.reg .{x} {r}_v\n.reg .b32 {r}_c\nbrev.{x} {r}_v, {a}\n'
                 'clz.{x} {r}_c, {r}_v\ncvt.{u}.u32 {r}, {r}_c'},
    'add': {'f': 'add.rn{ftz}.{f} {r}, {a}, {b}', 'i': 'add.{s} {r}, {a}, {b}'},
    'sub': {'f': 'sub.rn{ftz}.{f} {r}, {a}, {b}', 'i': 'sub.{s} {r}, {a}, {b}'},
    'mul': {'f': 'mul.rn{ftz}.{f} {r}, {a}, {b}', 'i': 'mul.lo.{s} {r}, {a}, {b}'},
    'div': {'f': 'div.rn{ftz}.{f} {r}, {a}, {b}',
            'u': _GUARD_ZERO + 'div.{u} {r}_q, {a}, {r}_d\nselp.{x} {r}, 0, {r}_q, {r}_z',
            'i': _GUARD_SIGNED + '.reg .{x} {r}_n\ndiv.{s} {r}_q, {a}, {r}_d\n'
                 'sub.{s} {r}_n, 0, {a}\nselp.{x} {r}_q, {r}_n, {r}_q, {r}_m\n'
                 'selp.{x} {r}, 0, {r}_q, {r}_z'},
    'mod': {'f': _FMOD,
            'u': _GUARD_ZERO + 'rem.{u} {r}_q, {a}, {r}_d\nselp.{x} {r}, 0, {r}_q, {r}_z',
            'i': _GUARD_SIGNED + 'rem.{s} {r}_q, {a}, {r}_d\nselp.{x} {r}, 0, {r}_q, {r}_zm'},
    # PTX min/max.f32/f64 return the non-NaN operand: LLVM's minnum/maxnum.
    'min': {'f': 'min{ftz}.{f} {r}, {a}, {b}', 'i': 'min.{s} {r}, {a}, {b}',
            'u': 'min.{u} {r}, {a}, {b}'},
    'max': {'f': 'max{ftz}.{f} {r}, {a}, {b}', 'i': 'max.{s} {r}, {a}, {b}',
            'u': 'max.{u} {r}, {a}, {b}'},
    # NaN-propagating forms (min.NaN has no f64 variant): a + b where either is NaN.
    'minimum': {'f': _NAN_MINMAX.replace('{op}', 'min')},
    'maximum': {'f': _NAN_MINMAX.replace('{op}', 'max')},
    'and': _bitwise('and'),
    'or': _bitwise('or'),
    'xor': _bitwise('xor'),
    'shl': {'i': _SHIFT.replace('{op}', 'shl.{x}')},
    'shr': {'u': _SHIFT.replace('{op}', 'shr.{u}'), 'i': _SHIFT.replace('{op}', 'shr.{s}')},
    'mulhi': {'i': 'mul.hi.{s} {r}, {a}, {b}', 'u': 'mul.hi.{u} {r}, {a}, {b}'},
    # a 2^h 2^(n - h), h = n >> 1, the powers of two built from their exponent bits (as the
    # LLVM renderer's two steps)
    'ldexp': {'f': '.reg .{s} {r}_n, {r}_h, {r}_k\n.reg .{x} {r}_hb, {r}_kb\n.reg .{f} {r}_m\n'
                   'cvt.rzi.{s}.{f} {r}_n, {b}\nshr.{s} {r}_h, {r}_n, 1\n'
                   'sub.{s} {r}_k, {r}_n, {r}_h\nadd.{s} {r}_h, {r}_h, {bias}\n'
                   'shl.{x} {r}_hb, {r}_h, {mbits}\nadd.{s} {r}_k, {r}_k, {bias}\n'
                   'shl.{x} {r}_kb, {r}_k, {mbits}\n'
                   'mul.rn{ftz}.{f} {r}_m, {a}, {r}_hb\nmul.rn{ftz}.{f} {r}, {r}_m, {r}_kb'},
    'fma': {'f': 'fma.rn{ftz}.{f} {r}, {a}, {b}, {c}', 'i': 'mad.lo.{s} {r}, {a}, {b}, {c}'},
    # the warp's vote among its threads that run this instruction
    'subgroup_any': {'b': '.reg .b32 {r}_m\nactivemask.b32 {r}_m\n'
                          'vote.sync.any.pred {r}, {a}, {r}_m'},
    # selp has no .pred form: Bool selects are (a & b) | (!a & c).
    'select': {'i': 'selp.{x} {r}, {b}, {c}, {a}', 'f': 'selp.{x} {r}, {b}, {c}, {a}',
               'b': '.reg .pred {r}_t, {r}_n, {r}_f\nand.pred {r}_t, {a}, {b}\n'
                    'not.pred {r}_n, {a}\nand.pred {r}_f, {r}_n, {c}\n'
                    'or.pred {r}, {r}_t, {r}_f'},
}
# Float 'ne' is unordered (true for NaN) and the others ordered, as LLVM's une/oeq/olt/...
# setp has no .pred form: Bools compare as 0/1 (LLVM's unsigned i1 compares).
for _op in COMPARISONS:
    TEMPLATES[_op] = {'f': f'setp.{"neu" if _op == "ne" else _op}{{ftz}}.{{f}} {{r}}, {{a}}, {{b}}',
                      'i': f'setp.{_op}.{{s}} {{r}}, {{a}}, {{b}}',
                      'u': f'setp.{_op}.{{u}} {{r}}, {{a}}, {{b}}',
                      'b': '.reg .b32 {r}_x, {r}_y\nselp.u32 {r}_x, 1, 0, {a}\n'
                           'selp.u32 {r}_y, 1, 0, {b}\n'
                           f'setp.{_op}.u32 {{r}}, {{r}}_x, {{r}}_y'}

# Ops rendered by methods below rather than by a template.
SPECIAL = ('literal', 'counter', 'load', 'load1', 'ptr', 'lane_ptr', 'store', 'cast', 'bitcast',
           'gather', 'scatter', 'print', *LOOP_OPS, *CALL_OPS)
assert set(TEMPLATES) | set(SPECIAL) == set(ARITY), 'PTX renderer misses ops'

# Native reductions (red.global: atomic, no result). Float add flushes subnormals on
# global memory (a hardware property); float min/max use a CAS loop; Bool and/or are
# plain byte stores of the one value that can change memory (idempotent, so atomic).
ATOMIC = {('add', 'f'): 'add.{f}', ('add', 'i'): 'add.{u}', ('add', 'u'): 'add.{u}',
          ('min', 'i'): 'min.{s}', ('min', 'u'): 'min.{u}',
          ('max', 'i'): 'max.{s}', ('max', 'u'): 'max.{u}',
          ('and', 'i'): 'and.{x}', ('and', 'u'): 'and.{x}',
          ('or', 'i'): 'or.{x}', ('or', 'u'): 'or.{x}'}
_CAS = '''.reg .pred {r}_same, {r}_retry
.reg .{x} {r}_old, {r}_new, {r}_prev
@!{mask} bra {L}_done
ld.global.{x} {r}_old, [{addr}]
{L}_loop:
{op}.{f} {r}_new, {r}_old, {v}
setp.eq.{x} {r}_same, {r}_new, {r}_old
@{r}_same bra {L}_done
atom.global.cas.{x} {r}_prev, [{addr}], {r}_old, {r}_new
setp.ne.{x} {r}_retry, {r}_prev, {r}_old
mov.{x} {r}_old, {r}_prev
@{r}_retry bra {L}_loop
{L}_done:'''


def constant(tname, bits):
    """PTX immediate of a literal's bit pattern (floats as exact 0f/0d hex)."""
    if tname == 'float32':
        return '0f%08X' % (bits & 0xFFFFFFFF)
    if tname == 'float64':
        return '0d%016X' % (bits & 0xFFFFFFFFFFFFFFFF)
    if tname == 'bool':
        return '1' if bits else '0'
    width = BITS[tname]
    return '0x%X' % (bits & ((1 << width) - 1))


def fields(tname):
    """Template fields that depend only on the operand type."""
    n = BITS[tname]
    f = dict(x=f'b{n}', s=f's{n}', u=f'u{n}', f=f'f{n}', t=SUFFIX[tname], n=n, ftz='',
             sign='0x%X' % (1 << (n - 1)), absmask='0x%X' % ((1 << (n - 1)) - 1))
    if KIND[tname] == 'f':
        mbits, ebits = (23, 8) if n == 32 else (52, 11)
        bias = (1 << (ebits - 1)) - 1
        f.update(mbits=mbits, mmask='0x%X' % ((1 << mbits) - 1), implicit='0x%X' % (1 << mbits),
                 inf='0x%X' % (((1 << ebits) - 1) << mbits), chunk=64 - (mbits + 1),
                 bias=bias, offset=bias + mbits, emin=1 - bias, suboffset=bias + mbits - 1)
    return f


FIELDS = {t: fields(t) for t in KIND}
RANGED = re.compile(r'^%(p|r|rd)(\d+)$')            # declared by the .reg %x<n> ranges


class _Renderer:
    def __init__(self, kernel, name):
        self.k = kernel
        self.name = name
        self.names = []        # register -> operand text
        self.decls = {}        # hoisted .reg declarations (ordered, deduplicated)
        self.entry = []        # before the lane loop
        self.body = []         # inside the lane loop
        self.offsets = set()   # byte sizes whose lane offsets the loop body needs
        self.globals = {}      # module-scope declarations (.funcs of calls)
        self.literals = {}     # register -> the line that sets it (literals)
        self.read = kernel.read_registers()
        self.outer = []        # (body, decls, sinks) that a target interrupts
        self.sinks = set()     # print sinks (%q registers) that the code rendered now uses
        self.targets = {}      # call number -> its rendered targets

    def ftz(self, tname):
        """'.ftz' for float32 arithmetic of a kernel that flushes subnormals (PTX has no
        flushing float64 arithmetic: float64 keeps them there, see docs/semantics.md)."""
        return '.ftz' if self.k.flush_denormals and tname == 'float32' else ''

    def decl(self, rtype, name):
        self.decls[f'.reg .{rtype} {name};'] = None

    def emit(self, text, f):
        for line in text.format(**f).split('\n'):
            if line.startswith('.reg'):
                self.decls[line + ';'] = None
            else:
                self.body.append(line if line.endswith(':') else f'  {line};')

    # float64 arithmetic that a kernel flushing subnormals flushes, operands and result
    # (PTX's .ftz is float32's only: x86's FTZ and DAZ, which the CPU backend and constant
    # folding run under, are emulated). Sign operations, moves and bitwise ops keep them.
    FLUSHED_FLOAT64 = frozenset({'add', 'sub', 'mul', 'div', 'fma', 'sqrt', 'min', 'max',
                                 'minimum', 'maximum', 'floor', 'ceil', 'round', 'trunc',
                                 'mod', 'ldexp', *COMPARISONS})

    def flushes_float64(self, ins, tname):
        return self.k.flush_denormals and tname == 'float64' and \
            ins.op in self.FLUSHED_FLOAT64

    def flush_lines(self, out, value, tmp):
        """Lines that set `out` to float64 `value`, or to a zero of its sign where it is
        subnormal (a NaN compares false: kept)."""
        self.decl('b64', f'{tmp}_a')
        self.decl('pred', f'{tmp}_p')
        return [f'  abs.f64 {tmp}_a, {value};',
                f'  setp.lt.f64 {tmp}_p, {tmp}_a, 0d0010000000000000;',
                f'  and.b64 {tmp}_a, {value}, 0x8000000000000000;',
                f'  selp.b64 {out}, {tmp}_a, {value}, {tmp}_p;']

    def flushed(self, value, tmp):
        """A register holding float64 operand `value` flushed (see flush_lines)."""
        self.decl('b64', tmp)
        self.body += self.flush_lines(tmp, value, tmp)
        return tmp

    def fields(self, ins, r, reg, tname):
        f = dict(FIELDS[tname], r=r, L=f'$L{reg}', ftz=self.ftz(tname))
        for key, arg in zip('abc', ins.args, strict=False):
            f[key] = self.names[arg]
        return f

    def render(self):
        k = self.k
        for slot, p in enumerate(k.params):
            self.decl('b64', f'%q{slot}')
            self.entry.append(f'  ld.global.u64 %q{slot}, [%params+{8 * slot}];')
            if p.kind != 'size':
                self.entry.append(f'  cvta.to.global.u64 %q{slot}, %q{slot};')
        for reg, ins in enumerate(k.instrs):
            r = PREFIX.get(ins.type, '%v') + str(reg)
            self.names.append(r)
            if ins.op in SPECIAL:
                getattr(self, 'op_' + ins.op)(ins, r, reg)
            else:
                kt = k.instrs[ins.args[0]].type if ins.op in COMPARISONS else ins.type
                kind = KIND.get(kt)
                table = TEMPLATES[ins.op]
                tmpl = table.get(kind) or (table.get('i') if kind == 'u' else None)
                if tmpl is None:
                    raise TypeError(f"PTX backend: no '{ins.op}' for {kt}")
                f = self.fields(ins, r, reg, kt)
                flush = self.flushes_float64(ins, kt)
                if flush:
                    for key, arg in zip('abc', ins.args, strict=False):
                        if k.instrs[arg].type == 'float64':
                            f[key] = self.flushed(f[key], f'{r}_z{key}')
                self.emit(tmpl, f)
                if flush and ins.type == 'float64':
                    self.body += self.flush_lines(r, r, f'{r}_zr')
        offsets = [f'  shl.b64 %off{b}, %idx, {b.bit_length() - 1};' for b in sorted(self.offsets)]
        for b in self.offsets:
            self.decl('b64', f'%off{b}')
        n = max(1, len(k.instrs))
        return '\n'.join([
            f'.visible .entry {self.name}(.param .u64 params, .param .u64 size)',
            '{',
            '.reg .pred %more;',
            '.reg .b32 %tx, %nx, %bx, %gx;',
            '.reg .b64 %params, %size, %idx, %stride, %t;',
            f'.reg .pred %p<{n}>;',
            f'.reg .b32 %r<{n}>;',
            f'.reg .b64 %rd<{n}>;',
            *self.decls,
            '  ld.param.u64 %params, [params];',
            '  cvta.to.global.u64 %params, %params;',
            '  ld.param.u64 %size, [size];',
            *self.entry,
            '  mov.u32 %tx, %tid.x;',
            '  mov.u32 %nx, %ntid.x;',
            '  mov.u32 %bx, %ctaid.x;',
            '  mov.u32 %gx, %nctaid.x;',
            '  mul.wide.u32 %idx, %bx, %nx;',
            '  cvt.u64.u32 %t, %tx;',
            '  add.s64 %idx, %idx, %t;',
            '  mul.wide.u32 %stride, %gx, %nx;',
            '  setp.ge.u64 %more, %idx, %size;',
            '  @%more bra $Lexit;',
            '$Lbody:',
            *offsets,
            *self.body,
            '  add.s64 %idx, %idx, %stride;',
            '  setp.lt.u64 %more, %idx, %size;',
            '  @%more bra $Lbody;',
            '$Lexit:',
            '  ret;',
            '}', ''])

    # ---- special ops ----
    def lane_address(self, r, slot, m):
        """Address of this lane's element of the buffer in `slot`."""
        size = BYTES[m]
        self.offsets.add(size)
        self.decl('b64', f'{r}_a')
        self.body.append(f'  add.s64 {r}_a, %q{slot}, %off{size};')
        return f'{r}_a'

    def op_literal(self, ins, r, reg):
        # Set once before the loop; ptxas rematerializes or folds them as it sees fit. One
        # that nothing reads (a merged call target's constant, read from a table instead)
        # is left out: its value would make kernels that differ only in it differ in text.
        if reg not in self.read:
            return
        op = 'mov.pred' if ins.type == 'bool' else f'mov.b{BITS[ins.type]}'
        self.literals[r] = f'  {op} {r}, {constant(ins.type, ins.literal)};'
        self.entry.append(self.literals[r])

    def op_counter(self, ins, r, reg):
        self.body.append(f'  cvt.u32.u64 {r}, %idx;')

    def _load(self, out, r, m, addr):
        if m == 'u8':
            self.decl('b32', f'{r}_m')
            out += [f'  ld.global.u8 {r}_m, [{addr}];', f'  setp.ne.u32 {r}, {r}_m, 0;']
        else:
            out.append(f'  ld.global.{m} {r}, [{addr}];')

    def op_load(self, ins, r, reg):
        m = MEMORY[ins.type]
        self._load(self.body, r, m, self.lane_address(r, ins.slot, m))

    def op_load1(self, ins, r, reg):
        self._load(self.entry, r, MEMORY[ins.type], f'%q{ins.slot}')

    def op_ptr(self, ins, r, reg):
        self.names[reg] = f'%q{ins.slot}'

    def op_lane_ptr(self, ins, r, reg):
        """This lane's buffer address (`r`) and size (`r`_sz): buffer 1 + slot."""
        slots = [self.k.instrs[p].slot for p in ins.args[1:]]
        slot = self.names[ins.args[0]]
        self.decl('b64', r)
        self.decl('b64', f'{r}_sz')
        self.decl('pred', f'{r}_k')
        b = self.body
        b += [f'  mov.b64 {r}, %q{slots[0]};', f'  mov.b64 {r}_sz, %q{slots[0] + 1};']
        for j, s in enumerate(slots[1:], 1):
            b += [f'  setp.eq.u32 {r}_k, {slot}, {j};', f'  @{r}_k mov.b64 {r}, %q{s};',
                  f'  @{r}_k mov.b64 {r}_sz, %q{s + 1};']

    def _memory_value(self, r, tname, value):
        """The register to store: Bools become the byte 0/1."""
        if tname != 'bool':
            return value
        self.decl('b32', f'{r}_z')
        self.body.append(f'  selp.u32 {r}_z, 1, 0, {value};')
        return f'{r}_z'

    def op_store(self, ins, r, reg):
        tname = self.k.instrs[ins.args[0]].type
        m = MEMORY[tname]
        addr = self.lane_address(r, ins.slot, m)
        value = self._memory_value(r, tname, self.names[ins.args[0]])
        cache = '.cs' if self.k.streaming else ''     # streamed once: evict first
        self.body.append(f'  st.global{cache}.{m} [{addr}], {value};')

    def op_cast(self, ins, r, reg):
        src, dst = TYPE_NAMES[ins.extra], ins.type
        a = self.names[ins.args[0]]
        ks, kd = KIND[src], KIND[dst]
        fd = FIELDS[dst]
        if src == dst or (ks in 'iu' and kd in 'iu' and BITS[src] == BITS[dst]):
            self.names[reg] = a          # same bits: int32 <-> uint32, int64 <-> uint64
            return
        b = self.body
        if kd == 'b':                    # != 0; NaN is true (LLVM's fcmp une)
            zero = constant(src, 0) if ks == 'f' else '0'
            cmp = 'neu' if ks == 'f' else 'ne'
            b.append(f'  setp.{cmp}.{SUFFIX[src]} {r}, {a}, {zero};')
        elif ks == 'b':
            one = constant(dst, 0x3F800000 if dst == 'float32' else 0x3FF0000000000000) \
                if kd == 'f' else '1'
            b.append(f'  selp.{fd["x"]} {r}, {one}, {constant(dst, 0)}, {a};')
        elif kd != 'f' and ks != 'f':    # truncate, or extend by the source's signedness
            if BITS[dst] < BITS[src]:
                b.append(f'  cvt.u32.u64 {r}, {a};')
            else:
                b.append(f'  cvt.{"s64.s32" if ks == "i" else "u64.u32"} {r}, {a};')
        elif kd == 'f' and ks != 'f':
            b.append(f'  cvt.rn.{SUFFIX[dst]}.{SUFFIX[src]} {r}, {a};')
        elif ks == 'f' and kd != 'f':
            # cvt.rzi saturates to the destination range, but NaN gives MIN (f64 source or
            # 64-bit destination) or 0: force 0 (LLVM's fpto[su]i.sat).
            self.decl('pred', f'{r}_nan')
            self.decl(fd['x'], f'{r}_c')
            b += [f'  cvt.rzi{self.ftz(src)}.{SUFFIX[dst]}.{SUFFIX[src]} {r}_c, {a};',
                  f'  setp.nan.{SUFFIX[src]} {r}_nan, {a}, {a};',
                  f'  selp.{fd["x"]} {r}, 0, {r}_c, {r}_nan;']
        elif BITS[dst] > BITS[src]:
            b.append(f'  cvt{self.ftz(src)}.f64.f32 {r}, {a};')
        else:
            b.append(f'  cvt.rn{self.ftz(dst)}.f32.f64 {r}, {a};')

    def op_bitcast(self, ins, r, reg):
        src = TYPE_NAMES[ins.extra]
        assert BITS[src] == BITS[ins.type], (src, ins.type)
        self.names[reg] = self.names[ins.args[0]]

    def _element(self, r, ptr_reg, index_reg, mask_reg, m, within=None):
        """(address, effective mask): the lane's element, masked off when out of bounds
        (and, given `within`, when the index is not below it)."""
        if self.k.instrs[ptr_reg].op == 'lane_ptr':
            base = self.names[ptr_reg]
            size = f'{base}_sz'
        else:
            slot = self.k.instrs[ptr_reg].slot
            base, size = f'%q{slot}', f'%q{slot + 1}'
        index = self.names[index_reg]
        b = self.body
        self.decl('b64', f'{r}_i')
        self.decl('b64', f'{r}_a')
        self.decl('pred', f'{r}_in')
        self.decl('pred', f'{r}_m')
        if BITS[self.k.instrs[index_reg].type] == 32:
            b.append(f'  cvt.u64.u32 {r}_i, {index};')
        else:
            b.append(f'  mov.b64 {r}_i, {index};')
        b.append(f'  setp.lt.u64 {r}_in, {r}_i, {size};')
        if within is not None:
            b.append(f'  setp.lt.and.u64 {r}_in, {r}_i, {within}, {r}_in;')
        b += [f'  and.pred {r}_m, {self.names[mask_reg]}, {r}_in;',
              f'  mad.lo.u64 {r}_a, {r}_i, {BYTES[m]}, {base};']
        return f'{r}_a', f'{r}_m'

    def op_gather(self, ins, r, reg):
        m = MEMORY[ins.type]
        addr, mask = self._element(r, *ins.args, m)
        if m == 'u8':
            self.decl('b32', f'{r}_g')
            self.body += [f'  mov.b32 {r}_g, 0;', f'  @{mask} ld.global.u8 {r}_g, [{addr}];',
                          f'  setp.ne.u32 {r}, {r}_g, 0;']
        else:
            self.body += [f'  mov.{m} {r}, 0;', f'  @{mask} ld.global.{m} {r}, [{addr}];']

    def op_scatter(self, ins, r, reg):
        ptr_reg, value_reg, index_reg, mask_reg = ins.args
        vt = self.k.instrs[value_reg].type
        m = MEMORY[vt]
        reduce = REDUCE_NAMES[ins.extra]
        # add_local: an atomic addition into the first copy: a GPU's threads are too many
        # for a copy each, and its atomics are fast (rules.Spread makes one copy on this
        # backend; other copies stay zero, and the copies' sum is the same). Lanes whose
        # index is past a copy (the literal's low half) are dropped, as on the CPU.
        within = ins.literal & 0xFFFFFFFF if reduce == 'add_local' else None
        addr, mask = self._element(r, ptr_reg, index_reg, mask_reg, m, within)
        value = self.names[value_reg]
        kind = KIND[vt]
        b = self.body
        if reduce == 'add_local':
            reduce = 'add'
        if reduce == 'none':
            value = self._memory_value(r, vt, value)
            b.append(f'  @{mask} st.global.{m} [{addr}], {value};')
        elif kind == 'b' and reduce in ('and', 'or'):
            self.decl('pred', f'{r}_w')
            if reduce == 'and':          # only a false value changes memory: write 0
                b += [f'  not.pred {r}_w, {value};', f'  and.pred {r}_w, {r}_w, {mask};',
                      f'  @{r}_w st.global.u8 [{addr}], 0;']
            else:                        # only a true value changes memory: write 1
                b += [f'  and.pred {r}_w, {value}, {mask};',
                      f'  @{r}_w st.global.u8 [{addr}], 1;']
        elif (kind == 'f' and reduce in ('min', 'max')) or reduce == 'mul':
            # no native atomic: a compare-and-swap loop ({op}.{f}: e.g. mul.rn.f32, mul.lo.s32)
            op = {'mul': 'mul.rn' if kind == 'f' else 'mul.lo'}.get(reduce, reduce)
            f = dict(FIELDS[vt], r=r, L=f'$L{reg}', mask=mask, addr=addr, v=value, op=op)
            if kind != 'f':
                f['f'] = f['s']
            self.emit(_CAS, f)
        elif (reduce, kind) in ATOMIC:
            op = ATOMIC[(reduce, kind)].format(**FIELDS[vt])
            b.append(f'  @{mask} red.global.{op} [{addr}], {value};')
        else:
            raise TypeError(f"PTX backend: no scatter reduction '{reduce}' for {vt}")

    # ---- symbolic loops: each thread runs its own lane's loop, so no masks are needed ----
    def move(self, tname, dst, src):
        self.body.append(f'  mov.{"pred" if tname == "bool" else "b%d" % BITS[tname]} '
                         f'{dst}, {src};')

    def op_loop_start(self, ins, r, reg):
        for phi in self.k.loops[ins.literal].phis:
            p = self.k.instrs[phi]
            self.move(p.type, PREFIX[p.type] + str(phi), self.names[p.args[0]])
        self.body.append(f'$L{ins.literal}_head:')

    def op_loop_phi(self, ins, r, reg):
        pass                               # set at loop_start and loop_end

    def op_loop_cond(self, ins, r, reg):
        a = [self.names[x] for x in ins.args]
        self.body.append(f'  and.pred {r}, {a[0]}, {a[1]};' if len(a) > 1
                         else f'  mov.pred {r}, {a[0]};')
        self.body.append(f'  @!{r} bra $L{ins.literal}_exit;')

    def op_loop_end(self, ins, r, reg):
        loop = self.k.loops[ins.literal]
        moves = []
        for j, (phi, update) in enumerate(zip(loop.phis, loop.updates)):
            t = self.k.instrs[phi].type
            tmp = f'{r}_t{j}'         # all updates are read before any phi changes
            self.decl('pred' if t == 'bool' else f'b{BITS[t]}', tmp)
            self.move(t, tmp, self.names[update])
            moves.append((t, PREFIX[t] + str(phi), tmp))
        for t, dst, tmp in moves:
            self.move(t, dst, tmp)
        self.body += [f'  bra $L{ins.literal}_head;', f'$L{ins.literal}_exit:']

    def op_loop_output(self, ins, r, reg):
        self.names[reg] = self.names[ins.args[0]]

    # ---- symbolic calls: each distinct target is a .func of its own; each thread calls its
    # lane's target through a function pointer (an indirect call listing the targets) ----
    def op_call_start(self, ins, r, reg):
        n, t = ins.literal, ins.extra
        call = self.k.calls[n]
        if t == 0:
            for res in call.results:
                if res >= 0:
                    typ = self.k.instrs[res].type
                    self.move(typ, PREFIX[typ] + str(res), '0')
            self.targets[n] = []
        p, q = f'%C{n}_p{t}', f'%C{n}_q{t}'
        self.decl('pred', p)
        self.decl('pred', q)
        self.body.append(f'  mov.pred {p}, 0;')
        for key, code in zip(call.keys, call.code):       # all keys that run this code
            if code == t:
                self.body += [f'  setp.eq.u32 {q}, {self.names[call.selector]}, '
                              f'{constant("uint32", key)};', f'  or.pred {p}, {p}, {q};']
        self.body.append(f'  and.pred {p}, {p}, {self.names[call.active]};')
        # The target's code goes into a function of its own: render it into a fresh body.
        self.outer.append((self.body, self.decls, self.sinks))
        self.body, self.decls, self.sinks = [], {}, set()

    def op_call_arg(self, ins, r, reg):
        self.names[reg] = self.names[ins.args[0]]

    def op_call_mask(self, ins, r, reg):
        self.names[reg] = f'%C{ins.literal}_p{ins.extra}'

    def op_call_end(self, ins, r, reg):
        n, t = ins.literal, ins.extra
        call = self.k.calls[n]
        outs = [self.names[o] for res, o in zip(call.results, call.outputs[t]) if res >= 0]
        body, decls, sinks = self.body, self.decls, self.sinks
        self.body, self.decls, self.sinks = self.outer.pop()
        self.targets[n].append((t, body, decls, outs, sinks))

    def op_call(self, ins, r, reg):
        n, call = ins.literal, self.k.calls[ins.literal]
        targets = self.targets.pop(n)
        # One signature for all targets (an indirect call needs it): every target takes all
        # the caller's values that any of them reads.
        args, literals = self.caller_values(sorted(set().union(
            *(call.inputs[t] for t, *_ in targets))))
        # (and the sinks of the prints in them, which are parameters of the kernel)
        sinks = sorted(set().union(*(target[-1] for target in targets)))
        args += [(sink, 'b64') for sink in sinks]
        self.sinks.update(sinks)
        results = [(res, self.k.instrs[res].type) for res in call.results if res >= 0]
        names = {}                                  # target -> its function's name
        for t, body, decls, outs, _ in targets:
            names[t] = f'{self.name}_C{n}_f{t}'
            self.globals[self.function(names[t], f'%C{n}_p{t}', args, literals + body,
                                       decls, results, outs)] = None
        self.call_site(n, args, results, names)

    def caller_values(self, inputs):
        """The parameters (register, type) that pass the caller's values `inputs` (found by
        assembly) to a target's function, and the lines that set the literals among them
        again inside it. A buffer pointer comes with its size."""
        params, literals = {}, {}
        for reg in inputs:
            ins, name = self.k.instrs[reg], self.names[reg]
            if name in self.literals:
                literals[name] = self.literals[name]
            elif ins.op == 'ptr':
                params[name] = params[f'%q{ins.slot + 1}'] = 'b64'
            elif ins.op == 'lane_ptr':
                params[name] = params[f'{name}_sz'] = 'b64'
            else:
                params[name] = 'pred' if ins.type == 'bool' else f'b{BITS[ins.type]}'
        return list(params.items()), list(literals.values())

    @staticmethod
    def param_type(kind):
        return 'b32' if kind == 'pred' else kind       # .param space has no predicates

    def function(self, name, mask, args, body, decls, results, outs):
        """The text of one target's .func: it loads the caller's values `args` from its
        parameters, runs `body` for its lane (`mask` is true) and returns `outs`."""
        ret = f'(.param .align 8 .b8 ret[{8 * len(results)}]) ' if results else ''
        params = ', '.join(f'.param .{self.param_type(k)} a{j}' for j, (_, k) in enumerate(args))
        size = len(self.k.instrs)
        own = [f'.reg .pred %p<{size}>;', f'.reg .b32 %r<{size}>;', f'.reg .b64 %rd<{size}>;',
               f'.reg .pred {mask};', '.reg .b32 %arg;',
               *(f'.reg .{k} {tok};' for tok, k in args if not RANGED.match(tok)), *decls]
        lines = [f'.func {ret}{name}({params})', '{', *dict.fromkeys(own),
                 f'  mov.pred {mask}, 1;']
        for j, (tok, k) in enumerate(args):
            if k == 'pred':
                lines += [f'  ld.param.b32 %arg, [a{j}];', f'  setp.ne.b32 {tok}, %arg, 0;']
            else:
                lines.append(f'  ld.param.{k} {tok}, [a{j}];')
        lines += body
        for k, ((_, typ), out) in enumerate(zip(results, outs)):
            if typ == 'bool':
                lines += [f'  selp.b32 %arg, 1, 0, {out};', f'  st.param.b32 [ret+{8 * k}], %arg;']
            else:
                lines.append(f'  st.param.b{BITS[typ]} [ret+{8 * k}], {out};')
        return '\n'.join(lines + ['  ret;', '}'])

    def call_site(self, n, args, results, names):
        """Each thread takes its lane's target's address (none: it calls nothing) and makes
        one indirect call, then reads the outputs into the call's result registers."""
        fp, c = f'%C{n}_fp', f'%C{n}_any'
        self.decl('b64', fp)
        self.decl('pred', c)
        self.decl('b32', '%arg')
        b = self.body
        b.append(f'  mov.u64 {fp}, 0;')
        b += [f'  @%C{n}_p{t} mov.u64 {fp}, {name};' for t, name in names.items()]
        b += [f'  setp.ne.u64 {c}, {fp}, 0;', f'  @!{c} bra $C{n}_done;', '  {']
        for j, (tok, k) in enumerate(args):
            b.append(f'  .param .{self.param_type(k)} C{n}_a{j};')
            if k == 'pred':
                b += [f'  selp.b32 %arg, 1, 0, {tok};', f'  st.param.b32 [C{n}_a{j}], %arg;']
            else:
                b.append(f'  st.param.{k} [C{n}_a{j}], {tok};')
        if results:
            b.append(f'  .param .align 8 .b8 C{n}_ret[{8 * len(results)}];')
        b.append(f'  $C{n}_list: .calltargets {", ".join(names.values())};')
        arglist = ', '.join(f'C{n}_a{j}' for j in range(len(args)))
        b.append(f'  call {f"(C{n}_ret), " if results else ""}{fp}, ({arglist}), $C{n}_list;')
        for k, (res, typ) in enumerate(results):
            dst = PREFIX[typ] + str(res)
            if typ == 'bool':
                b += [f'  ld.param.b32 %arg, [C{n}_ret+{8 * k}];', f'  setp.ne.b32 {dst}, %arg, 0;']
            else:
                b.append(f'  ld.param.b{BITS[typ]} {dst}, [C{n}_ret+{8 * k}];')
        b += ['  }', f'$C{n}_done:']

    def op_call_result(self, ins, r, reg):
        pass                               # loaded from the call's return value

    def op_print(self, ins, r, reg):
        """Captures each active lane's values as a row of the print's device sink, as the
        CPU's capture does (pbc/_print_capture.h): the sink holds a 64-bit count of the
        rows offered, the number of rows it keeps, then the rows, each value's bits widened
        to 64. Rows land in any order; the host sorts them by lane, the last value."""
        sink, n, b = f'%q{ins.slot}', len(ins.args) - 1, self.body
        self.sinks.add(sink)
        for name, typ in (('row', 'b64'), ('cap', 'b64'), ('at', 'b64'), ('w', 'b64'),
                          ('full', 'pred')):
            self.decl(typ, f'{r}_{name}')
        b += [f'  @!{self.names[ins.args[0]]} bra $L{reg}_skip;',
              f'  atom.global.add.u64 {r}_row, [{sink}], 1;',
              f'  ld.global.u64 {r}_cap, [{sink}+8];',
              f'  setp.ge.u64 {r}_full, {r}_row, {r}_cap;',
              f'  @{r}_full bra $L{reg}_skip;',
              f'  mad.lo.u64 {r}_at, {r}_row, {8 * n}, {sink};']
        for k, arg in enumerate(ins.args[1:]):
            t, v = self.k.instrs[arg].type, self.names[arg]
            if t == 'bool':
                b.append(f'  selp.u64 {r}_w, 1, 0, {v};')
            elif BITS[t] == 32:
                b.append(f'  cvt.u64.u32 {r}_w, {v};')
            else:
                b.append(f'  mov.b64 {r}_w, {v};')
            b.append(f'  st.global.u64 [{r}_at+{16 + 8 * k}], {r}_w;')
        b.append(f'$L{reg}_skip:')


def render_module(named_kernels):
    """One PTX module holding an entry point per (name, kernel) pair."""
    decls, entries = {}, []
    for name, kernel in named_kernels:
        r = _Renderer(kernel, name)
        entries.append(r.render())
        decls.update(r.globals)
    return '\n'.join([HEADER, *decls, '', *entries])


def render(kernel, name='kernel'):
    """PTX module text of `kernel` with one entry point `name`."""
    return render_module([(name, kernel)])
