"""What the GPU-engine tests (on the GPU and on the emulation) share: inputs, the qualifier cases and the NumPy
reference of the epilogs."""

import numpy as np

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
EPILOGS = ["RELU", "GELU", "BIAS", "RELU_BIAS", "GELU_BIAS", "ALLREDUCE"]
QUALIFIERS = [((True, False), (False, False)), ((False, False), (True, True)), ((True, True), (False, True)),
              ((False, True), (True, False))]


def rand(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if np.dtype(dtype).kind == "c" else 0)
    return x.astype(dtype)


def qualified(qa, qb):
    """(A, B, stored A, stored B, qualifiers): A and B stored transposed and/or conjugated as ``qa``, ``qb`` say."""
    from cumath.distributed.linalg.advanced import matrix_qualifiers_dtype

    A, B = rand((9, 6), np.complex128, 4), rand((6, 8), np.complex128, 5)
    q = np.zeros(2, dtype=matrix_qualifiers_dtype)
    q[0], q[1] = qa, qb

    def stored(X, t, c):
        X = np.conj(X) if c else X
        return np.ascontiguousarray(X.T) if t else X

    return A, B, stored(A, *qa), stored(B, *qb), q


def epilog_reference(product, epilog, bias):
    """cuBLASLt's epilogs (GELU: the tanh approximation) applied to ``product`` in float64."""
    ref = product
    if "BIAS" in epilog:
        ref = ref + bias[:, None]
    if "RELU" in epilog:
        ref = np.maximum(ref, 0)
    if "GELU" in epilog:
        ref = 0.5 * ref * (1 + np.tanh(np.sqrt(2 / np.pi) * (ref + 0.044715 * ref ** 3)))
    return ref
