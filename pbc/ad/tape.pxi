# The AD graph beside the trace (the paper's section 4). A float array computed from
# arrays that carry derivatives holds an AD node (ArrayBase._ad) beside its JIT variable:
# the node names its derivative rule, keeps the JIT variables the rule reads, and refers to
# the nodes of its differentiable operands. Rules (pbc/ad/rules.py) run at traversal time on
# those variables: they trace ordinary operations, so derivative code fuses into kernels
# with whatever else is pending, and reads evaluated intermediates from memory.
#
# Nodes are reference-counted by the arrays that hold them and by the nodes computed from
# them, and released at once. A node's serial number is its creation order, which is a
# topological order of the graph: traversals sort by it instead of recursing.

from libcpp.algorithm cimport sort
from libcpp.utility cimport pair

cdef extern from *:
    """
    struct ADNode {
        uint64_t serial;      /* creation order (0: a free slot) */
        uint32_t ref;
        uint32_t grad;        /* JIT variable of the gradient (0: none, which is zero) */
        uint32_t arg[3];      /* JIT variables the rule reads (the op's operands) */
        uint32_t src[3];      /* nodes of those operands that carry derivatives (0: none) */
        uint32_t value;       /* JIT variable of the result, for rules that read it */
        uint32_t size;
        uint16_t rule;        /* an op code, or a rule registered by name */
        uint8_t vtype, backend, flags;
    };
    """
    ctypedef struct ADNode:
        uint64_t serial
        uint32_t ref
        uint32_t grad
        uint32_t arg[3]
        uint32_t src[3]
        uint32_t value
        uint32_t size
        uint16_t rule
        uint8_t vtype
        uint8_t backend
        uint8_t flags

cdef enum ADNodeFlag:
    AD_PAYLOAD = 1      # ad_payload holds Python data of its rule (indices of a gather, ...)
    AD_MARK = 2         # visited by the traversal being planned
    AD_WIDE = 4         # ad_wide holds its operand nodes beyond the third (custom ops)
    AD_EVALUATE = 8     # its gradient is evaluated once complete (ad_mark_evaluate)

cdef vector[ADNode] ad_nodes = vector[ADNode](1)     # slot 0: "no node"
cdef vector[uint32_t] ad_free
cdef uint64_t ad_serial = 0
cdef uint32_t ad_live = 0            # nodes alive: with none, op results skip AD at once
cdef dict ad_payload = {}
cdef dict ad_wide = {}               # node -> list of its operand nodes beyond src[2]

# Rule names: the op table's names, then rules registered by name (functions such as sin,
# gathers, reductions). A rule that reads no operands (add, neg, ...) keeps none.
AD_RULES = list(OP_NAMES)
cdef vector[uint8_t] ad_keeps_args = vector[uint8_t](OP_COUNT, 1)   # (set by rules.py)

def ad_rule_code(str name, bint keeps_args=True):
    """The code of derivative rule `name` (registered on first use)."""
    if name not in AD_RULES:
        AD_RULES.append(name)
        ad_keeps_args.push_back(keeps_args)
    cdef int code = AD_RULES.index(name)
    ad_keeps_args[code] = keeps_args
    return code

