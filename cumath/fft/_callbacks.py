"""FFT callbacks as the plans see them: the forms a caller may pass as ``prolog=`` / ``epilog=`` (LTO-IR
bytes, :class:`DeviceCallable`, or a dict of its fields), their identity in plan-cache keys, and their
resolution into what cuFFT needs when a plan is made.

How cuFFT links a callback (cuFFT 12 / CUDA 13 LTO callbacks, ``cufftXtSetJITCallback``):
- the callback is LTO-IR defining a device function; ``cufftXtSetJITCallback`` takes its *plain* name, while
  cuFFT's generated kernels declare it as a C++ function, so the IR must define the Itanium-mangled name
  (:func:`mangled_name`): load ``_Z<len><name>PvyS_S_``, store ``_Z<len><name>Pvy<T>S_S_`` with T the element
  type (``6float2`` cufftComplex, ``7double2`` cufftDoubleComplex, ``f`` cufftReal, ``d`` cufftDoubleReal);
- cuFFT 12.0 keeps the *pointer* to the plain name, so the name's bytes live as long as the plan (as do
  the IR buffer and the ``caller_info`` array; see :class:`AttachedCallback`).

Callbacks made by :func:`cumath.fft.compile_prolog` / ``compile_epilog`` are named
``cumath_<kind>_<element>_<16 hex digits of the compile key>``: unique per compiled content, and carrying
what the plan checks (prolog or epilog, element type). The returned bytes (:class:`LTOIR`) carry the same
facts as attributes; plain ``bytes`` of such IR are recognised by their SHA-256 (numba-cuda's LTO-IR does not
show names in clear), through an index kept next to the cached IR.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import ctypes
import dataclasses
import hashlib
import re

from .._core.disk_cache import ContentStore
from .._core.dtypes import COMPLEX_OF

if TYPE_CHECKING:
    from typing import Any

__all__ = ["DeviceCallable", "LTOIR", "TensorLayout", "AttachedCallback", "callback_key", "resolve_callbacks",
           "mangled_name", "plain_name", "expected_element", "ELEMENT_DTYPES", "register_ltoir", "describe_ltoir"]

ELEMENT_DTYPES = ("float32", "float64", "complex64", "complex128")
SHORT = {"float32": "f32", "float64": "f64", "complex64": "c64", "complex128": "c128"}
_LONG = {v: k for k, v in SHORT.items()}
_MANGLED_ELEMENT = {"complex64": "6float2", "complex128": "7double2", "float32": "f", "float64": "d"}
_NAME_RE = re.compile(rb"cumath_(prolog|epilog)_(f32|f64|c64|c128)_([0-9a-f]{16})")

# cufftXtCallbackType values (cufftXt.h)
_CALLBACK_TYPES = {
    ("prolog", "complex64"): 0, ("prolog", "complex128"): 1, ("prolog", "float32"): 2, ("prolog", "float64"): 3,
    ("epilog", "complex64"): 4, ("epilog", "complex128"): 5, ("epilog", "float32"): 6, ("epilog", "float64"): 7,
}


class TensorLayout(tuple):
    """``(shape, strides)`` of an array a callback indexes with its ``offset`` (strides in elements)."""

    __slots__ = ()

    def __new__(cls, shape, strides):
        return super().__new__(cls, (tuple(shape), tuple(strides)))

    @property
    def shape(self) -> tuple:
        return self[0]

    @property
    def strides(self) -> tuple:
        return self[1]

    def __repr__(self):
        return f"TensorLayout(shape={self[0]}, strides={self[1]})"


def plain_name(kind: str, element_dtype: str, key: str) -> str:
    """The plain symbol name of a compiled callback (what cufftXtSetJITCallback is given)."""
    return f"cumath_{kind}_{SHORT[element_dtype]}_{key[:16]}"


def mangled_name(plain: str, kind: str, element_dtype: str) -> str:
    """The Itanium C++ name cuFFT's kernels call for a callback named ``plain``: load callbacks are
    ``T f(void*, unsigned long long, void*, void*)``, store callbacks
    ``void f(void*, unsigned long long, T, void*, void*)``."""
    head = f"_Z{len(plain)}{plain}Pvy"
    return head + ("S_S_" if kind == "prolog" else _MANGLED_ELEMENT[element_dtype] + "S_S_")


class LTOIR(bytes):
    """LTO-IR of a callback compiled by cumath: ``bytes``, plus what the plan needs to attach it.

    Attributes: ``kind`` ('prolog' or 'epilog'), ``element_dtype``, ``user_info_dtype`` (a description),
    ``symbol`` (the plain name), ``key`` (the content-addressed compile key).
    """

    def __new__(cls, data, *, kind, element_dtype, user_info_dtype, symbol, key):
        self = super().__new__(cls, data)
        self.kind = kind
        self.element_dtype = element_dtype
        self.user_info_dtype = user_info_dtype
        self.symbol = symbol
        self.key = key
        return self

    def __reduce__(self):
        return (_rebuild_ltoir, (bytes(self), self.kind, self.element_dtype, self.user_info_dtype, self.symbol,
                                 self.key))

    def __repr__(self):
        return (f"<LTOIR {self.kind} for {self.element_dtype} elements, {len(self)} bytes, symbol "
                f"{self.symbol}>")


def _rebuild_ltoir(data, kind, element_dtype, user_info_dtype, symbol, key):
    return LTOIR(data, kind=kind, element_dtype=element_dtype, user_info_dtype=user_info_dtype, symbol=symbol,
                 key=key)


# SHA-256 of LTO-IR cumath compiled -> what it is, in memory and next to the cached IR (``cache_dir("ltoir")``)
INDEX = ContentStore("ltoir", suffix=".meta")


def register_ltoir(ir: LTOIR, disk: bool) -> None:
    """Remember what ``ir`` is, so that its plain bytes are recognised (on disk too, when ``disk``)."""
    meta = {"kind": ir.kind, "element_dtype": ir.element_dtype, "user_info_dtype": ir.user_info_dtype,
            "symbol": ir.symbol, "key": ir.key}
    INDEX.put(hashlib.sha256(ir).hexdigest(), b"", meta, disk=disk)


def describe_ltoir(data: bytes) -> dict | None:
    """What cumath knows about LTO-IR ``data`` that its compile_* made (in this process, or in one that
    shares the cache folder): kind, element_dtype, user_info_dtype, symbol, key. None if unknown.

    numba-cuda's LTO-IR does not show the symbol's name in clear, so plain ``bytes`` of a compiled callback
    are recognised by their content."""
    entry = INDEX.get(hashlib.sha256(data).hexdigest())
    return dict(entry.meta) if entry is not None and entry.meta.get("symbol") else None


def _device_pointer(data):
    """(address, object to keep alive) of user data: None, an int address, or a GPU array."""
    if data is None:  # a null pointer, 0 as nvmath-python stores it
        return 0, None
    if isinstance(data, bool):
        raise TypeError("data must be a device pointer (int) or a GPU array, not a bool")
    if isinstance(data, int):
        if data < 0:
            raise ValueError(f"data must be a device address (a non-negative int), got {data}")
        return data, None
    from .._core.operand import wrap_operand

    try:
        op = wrap_operand(data)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"data must be a device pointer (int), a GPU array or None, not {type(data).__name__} "
                        f"({exc})") from None
    if op.device_id is None:
        raise ValueError("the callback's user data must be in GPU memory: cuFFT's kernels read it; pass a "
                         "CuPy/PyTorch CUDA array or a device pointer, not a host array")
    return op.ptr, data


def _read_host_memory(address: int, size: int) -> bytes:
    """``size`` bytes at a host ``address`` the caller gave, read through the kernel (a pipe) first so that an
    address that is not readable memory raises ValueError instead of crashing the process."""
    import os

    if address < 4096 or size > (1 << 30):
        raise ValueError(f"ltoir={address:#x} with size={size} is not an address of readable host memory; pass "
                         f"the LTO-IR as bytes")
    r, w = os.pipe()
    try:
        step = 1 << 14
        for start in range(0, size, step):
            n = min(step, size - start)
            try:
                os.write(w, (ctypes.c_char * n).from_address(address + start))
            except OSError:  # EFAULT: not mapped
                raise ValueError(f"ltoir={address:#x} with size={size} is not an address of readable host "
                                 f"memory; pass the LTO-IR as bytes") from None
            os.read(r, n)
    finally:
        os.close(r)
        os.close(w)
    return ctypes.string_at(address, size)


@dataclasses.dataclass(frozen=True, init=False)
class DeviceCallable:
    """A callback for ``prolog=`` / ``epilog=``: LTO-IR plus the user data the callback receives.

    ``ltoir``: LTO-IR as bytes (e.g. from :func:`compile_prolog`) or a host address (int) with ``size``.
    ``size``: bytes of LTO-IR (default: all of ``ltoir``). ``data``: what the callback receives as
    ``user_info``: a device address (int), a GPU array (its address is used, and the array is kept alive
    while this object is), or None (a null pointer: ``data`` is then 0). ``symbol`` (cumath): the plain name of the callback
    in LTO-IR that cumath did not compile (its IR must define the mangled name, see
    :func:`cumath.fft._callbacks.mangled_name`).
    """

    ltoir: bytes
    size: int
    data: int | None
    symbol: str | None
    _keep: object = dataclasses.field(default=None, compare=False, hash=False, repr=False)

    def __init__(self, ltoir: bytes | bytearray | memoryview | int | None = None, size: int | None = None,
                 data: Any = None, *, symbol: str | None = None) -> None:
        if ltoir is None:
            raise ValueError("DeviceCallable needs ltoir: LTO-IR bytes (from compile_prolog/compile_epilog) "
                             "or a host address with size=")
        if size is not None and (isinstance(size, bool) or not isinstance(size, int)):
            raise TypeError(f"size must be an int (bytes of LTO-IR) or None, not {type(size).__name__}")
        if isinstance(ltoir, int) and not isinstance(ltoir, bool):
            if size is None or size <= 0:
                raise ValueError("DeviceCallable(ltoir=<address>) needs size=, the number of bytes of LTO-IR")
            code = _read_host_memory(ltoir, size)
        elif isinstance(ltoir, (bytes, bytearray, memoryview)):
            code = ltoir if isinstance(ltoir, bytes) else bytes(ltoir)
            if size is not None:
                if not 0 < size <= len(code):
                    raise ValueError(f"size={size} is not within the {len(code)} bytes of ltoir given")
                if size != len(code):
                    code = bytes(code[:size])
        else:  # a ValueError as nvmath-python raises it
            raise ValueError(f"ltoir must be LTO-IR bytes or an int host address, not {type(ltoir).__name__}")
        if not code:
            raise ValueError("ltoir is empty")
        if symbol is not None and not (isinstance(symbol, str) and symbol.isidentifier()):
            raise ValueError(f"symbol must be the callback's plain C identifier, not {symbol!r}")
        ptr, keep = _device_pointer(data)
        object.__setattr__(self, "ltoir", code)
        object.__setattr__(self, "size", len(code))
        object.__setattr__(self, "data", ptr)
        object.__setattr__(self, "symbol", symbol)
        object.__setattr__(self, "_keep", keep)

    def __repr__(self):
        data = hex(self.data or 0)
        return f"DeviceCallable(<{self.size} bytes of LTO-IR>, data={data}" + (
            f", symbol={self.symbol!r})" if self.symbol else ")")


_FORMS = ("LTO-IR bytes (from cumath.fft.compile_prolog/compile_epilog), a cumath.fft.DeviceCallable, "
          "a dict of DeviceCallable's fields ({'ltoir': ..., 'data': ...}) or None")


def as_device_callable(cb, what: str = "callback"):
    """``cb`` (any accepted form but None) as bytes or a DeviceCallable: hashable, equal by content."""
    t = type(cb)
    if t is bytes or t is LTOIR or t is DeviceCallable:
        return cb
    if isinstance(cb, dict):
        unknown = set(cb) - {"ltoir", "size", "data", "symbol"}
        if unknown:
            raise ValueError(f"{what}: unknown DeviceCallable field(s) {sorted(unknown)}; the fields are "
                             f"ltoir, size, data (and cumath's symbol)")
        return DeviceCallable(**cb)
    if isinstance(cb, (bytes, bytearray, memoryview)):
        return bytes(cb) if not isinstance(cb, bytes) else cb
    if isinstance(cb, DeviceCallable):
        return cb
    raise TypeError(f"{what} must be {_FORMS}, not {t.__name__}")


def callback_key(cb):
    """The identity of a callback in plan keys: content of the IR, symbol and user data address."""
    if cb is None:
        return None
    return as_device_callable(cb)


def expected_element(kind: str, fft_type: str, precision: str) -> str:
    """The element dtype a callback of ``kind`` handles in an FFT of ``fft_type`` and real ``precision``:
    prologs load the input (real for R2C), epilogs store the output (real for C2R)."""
    real = kind == "prolog" and fft_type == "R2C" or kind == "epilog" and fft_type == "C2R"
    return precision if real else COMPLEX_OF[precision]


class AttachedCallback:
    """What one plan holds for one callback, for the plan's whole life: cuFFT keeps pointers to the name
    and, until planning is over, to the IR and the caller_info array."""

    __slots__ = ("kind", "cbtype", "element_dtype", "name", "mangled", "ltoir", "data", "caller_info", "keep")

    def __init__(self, kind, element_dtype, plain, ltoir, data, keep):
        self.kind = kind
        self.element_dtype = element_dtype
        self.cbtype = _CALLBACK_TYPES[(kind, element_dtype)]
        self.name = plain.encode()  # a bytes object of this plan's own: its buffer outlives the plan
        self.mangled = mangled_name(plain, kind, element_dtype)
        self.ltoir = bytes(ltoir)
        self.data = data or 0
        self.caller_info = (ctypes.c_void_p * 1)(self.data or None)  # one entry per GPU
        self.keep = keep

    @property
    def caller_info_address(self) -> int:
        return ctypes.addressof(self.caller_info)

    def __repr__(self):
        return f"<{self.kind} {self.name.decode()} ({self.element_dtype}), user data {self.data:#x}>"


def _identify(ir: bytes, symbol, kind: str, what: str):
    """(plain name, kind, element dtype or None) of the callback in ``ir``."""
    if symbol is not None:
        m = _NAME_RE.fullmatch(symbol.encode())
        if m is None:
            return symbol, kind, None
        return symbol, m.group(1).decode(), _LONG[m.group(2).decode()]
    if type(ir) is LTOIR:
        return ir.symbol, ir.kind, ir.element_dtype
    meta = describe_ltoir(ir)  # plain bytes of IR that cumath compiled: known by content
    if meta is not None:
        return meta["symbol"], meta["kind"], meta["element_dtype"]
    found = {m.groups() for m in _NAME_RE.finditer(ir)}  # IR that shows its names in clear
    if len(found) > 1:  # several of ours (linked together?): take the one of this kind, if it is alone
        found = {g for g in found if g[0].decode() == kind} or found
    if len(found) != 1:
        reason = "several callbacks" if found else ("no callback compiled by cumath (in this process or one "
                                                    "sharing its cache folder)")
        raise ValueError(f"{what}: this LTO-IR holds {reason}; pass the object cumath.fft.compile_{kind}() "
                         f"returned, or name the callback with DeviceCallable(ltoir, symbol='<plain name>')")
    k, short, key = found.pop()
    plain = f"cumath_{k.decode()}_{short.decode()}_{key.decode()}"
    return plain, k.decode(), _LONG[short.decode()]


def _resolve_one(cb, kind: str, fft_type: str, precision: str, fft_desc: str) -> AttachedCallback:
    what = f"{kind}="
    cb = as_device_callable(cb, what)
    if type(cb) is DeviceCallable:
        ir, data, symbol, keep = cb.ltoir, cb.data, cb.symbol, cb._keep
    else:
        ir, data, symbol, keep = cb, None, None, None
    plain, ir_kind, ir_element = _identify(ir, symbol, kind, what)
    expected = expected_element(kind, fft_type, precision)
    if ir_kind != kind:
        raise ValueError(f"{what}: this LTO-IR holds {'an' if ir_kind == 'epilog' else 'a'} {ir_kind} (compiled by "
                         f"compile_{ir_kind}); pass it as {ir_kind}= or compile the function with compile_{kind}()")
    if ir_element is not None and ir_element != expected:
        side = "loads" if kind == "prolog" else "stores"
        raise ValueError(f"{what}: the {kind} was compiled for {ir_element} elements, but this {fft_desc} FFT "
                         f"{side} {expected} elements; compile it with element_dtype='{expected}'")
    return AttachedCallback(kind, expected, plain, ir, data, keep)


def resolve_callbacks(prolog, epilog, fft_type: str, precision: str) -> tuple:
    """Check ``prolog`` and ``epilog`` against an FFT of ``fft_type`` and real ``precision`` ('float32' or
    'float64') and return the AttachedCallbacks a cuFFT plan attaches (before planning)."""
    if precision not in ("float32", "float64"):
        raise TypeError(f"cuFFT callbacks support single and double precision, not {precision} "
                        f"(half-precision FFTs cannot take a prolog or epilog)")
    desc = f"{fft_type} {precision if fft_type == 'R2C' else COMPLEX_OF[precision]}"
    out = []
    if prolog is not None:
        out.append(_resolve_one(prolog, "prolog", fft_type, precision, desc))
    if epilog is not None:
        out.append(_resolve_one(epilog, "epilog", fft_type, precision, desc))
    return tuple(out)

