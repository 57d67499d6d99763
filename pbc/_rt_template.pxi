# Trace templates: a library function's trace (sin, exp, ...) recorded once per argument
# signature as the var_op calls it made, and replayed as those calls after. A function built
# from a few dozen Python-level ops then traces at the runtime's per-op cost rather than
# through the Python code that chooses its ops (about 8x: exp 28 -> 3.4 us). Replaying
# var_op itself keeps constant folding, simplification and value numbering exactly as the
# Python code would have had them.
#
# The function records on placeholders: fresh variables standing for its arguments that
# nothing outside the recording reads, so every merge value numbering or simplification
# makes while recording is an identity of the function's own ops (x * 1 = x, a repeated
# expression), true for any arguments, and holds on replay too. Literal arguments record as
# themselves: their values are part of the signature (x ** 2.5).
#
# Replay is faithful where the function's choice of ops depends only on what the signature
# holds: its arguments' classes, which ones have one lane, the values of those that are
# literals, and the JIT flags; and where it makes its nodes only with var_op (pure
# elementwise code: no memory, no side effects). Arguments that are empty, carry
# derivatives or are the same variable twice run the function as it is; so does a
# function whose trace reads a variable that is neither an argument, the result of one of
# its own ops, nor a one-lane literal (module-level arrays, counters, gathers from memory).

cdef struct TemplateStep:
    uint16_t op
    uint8_t rt, extra
    int32_t arg[3]      # slot (arguments first, then step results); NO_ARG; or a literal

cdef enum:
    MAX_TEMPLATES = 64  # per function (literal arguments are part of the signature)
    NO_ARG = -1
    FIRST_LITERAL = -2  # literal k is -2 - k
    INVALID_REF = -0x7fffffff

cdef class TraceTemplate:
    """The recorded ops of one call, and which slots (and types) it returns."""
    cdef vector[TemplateStep] steps
    cdef vector[uint8_t] lit_type
    cdef vector[uint64_t] lit_bits
    cdef vector[uint32_t] lit_var    # each literal's variable, kept (0 until first replayed)
    cdef vector[int32_t] out_slot
    cdef vector[uint8_t] out_type
    cdef int n_args
    cdef object out_kind        # None for one array, else tuple or list

    def __dealloc__(self):
        if vars != NULL:
            for i in self.lit_var:
                if i:
                    dec_ext(i)

    cdef uint32_t literal(self, int32_t k, uint8_t backend) except 0:
        """The variable of literal k. Replays keep one reference to it: making a literal
        is a value-numbering lookup per use, a sizable part of a replay."""
        cdef uint32_t i = self.lit_var[k]
        if i == 0:
            i = self.lit_var[k] = var_literal(self.lit_type[k], 1, self.lit_bits[k], backend)
        return i

cdef class TemplateRecorder:
    """Logs the outermost var_op calls while a TracedFunction records (`recorder`). Step
    results are kept alive until the end, so a variable number always names one slot."""
    cdef TraceTemplate t
    cdef unordered_map[uint32_t, int32_t] slot_of
    cdef vector[uint32_t] held
    cdef int depth
    cdef str why                # why the recording cannot be replayed (None: it can)

    cdef int32_t ref(self, uint32_t i):
        if i == 0:
            return NO_ARG
        it = self.slot_of.find(i)
        if it != self.slot_of.end():
            return deref(it).second
        if is_lit(i) and vars[i].size == 1:
            self.t.lit_type.push_back(vars[i].vtype)
            self.t.lit_bits.push_back(vars[i].literal)
            return FIRST_LITERAL - <int32_t> (self.t.lit_type.size() - 1)
        return INVALID_REF

    cdef uint32_t op(self, uint16_t op, uint8_t rt, uint32_t a, uint32_t b, uint32_t c,
                     uint8_t extra) except 0:
        cdef TemplateStep s
        cdef uint32_t r
        if self.depth or self.why is not None:   # made by simplification: not the caller's
            return make_op(op, rt, a, b, c, extra)
        s.op, s.rt, s.extra = op, rt, extra
        s.arg[0], s.arg[1], s.arg[2] = self.ref(a), self.ref(b), self.ref(c)
        self.depth += 1
        try:
            r = make_op(op, rt, a, b, c, extra)
        finally:
            self.depth -= 1
        if INVALID_REF in (s.arg[0], s.arg[1], s.arg[2]):
            self.why = f"'{OP_NAMES[op]}' reads a variable made outside the function"
        elif not (OP_FLAGS[op] & OPF_PURE):
            self.why = f"'{OP_NAMES[op]}' is not a pure elementwise op"
        else:
            if self.slot_of.find(r) == self.slot_of.end():
                self.slot_of[r] = self.t.n_args + <int32_t> self.t.steps.size()
            self.t.steps.push_back(s)
            inc_ext(r)
            self.held.push_back(r)
        return r

    cdef void release(self) noexcept:
        for i in self.held:
            dec_ext(i)
        self.held.clear()