# ---- scopes: the set of variables whose derivatives are tracked (the paper's Omega) -------
cdef class ADScope:
    """One level of suspend_grad/resume_grad/isolate_grad: with `complement`, every node
    except those in `nodes` is enabled, else only those (and what is computed from them).
    An isolation boundary (`isolate`) also stops backward traversals at the nodes created
    before it (`serial`), which are `postponed` until the scope ends. A scope that
    collects (`implicit` is a set) enables nothing and notes every node whose derivatives
    were asked for: the implicit inputs of a custom op's eval. A `local` scope, entered
    inside the body of a symbolic loop being recorded (at `recording` depth), lets that body
    record nodes of its own: derivative code that a traversal inside the body turns into
    code of the body (pbc/ad/loop.py)."""
    cdef public bint complement
    cdef public bint isolate
    cdef public bint local
    cdef public size_t recording
    cdef public uint64_t serial
    cdef public set nodes           # node ids; the scope holds a reference to each
    cdef public set postponed       # node ids; the scope holds a reference to each
    cdef public set implicit        # node ids (or None); the scope holds a reference to each

    def postpone(self, uint32_t n):
        if n not in self.postponed:
            self.postponed.add(n)
            ad_nodes[n].ref += 1

    def take_postponed(self):
        """The postponed nodes, each with a reference for the caller (ad_release)."""
        out, self.postponed = list(self.postponed), set()
        return out

    def __dealloc__(self):
        for group in (self.nodes, self.postponed, self.implicit):
            if group:
                for n in group:
                    ad_dec(n)

def ad_release(uint32_t n):
    ad_dec(n)

def ad_rule_of(uint32_t n):
    return ad_nodes[n].rule

def ad_serial_of(uint32_t n):
    return ad_nodes[n].serial

cdef list ad_scopes = []
cdef int ad_scope_depth = 0

cdef inline bint ad_scope_enables(ADScope s, uint32_t n) except -1:
    """Whether scope s enables node n (the set Omega: those in `nodes`, or all others)."""
    return s.complement != (n in s.nodes)

cdef bint ad_allows(uint32_t n) except -1:
    cdef ADScope s = <ADScope> ad_scopes[ad_scope_depth - 1]
    if s.implicit is not None:
        if n not in s.implicit:
            s.implicit.add(n)
            ad_nodes[n].ref += 1
        return False
    return ad_scope_enables(s, n)

cdef bint ad_in_collector() noexcept:
    """Whether the innermost scope collects (a symbolic loop's body being recorded without
    derivatives, pbc/ad/loop.py, or a custom op's eval)."""
    return ad_scope_depth != 0 and (<ADScope> ad_scopes[ad_scope_depth - 1]).implicit is not None

cdef inline bint ad_enables_nothing(ADScope s) noexcept:
    return not s.complement and not s.nodes

cdef inline uint32_t ad_src(object x) except? 0:
    """The node through which operand x carries derivatives here (0: none)."""
    cdef uint32_t n
    if not isinstance(x, ArrayBase):
        return 0
    n = (<ArrayBase> x)._ad
    if n == 0 or (ad_scope_depth and not ad_allows(n)):
        return 0
    return n

def ad_scope_push(bint complement, bint isolate, nodes, bint collect=False,
                  bint local=False):
    """Enters a scope enabling the nodes `nodes` (or, with `complement`, all others), or,
    with `collect`, none, noting those whose derivatives are asked for. A `local` scope
    records nodes inside the symbolic body being recorded now (see ADScope)."""
    global ad_scope_depth
    cdef ADScope s = ADScope()
    s.complement, s.isolate, s.nodes, s.postponed = complement, isolate, set(), set()
    s.implicit = set() if collect else None
    s.local, s.recording = local, scope_stack.size()
    s.serial = ad_serial + 1
    cdef uint32_t n
    for n in nodes:
        if n and n not in s.nodes:
            s.nodes.add(n)
            ad_nodes[n].ref += 1
    ad_scopes.append(s)
    ad_scope_depth += 1
    return s

def ad_scope_pop():
    global ad_scope_depth
    ad_scope_depth -= 1
    ad_scopes.pop()

def ad_scope_current():
    return ad_scopes[ad_scope_depth - 1] if ad_scope_depth else None

def ad_enables_nothing_here():
    """Whether the innermost scope enables no derivatives without collecting them
    (suspend_grad()): operations here record nothing and ask about nothing."""
    if ad_scope_depth == 0:
        return False
    cdef ADScope s = <ADScope> ad_scopes[ad_scope_depth - 1]
    return s.implicit is None and ad_enables_nothing(s)

def ad_collecting():
    """Whether the innermost scope collects (a custom op's eval)."""
    return ad_in_collector()

