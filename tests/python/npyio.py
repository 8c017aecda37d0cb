"""Minimal NumPy .npy/.npz reader and writer on top of torch, for gnnaudit's example scripts.

The PyTorch venv gnnaudit installs has no NumPy; this reads the documented graph .npz layout
(CSR adjacency and features, labels, train/val/test masks) and writes .npy outputs with the
standard library and torch alone. Little-endian, C-order arrays only (what gnnaudit writes).
"""
import ast
import ctypes
import struct
import zipfile

import torch

_DTYPES = {
    "<f4": torch.float32, "<f8": torch.float64, "<i8": torch.int64, "<i4": torch.int32,
    "|i1": torch.int8, "|u1": torch.uint8, "|b1": torch.bool, "<i2": torch.int16,
}


def _parse(buf):
    if buf[:6] != b"\x93NUMPY":
        raise ValueError("not a .npy member")
    major = buf[6]
    if major == 1:
        (hlen,), start = struct.unpack("<H", buf[8:10]), 10
    else:
        (hlen,), start = struct.unpack("<I", buf[8:12]), 12
    header = ast.literal_eval(buf[start:start + hlen].decode("latin1"))
    data = buf[start + hlen:]
    descr, shape = header["descr"], tuple(header["shape"])
    if header.get("fortran_order"):
        raise ValueError("Fortran-order arrays are not supported")
    if descr.startswith("<U") or descr.startswith("|S"):
        return None  # strings (class_names, attr_names): not needed by the examples
    t = torch.frombuffer(bytearray(data), dtype=_DTYPES[descr]) if data else torch.empty(0, dtype=_DTYPES[descr])
    return t.reshape(shape)


def load_npz(path):
    """Every numeric member of an .npz archive as a tensor, by key."""
    out = {}
    with zipfile.ZipFile(path) as z:
        for name in z.namelist():
            t = _parse(z.read(name))
            if t is not None:
                out[name[:-4] if name.endswith(".npy") else name] = t
    return out


def load_npy(path):
    with open(path, "rb") as f:
        return _parse(f.read())


def save_npy(path, tensor):
    """Writes a float32/float64/int64 tensor as a version-1 .npy file."""
    t = tensor.detach().cpu().contiguous()
    descr = {torch.float32: "<f4", torch.float64: "<f8", torch.int64: "<i8"}[t.dtype]
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, repr(tuple(t.shape)))
    pad = 64 - (10 + len(header) + 1) % 64
    header = (header + " " * pad + "\n").encode("latin1")
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header)
        f.write(ctypes.string_at(t.data_ptr(), t.numel() * t.element_size()))


def csr_dense(z, prefix):
    """A dense float32 matrix from the CSR keys `{prefix}_data/indices/indptr/shape`."""
    indptr, indices = z[prefix + "_indptr"].long(), z[prefix + "_indices"].long()
    rows, cols = (int(v) for v in z[prefix + "_shape"])
    counts = indptr[1:] - indptr[:-1]
    r = torch.repeat_interleave(torch.arange(rows), counts)
    out = torch.zeros(rows, cols)
    out[r, indices] = z[prefix + "_data"].float()
    return out


def load_graph(path):
    """(x [N, F] float32, edge_index [2, E] int64 both directions, labels [N], masks by name)."""
    z = load_npz(path)
    x = csr_dense(z, "attr") if "attr_indptr" in z else z["attr_matrix"].float()
    indptr, indices = z["adj_indptr"].long(), z["adj_indices"].long()
    n = indptr.numel() - 1
    src = torch.repeat_interleave(torch.arange(n), indptr[1:] - indptr[:-1])
    edge_index = torch.stack([src, indices])
    masks = {k: z[k].bool() for k in ("train_mask", "val_mask", "test_mask") if k in z}
    return x, edge_index, z["labels"].long(), masks
