"""Pictures of a tensor: its sparsity (``draw``) and its storage (``draw_storage``), as grey-scale images (NumPy
uint8 arrays) written as PNG without an imaging dependency (the PNG encoder here is the format's minimum: one
IHDR, one zlib IDAT, IEND)."""

from __future__ import annotations

import struct
import zlib

import numpy as np

__all__ = ["sparsity_image", "storage_image", "write_png"]


def write_png(path, image: np.ndarray) -> None:
    """Write a 2-D uint8 array as an 8-bit grey-scale PNG."""
    img = np.ascontiguousarray(image, dtype=np.uint8)
    if img.ndim != 2 or not img.size:
        raise ValueError(f"an image must be a non-empty 2-D array; got shape {img.shape}")
    h, w = img.shape
    raw = b"".join(b"\x00" + img[r].tobytes() for r in range(h))  # filter type 0 per row

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)) + \
        chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(png)


def sparsity_image(coords: np.ndarray, extents, max_side: int = 1024) -> np.ndarray:
    """Black where elements are stored, white elsewhere; a matrix larger than ``max_side`` is binned (a pixel is
    as dark as the fraction of its cells that are stored, at least a quarter dark when any is)."""
    if len(extents) == 1:
        extents, coords = (1, extents[0]), np.stack([np.zeros(len(coords), np.int64), coords[:, 0]], axis=1)
    if len(extents) != 2:
        raise ValueError(f"draw pictures vectors and matrices; this tensor has extents {tuple(extents)}")
    m, n = extents
    sm, sn = max(1, -(-m // max_side)), max(1, -(-n // max_side))
    h, w = -(-m // sm), -(-n // sn)
    counts = np.zeros((h, w), np.float64)
    if len(coords):
        np.add.at(counts, (coords[:, 0] // sm, coords[:, 1] // sn), 1)
    frac = np.clip(counts / (sm * sn), 0, 1)
    dark = np.where(counts > 0, np.maximum(frac, 0.25), 0)
    return (255 * (1 - dark)).astype(np.uint8)


def storage_image(arrays, cell: int = 8, width: int = 64) -> np.ndarray:
    """One band per array (each level's positions and coordinates, then the values): a cell per entry, grey by
    the entry's magnitude relative to the array's largest; ``width`` cells per line."""
    bands = []
    for arr in arrays:
        a = np.abs(np.asarray(arr).reshape(-1)).astype(np.float64)
        if a.size == 0:
            continue
        top = a.max() or 1.0
        lines = -(-a.size // width)
        grid = np.full(lines * width, 255.0)
        grid[: a.size] = 255 * (1 - 0.85 * a / top) - 20
        band = np.kron(grid.reshape(lines, width), np.ones((cell, cell)))
        bands += [band, np.full((cell // 2, band.shape[1]), 255.0)]
    if not bands:
        return np.full((cell, width * cell), 255, np.uint8)
    return np.clip(np.vstack(bands), 0, 255).astype(np.uint8)