def ad_outer_sources(uint64_t since):
    """The nodes made before serial number `since` that nodes made since then have as
    operands (what the body of a symbolic loop recorded from then on read from outside)."""
    cdef set out = set()
    cdef uint32_t n, s
    cdef int k
    for n in range(1, ad_nodes.size()):
        if ad_nodes[n].serial < since:
            continue
        for k in range(3):
            s = ad_nodes[n].src[k]
            if s and ad_nodes[s].serial < since:
                out.add(s)
        for s in ad_sources_beyond(n):
            if s and ad_nodes[s].serial < since:
                out.add(s)
    return out

def ad_enabled_here(uint32_t n):
    """Whether node n carries derivatives in the innermost scope (a collecting scope notes
    it and says no)."""
    return n != 0 and (ad_scope_depth == 0 or ad_allows(n))

def ad_boundary():
    """The innermost isolation boundary (an ADScope), or None."""
    for s in reversed(ad_scopes):
        if (<ADScope> s).isolate:
            return s
    return None

# ---- nodes -------------------------------------------------------------------------------
cdef uint32_t ad_new(uint16_t rule, uint8_t vt, uint8_t backend, uint32_t size) except 0:
    global ad_serial, ad_live
    cdef uint32_t n
    cdef ADNode blank
    memset(&blank, 0, sizeof(ADNode))
    if ad_free.empty():
        ad_nodes.push_back(blank)
        n = ad_nodes.size() - 1
    else:
        n = ad_free.back()
        ad_free.pop_back()
        ad_nodes[n] = blank
    ad_serial += 1
    cdef ADNode* p = &ad_nodes[n]
    p.serial = ad_serial
    p.ref = 1
    p.rule = rule
    p.vtype = vt
    p.backend = backend
    p.size = size
    ad_live += 1
    if ad_scope_depth:
        # What is computed inside a scope that enables only some variables is enabled too.
        s = <ADScope> ad_scopes[ad_scope_depth - 1]
        if not s.complement:
            s.nodes.add(n)
            p.ref += 1
    return n

cdef void ad_dec(uint32_t n) except *:
    """Drops a reference to node n, releasing it and what only it kept alive."""
    global ad_live
    cdef vector[uint32_t] stack
    cdef ADNode* p
    cdef uint32_t held[6]
    cdef uint32_t s
    cdef int k
    stack.push_back(n)
    payloads = None
    while not stack.empty():
        n = stack.back()
        stack.pop_back()
        p = &ad_nodes[n]
        p.ref -= 1
        if p.ref:
            continue
        for k in range(3):
            if p.src[k]:
                stack.push_back(p.src[k])
            held[k] = p.arg[k]
        if p.flags & AD_WIDE:
            for s in ad_wide.pop(n):
                if s:
                    stack.push_back(s)
        held[3] = p.value
        held[4] = p.grad
        if p.flags & AD_PAYLOAD:
            if payloads is None:
                payloads = []
            payloads.append(ad_payload.pop(n))     # released after the loop
        memset(p, 0, sizeof(ADNode))
        ad_free.push_back(n)
        ad_live -= 1
        for k in range(5):
            if held[k]:
                dec_ext(held[k])

cdef int ad_check_recording() except -1:
    """Nodes are made inside a symbolic body only in a local scope of that body (a symbolic
    loop's derivative, pbc/ad/loop.py); a symbolic call's body does not make them yet."""
    cdef ADScope s
    if scope_stack.empty():
        return 0
    s = <ADScope> ad_scopes[ad_scope_depth - 1] if ad_scope_depth else None
    if s is None or not s.local or s.recording != scope_stack.size():
        raise NotImplementedError(
            'pbc: derivatives inside a symbolic call target, or inside the body of a legacy '
            'pbc.Loop, are not supported yet (a value that carries derivatives is used in '
            "the code being recorded). Run it in evaluated mode (mode='evaluated'; a "
            'pbc.Loop runs evaluated with JitFlag.SymbolicLoops off, or when its state '
            'carries derivatives), or use pbc.detach() or pbc.suspend_grad() for values '
            'whose derivatives are not needed')
    return 0

