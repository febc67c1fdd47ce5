"""The ONNX file reader that needs no onnx package: what it reads is what onnx reads, a node's type is counted
only where it is a node's type, and a file that is no model is refused."""

from collections import Counter

import pytest

from spacy_elmo.bilm_onnx.model_file import NotAModel, read_model_file

from ..helpers import tiny_bilm

onnx = pytest.importorskip("onnx", reason="the reader is checked against onnx's own: pip install 'spacy-elmo[onnx]'")
from onnx import TensorProto, helper  # noqa: E402


def _identity_model(**node_fields):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    return helper.make_graph([helper.make_node("Identity", ["x"], ["y"], **node_fields)], "g", [x], [y])


def _onnx_counts(graph):
    """Each node's op type, with those of the subgraphs in its attributes (the LSTM's Loop body), as onnx reads them."""
    counts = Counter()
    for node in graph.node:
        counts[node.op_type] += 1
        for attribute in node.attribute:
            for sub in ([attribute.g] if attribute.HasField("g") else []) + list(attribute.graphs):
                counts += _onnx_counts(sub)
    return counts


@pytest.mark.parametrize("int8", [False, True])
def test_an_export_reads_as_onnx_reads_it(tmp_path, int8):
    from spacy_elmo.bilm_onnx.export import export_onnx

    path = tmp_path / "m.onnx"
    export_onnx(tiny_bilm(seed=3), path, int8=int8)
    model = onnx.load(str(path))
    held = read_model_file(path)
    assert held.ir_version == model.ir_version
    assert held.metadata == {entry.key: entry.value for entry in model.metadata_props}
    assert held.op_types == _onnx_counts(model.graph) != Counter(node.op_type for node in model.graph.node)
    assert (held.op_types["DynamicQuantizeMatMul"] > 0) == int8
    assert read_model_file(path.read_bytes()) == held


def test_an_op_types_name_elsewhere_is_no_node():
    """A float32 graph whose doc strings and node names hold "DynamicQuantizeMatMul" has none of its nodes (counting
    the name in the file's bytes called it int8)."""
    graph = _identity_model(name="DynamicQuantizeMatMul", doc_string="DynamicQuantizeMatMul x3")
    model = helper.make_model(graph, doc_string="DynamicQuantizeMatMul")
    helper.set_model_props(model, {"note": "DynamicQuantizeMatMul"})
    held = read_model_file(model.SerializeToString())
    assert held.op_types == Counter({"Identity": 1}) and held.metadata == {"note": "DynamicQuantizeMatMul"}


def test_the_nodes_of_a_subgraph_are_counted():
    cond = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    branch = _identity_model()
    then_graph = helper.make_graph([helper.make_node("Neg", ["x"], ["y"])], "then", [], [y])
    node = helper.make_node("If", ["c"], ["y"], then_branch=then_graph, else_branch=branch)
    model = helper.make_model(helper.make_graph([node], "outer", [cond], [y]))
    assert read_model_file(model.SerializeToString()).op_types == Counter({"If": 1, "Neg": 1, "Identity": 1})


@pytest.mark.parametrize(
    "data, says",
    [(b"", "empty"), (b"not onnx", "wire type"), (b"\x08\x08", "no graph"), (b"\x08\x80", "cut off"), (b"\x3a\x10ab", "cut off")],
)
def test_bytes_that_are_no_model_are_refused_saying_why(data, says):
    with pytest.raises(NotAModel, match=says):
        read_model_file(data)


def test_a_cut_off_export_is_refused(tmp_path):
    from spacy_elmo.bilm_onnx.export import export_onnx

    path = tmp_path / "m.onnx"
    export_onnx(tiny_bilm(seed=3), path)
    data = path.read_bytes()
    with pytest.raises(NotAModel, match="cut off"):
        read_model_file(data[: len(data) // 2])
