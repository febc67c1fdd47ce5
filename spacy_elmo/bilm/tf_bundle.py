"""Reading TensorFlow's checkpoint format (a tensor bundle) without TensorFlow.

A checkpoint PREFIX is `PREFIX.index`, a table of `BundleEntryProto` records keyed by tensor name (the
LevelDB table format: data blocks of prefix-compressed keys, an index block, a 48-byte footer), and the
shards `PREFIX.data-NNNNN-of-MMMMM` holding each tensor's little-endian bytes at the offset its record
gives. Every block and every tensor carries a masked CRC32C, checked on read. Only what released ELMo
checkpoints hold is read: uncompressed tables and whole (unpartitioned) float32 tensors; anything else
is refused in one line. (Facts from TensorFlow's `tensor_bundle.proto` and its table format.)
"""

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

import numpy

from ..errors import ElmoFormatError
from ..protobuf import grouped, varint
from ..types import PathLike

_MAGIC = 0xDB4775248B80FB57
_FOOTER = 48
_MASK_DELTA = 0xA282EAD8
FLOAT32 = 1  # TensorFlow's DT_FLOAT


def _crc32c(data: bytes) -> int:
    import google_crc32c

    return int(google_crc32c.value(data))


def _unmask(masked: int) -> int:
    rotated = (masked - _MASK_DELTA) & 0xFFFFFFFF
    return ((rotated >> 17) | (rotated << 15)) & 0xFFFFFFFF


@dataclass(frozen=True)
class BundleEntry:
    """Where one tensor is: its dtype (TensorFlow's enum), shape, shard, byte range and masked CRC32C."""

    dtype: int
    shape: Tuple[int, ...]
    shard: int
    offset: int
    size: int
    crc32c: int
    sliced: bool


def _entry(record: bytes) -> BundleEntry:
    fields = grouped(record)
    shape: Tuple[int, ...] = ()
    if 2 in fields:
        dims = grouped(_bytes(fields, 2)).get(2, [])
        shape = tuple(_number(grouped(_checked_bytes(dim, "a dimension")), 1) for dim in dims)
    return BundleEntry(
        dtype=_number(fields, 1),
        shape=shape,
        shard=_number(fields, 3),
        offset=_number(fields, 4),
        size=_number(fields, 5),
        crc32c=_number(fields, 6),
        sliced=7 in fields,
    )


def _number(fields: Dict[int, List[Any]], number: int) -> int:
    """Field `number` of a record as the number it must be (0 where absent); ValueError where it is bytes."""
    value = fields.get(number, [0])[0]
    if not isinstance(value, int):
        raise ValueError(f"field {number} of a record is bytes where a number belongs")
    return value


def _bytes(fields: Dict[int, List[Any]], number: int) -> bytes:
    return _checked_bytes(fields[number][0], f"field {number}")


def _checked_bytes(value: Any, what: str) -> bytes:
    if not isinstance(value, bytes):
        raise ValueError(f"{what} of a record is a number where a message belongs")
    return value