cdef uint32_t ad_record(uint16_t rule, ArrayBase result, uint32_t* src, uint32_t* arg,
                        bint keep_value) except 0:
    """Gives `result` a new node (it must hold none) with operand nodes `src` and operand
    variables `arg` (three each); takes new references to all of them."""
    ad_check_recording()
    cdef uint32_t n = ad_new(rule, result._vt, result._backend, vars[result._index].size)
    cdef ADNode* p = &ad_nodes[n]
    cdef int k
    cdef bint keep = ad_keeps_args[rule]
    for k in range(3):
        if src[k]:
            p.src[k] = src[k]
            ad_nodes[src[k]].ref += 1
        if keep and arg[k]:
            p.arg[k] = arg[k]
            inc_ext(arg[k])
    if keep_value:
        p.value = result._index
        inc_ext(result._index)
    result._ad = n
    return n

cdef void ad_op(uint16_t op, ArrayBase r, object a, object b, object c, uint32_t ia,
                uint32_t ib, uint32_t ic) except *:
    """The AD half of the one result funnel: op results whose operands carry derivatives
    get a node. Callers test `ad_live` first, so untracked code pays one compare."""
    if not is_float(r._vt):
        return                         # comparisons, casts to integers: no derivative
    cdef uint32_t src[3]
    cdef uint32_t arg[3]
    src[0] = ad_src(a); src[1] = ad_src(b); src[2] = ad_src(c)
    if src[0] == 0 and src[1] == 0 and src[2] == 0:
        return
    if op == OP_BITCAST:
        return                         # a view of the bits: cuts derivatives (as Dr.Jit)
    if not (OP_FLAGS[op] & OPF_DIFF):
        raise TypeError(f"pbc: '{OP_NAMES[op]}' has no derivative, and an operand carries "
                        'derivatives (detach it with pbc.detach() first)')
    arg[0] = ia; arg[1] = ib; arg[2] = ic
    ad_record(op, r, src, arg, False)

cdef inline void ad_share(ArrayBase dst, ArrayBase src) except *:
    """dst (which holds no node) stands for the same value as src, with its derivatives if
    the current scope tracks them (a copy made inside suspend_grad() is detached)."""
    cdef uint32_t n = ad_src(src)
    if n:
        dst._ad = n
        ad_nodes[n].ref += 1

cdef inline void ad_take(ArrayBase dst, ArrayBase src) except *:
    """dst is rebound to src's value: it takes src's node too."""
    cdef uint32_t old = dst._ad
    dst._ad = 0
    ad_share(dst, src)
    if old:
        ad_dec(old)

# ---- the Python side of AD (pbc/ad/) -----------------------------------------------------
def ad_tracked(args):
    """Whether any of `args` carries derivatives here (one compare when no node lives)."""
    if ad_live == 0:
        return False
    for a in args:
        if ad_src(a):
            return True
    return False

def ad_record_rule(int rule, ArrayBase result, tuple inputs, payload=None,
                   bint keep_value=True):
    """Gives `result` (a new array) a node of rule `rule` over up to three `inputs` (arrays,
    or None): those that carry derivatives become its operands; the rule reads the inputs'
    values and, with `keep_value`, the result's. Returns result."""
    if result._ad:
        raise RuntimeError('pbc: internal error: the result of a rule already has a node')
    cdef uint32_t src[3]
    cdef uint32_t arg[3]
    cdef int k
    if len(inputs) > 3:
        raise ValueError('pbc: a derivative rule reads at most three arrays')
    for k in range(3):
        x = inputs[k] if k < len(inputs) else None
        src[k] = ad_src(x)
        arg[k] = (<ArrayBase> x)._index if isinstance(x, ArrayBase) else 0
    if (src[0] == 0 and src[1] == 0 and src[2] == 0) or not is_float(result._vt):
        return result
    cdef uint32_t n = ad_record(rule, result, src, arg, keep_value)
    if payload is not None:
        ad_set_payload(n, payload)
    return result

