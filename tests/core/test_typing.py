"""Every public callable of cumath carries annotations (parameters and return), and no private parameter shows in
a public signature. The type checker's view of them is tested in tests/packaging/test_types.py."""

import dataclasses
import enum
import importlib
import inspect

import numpy as np
import pytest

PUBLIC = ["cumath", "cumath.fft", "cumath.linalg", "cumath.linalg.advanced", "cumath.linalg.advanced.helpers",
          "cumath.sparse", "cumath.sparse.advanced", "cumath.sparse.ust", "cumath.tensor", "cumath.device",
          "cumath.device.random", "cumath.distributed", "cumath.distributed.fft", "cumath.distributed.linalg",
          "cumath.distributed.linalg.advanced", "cumath.distributed.distribution", "cumath.memory", "cumath.config",
          "cumath.errors"]
# methods that make a class usable (context manager, callable objects) count as public
DUNDERS = ("__init__", "__call__", "__enter__", "__exit__")


def _unannotated(fn, where: str) -> list[str]:
    fn = inspect.unwrap(fn)
    code = getattr(fn, "__code__", None)
    if code is None or code.co_filename == "<string>" or fn.__name__ == "<lambda>":
        return []  # generated (dataclass __init__, typed from its fields); lambda properties: see below
    sig = inspect.signature(fn)
    out = []
    for p in sig.parameters.values():
        if p.name in ("self", "cls"):
            continue
        if p.annotation is inspect.Parameter.empty:
            out.append(f"{where}: parameter {p.name!r} has no annotation")
        if p.name.startswith("_"):
            out.append(f"{where}: private parameter {p.name!r} in a public signature")
    if sig.return_annotation is inspect.Signature.empty:
        out.append(f"{where}: no return annotation")
    return out


def _public_objects():
    """(where, object) of each name in the public modules' __all__ (modules left out), each object once."""
    seen = set()
    for modname in PUBLIC:
        mod = importlib.import_module(modname)
        for name in mod.__all__:
            obj = getattr(mod, name)
            if not inspect.ismodule(obj) and id(obj) not in seen:
                seen.add(id(obj))
                yield f"{modname}.{name}", obj


def _callables():
    for where, obj in _public_objects():
        if inspect.isclass(obj):
            if issubclass(obj, (enum.Enum, BaseException)) or getattr(obj, "_is_protocol", False):
                continue
            for klass in obj.__mro__:
                if klass is object or not klass.__module__.startswith("cumath"):
                    continue
                for attr, value in vars(klass).items():
                    if attr.startswith("_") and attr not in DUNDERS:
                        continue
                    if isinstance(value, (staticmethod, classmethod)):
                        value = value.__func__
                    if isinstance(value, property):
                        value = value.fget
                    if not inspect.isfunction(value) and inspect.isfunction(getattr(value, "__wrapped__", None)):
                        value = value.__wrapped__  # a compiled method descriptor (fast_execute): its method
                    if inspect.isfunction(value):
                        yield value, f"{where}.{attr}"
        elif inspect.isfunction(obj):
            yield obj, where
        elif callable(obj):  # an object called like a function (device stubs): its class's __call__
            yield type(obj).__call__, f"{where} (a {type(obj).__name__})"


def test_every_public_callable_is_annotated():
    problems = [p for fn, where in _callables() for p in _unannotated(fn, where)]
    assert not problems, f"{len(problems)} public signatures lack annotations:\n" + "\n".join(problems)


def _public_properties():
    """(property, where) of every public property of the classes of the public modules (and their bases)."""
    seen = set()
    for _, obj in _public_objects():
        for klass in obj.__mro__ if inspect.isclass(obj) else ():
            if klass is object or not klass.__module__.startswith("cumath") or klass in seen:
                continue
            seen.add(klass)
            for attr, value in vars(klass).items():
                if isinstance(value, property) and not attr.startswith("_"):
                    yield value, f"{klass.__module__}.{klass.__qualname__}.{attr}"