class TensorBundle:
    """The tensors of a TensorFlow checkpoint, read lazily.

    prefix (PathLike): the checkpoint's prefix (`PREFIX.index` beside its data shards).
    """

    def __init__(self, prefix: PathLike) -> None:
        self.prefix = Path(prefix)
        index = Path(f"{self.prefix}.index")
        try:
            table = index.read_bytes()
        except OSError as err:
            raise ElmoFormatError(f"Could not read the TensorFlow checkpoint index {index}: {err.strerror or err}") from None
        try:
            records = dict(_table_records(table))
            header = grouped(records.pop(b"", b""))
            self.entries = {name.decode("utf8"): _entry(record) for name, record in records.items()}
        except (ValueError, UnicodeDecodeError, IndexError, struct.error) as err:
            raise ElmoFormatError(
                f"{index} is not a readable TensorFlow checkpoint index ({err}): the file may be truncated or damaged"
            ) from None
        try:
            endianness, num_shards = _number(header, 2), _number(header, 1) if 1 in header else 1
        except ValueError as err:
            raise ElmoFormatError(f"{index} is not a readable TensorFlow checkpoint index ({err}): the file may be damaged") from None
        if endianness != 0:
            raise ElmoFormatError(f"{index}: a big-endian checkpoint; only little-endian ones are read")
        self.num_shards = num_shards

    def names(self) -> List[str]:
        return list(self.entries)

    def shard_path(self, shard: int) -> Path:
        return Path(f"{self.prefix}.data-{shard:05d}-of-{self.num_shards:05d}")

    def raw(self, name: str) -> bytes:
        """RETURNS (bytes): the tensor's bytes, their CRC32C checked."""
        entry = self.entries[name]
        path = self.shard_path(entry.shard)
        try:
            with path.open("rb") as f:
                f.seek(entry.offset)
                data = f.read(entry.size)
        except OSError as err:
            raise ElmoFormatError(f"Could not read {path}, a shard of the checkpoint {self.prefix}: {err.strerror or err}") from None
        if len(data) != entry.size:
            raise ElmoFormatError(f"{path} ends before tensor '{name}' (the file is truncated): download or copy it again")
        if _crc32c(data) != _unmask(entry.crc32c):
            raise ElmoFormatError(f"Tensor '{name}' in {path} fails its CRC32C check: the file is damaged; download or copy it again")
        return data

    def read(self, name: str) -> numpy.ndarray:
        """RETURNS (numpy.ndarray): the float32 tensor `name`."""
        entry = self.entries[name]
        if entry.sliced:
            raise ElmoFormatError(f"Tensor '{name}' in {self.prefix} is partitioned into slices, which are not read")
        if entry.dtype != FLOAT32:
            raise ElmoFormatError(f"Tensor '{name}' in {self.prefix} has TensorFlow dtype {entry.dtype}, not float32 (1)")
        expected = 4 * int(numpy.prod(entry.shape, dtype=numpy.int64))
        if entry.size != expected:
            raise ElmoFormatError(f"Tensor '{name}' in {self.prefix}: {entry.size} bytes for shape {entry.shape}")
        return numpy.frombuffer(self.raw(name), dtype="<f4").reshape(entry.shape).copy()


def _table_records(table: bytes) -> Iterator[Tuple[bytes, bytes]]:
    """The (key, value) records of a LevelDB-format table, every block's CRC32C checked."""
    if len(table) < _FOOTER or struct.unpack("<Q", table[-8:])[0] != _MAGIC:
        raise ValueError("no table footer")
    footer = table[-_FOOTER:]
    _, pos = varint(footer, 0)
    _, pos = varint(footer, pos)  # the metaindex block, unused here
    index_offset, pos = varint(footer, pos)
    index_size, _ = varint(footer, pos)
    for _, handle in _block_records(_block(table, index_offset, index_size)):
        offset, pos = varint(handle, 0)
        size, _ = varint(handle, pos)
        yield from _block_records(_block(table, offset, size))


def _block(table: bytes, offset: int, size: int) -> bytes:
    end = offset + size
    if end + 5 > len(table):
        raise ValueError("a block runs past the end of the file")
    contents, kind = table[offset:end], table[end]
    if kind != 0:
        raise ValueError(f"a compressed block (type {kind}); only uncompressed tables are read")
    (masked,) = struct.unpack("<I", table[end + 1 : end + 5])
    if _crc32c(table[offset : end + 1]) != _unmask(masked):
        raise ValueError("a block fails its CRC32C check")
    return contents


def _block_records(block: bytes) -> Iterator[Tuple[bytes, bytes]]:
    (n_restarts,) = struct.unpack("<I", block[-4:])
    end = len(block) - 4 - 4 * n_restarts
    if end < 0:
        raise ValueError("a block's restart array runs past its start")
    pos, key = 0, b""
    while pos < end:
        shared, pos = varint(block, pos)
        unshared, pos = varint(block, pos)
        length, pos = varint(block, pos)
        if shared > len(key) or pos + unshared + length > end:
            raise ValueError("a record runs past its block")
        key = key[:shared] + block[pos : pos + unshared]
        pos += unshared
        yield key, block[pos : pos + length]
        pos += length


def checkpoint_prefix(folder: PathLike) -> Optional[Path]:
    """RETURNS (Optional[Path]): the checkpoint in `folder`: a TF Hub module's `variables/variables`, else
    the one the `checkpoint` file names, else the only (or the highest-numbered) `*.index`; None if none."""
    folder = Path(folder)
    hub = folder / "variables" / "variables"
    if Path(f"{hub}.index").is_file():
        return hub
    state = folder / "checkpoint"
    if state.is_file():
        for line in state.read_text(encoding="utf8", errors="replace").splitlines():
            if line.startswith("model_checkpoint_path:"):
                named = folder / Path(line.split(":", 1)[1].strip().strip('"')).name
                if Path(f"{named}.index").is_file():
                    return named
    indexes = sorted(folder.glob("*.index"), key=lambda p: (_step(p.stem), p.stem))
    return indexes[-1].with_suffix("") if indexes else None


def _step(stem: str) -> int:
    tail = stem.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else -1
