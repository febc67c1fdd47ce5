"""What an ONNX file holds, read without the onnx package: its IR version, its metadata and how many nodes of
each operator type its graph has (its subgraphs' nodes included).

An ONNX model is a protocol-buffers message (ModelProto in onnx.proto3; spacy_elmo/protobuf.py reads the wire
format). This reads only the fields below and steps over the rest by their lengths (the weights are never copied or
decoded), so that the runtime checks what a file holds before ONNX Runtime opens it, whatever onnx and onnxruntime
versions are installed (or none of onnx):

    ModelProto:     1 ir_version (varint), 7 graph (GraphProto), 14 metadata_props (StringStringEntryProto)
    GraphProto:     1 node (NodeProto)
    NodeProto:      4 op_type (string), 5 attribute (AttributeProto)
    AttributeProto: 6 g (GraphProto), 11 graphs (GraphProto): the bodies of Loop, Scan and If
    StringStringEntryProto: 1 key, 2 value
"""

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Union

from ..protobuf import ProtobufError, fields

# ONNX nests a graph in a node's attribute in a graph...: deeper than this is no model anyone exports.
MAX_DEPTH = 64


class NotAModel(ProtobufError):
    """The bytes are not a protocol-buffers message of the ModelProto layout."""


@dataclass
class ModelFile:
    ir_version: int = 0
    metadata: Dict[str, str] = field(default_factory=dict)
    op_types: "Counter[str]" = field(default_factory=Counter)


def read_model_file(source: "Union[str, Path, bytes]") -> ModelFile:
    """RETURNS (ModelFile): what the .onnx file (a path, or its bytes) holds. RAISES NotAModel where it is no
    ModelProto (empty, cut off, another kind of file)."""
    data = source if isinstance(source, bytes) else Path(source).read_bytes()
    if not data:
        raise NotAModel("the file is empty")
    try:
        return _model(memoryview(data))
    except ProtobufError as err:
        raise NotAModel(str(err)) from None


def _model(data: memoryview) -> ModelFile:
    found = ModelFile()
    seen_graph = False
    for number, _, value in fields(data):
        if number == 1 and isinstance(value, int):
            found.ir_version = value
        elif number == 7 and isinstance(value, memoryview):
            _graph(value, found.op_types, 0)
            seen_graph = True
        elif number == 14 and isinstance(value, memoryview):
            entry = {n: _text(v) for n, _, v in fields(value) if n in (1, 2) and isinstance(v, memoryview)}
            found.metadata[entry.get(1, "")] = entry.get(2, "")
    if not seen_graph:
        raise NotAModel("no graph in it")
    return found


def _graph(data: memoryview, op_types: "Counter[str]", depth: int) -> None:
    if depth > MAX_DEPTH:
        raise NotAModel(f"graphs nested more than {MAX_DEPTH} deep")
    for number, _, node in fields(data):
        if number != 1 or not isinstance(node, memoryview):
            continue
        for n, _, value in fields(node):
            if n == 4 and isinstance(value, memoryview):
                op_types[_text(value)] += 1
            elif n == 5 and isinstance(value, memoryview):
                for a, _, sub in fields(value):
                    if a in (6, 11) and isinstance(sub, memoryview):
                        _graph(sub, op_types, depth + 1)


def _text(data: memoryview) -> str:
    try:
        return data.tobytes().decode("utf8")
    except UnicodeDecodeError:
        raise NotAModel("a name that is not UTF-8") from None