cdef void ad_set_payload(uint32_t n, object payload) except *:
    """Python data node n's rule reads (released with the node)."""
    ad_payload[n] = payload
    ad_nodes[n].flags |= AD_PAYLOAD

def ad_enable(ArrayBase x):
    """Gives float array x a node of its own (an input of differentiation) if it has none."""
    cdef uint32_t src[3]
    cdef uint32_t arg[3]
    if x._ad or not is_float(x._vt) or x._index == 0:
        return
    if ad_scope_depth and ad_enables_nothing(<ADScope> ad_scopes[ad_scope_depth - 1]):
        return                         # ignored inside suspend_grad(), as in Dr.Jit
    memset(src, 0, sizeof(src))
    memset(arg, 0, sizeof(arg))
    ad_record(OP_DATA, x, src, arg, False)

def ad_disable(ArrayBase x):
    cdef uint32_t n = x._ad
    x._ad = 0
    if n:
        ad_dec(n)

def ad_mark_evaluate(ArrayBase x):
    """Has reverse traversals evaluate the gradient of x's node (if any) once it is
    complete: an evaluated loop's state after an iteration, so that each iteration's
    derivative is code of its own kernels' size, not a part of one expression that grows
    with every iteration traversed (docs/autodiff.md)."""
    if x._ad:
        ad_nodes[x._ad].flags |= AD_EVALUATE

def ad_evaluates(uint32_t n):
    """Whether reverse traversals evaluate node n's gradient once complete
    (ad_mark_evaluate)."""
    return bool(ad_nodes[n].flags & AD_EVALUATE)

def ad_node_of(ArrayBase x):
    """x's node, 0 if none or if the current scope disables it. Asking is not reading: a
    custom op's eval sees the scope around it, and the question makes no implicit input."""
    cdef uint32_t n = x._ad
    cdef int depth = ad_scope_depth
    while depth and (<ADScope> ad_scopes[depth - 1]).implicit is not None:
        depth -= 1
    if n == 0 or depth == 0:
        return n
    return n if ad_scope_enables(<ADScope> ad_scopes[depth - 1], n) else 0

def ad_index(ArrayBase x):
    """x's node whatever the scope (0: none)."""
    return x._ad

def ad_same(ArrayBase x):
    """A new array holding x's variable and x's node whatever the scope (a reference to
    each of its own)."""
    cdef ArrayBase r = ad_detached(x)
    if x._ad:
        r._ad = x._ad
        ad_nodes[x._ad].ref += 1
    return r

def ad_detached(ArrayBase x):
    """A new array of x's value without derivatives."""
    inc_ext(x._index)
    return wrap(x._backend, x._vt, x._index)

def ad_finite_literal(ArrayBase a):
    """Whether a is a literal of finite value (a partial derivative that needs no guard
    against 0 times infinity)."""
    cdef Var* v = &vars[a._index]
    if v.op != OP_LITERAL:
        return False
    if v.vtype == T_FLOAT32:
        return as_f32(v.literal) - as_f32(v.literal) == 0
    if v.vtype == T_FLOAT64:
        return as_f64(v.literal) - as_f64(v.literal) == 0
    return True

def ad_live_count():
    return ad_live

cdef object ad_array(uint32_t n, uint32_t var):
    inc_ext(var)
    return wrap(ad_nodes[n].backend, ad_nodes[n].vtype, var)

def ad_grad(uint32_t n):
    """Node n's gradient as an array (None: zero)."""
    return ad_array(n, ad_nodes[n].grad) if ad_nodes[n].grad else None

