#!/usr/bin/env python3
"""Reads the 1-D integer tensors of an OGB split file (split/*/*.pt) without torch.

OGB ships the edge splits of ogbl-wikikg2 and ogbl-citation2 only as
torch.save() files of a dict of tensors, e.g. valid.pt = {"head": LongTensor[n],
"relation": ..., "tail": ..., "head_neg": LongTensor[n, 500], ...}. torch is a
large install, and the format is a pickle plus raw little-endian storages, so
this reads both layouts that torch.save has written:
  - the zip layout (torch >= 1.6): <name>/data.pkl and one <name>/data/<key>
    entry per storage;
  - the legacy layout: magic, protocol and sys_info pickles, the object
    pickle, the list of storage keys, then per key an int64 element count and
    the raw elements.
Only the tensors named on the command line are materialised.

Usage:
  ogb_pt.py rows FILE KEY[,KEY...]   one tab-separated line per index i: KEY1[i] KEY2[i] ...
  ogb_pt.py count FILE KEY           the length of tensor KEY
  ogb_pt.py keys FILE                the dict's keys and shapes

Exit status 1 with a message naming the file when it cannot be read; the
conversion with torch itself is then (for valid.pt of ogbl-wikikg2):
  python3 -c "import torch; d = torch.load('valid.pt'); \
    [print(h, r, t, sep='\\t') for h, r, t in zip(d['head'].tolist(), d['relation'].tolist(), d['tail'].tolist())]" > valid.tsv
"""

import array
import collections
import io
import pickle
import struct
import sys
import zipfile

# torch storage class name -> array typecode (all little-endian on disk).
_STORAGE_TYPECODES = {
    "LongStorage": "q",
    "IntStorage": "i",
    "ShortStorage": "h",
    "CharStorage": "b",
    "ByteStorage": "B",
    "BoolStorage": "B",
    "DoubleStorage": "d",
    "FloatStorage": "f",
}
_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C


class PtError(Exception):
    pass


class _StorageType:
    def __init__(self, name):
        if name not in _STORAGE_TYPECODES:
            raise PtError("unsupported storage type torch.%s" % name)
        self.name = name
        self.typecode = _STORAGE_TYPECODES[name]


class _StorageRef:
    def __init__(self, storage_type, key, numel):
        self.type = storage_type
        self.key = key
        self.numel = numel


class Tensor:
    """A view of a storage: offset, size and stride as torch pickles them."""

    def __init__(self, storage, offset, size, stride):
        self.storage = storage
        self.offset = offset
        self.size = tuple(size)
        self.stride = tuple(stride)


def _rebuild_tensor(storage, storage_offset, size, stride, *unused):
    return Tensor(storage, storage_offset, size, stride)


class _Unpickler(pickle.Unpickler):
    def __init__(self, f):
        super().__init__(f)
        self.refs = []  # every storage the pickle refers to

    def find_class(self, module, name):
        if module == "torch._utils" and name in ("_rebuild_tensor_v2", "_rebuild_tensor"):
            return _rebuild_tensor
        if module == "torch" and name.endswith("Storage"):
            return _StorageType(name)
        if module == "collections" and name == "OrderedDict":
            return collections.OrderedDict
        raise PtError("unsupported object %s.%s in the pickle (only dicts of tensors are read)"
                      % (module, name))

    def persistent_load(self, pid):
        # ("storage", storage_type, key, location, numel[, view_metadata])
        if not isinstance(pid, tuple) or len(pid) < 5 or pid[0] != "storage":
            raise PtError("unexpected persistent id %r" % (pid,))
        if not isinstance(pid[1], _StorageType):
            raise PtError("unexpected storage type %r" % (pid[1],))
        ref = _StorageRef(pid[1], str(pid[2]), int(pid[4]))
        self.refs.append(ref)
        return ref


