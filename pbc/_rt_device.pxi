# Device memory: the buffers of backends that keep arrays on a device (CUDA).
#
# A variable's buffer lives in exactly one place. F_DEVICE says it is memory of its
# backend's device, an address the host must never dereference; without it, it is host
# memory from mem_alloc. What the host makes (arrays from Python data, literals filled in,
# the results of the lane partition) starts in host memory and moves to the device when a
# kernel first reads it (to_device, from summarize); kernel outputs are allocated on the
# device. The host reads device memory by copying out (read_bytes: .numpy(), an element) or
# by moving the buffer back (to_host: for what runs on the host and reads it whole, the
# lane partition of evaluated calls; reductions and scans of device arrays are kernels,
# pbc/device_horizontal.py).
#
# The copies and allocations are the backend's (its `memory`: pbc/backend/protocol.py,
# DeviceMemory), found through memory_hook, which makes the backend on first use. Device
# memory is ordered like the device's work: a download waits for the kernels before it, and
# a block freed while a kernel still reads it is reused only by work queued after it.

cdef bint DEVICE_MEMORY[2]      # by backend code: pbc.llvm's arrays are host memory, ...
DEVICE_MEMORY[0] = False
DEVICE_MEMORY[1] = True         # ... pbc.cuda's device memory
# (backend code, make it if not made yet) -> its DeviceMemory, or None where not made and
# not to be made (pbc.evaluate, at import)
cdef object memory_hook = None

def set_memory_hook(fn):
    global memory_hook
    memory_hook = fn

cdef inline object memory_of(uint8_t be):
    """The DeviceMemory of device backend `be` (made on first use; it may raise why not)."""
    return memory_hook(be, True)

cdef inline bint on_device(uint32_t i) noexcept:
    return vars[i].flags & F_DEVICE

cdef void* buffer_alloc(uint8_t be, uint8_t vt, size_t n) except NULL:
    """An uninitialized buffer of n elements where backend `be` keeps arrays."""
    if not DEVICE_MEMORY[be]:
        return mem_alloc(vt, n)
    return <void*> <uintptr_t> memory_of(be).alloc(buffer_bytes(vt, n))

cdef void buffer_free(uint8_t be, void* p, uint8_t vt, size_t n) noexcept:
    """Gives back a buffer of buffer_alloc(be, vt, n)."""
    if DEVICE_MEMORY[be]:
        device_free(be, p, vt, n)
    else:
        mem_free(p, vt, n)

cdef void device_free(uint8_t be, void* p, uint8_t vt, size_t n) noexcept:
    # (frees come in the middle of graph updates: an error here is reported, not raised)
    m = memory_hook(be, False)
    if m is not None:           # (else the memory went with its backend, closed at exit)
        m.free(<uintptr_t> p, buffer_bytes(vt, n))

cdef uint32_t var_buffer(uint8_t vt, uint32_t n, uint8_t be) except 0:
    """A new variable of n uninitialized elements where backend `be` keeps arrays."""
    cdef uint32_t i = var_data(vt, n, buffer_alloc(be, vt, n), be)
    if DEVICE_MEMORY[be]:
        vars[i].flags |= F_DEVICE
    return i

cdef void place_for_kernel(uint32_t i) except *:
    """Moves the buffer of evaluated variable i to the device if its backend keeps arrays
    there and it is on the host: where a kernel of its backend reads it."""
    if DEVICE_MEMORY[vars[i].backend] and not on_device(i):
        to_device(i)

cdef void to_device(uint32_t i) except *:
    """Moves the host buffer of variable i (of a device backend) to the device."""
    cdef Var* v = &vars[i]
    cdef uint8_t be = v.backend, vt = v.vtype
    cdef size_t n = v.size, nb = buffer_bytes(vt, n)
    m = memory_of(be)
    address = m.alloc(nb)
    try:
        m.upload(address, <uintptr_t> v.data, n * TYPE_SIZE[vt])
    except BaseException:
        m.free(address, nb)
        raise
    v = &vars[i]
    if v.flags & F_OWNS:
        mem_free(v.data, vt, n)
    v.data = <void*> <uintptr_t> address
    v.flags |= F_DEVICE | F_OWNS

cdef void to_host(uint32_t i) except *:
    """Moves the device buffer of variable i to host memory (waits for its writers)."""
    if not on_device(i):
        return
    cdef Var* v = &vars[i]
    cdef uint8_t be = v.backend, vt = v.vtype
    cdef size_t n = v.size
    cdef void* p = mem_alloc(vt, n)
    try:
        memory_of(be).download(<uintptr_t> p, <uintptr_t> v.data, n * TYPE_SIZE[vt])
    except BaseException:
        mem_free(p, vt, n)
        raise
    v = &vars[i]
    device_free(be, v.data, vt, n)
    v.data = p
    v.flags &= ~F_DEVICE

cdef void read_bytes(uint32_t i, size_t offset, size_t nbytes, void* dst) except *:
    """Copies nbytes from offset `offset` of evaluated variable i's buffer to host `dst`
    (from the device, waiting for the kernels that write it, if it is there)."""
    if on_device(i):
        memory_of(vars[i].backend).download(<uintptr_t> dst,
                                            <uintptr_t> vars[i].data + offset, nbytes)
    else:
        memcpy(dst, <char*> vars[i].data + offset, nbytes)

cdef uint32_t copy_device_var(uint32_t i) except 0:
    """A new variable holding a copy of device-resident variable i (copied on the device)."""
    cdef uint8_t be = vars[i].backend, vt = vars[i].vtype
    cdef uint32_t n = vars[i].size, c = var_buffer(vt, n, be)
    memory_of(be).copy(<uintptr_t> vars[c].data, <uintptr_t> vars[i].data,
                       <size_t> n * TYPE_SIZE[vt])
    return c

def variable_location(uint32_t i):
    """'device' or 'host': where variable i's buffer is now ('none' if it has none)."""
    if vars[i].op != OP_DATA:
        return 'none'
    return 'device' if on_device(i) else 'host'

def buffer_location(ArrayBase a):
    """variable_location() of a's variable."""
    return variable_location(a._index)