def ad_set_grad(uint32_t n, value):
    """Replaces node n's gradient (None: zero). `value` must already have its type."""
    cdef uint32_t old = ad_nodes[n].grad
    cdef ArrayBase g
    ad_nodes[n].grad = 0
    if value is not None:
        g = <ArrayBase> value
        if g._vt != ad_nodes[n].vtype:
            raise TypeError('pbc: internal error: a gradient of the wrong type')
        inc_ext(g._index)
        ad_nodes[n].grad = g._index
    if old:
        dec_ext(old)

def ad_size(uint32_t n):
    return ad_nodes[n].size

def ad_class(uint32_t n):
    """The array class of node n's values (and gradients)."""
    return CLASSES[ad_nodes[n].backend * 16 + ad_nodes[n].vtype]

def ad_sources(uint32_t n):
    """The nodes of node n's operands (0 where one carries no derivatives)."""
    out = [ad_nodes[n].src[k] for k in range(3)]
    if ad_nodes[n].flags & AD_WIDE:
        out += ad_wide[n]
    return out

def ad_drop_source(uint32_t n, int k):
    """Removes the edge from operand k of node n (ADFlag.ClearEdges; n may have been
    released by the removal of an earlier edge, and holds none then)."""
    cdef uint32_t s
    if k < 3:
        s = ad_nodes[n].src[k]
        ad_nodes[n].src[k] = 0
    elif not (ad_nodes[n].flags & AD_WIDE):
        return
    else:
        more = ad_wide[n]
        s = more[k - 3]
        more[k - 3] = 0
    if s:
        ad_dec(s)

def ad_sever_since(uint64_t since):
    """Cuts the nodes made from serial number `since` on out of the graph: drops their
    edges and their rules' Python data. For the nodes of an abandoned recording (a symbolic
    loop recorded again): arrays of it may outlive it, in reference cycles through a custom
    op's data, which no collector sees, and a traversal from a node older than it must not
    reach them (their values belong to a loop that no longer exists)."""
    cdef uint32_t n
    cdef int k
    payloads = []
    for n in range(1, ad_nodes.size()):
        if ad_nodes[n].ref == 0 or ad_nodes[n].serial < since:
            continue
        for k in range(3 + len(ad_sources_beyond(n))):
            ad_drop_source(n, k)
        if ad_nodes[n].flags & AD_PAYLOAD:
            ad_nodes[n].flags &= ~AD_PAYLOAD
            payloads.append(ad_payload.pop(n))
    del payloads        # (released last: releasing one may release nodes)

cdef list ad_sources_beyond(uint32_t n):
    return ad_wide[n] if ad_nodes[n].flags & AD_WIDE else []

def ad_custom(payload, list inputs, list outputs):
    """Links the float arrays `outputs` (new, without nodes) to the nodes `inputs` through a
    node of rule 'custom' whose payload is `payload` (the custom op): each output gets a node
    of rule 'custom_out' computed from it. Returns the outputs' nodes as (node, serial)
    pairs, references that do not keep them alive (ad_alive): the op may not own them."""
    ad_check_recording()
    cdef ArrayBase first = <ArrayBase> outputs[0]
    cdef uint32_t hub = ad_new(ad_rule_code('custom'), first._vt, first._backend, 1)
    cdef uint32_t s, n
    cdef int k = 0
    more = []
    for s in inputs:
        ad_nodes[s].ref += 1
        if k < 3:
            ad_nodes[hub].src[k] = s
        else:
            more.append(s)
        k += 1
    if more:
        ad_wide[hub] = more
        ad_nodes[hub].flags |= AD_WIDE
    ad_set_payload(hub, payload)
    cdef uint32_t src[3]
    cdef uint32_t arg[3]
    memset(src, 0, sizeof(src))
    memset(arg, 0, sizeof(arg))
    src[0] = hub
    weak = []
    for x in outputs:
        n = ad_record(ad_rule_code('custom_out'), <ArrayBase> x, src, arg, False)
        weak.append((n, ad_nodes[n].serial))
    ad_dec(hub)                      # now held by the outputs' nodes
    return weak

