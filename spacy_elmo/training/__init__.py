"""Pretraining the biLM on raw text: corpus, vocabulary, loop, checkpoints, perplexity."""
