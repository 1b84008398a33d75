# SPDX-License-Identifier: MIT
"""Starscream communicators from Python: from a torch.distributed process group (the unique id
travels through the group's key-value store) or from a unique id the caller shares itself."""
import ctypes
import hashlib
import threading

from . import _capi
from ._errors import StarscreamError

_seq_lock = threading.Lock()
_seq = {}  # key prefix -> communicators made with it in this process


def unique_id():
    """A new unique id (sscGetUniqueId): 128 bytes for every rank's Comm.from_unique_id. The
    process that makes it serves the bootstrap, so make it on the communicator's rank 0."""
    lib = _capi.lib()
    uid = _capi.UniqueId()
    lib.check(lib.sscGetUniqueId(ctypes.byref(uid)), "sscGetUniqueId")
    return bytes(uid.internal)


def _next_key(prefix):
    # Ranks make a group's communicators in the same order (creation is collective), so the
    # n-th one made with a prefix has the same key on every rank, and never a key used before.
    with _seq_lock:
        n = _seq.get(prefix, 0)
        _seq[prefix] = n + 1
    return f"{prefix}/{n}"


class Comm:
    """A communicator (sscComm_t). Creation and close() are collective over its ranks. On a GPU
    backend it uses the CUDA/HIP device current when it is made (torch.cuda.set_device first)."""

    def __init__(self, handle, rank, size):
        self._handle = handle
        self.rank = rank
        self.size = size

    @property
    def handle(self):
        """The sscComm_t as an integer (what the custom ops take)."""
        if not self._handle:
            raise StarscreamError("the communicator is closed")
        return self._handle

    @classmethod
    def from_unique_id(cls, uid, rank, size):
        """sscCommInitRank: every rank passes the same 128-byte id (unique_id() on rank 0)."""
        if len(uid) != _capi.UNIQUE_ID_BYTES:
            raise ValueError(f"a unique id has {_capi.UNIQUE_ID_BYTES} bytes, not {len(uid)}")
        if not 0 <= rank < size:
            raise ValueError(f"rank {rank} of {size} ranks")
        lib = _capi.lib()
        u = _capi.UniqueId()
        ctypes.memmove(ctypes.addressof(u), bytes(uid), _capi.UNIQUE_ID_BYTES)
        h = ctypes.c_void_p()
        lib.check(lib.sscCommInitRank(ctypes.byref(h), size, u, rank), "sscCommInitRank")
        return cls(h.value, rank, size)

    @classmethod
    def from_store(cls, store, rank, size, key):
        """Rank 0 makes the unique id and sets it under `key` in `store` (anything with
        set(key, bytes) and a get(key) that waits for the key, as torch.distributed's stores
        do); the other ranks get it from there."""
        if rank == 0:
            uid = unique_id()
            store.set(key, uid)
        else:
            uid = bytes(store.get(key))
        return cls.from_unique_id(uid, rank, size)

    @classmethod
    def from_process_group(cls, group=None, *, store=None, key=None):
        """A communicator over the ranks of a torch.distributed process group (None: the default
        group), ranked as the group ranks them. The unique id goes through `store` (default: the
        default group's store, which every rank of the job shares), under
        "starscream/comm/<the group's ranks>/<n>": the n-th communicator this process makes
        over that group, so ranks must make them in the same order (as any collective). Pass
        `key` to name the exchange yourself. No extra process group is made."""
        import torch.distributed as dist
        from torch.distributed import distributed_c10d as c10d

        if not dist.is_initialized():
            raise StarscreamError("Comm.from_process_group: torch.distributed is not "
                                  "initialized (call dist.init_process_group first)")
        group = group if group is not None else c10d._get_default_group()
        rank, size = dist.get_rank(group), dist.get_world_size(group)
        if rank < 0:
            raise StarscreamError("Comm.from_process_group: this process is not in the group")
        if store is None:
            store = c10d._get_default_store()
        if key is None:
            ranks = ",".join(str(r) for r in dist.get_process_group_ranks(group))
            digest = hashlib.sha1(ranks.encode()).hexdigest()[:16]
            key = _next_key(f"starscream/comm/{digest}")
        return cls.from_store(store, rank, size, key)

    @property
    def device(self):
        """The device index the communicator uses (-1 on the host backend)."""
        lib = _capi.lib()
        d = ctypes.c_int()
        lib.check(lib.sscCommDevice(self.handle, ctypes.byref(d)), "sscCommDevice", self.handle)
        return d.value

    def topology(self, rank=None):
        """Where `rank` (default: this one) sits: dict of node, gpu, partition,
        partitionsOnGpu, gpus, nodes (sscCommGetRankTopology)."""
        lib = _capi.lib()
        t = _capi.RankTopology()
        r = self.rank if rank is None else rank
        lib.check(lib.sscCommGetRankTopology(self.handle, r, ctypes.byref(t)),
                  "sscCommGetRankTopology", self.handle)
        return {name: getattr(t, name) for name, _ in t._fields_}

    def close(self):
        """sscCommFinalize then sscCommDestroy (collective: every rank calls it). Close what
        was made on the communicator (Gemm, KvCache) first."""
        if self._handle:
            lib = _capi.lib()
            h, self._handle = self._handle, None
            lib.check(lib.sscCommFinalize(h), "sscCommFinalize", h)
            lib.check(lib.sscCommDestroy(h), "sscCommDestroy")

    def abort(self):
        """sscCommAbort: local, stops pending work; the communicator is gone afterwards."""
        if self._handle:
            lib = _capi.lib()
            h, self._handle = self._handle, None
            lib.check(lib.sscCommAbort(h), "sscCommAbort")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        state = "closed" if not self._handle else f"0x{self._handle:x}"
        return f"<starscream.Comm rank {self.rank} of {self.size}, {state}>"