class PtFile:
    def __init__(self, path):
        self.path = path
        self._zip = None
        self._prefix = ""
        self._legacy_offsets = {}  # key -> (file offset of the elements, numel)
        if zipfile.is_zipfile(path):
            self._open_zip()
        else:
            self._open_legacy()

    def _open_zip(self):
        self._zip = zipfile.ZipFile(self.path)
        pkls = [n for n in self._zip.namelist() if n.endswith("data.pkl")]
        if len(pkls) != 1:
            raise PtError("no single data.pkl in the zip archive")
        self._prefix = pkls[0][: -len("data.pkl")]
        byteorder = self._prefix + "byteorder"
        if byteorder in self._zip.namelist() and self._zip.read(byteorder).strip() != b"little":
            raise PtError("big-endian storages are not supported")
        self.obj = _Unpickler(io.BytesIO(self._zip.read(pkls[0]))).load()

    def _open_legacy(self):
        with open(self.path, "rb") as f:
            try:
                magic = pickle.load(f)
            except Exception as e:  # noqa: BLE001 - any unpickling failure means "not a .pt"
                raise PtError("neither a zip archive nor a legacy torch file (%s)" % e)
            if magic != _LEGACY_MAGIC:
                raise PtError("neither a zip archive nor a legacy torch file (bad magic)")
            pickle.load(f)  # protocol version
            sys_info = pickle.load(f)
            if isinstance(sys_info, dict) and not sys_info.get("little_endian", True):
                raise PtError("big-endian storages are not supported")
            unpickler = _Unpickler(f)
            self.obj = unpickler.load()
            keys = pickle.load(f)
            itemsize = {r.key: array.array(r.type.typecode).itemsize for r in unpickler.refs}
            for key in keys:
                head = f.read(8)
                if len(head) != 8:
                    raise PtError("truncated at the storage of key %s" % key)
                (numel,) = struct.unpack("<q", head)
                if key not in itemsize:
                    raise PtError("storage %s is not referenced by the pickle" % key)
                self._legacy_offsets[key] = (f.tell(), numel)
                f.seek(numel * itemsize[key], io.SEEK_CUR)

    def _storage_bytes(self, ref):
        if self._zip is not None:
            return self._zip.read(self._prefix + "data/" + ref.key)
        offset, numel = self._legacy_offsets[ref.key]
        with open(self.path, "rb") as f:
            f.seek(offset)
            return f.read(numel * array.array(ref.type.typecode).itemsize)

    def tensor(self, key):
        if not isinstance(self.obj, dict):
            raise PtError("the file holds a %s, not a dict of tensors" % type(self.obj).__name__)
        if key not in self.obj:
            raise PtError("no key %r (keys: %s)" % (key, ", ".join(map(str, self.obj))))
        t = self.obj[key]
        if not isinstance(t, Tensor):
            raise PtError("key %r holds a %s, not a tensor" % (key, type(t).__name__))
        return t

    def values(self, key):
        """The elements of the 1-D tensor `key` as an array."""
        t = self.tensor(key)
        if len(t.size) != 1:
            raise PtError("key %r has shape %s; only 1-D tensors are read" % (key, list(t.size)))
        data = array.array(t.storage.type.typecode)
        data.frombytes(self._storage_bytes(t.storage))
        if sys.byteorder != "little":
            data.byteswap()
        n, step = t.size[0], t.stride[0]
        end = t.offset + (n - 1) * step + 1 if n else t.offset
        if n and end > len(data):
            raise PtError("key %r reaches past its storage (%d > %d)" % (key, end, len(data)))
        return data[t.offset:end:step] if n else data[0:0]


def main(argv):
    if len(argv) < 3 or argv[1] not in ("rows", "count", "keys"):
        sys.stderr.write(__doc__)
        return 2
    cmd, path = argv[1], argv[2]
    try:
        pt = PtFile(path)
        if cmd == "keys":
            for k, v in pt.obj.items():
                print(k, list(v.size) if isinstance(v, Tensor) else type(v).__name__, sep="\t")
        elif cmd == "count":
            print(pt.tensor(argv[3]).size[0])
        else:
            cols = [pt.values(k) for k in argv[3].split(",")]
            if len({len(c) for c in cols}) != 1:
                raise PtError("tensors %s differ in length" % argv[3])
            out = sys.stdout
            for row in zip(*cols):
                out.write("\t".join(map(str, row)) + "\n")
    except (PtError, OSError, pickle.UnpicklingError, EOFError, zipfile.BadZipFile, KeyError) as e:
        sys.stderr.write("%s: %s\n" % (path, e))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