def ad_alive(uint32_t n, uint64_t serial):
    """Whether node n still is the node created with number `serial`."""
    return n < ad_nodes.size() and ad_nodes[n].serial == serial

cdef class ADNodeView:
    """What a derivative rule sees of a node: its rule's name, the values it reads, the
    result's value (if kept), its width and type, and the rule's Python data."""
    cdef readonly str rule
    cdef readonly tuple args
    cdef readonly object value
    cdef readonly uint32_t size
    cdef readonly object payload

def ad_view(uint32_t n):
    cdef ADNode* p = &ad_nodes[n]
    cdef ADNodeView v = ADNodeView()
    cdef int k
    v.rule = AD_RULES[p.rule]
    v.size = p.size
    v.payload = ad_payload.get(n) if p.flags & AD_PAYLOAD else None
    args = []
    for k in range(3):
        if p.arg[k]:
            inc_ext(p.arg[k])
            args.append(wrap(vars[p.arg[k]].backend, vars[p.arg[k]].vtype, p.arg[k]))
        else:
            args.append(None)
    v.args = tuple(args)
    v.value = ad_array(n, p.value) if p.value else None
    return v

cdef bint ad_reads_marked(uint32_t n) except -1:
    """Whether an operand of node n is marked."""
    cdef int k
    cdef uint32_t s
    for k in range(3):
        s = ad_nodes[n].src[k]
        if s and (ad_nodes[s].flags & AD_MARK):
            return True
    for s in ad_sources_beyond(n):
        if s and (ad_nodes[s].flags & AD_MARK):
            return True
    return False

def ad_serial_now():
    """The serial number of the next node (nodes made from now on have it or larger)."""
    return ad_serial + 1

def ad_order(list starts, bint toward_inputs, uint64_t since=0):
    """The nodes to traverse from nodes `starts`, in creation order: those they are computed
    from (`toward_inputs`), or those computed from them. No recursion: a walk over the
    operands with an explicit stack, or one pass over the live nodes by serial number.
    Toward the inputs, nodes made before serial number `since` end the walk (a traversal
    inside a symbolic loop's body reaches them, but not what they are computed from)."""
    cdef vector[uint32_t] stack, found
    cdef vector[pair[uint64_t, uint32_t]] later
    cdef uint32_t n, k, s
    cdef size_t i
    cdef uint64_t first = 0xFFFFFFFFFFFFFFFFULL
    for x in starts:
        n = x
        if n and not (ad_nodes[n].flags & AD_MARK):
            ad_nodes[n].flags |= AD_MARK
            stack.push_back(n)
            first = min(first, ad_nodes[n].serial)
    if toward_inputs:
        while not stack.empty():
            n = stack.back()
            stack.pop_back()
            found.push_back(n)
            if ad_nodes[n].serial < since:
                continue
            for k in range(3):
                s = ad_nodes[n].src[k]
                if s and not (ad_nodes[s].flags & AD_MARK):
                    ad_nodes[s].flags |= AD_MARK
                    stack.push_back(s)
            for s in ad_sources_beyond(n):
                if s and not (ad_nodes[s].flags & AD_MARK):
                    ad_nodes[s].flags |= AD_MARK
                    stack.push_back(s)
    else:
        found = stack
        for n in range(1, ad_nodes.size()):
            if ad_nodes[n].serial > first and not (ad_nodes[n].flags & AD_MARK):
                later.push_back(pair[uint64_t, uint32_t](ad_nodes[n].serial, n))
        sort(later.begin(), later.end())
        for i in range(later.size()):
            n = later[i].second
            if ad_reads_marked(n):
                ad_nodes[n].flags |= AD_MARK
                found.push_back(n)
    later.clear()
    for n in found:
        ad_nodes[n].flags &= ~AD_MARK
        later.push_back(pair[uint64_t, uint32_t](ad_nodes[n].serial, n))
    sort(later.begin(), later.end())
    return [later[i].second for i in range(later.size())]
