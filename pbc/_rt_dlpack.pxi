# DLPack capsules of device memory, made and taken (the DLPack 0.x struct, "dltensor",
# which every consumer accepts). Host arrays go through NumPy's capsules (pbc/array.py);
# NumPy cannot describe device memory, so the CUDA arrays' capsules are made here.

from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_IsValid, PyCapsule_SetName

cdef extern from *:
    """
    #include <Python.h>
    #include <stdint.h>
    typedef struct { int32_t device_type; int32_t device_id; } PbcDLDevice;
    typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } PbcDLDataType;
    typedef struct {
        void *data; PbcDLDevice device; int32_t ndim; PbcDLDataType dtype;
        int64_t *shape; int64_t *strides; uint64_t byte_offset;
    } PbcDLTensor;
    typedef struct PbcDLManagedTensor {
        PbcDLTensor dl_tensor; void *manager_ctx;
        void (*deleter)(struct PbcDLManagedTensor *);
    } PbcDLManagedTensor;

    /* An exported tensor with its shape and strides in the same allocation. */
    typedef struct { PbcDLManagedTensor m; int64_t shape[1]; int64_t strides[1]; } PbcDLExport;

    /* The consumer calls it when done, from any thread: it holds no GIL then. */
    static void pbc_dl_deleter(PbcDLManagedTensor *self) {
        PyGILState_STATE gil = PyGILState_Ensure();
        Py_XDECREF((PyObject *) self->manager_ctx);
        PyMem_RawFree(self);
        PyGILState_Release(gil);
    }

    /* A capsule no consumer took still owns its tensor. */
    static void pbc_dl_capsule_destructor(PyObject *capsule) {
        if (!PyCapsule_IsValid(capsule, "dltensor"))
            return;
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        PbcDLManagedTensor *m = (PbcDLManagedTensor *) PyCapsule_GetPointer(capsule, "dltensor");
        if (m && m->deleter)
            m->deleter(m);
        PyErr_Restore(type, value, traceback);
    }

    /* A capsule of the n elements at `data`, keeping `owner` alive until its consumer is
     * done with them. */
    static PyObject *pbc_dl_export(PyObject *owner, void *data, int64_t n, uint8_t code,
                                   uint8_t bits, int32_t device_type, int32_t device_id) {
        PbcDLExport *e = (PbcDLExport *) PyMem_RawMalloc(sizeof(PbcDLExport));
        if (!e)
            return PyErr_NoMemory();
        e->shape[0] = n;
        e->strides[0] = 1;
        PbcDLTensor *t = &e->m.dl_tensor;
        t->data = data;
        t->device.device_type = device_type;
        t->device.device_id = device_id;
        t->ndim = 1;
        t->dtype.code = code;
        t->dtype.bits = bits;
        t->dtype.lanes = 1;
        t->shape = e->shape;
        t->strides = e->strides;
        t->byte_offset = 0;
        Py_INCREF(owner);
        e->m.manager_ctx = owner;
        e->m.deleter = pbc_dl_deleter;
        PyObject *capsule = PyCapsule_New(&e->m, "dltensor", pbc_dl_capsule_destructor);
        if (!capsule)
            pbc_dl_deleter(&e->m);
        return capsule;
    }
    """
    ctypedef struct PbcDLDevice:
        int32_t device_type
        int32_t device_id
    ctypedef struct PbcDLDataType:
        uint8_t code
        uint8_t bits
        uint16_t lanes
    ctypedef struct PbcDLTensor:
        void* data
        PbcDLDevice device
        int32_t ndim
        PbcDLDataType dtype
        int64_t* shape
        int64_t* strides
        uint64_t byte_offset
    ctypedef struct PbcDLManagedTensor:
        PbcDLTensor dl_tensor
        void (*deleter)(PbcDLManagedTensor*) noexcept
    object pbc_dl_export(object owner, void* data, int64_t n, uint8_t code, uint8_t bits,
                         int32_t device_type, int32_t device_id)

# DLPack's type codes of pbc's element types: (code, bits) by type
cdef dict DL_TYPES = {T_BOOL: (6, 8), T_INT32: (0, 32), T_UINT32: (1, 32), T_INT64: (0, 64),
                      T_UINT64: (1, 64), T_FLOAT32: (2, 32), T_FLOAT64: (2, 64)}

def dlpack_export(object owner, uintptr_t address, int64_t n, int vt, int device_type,
                  int device_id):
    """A "dltensor" capsule of the n elements of type vt at `address` on the device, which
    keeps `owner` alive while its consumer uses them."""
    code, bits = DL_TYPES[vt]
    return pbc_dl_export(owner, <void*> address, n, code, bits, device_type, device_id)

cdef class DLPackTensor:
    """A tensor taken from a DLPack capsule (which is marked used): its fields, and the
    producer's deleter, called by release() or when this is dropped."""
    cdef PbcDLManagedTensor* m
    cdef readonly uintptr_t address       # of its first element
    cdef readonly int device_type, device_id
    cdef readonly tuple shape
    cdef readonly object strides          # in elements; None: C-contiguous
    cdef readonly object type             # pbc's element type name, or None if it has none

    def release(self):
        self.give_back()

    def __dealloc__(self):
        self.give_back()

    cdef void give_back(self) noexcept:
        if self.m != NULL and self.m.deleter != NULL:
            self.m.deleter(self.m)
        self.m = NULL

def take_dlpack(capsule):
    """The DLPackTensor of a "dltensor" capsule, which it takes from its producer."""
    if not PyCapsule_IsValid(capsule, "dltensor"):
        raise TypeError('pbc: expected an unused DLPack capsule ("dltensor")')
    cdef PbcDLManagedTensor* m = <PbcDLManagedTensor*> PyCapsule_GetPointer(capsule, "dltensor")
    PyCapsule_SetName(capsule, "used_dltensor")
    cdef PbcDLTensor* t = &m.dl_tensor
    cdef DLPackTensor out = DLPackTensor.__new__(DLPackTensor)
    out.m = m
    out.address = <uintptr_t> t.data + t.byte_offset
    out.device_type, out.device_id = t.device.device_type, t.device.device_id
    out.shape = tuple([t.shape[k] for k in range(t.ndim)])
    out.strides = None if t.strides == NULL else tuple([t.strides[k] for k in range(t.ndim)])
    out.type = None
    if t.dtype.lanes == 1:
        for vt, (code, bits) in DL_TYPES.items():
            if code == t.dtype.code and bits == t.dtype.bits:
                out.type = TYPE_NAMES[vt]
    return out

def device_address(ArrayBase a):
    """The address of a's buffer on its backend's device, where it is moved if it is on the
    host (evaluates; literals get a buffer)."""
    make_opaque(a)
    place_for_kernel(a._index)
    return <uintptr_t> vars[a._index].data

def device_copy_in(uint8_t be, str type_name, uintptr_t address, uint32_t n):
    """A new array of device backend `be` and element type `type_name` holding a copy of
    the n elements at device address `address` (the copy is queued on the device)."""
    cdef uint8_t vt = TYPE_NAMES.index(type_name)
    cdef uint32_t i = var_buffer(vt, n, be)
    try:
        memory_of(be).copy(<uintptr_t> vars[i].data, address, <size_t> n * TYPE_SIZE[vt])
    except BaseException:
        dec_ext(i)
        raise
    return wrap(be, vt, i)
