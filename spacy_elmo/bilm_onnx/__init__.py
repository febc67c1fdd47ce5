"""ELMo without PyTorch: a biLM written as one ONNX graph (graph.py, which reads the PyTorch biLM)
and run by ONNX Runtime (runtime.py: numpy and onnxruntime only, no torch or spaCy)."""