cdef object replay(TraceTemplate t, tuple args):
    """The template's ops on `args` (what the recorded function returns for them)."""
    cdef vector[uint32_t] slot
    cdef uint32_t operand[3]
    cdef uint8_t backend = (<ArrayBase> args[0])._backend
    cdef int32_t ref
    cdef int k
    cdef size_t j, n = t.n_args
    for x in args:
        slot.push_back((<ArrayBase> x)._index)
    if t.lit_var.size() < t.lit_type.size():
        t.lit_var.resize(t.lit_type.size(), 0)
    try:
        for s in t.steps:
            for k in range(3):
                ref = s.arg[k]
                if ref >= 0:
                    operand[k] = slot[ref]
                elif ref == NO_ARG:
                    operand[k] = 0
                else:
                    operand[k] = t.literal(FIRST_LITERAL - ref, backend)
            slot.push_back(var_op(s.op, s.rt, operand[0], operand[1], operand[2], s.extra))
        outs = []
        for j in range(t.out_slot.size()):
            inc_ext(slot[t.out_slot[j]])
            outs.append(wrap(backend, t.out_type[j], slot[t.out_slot[j]]))
    finally:
        for j in range(n, slot.size()):
            dec_ext(slot[j])
    return outs[0] if t.out_kind is None else t.out_kind(outs)


def plain_float_arrays(tuple args):
    """Whether `args` are arrays of one float class (float32 or float64, not a subclass)
    without derivatives here: a call of pbc.sin and the like that needs no conversion,
    lifting or derivative rule."""
    cdef ArrayBase a
    if not args:
        return False
    t = type(args[0])
    for x in args:
        if type(x) is not t or not isinstance(x, ArrayBase):
            return False
        a = <ArrayBase> x
        if (a._vt != T_FLOAT32 and a._vt != T_FLOAT64) or ad_src(a) or \
                t is not CLASSES[a._backend * 16 + a._vt]:
            return False
    return True


cdef class TracedFunction:
    """A pure elementwise fn(flat arrays) recorded once per argument signature and replayed
    after (see the top of _rt_template.pxi). Calls it cannot replay run fn itself."""
    cdef readonly object fn
    cdef dict templates          # signature -> TraceTemplate, or None: not replayable
    cdef dict why                # signature -> why not

    def __init__(self, fn):
        self.fn = fn
        self.templates = {}
        self.why = {}

    def signatures(self):
        """{signature: None where calls with it replay, else why not} (for tests and
        debugging)."""
        return {k: self.why.get(k) for k in self.templates}

    def __call__(self, *args):
        key = self.signature(args)
        if key is None:
            return self.fn(*args)
        t = self.templates.get(key, self)
        if t is None:
            return self.fn(*args)
        if t is not self:
            return replay(<TraceTemplate> t, args)
        if recorder is not None or len(self.templates) >= MAX_TEMPLATES:
            return self.fn(*args)      # (inside another recording: ops of that function)
        return self.record(key, args)

    cdef object signature(self, tuple args):
        """The arguments' classes, which have one lane, the values of those that are
        literals, and the JIT flags; None where replay could be wrong."""
        cdef ArrayBase a
        cdef uint32_t i
        cdef list key = []
        cdef set seen = set()
        if not args:
            return None
        for x in args:
            if not isinstance(x, ArrayBase):
                return None
            a = <ArrayBase> x
            i = a._index
            # (Empty arrays: every op gives the same empty literal, a merge no other width
            # would make.)
            if (i == 0 or vars[i].size == 0 or a._ad or i in seen or
                    type(a) is not CLASSES[a._backend * 16 + a._vt]):
                return None
            seen.add(i)
            key.append(type(a))
            key.append(vars[i].size == 1)
            key.append(vars[i].literal if is_lit(i) else None)
        key.append(jit_flags)
        return tuple(key)

    cdef object record(self, object key, tuple args):
        """Records fn on placeholders of args, then replays the recording on args (or, if
        it cannot be replayed, runs fn on them)."""
        global recorder
        cdef TemplateRecorder rec = TemplateRecorder()
        cdef TraceTemplate t = TraceTemplate()
        cdef ArrayBase a
        cdef uint32_t i
        cdef int32_t k
        rec.t = t
        t.n_args = len(args)
        stand_ins = []
        for k in range(t.n_args):
            a = <ArrayBase> args[k]
            i = a._index
            if not is_lit(i):           # a bitcast to its own type: never folded or merged
                i = var_new(OP_BITCAST, a._vt, vars[i].size, i, 0, 0, 0, 0, a._vt, a._backend)
                stand_ins.append(wrap(a._backend, a._vt, i))
            else:
                stand_ins.append(a)
            rec.slot_of[i] = k
        recorder = rec
        failed = False
        try:
            out = self.fn(*stand_ins)
        except Exception:
            failed = True
        finally:
            recorder = None
            rec.release()
        if failed:                      # let the real call raise it, with its own values
            del stand_ins
            return self.fn(*args)
        kind = type(out)
        outs = list(out) if kind is tuple or kind is list else [out]
        for x in outs:
            if rec.why is not None:
                break
            if not isinstance(x, ArrayBase) or (<ArrayBase> x)._ad:
                rec.why = 'returns something other than arrays without derivatives'
                break
            a = <ArrayBase> x
            k = rec.ref(a._index)
            if k < 0 or type(a) is not CLASSES[a._backend * 16 + a._vt]:
                rec.why = 'returns an array that none of its ops made'
                break
            t.out_slot.push_back(k)
            t.out_type.push_back(a._vt)
        del out, outs, stand_ins
        t.out_kind = kind if kind is tuple or kind is list else None
        if rec.why is not None:
            self.templates[key] = None
            self.why[key] = rec.why
            return self.fn(*args)
        self.templates[key] = t
        return replay(t, args)
