"""agentcompile's Python side: capturing PyTorch models into the IR (see docs/capture.md).

Run `python3 -m agentcompile.capture --help`, or `agentcompile capture ...` from the C++ CLI.
"""
