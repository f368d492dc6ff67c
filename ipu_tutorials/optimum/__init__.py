"""Simulated integrations of Hugging Face's optimum: `ipu_tutorials.optimum.graphcore`."""
