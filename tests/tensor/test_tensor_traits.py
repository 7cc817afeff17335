"""The pure plan arithmetic: expressions, problems, pairing, GEMM geometry."""

import pytest

from cumath.tensor._traits import (gemm_geometry, make_problem, merge_group, pairwise_steps, parse_expression)


def test_explicit_and_implicit():
    e = parse_expression("ij,jk->ik", [2, 2])
    assert e.inputs == (("i", "j"), ("j", "k"))
    assert e.output == ("i", "k")
    assert parse_expression("ij,jk", [2, 2]).output == ("i", "k")
    assert parse_expression("ba,ac", [2, 2]).output == ("b", "c")
    assert parse_expression(" i j , j k -> k i ", [2, 2]).output == ("k", "i")


def test_ellipsis_expanded_right_aligned():
    e = parse_expression("...ij,...jk->...ik", [4, 3])
    assert e.inputs[0] == ("...0", "...1", "i", "j")
    assert e.inputs[1] == ("...1", "j", "k")
    assert e.output == ("...0", "...1", "i", "k")
    assert parse_expression("...ij,...jk", [3, 3]).output == ("...0", "i", "k")


def test_diagonal_folds_strides():
    e = parse_expression("ii,i->i", [2, 1])
    p = make_problem(e, [(3, 3), (3,)], [(3, 1), (1,)])
    assert p.inputs[0] == ("i",) and p.strides[0] == (4,)


@pytest.mark.parametrize("expr, ndims, message", [
    ("ij,jk->ik", [2], "names 2 operand"),
    ("ij,jk->ii", [2, 2], "repeats the mode 'i'"),
    ("ij,jk->iz", [2, 2], "'z' of the expression"),
    ("i1,jk", [2, 2], "character '1'"),
    ("ij,jk->ik->i", [2, 2], "more than one '->'"),
    ("ijk,jk", [2, 2], "names 3 mode"),
    ("......,j", [2, 1], "more than one ellipsis"),
])
def test_expression_errors(expr, ndims, message):
    with pytest.raises(ValueError, match=message):
        parse_expression(expr, ndims)


def test_expression_type():
    with pytest.raises(TypeError, match="must be a str"):
        parse_expression(3, [1])


def test_extent_mismatch():
    e = parse_expression("ij,jk->ik", [2, 2])
    with pytest.raises(ValueError, match="mode 'j' has extent 4 in operand 1 but 3 in operand 0"):
        make_problem(e, [(2, 3), (4, 5)], [(3, 1), (5, 1)])


def test_pairing_by_cost():
    # (ab)c: 10*1000*10 + 10*10*1000; (bc)a: 1000*10*1000 ...: the cheap pairing goes first
    e = parse_expression("ij,jk,kl->il", [2, 2, 2])
    p = make_problem(e, [(10, 1000), (1000, 10), (10, 1000)], [(1000, 1), (10, 1), (1000, 1)])
    s1, s2 = pairwise_steps(p)
    assert (s1.x, s1.y) == (0, 1) and s1.z_modes == ("i", "k")
    assert s2.x == "T" and s2.y == 2 and s2.final
    p = make_problem(e, [(1000, 10), (10, 1000), (1000, 10)], [(10, 1), (1000, 1), (10, 1)])
    s1, _ = pairwise_steps(p)
    assert (s1.x, s1.y) == (1, 2)


def test_merge_group():
    ext = {"a": 2, "b": 3, "c": 1}
    assert merge_group(("a", "b"), {"a": 3, "b": 1}, ext) == (6, 1)
    assert merge_group(("a", "b"), {"a": 4, "b": 1}, ext) is None
    assert merge_group(("c",), {"c": 99}, ext) == (1, 1)
    assert merge_group(("a",), {"a": -1}, ext) is None


def test_gemm_geometry_transpose_free():
    ext = {"a": 4, "b": 5, "c": 6, "d": 7, "e": 2, "f": 3}
    # abcd,cdef->abef, all C-contiguous: no copies, Z written as is
    g = gemm_geometry(("a", "b", "c", "d"), (210, 42, 7, 1), ("c", "d", "e", "f"), (42, 6, 3, 1),
                      ("a", "b", "e", "f"), (30, 6, 3, 1), ext)
    assert g.x.trans == "N" and g.y.trans == "N" and g.z.trans == "N" and not g.swap
    assert (g.M, g.N, g.K, g.B) == (20, 6, 42, 1)
    # X transposed in memory (Fortran order): read with 'T', still no copy
    g = gemm_geometry(("a", "b", "c", "d"), (1, 4, 20, 120), ("c", "d", "e", "f"), (42, 6, 3, 1),
                      ("a", "b", "e", "f"), None, ext)
    assert g.x is not None and g.x.trans == "T"


def test_gemm_geometry_needs_copy():
    ext = {"i": 4, "j": 5, "k": 6}
    g = gemm_geometry(("i", "j"), (10, 2), ("j", "k"), (6, 1), ("i", "k"), None, ext)
    assert g.x is None and g.y is not None


def test_memory_limit_bytes():
    from cumath.tensor._options import memory_limit_bytes

    assert memory_limit_bytes("50%", 1000) == 500
    assert memory_limit_bytes("2 KiB", 0) == 2048
    assert memory_limit_bytes("1.5 GB", 0) == 1_500_000_000
    assert memory_limit_bytes(123, 0) == 123
    assert memory_limit_bytes(None, 1000) == 800
    with pytest.raises(ValueError, match="cannot be read"):
        memory_limit_bytes("lots", 1000)
