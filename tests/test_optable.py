"""The op table is the one description of every op: the runtime, the kernels and the
backends agree with it."""

import os

from pbc import _runtime, optable
from pbc.kernel import Instr


def test_runtime_is_built_from_the_table():
    assert tuple(_runtime.OP_NAMES) == optable.TRACE_OPS
    path = os.path.join(os.path.dirname(optable.__file__), '_rt_optable.pxi')
    with open(path) as f:
        assert f.read() == optable.cython_source()


def test_codes_are_positions_and_names_are_unique():
    assert [op.code for op in optable.OPS] == list(range(len(optable.OPS)))
    assert len(set(optable.OPS)) == len(optable.OPS)


def test_an_op_compares_as_its_name_and_carries_its_description():
    add = optable.BY_NAME['add']
    assert add == 'add' and hash(add) == hash('add') and {'add': 1}[add] == 1
    assert add.arity == 2 and add.has(optable.COMMUTATIVE) and add.has(optable.DIFF)
    assert not optable.BY_NAME['sub'].has(optable.COMMUTATIVE)
    assert Instr(add, 'float32', (0, 1)).op.has(optable.PURE)


def test_flags_are_consistent():
    for op in optable.OPS:
        if op.has(optable.SIDE_EFFECT) or op.has(optable.LOOP) or op.has(optable.CALL):
            assert not op.has(optable.PURE), op
        if op.has(optable.LOOP) or op.has(optable.CALL):
            assert op.has(optable.UNIQUE), op
        if op.has(optable.DIFF):
            assert op.kinds & optable.F, op