def test_every_public_property_is_typed_and_documented():
    """A ``property(lambda self: ...)`` types as Any to type checkers and has no docstring unless given one:
    every public property is a ``def`` with a return annotation and a docstring (Sphinx lists only documented
    members)."""
    props = list(_public_properties())
    problems = []
    for prop, where in props:
        fget = prop.fget
        if fget.__name__ == "<lambda>":
            problems.append(f"{where}: a lambda (types as Any); write it as a typed @property")
            continue
        if inspect.signature(fget).return_annotation is inspect.Signature.empty:
            problems.append(f"{where}: no return annotation")
        if not (prop.__doc__ or "").strip():
            problems.append(f"{where}: no docstring")
    assert not problems, f"{len(problems)} public properties:\n" + "\n".join(problems)
    names = {where.rsplit(".", 2)[-2] + "." + where.rsplit(".", 1)[-1] for _, where in props}
    for expected in ("FFT.storage_size", "Matmul.a_size", "Solver.a_shape", "Layout.cosize", "Tensor.extents",
                     "TensorFormat.num_levels", "DirectSolver.plan_config", "DirectSolverFactorizationInfo.lu_nnz"):
        assert expected in names, expected


def test_property_docstrings_render_as_descriptions():
    """Napoleon (docs/conf.py) reads a property docstring whose first line has "text: more" as "type: description"
    and renders the text before the colon as the property's type: no public property's first line does that."""
    pytest.importorskip("sphinx")
    from sphinx.ext.napoleon import Config
    from sphinx.ext.napoleon.docstring import GoogleDocstring

    config = Config(napoleon_use_ivar=True)
    misread = []
    for prop, where in _public_properties():
        doc = inspect.cleandoc(prop.__doc__ or "")
        if ":type:" in str(GoogleDocstring(doc, config, what="property", name=where.rsplit(".", 1)[-1])):
            misread.append(f"{where}: {doc.splitlines()[0]}")
    assert not misread, "first lines read as 'type: description':\n" + "\n".join(misread)


def test_typed_properties_stay_read_only():
    """The typed properties stay read-only, as the lambda properties they replace were."""
    import cumath.device
    import cumath.sparse.ust

    for cls, attr in ((cumath.device.Matmul, "size"), (cumath.device.FFT, "storage_size"),
                      (cumath.device.Solver, "a_shape"), (cumath.sparse.ust.Tensor, "extents")):
        assert getattr(cls, attr).fset is None, f"{cls.__name__}.{attr}"
    t = cumath.sparse.ust.Tensor.from_package(np.arange(1.0, 7.0).reshape(2, 3))
    with pytest.raises(AttributeError, match="extents"):
        t.extents = (3, 2)
    assert t.extents == (2, 3)


def test_the_audit_sees_the_surface():
    names = {where for _, where in _callables()}
    for expected in ("cumath.fft.fft", "cumath.fft.FFT.__init__", "cumath.fft.FFT.execute", "cumath.fft.FFT.free",
                     "cumath.linalg.Matmul.plan", "cumath.sparse.advanced.direct_solver", "cumath.tensor.binary_contraction",
                     "cumath.device.Matmul.__init__", "cumath.distributed.fft.fft", "cumath.sparse.ust.Tensor.to"):
        assert any(n == expected or n.startswith(expected + ".") or n.startswith(expected + " ") for n in names), \
            expected


@pytest.mark.parametrize("cls_name", ["FFTOptions", "MatmulOptions", "DirectSolverOptions", "ContractionOptions"])
def test_option_dataclasses_annotate_every_field(cls_name):
    import cumath

    owners = {"FFTOptions": cumath.fft, "MatmulOptions": cumath.linalg, "DirectSolverOptions": cumath.linalg,
              "ContractionOptions": cumath.tensor}
    cls = getattr(owners[cls_name], cls_name)
    assert dataclasses.is_dataclass(cls)
    for field in dataclasses.fields(cls):
        assert field.type not in (None, inspect.Parameter.empty), f"{cls_name}.{field.name}"
