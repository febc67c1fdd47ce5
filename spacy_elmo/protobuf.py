"""Reading protocol-buffers messages without a protobuf library: the wire format alone (a field's number and
type, then its value), for the few fields spacy-elmo reads of a TensorFlow checkpoint (bilm/tf_bundle.py) and of
an ONNX model (bilm_onnx/model_file.py). Numbers come as ints, length-delimited values as views of the bytes
(nothing is copied), and a message that breaks the format raises ProtobufError."""

from typing import Any, Dict, Iterator, List, Tuple, Union

VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5
Buffer = Union[bytes, memoryview]


class ProtobufError(ValueError):
    """The bytes break the protocol-buffers wire format (cut off, a wire type that is no field's)."""


def varint(data: Buffer, at: int) -> Tuple[int, int]:
    """RETURNS (Tuple[int, int]): the base-128 number starting at `at`, and where the next value starts."""
    value = shift = 0
    while True:
        if at >= len(data):
            raise ProtobufError("cut off inside a number")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7
        if shift > 63:
            raise ProtobufError("a number over 10 bytes")


def fields(data: Buffer) -> Iterator[Tuple[int, int, Union[int, memoryview]]]:
    """Each (field number, wire type, value) of one message: an int for a number (varint, fixed 32 or 64 bits,
    little-endian), a view of the bytes for a length-delimited value (a string, bytes or a nested message)."""
    view = data if isinstance(data, memoryview) else memoryview(data)
    at, end = 0, len(view)
    while at < end:
        key, at = varint(view, at)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ProtobufError("a field numbered 0")
        if wire == VARINT:
            value, at = varint(view, at)
            yield number, wire, value
            continue
        if wire in (FIXED64, FIXED32):
            size = 8 if wire == FIXED64 else 4
        elif wire == LENGTH:
            size, at = varint(view, at)
        else:
            raise ProtobufError(f"wire type {wire}, which no field has")
        if at + size > end:
            raise ProtobufError("cut off inside a field")
        chunk = view[at : at + size]
        at += size
        yield number, wire, (chunk if wire == LENGTH else int.from_bytes(chunk, "little"))


def grouped(data: Buffer) -> Dict[int, List[Any]]:
    """RETURNS (Dict[int, List[Any]]): field number -> its values in order (ints, or bytes where length-delimited)."""
    found: Dict[int, List[Any]] = {}
    for number, _, value in fields(data):
        found.setdefault(number, []).append(value.tobytes() if isinstance(value, memoryview) else value)
    return found
